package pgarena;

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

    public record Status(String status, long timestamp) {}

    public record User(int id, String username, String fullName, String email, short age, OffsetDateTime createdAt) {}

    public record PerfRow(
            Integer rowNum, String textVal, String varcharVal, String charVal, Short smallintVal, Integer intVal,
            Long bigintVal, BigDecimal numericVal, Float realVal, Double doubleVal, Boolean boolVal,
            LocalDate dateVal, LocalTime timeVal, LocalDateTime timestampVal, OffsetDateTime timestamptzVal,
            Interval intervalVal, UUID uuidVal, Json jsonVal, Json jsonbVal, Integer[] intArrayVal,
            String[] textArrayVal, String nullableText, Integer nullableInt) {}

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

    @PostMapping("/tx")
    public Mono<TxResponse> tx(@Valid @RequestBody TxRequest body) {
        return tpcb.transfer(body.aid(), body.tid(), body.bid(), body.delta()).map(TxResponse::new);
    }
}
