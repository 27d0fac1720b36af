package pgarena;

import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.r2dbc.postgresql.codec.Interval;
import io.r2dbc.postgresql.codec.Json;
import jakarta.validation.Valid;
import jakarta.validation.constraints.Max;
import jakarta.validation.constraints.Min;
import jakarta.validation.constraints.NotNull;
import java.math.BigDecimal;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.time.OffsetDateTime;
import java.util.UUID;
import org.springframework.format.annotation.DateTimeFormat;
import org.springframework.format.annotation.DateTimeFormat.ISO;
import org.springframework.r2dbc.core.DatabaseClient;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

@RestController
@RequestMapping("/api")
public class ApiController {

    private static final String USERS_SQL =
            "SELECT id, username, full_name, email, age, created_at FROM users ORDER BY id LIMIT $1";
    // json/jsonb and the arrays are bound as text; PostgreSQL parses them (its array-literal syntax).
    private static final String PERF_TEST_SQL = "SELECT * FROM perf_test($1, $2, $3, $4, $5, $6, $7, $8, $9, $10,"
            + " $11, $12, $13::json, $14::jsonb, $15::int[], $16::text[])";

    private static final String PERF_MINIMAL_SQL = "SELECT * FROM perf_minimal()";
    // The payload is bound as text (Jackson's serialization of the parsed body) and cast to jsonb by PostgreSQL.
    private static final String PERF_POST_SQL = "SELECT * FROM perf_post($1, $2::jsonb)";
    private static final String PERF_NESTED_SQL = "SELECT * FROM perf_nested($1, $2)";
    private static final String PERF_LARGE_PAYLOAD_SQL = "SELECT * FROM perf_large_payload($1)";
    // All twenty bound as text (or NULL); PostgreSQL casts them to the function's int / bool / numeric parameters.
    private static final String PERF_MANY_PARAMS_SQL = "SELECT * FROM perf_many_params("
            + "$1, $2::int, $3::bool, $4::numeric, $5, $6, $7::int, $8::bool, $9::numeric, $10, "
            + "$11, $12::int, $13::bool, $14::numeric, $15, $16, $17::int, $18::bool, $19::numeric, $20)";

    public record Status(String status, long timestamp) {}

    public record User(int id, String username, String fullName, String email, short age, OffsetDateTime createdAt) {}

    public record PerfRow(
            Integer rowNum, String textVal, String varcharVal, String charVal, Short smallintVal, Integer intVal,
            Long bigintVal, BigDecimal numericVal, Float realVal, Double doubleVal, Boolean boolVal,
            LocalDate dateVal, LocalTime timeVal, LocalDateTime timestampVal, OffsetDateTime timestamptzVal,
            Interval intervalVal, UUID uuidVal, Json jsonVal, Json jsonbVal, Integer[] intArrayVal,
            String[] textArrayVal, String nullableText, Integer nullableInt) {}

    public record MinimalRow(String status, OffsetDateTime ts) {}

    /**
     * The perf-post body, decoded by WebFlux's Jackson decoder: _records an Integer (strict: no "5", 1.5 or true),
     * _payload an ObjectNode (Jackson's tree: an array or scalar there fails to decode; big integers stay BigInteger).
     */
    public record PerfPostRequest(
            @JsonProperty("_records") @NotNull @Min(1) @Max(1000) Integer records,
            @JsonProperty("_payload") @NotNull ObjectNode payload) {}

    public record PostRow(Integer rowNum, Json echo, String computed) {}

    public record NestedRow(Integer rowNum, Json nested) {}

    public record LargeRow(String data) {}

    public record ManyParamsRow(Integer paramCount, String checksum) {}

    public record TxRequest(
            @NotNull @Min(1) @Max(1_000_000) Integer aid,
            @NotNull @Min(1) @Max(100) Integer tid,
            @NotNull @Min(1) @Max(10) Integer bid,
            @NotNull @Min(-5000) @Max(5000) Integer delta) {}

    public record TxResponse(int abalance) {}

    private final DatabaseClient db;
    private final TpcbService tpcb;

    public ApiController(DatabaseClient db, TpcbService tpcb) {
        this.db = db;
        this.tpcb = tpcb;
    }

    @GetMapping("/static")
    public Status status() {
        return new Status("ok", System.currentTimeMillis());
    }

    @GetMapping("/users")
    public Flux<User> users(@RequestParam @Min(1) @Max(10_000) int limit) {
        return db.sql(USERS_SQL)
                .bind(0, limit)
                .map(row -> new User(
                        row.get("id", Integer.class),
                        row.get("username", String.class),
                        row.get("full_name", String.class),
                        row.get("email", String.class),
                        row.get("age", Short.class),
                        row.get("created_at", OffsetDateTime.class)))
                .all();
    }

