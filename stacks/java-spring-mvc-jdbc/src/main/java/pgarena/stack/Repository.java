package pgarena.stack;

import com.fasterxml.jackson.annotation.JsonRawValue;
import com.fasterxml.jackson.databind.PropertyNamingStrategies.SnakeCaseStrategy;
import com.fasterxml.jackson.databind.annotation.JsonNaming;
import java.math.BigDecimal;
import java.sql.Array;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.springframework.jdbc.core.simple.JdbcClient;

/**
 * Read-only queries of the users, users-posts, GraphQL, perf-test and perf-* workloads. The row records are written
 * by Jackson with snake_case names (@JsonNaming, per type: a global naming strategy would also rename the fields
 * Spring for GraphQL reads from a GraphQL request, such as operationName).
 */
@org.springframework.stereotype.Repository
public class Repository {

    /** A row of {@code users}; in GraphQL, the User type (its createdAt is formatted by GraphQlController). */
    @JsonNaming(SnakeCaseStrategy.class)
    public record User(int id, String username, String fullName, String email, short age, OffsetDateTime createdAt) {}

    /** A row of {@code posts}, the columns the users-posts and graphql-nested answers show. */
    @JsonNaming(SnakeCaseStrategy.class)
    public record Post(int id, String title) {}

    /** A row of {@code perf_test(...)}: the PostgreSQL JDBC driver's Java types, as JDBC 4.2 maps them. */
    @JsonNaming(SnakeCaseStrategy.class)
    public record PerfRow(
            int rowNum,
            String textVal,
            String varcharVal,
            String charVal,
            short smallintVal,
            int intVal,
            long bigintVal,
            BigDecimal numericVal,
            float realVal,
            double doubleVal,
            boolean boolVal,
            LocalDate dateVal,
            LocalTime timeVal,
            LocalDateTime timestampVal,
            OffsetDateTime timestamptzVal,
            String intervalVal,
            UUID uuidVal,
            @JsonRawValue String jsonVal,
            @JsonRawValue String jsonbVal,
            Integer[] intArrayVal,
            String[] textArrayVal,
            String nullableText,
            Integer nullableInt) {}

    /** A row of {@code perf_minimal()}. */
    @JsonNaming(SnakeCaseStrategy.class)
    public record MinimalRow(String status, OffsetDateTime ts) {}

    /** A row of {@code perf_post(...)}: echo is the jsonb's text, written into the response as is. */
    @JsonNaming(SnakeCaseStrategy.class)
    public record PostRow(int rowNum, @JsonRawValue String echo, String computed) {}

    /** A row of {@code perf_nested(...)}. */
    @JsonNaming(SnakeCaseStrategy.class)
    public record NestedRow(int rowNum, @JsonRawValue String nested) {}

    /** The row of {@code perf_large_payload(...)}. */
    @JsonNaming(SnakeCaseStrategy.class)
    public record LargeRow(String data) {}

    /** The row of {@code perf_many_params(...)}. */
    @JsonNaming(SnakeCaseStrategy.class)
    public record ManyParamsRow(int paramCount, String checksum) {}

    private static final String USERS_SQL =
            "SELECT id, username, full_name, email, age, created_at FROM users ORDER BY id LIMIT ?";

    /**
     * Each user's first posts by id, for many users in one statement: the user ids go in as one int[] parameter,
     * and the LATERAL subquery reads each user's posts from the (user_id, id) index.
     */
    private static final String POSTS_BY_USER_SQL = "SELECT u.id AS user_id, p.id, p.title "
            + "FROM unnest(?::int[]) AS u(id) "
            + "CROSS JOIN LATERAL (SELECT id, title FROM posts WHERE user_id = u.id ORDER BY id LIMIT ?) AS p";

    /** json, jsonb and the arrays are bound as text and cast by PostgreSQL, which owns their literal syntax. */
    private static final String PERF_TEST_SQL =
            "SELECT * FROM perf_test(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?::json, ?::jsonb, ?::int[], ?::text[])";

    private static final String PERF_MINIMAL_SQL = "SELECT * FROM perf_minimal()";
    /** The payload is bound as text (Jackson's serialization of the parsed body) and cast to jsonb by PostgreSQL. */
    private static final String PERF_POST_SQL = "SELECT * FROM perf_post(?, ?::jsonb)";
    private static final String PERF_NESTED_SQL = "SELECT * FROM perf_nested(?, ?)";
    private static final String PERF_LARGE_PAYLOAD_SQL = "SELECT * FROM perf_large_payload(?)";
    /** All twenty bound as text; PostgreSQL casts them to the function's int / bool / numeric parameters. */
    private static final String PERF_MANY_PARAMS_SQL = "SELECT * FROM perf_many_params("
            + "?, ?::int, ?::bool, ?::numeric, ?, ?, ?::int, ?::bool, ?::numeric, ?, "
            + "?, ?::int, ?::bool, ?::numeric, ?, ?, ?::int, ?::bool, ?::numeric, ?)";

    private final JdbcClient jdbc;

    public Repository(JdbcClient jdbc) {
        this.jdbc = jdbc;
    }

    public List<User> users(int limit) {
        return jdbc.sql(USERS_SQL)
                .param(1, limit, Types.INTEGER)
                .query((rs, n) -> new User(
                        rs.getInt("id"),
                        rs.getString("username"),
                        rs.getString("full_name"),
                        rs.getString("email"),
                        rs.getShort("age"),
                        rs.getObject("created_at", OffsetDateTime.class)))
                .list();
    }

