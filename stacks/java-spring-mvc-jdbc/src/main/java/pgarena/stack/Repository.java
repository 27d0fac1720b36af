package pgarena.stack;

import com.fasterxml.jackson.annotation.JsonRawValue;
import java.math.BigDecimal;
import java.sql.Array;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.time.OffsetDateTime;
import java.util.List;
import java.util.UUID;
import org.springframework.jdbc.core.simple.JdbcClient;

/** Read-only queries of the users, perf-test and perf-* workloads. */
@org.springframework.stereotype.Repository
public class Repository {

    /** A row of {@code users}; serialized by Jackson with snake_case names (application.properties). */
    public record User(int id, String username, String fullName, String email, short age, OffsetDateTime createdAt) {}

    /** A row of {@code perf_test(...)}: the PostgreSQL JDBC driver's Java types, as JDBC 4.2 maps them. */
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
    public record MinimalRow(String status, OffsetDateTime ts) {}

    /** A row of {@code perf_post(...)}: echo is the jsonb's text, written into the response as is. */
    public record PostRow(int rowNum, @JsonRawValue String echo, String computed) {}

    /** A row of {@code perf_nested(...)}. */
    public record NestedRow(int rowNum, @JsonRawValue String nested) {}

    /** The row of {@code perf_large_payload(...)}. */
    public record LargeRow(String data) {}

    /** The row of {@code perf_many_params(...)}. */
    public record ManyParamsRow(int paramCount, String checksum) {}

    private static final String USERS_SQL =
            "SELECT id, username, full_name, email, age, created_at FROM users ORDER BY id LIMIT ?";

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