    @GetMapping("/perf-test")
    public Flux<PerfRow> perfTest(
            @RequestParam("_records") @Min(1) @Max(1000) int records,
            @RequestParam("_text") String text,
            @RequestParam("_int") int intValue,
            @RequestParam("_bigint") long bigintValue,
            @RequestParam("_numeric") BigDecimal numericValue,
            @RequestParam("_real") float realValue,
            @RequestParam("_double") double doubleValue,
            @RequestParam("_bool") boolean boolValue,
            @RequestParam("_date") @DateTimeFormat(iso = ISO.DATE) LocalDate date,
            @RequestParam("_timestamp") @DateTimeFormat(iso = ISO.DATE_TIME) LocalDateTime timestamp,
            @RequestParam("_timestamptz") @DateTimeFormat(iso = ISO.DATE_TIME) OffsetDateTime timestamptz,
            @RequestParam("_uuid") UUID uuid,
            @RequestParam("_json") String json,
            @RequestParam("_jsonb") String jsonb,
            @RequestParam("_int_array") String intArray,
            @RequestParam("_text_array") String textArray) {
        return db.sql(PERF_TEST_SQL)
                .bind(0, records).bind(1, text).bind(2, intValue).bind(3, bigintValue)
                .bind(4, numericValue).bind(5, realValue).bind(6, doubleValue).bind(7, boolValue)
                .bind(8, date).bind(9, timestamp).bind(10, timestamptz).bind(11, uuid)
                .bind(12, json).bind(13, jsonb).bind(14, intArray).bind(15, textArray)
                .map(row -> new PerfRow(
                        row.get("row_num", Integer.class),
                        row.get("text_val", String.class),
                        row.get("varchar_val", String.class),
                        row.get("char_val", String.class),
                        row.get("smallint_val", Short.class),
                        row.get("int_val", Integer.class),
                        row.get("bigint_val", Long.class),
                        row.get("numeric_val", BigDecimal.class),
                        row.get("real_val", Float.class),
                        row.get("double_val", Double.class),
                        row.get("bool_val", Boolean.class),
                        row.get("date_val", LocalDate.class),
                        row.get("time_val", LocalTime.class),
                        row.get("timestamp_val", LocalDateTime.class),
                        row.get("timestamptz_val", OffsetDateTime.class),
                        row.get("interval_val", Interval.class),
                        row.get("uuid_val", UUID.class),
                        row.get("json_val", Json.class),
                        row.get("jsonb_val", Json.class),
                        row.get("int_array_val", Integer[].class),
                        row.get("text_array_val", String[].class),
                        row.get("nullable_text", String.class),
                        row.get("nullable_int", Integer.class)))
                .all();
    }

    @GetMapping("/perf-minimal")
    public Flux<MinimalRow> perfMinimal() {
        return db.sql(PERF_MINIMAL_SQL)
                .map(row -> new MinimalRow(row.get("status", String.class), row.get("ts", OffsetDateTime.class)))
                .all();
    }

    @PostMapping("/perf-post")
    public Flux<PostRow> perfPost(@Valid @RequestBody PerfPostRequest body) {
        return db.sql(PERF_POST_SQL)
                .bind(0, body.records()).bind(1, body.payload().toString())
                .map(row -> new PostRow(
                        row.get("row_num", Integer.class), row.get("echo", Json.class), row.get("computed", String.class)))
                .all();
    }

    @GetMapping("/perf-nested")
    public Flux<NestedRow> perfNested(
            @RequestParam("_records") @Min(1) @Max(1000) int records,
            @RequestParam("_depth") @Min(1) @Max(3) int depth) {
        return db.sql(PERF_NESTED_SQL)
                .bind(0, records).bind(1, depth)
                .map(row -> new NestedRow(row.get("row_num", Integer.class), row.get("nested", Json.class)))
                .all();
    }

    @GetMapping("/perf-large-payload")
    public Flux<LargeRow> perfLargePayload(@RequestParam("_size_kb") @Min(1) @Max(1024) int sizeKb) {
        return db.sql(PERF_LARGE_PAYLOAD_SQL)
                .bind(0, sizeKb)
                .map(row -> new LargeRow(row.get("data", String.class)))
                .all();
    }

    /** Every parameter is optional text (absent: SQL NULL); PostgreSQL casts them to the function's types. */
    @GetMapping("/perf-many-params")
    public Flux<ManyParamsRow> perfManyParams(
            @RequestParam(name = "_p1", required = false) String p1,
            @RequestParam(name = "_p2", required = false) String p2,
            @RequestParam(name = "_p3", required = false) String p3,
            @RequestParam(name = "_p4", required = false) String p4,
            @RequestParam(name = "_p5", required = false) String p5,
            @RequestParam(name = "_p6", required = false) String p6,
            @RequestParam(name = "_p7", required = false) String p7,
            @RequestParam(name = "_p8", required = false) String p8,
            @RequestParam(name = "_p9", required = false) String p9,
            @RequestParam(name = "_p10", required = false) String p10,
            @RequestParam(name = "_p11", required = false) String p11,
            @RequestParam(name = "_p12", required = false) String p12,
            @RequestParam(name = "_p13", required = false) String p13,
            @RequestParam(name = "_p14", required = false) String p14,
            @RequestParam(name = "_p15", required = false) String p15,
            @RequestParam(name = "_p16", required = false) String p16,
            @RequestParam(name = "_p17", required = false) String p17,
            @RequestParam(name = "_p18", required = false) String p18,
            @RequestParam(name = "_p19", required = false) String p19,
            @RequestParam(name = "_p20", required = false) String p20) {
        String[] values = {p1, p2, p3, p4, p5, p6, p7, p8, p9, p10, p11, p12, p13, p14, p15, p16, p17, p18, p19, p20};
        DatabaseClient.GenericExecuteSpec statement = db.sql(PERF_MANY_PARAMS_SQL);
        for (int i = 0; i < values.length; i++) {
            statement = values[i] == null ? statement.bindNull(i, String.class) : statement.bind(i, values[i]);
        }
        return statement
                .map(row -> new ManyParamsRow(row.get("param_count", Integer.class), row.get("checksum", String.class)))
                .all();
    }

    @PostMapping("/tx")
    public Mono<TxResponse> tx(@Valid @RequestBody TxRequest body) {
        return tpcb.transfer(body.aid(), body.tid(), body.bid(), body.delta()).map(TxResponse::new);
    }
}
