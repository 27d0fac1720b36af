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

/** Read-only queries of the users and perf-test workloads. */
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

    private static final String USERS_SQL =
            "SELECT id, username, full_name, email, age, created_at FROM users ORDER BY id LIMIT ?";

    /** json, jsonb and the arrays are bound as text and cast by PostgreSQL, which owns their literal syntax. */
    private static final String PERF_TEST_SQL =
            "SELECT * FROM perf_test(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?::json, ?::jsonb, ?::int[], ?::text[])";

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