    /**
     * The first {@code limit} posts (by id) of each of {@code userIds}, in one statement; a user without posts maps
     * to an empty list. Each list keeps the statement's row order, which is the LATERAL subquery's ORDER BY id.
     */
    public Map<Integer, List<Post>> postsByUser(Collection<Integer> userIds, int limit) {
        Map<Integer, List<Post>> posts = new HashMap<>(userIds.size() * 2);
        for (Integer userId : userIds) {
            posts.put(userId, new ArrayList<>(limit));
        }
        jdbc.sql(POSTS_BY_USER_SQL)
                .param(1, userIds.toArray(new Integer[0])) // pgjdbc binds an Integer[] as int4[]
                .param(2, limit, Types.INTEGER)
                .query(rs -> {
                    posts.get(rs.getInt("user_id")).add(new Post(rs.getInt("id"), rs.getString("title")));
                });
        return posts;
    }

    public List<PerfRow> perfTest(int records, String text, int intValue, long bigintValue, BigDecimal numericValue,
            float realValue, double doubleValue, boolean boolValue, LocalDate date, LocalDateTime timestamp,
            OffsetDateTime timestamptz, UUID uuid, String json, String jsonb, String intArray, String textArray) {
        return jdbc.sql(PERF_TEST_SQL)
                .param(1, records, Types.INTEGER)
                .param(2, text, Types.VARCHAR)
                .param(3, intValue, Types.INTEGER)
                .param(4, bigintValue, Types.BIGINT)
                .param(5, numericValue, Types.NUMERIC)
                .param(6, realValue, Types.REAL)
                .param(7, doubleValue, Types.DOUBLE)
                .param(8, boolValue, Types.BOOLEAN)
                .param(9, date, Types.DATE)
                .param(10, timestamp, Types.TIMESTAMP)
                .param(11, timestamptz, Types.TIMESTAMP_WITH_TIMEZONE)
                .param(12, uuid, Types.OTHER)
                .param(13, json, Types.VARCHAR)
                .param(14, jsonb, Types.VARCHAR)
                .param(15, intArray, Types.VARCHAR)
                .param(16, textArray, Types.VARCHAR)
                .query(Repository::perfRow)
                .list();
    }

    public List<MinimalRow> perfMinimal() {
        return jdbc.sql(PERF_MINIMAL_SQL)
                .query((rs, n) -> new MinimalRow(rs.getString("status"), rs.getObject("ts", OffsetDateTime.class)))
                .list();
    }

    public List<PostRow> perfPost(int records, String payload) {
        return jdbc.sql(PERF_POST_SQL)
                .param(1, records, Types.INTEGER)
                .param(2, payload, Types.VARCHAR)
                .query((rs, n) -> new PostRow(rs.getInt("row_num"), rs.getString("echo"), rs.getString("computed")))
                .list();
    }

    public List<NestedRow> perfNested(int records, int depth) {
        return jdbc.sql(PERF_NESTED_SQL)
                .param(1, records, Types.INTEGER)
                .param(2, depth, Types.INTEGER)
                .query((rs, n) -> new NestedRow(rs.getInt("row_num"), rs.getString("nested")))
                .list();
    }

    public List<LargeRow> perfLargePayload(int sizeKb) {
        return jdbc.sql(PERF_LARGE_PAYLOAD_SQL)
                .param(1, sizeKb, Types.INTEGER)
                .query((rs, n) -> new LargeRow(rs.getString("data")))
                .list();
    }

    /** {@code values}: _p1.._p20 as the query string gave them, null where absent. */
    public List<ManyParamsRow> perfManyParams(List<String> values) {
        JdbcClient.StatementSpec statement = jdbc.sql(PERF_MANY_PARAMS_SQL);
        for (int i = 0; i < values.size(); i++) {
            statement = statement.param(i + 1, values.get(i), Types.VARCHAR);
        }
        return statement
                .query((rs, n) -> new ManyParamsRow(rs.getInt("param_count"), rs.getString("checksum")))
                .list();
    }

    private static PerfRow perfRow(ResultSet rs, int rowNum) throws SQLException {
        return new PerfRow(
                rs.getInt("row_num"),
                rs.getString("text_val"),
                rs.getString("varchar_val"),
                rs.getString("char_val"),
                rs.getShort("smallint_val"),
                rs.getInt("int_val"),
                rs.getLong("bigint_val"),
                rs.getBigDecimal("numeric_val"),
                rs.getFloat("real_val"),
                rs.getDouble("double_val"),
                rs.getBoolean("bool_val"),
                rs.getObject("date_val", LocalDate.class),
                rs.getObject("time_val", LocalTime.class),
                rs.getObject("timestamp_val", LocalDateTime.class),
                rs.getObject("timestamptz_val", OffsetDateTime.class),
                rs.getString("interval_val"), // PostgreSQL's own interval text, e.g. "1 day 01:01:01.5"
                rs.getObject("uuid_val", UUID.class),
                rs.getString("json_val"), // the JSON text, written into the response as is (@JsonRawValue)
                rs.getString("jsonb_val"),
                array(rs, "int_array_val", Integer[].class),
                array(rs, "text_array_val", String[].class),
                rs.getString("nullable_text"),
                rs.getObject("nullable_int", Integer.class));
    }

    private static <T> T array(ResultSet rs, String column, Class<T> type) throws SQLException {
        Array array = rs.getArray(column);
        if (array == null) {
            return null;
        }
        try {
            return type.cast(array.getArray());
        } finally {
            array.free();
        }
    }
}
