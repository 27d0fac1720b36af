package pgarena.stack;

import jakarta.validation.Valid;
import jakarta.validation.constraints.Max;
import jakarta.validation.constraints.Min;
import java.math.BigDecimal;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.OffsetDateTime;
import java.util.List;
import java.util.UUID;
import org.springframework.format.annotation.DateTimeFormat;
import org.springframework.format.annotation.DateTimeFormat.ISO;
import org.springframework.http.MediaType;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/**
 * The HTTP contract. Query parameters are converted by Spring MVC into Java types and checked by Bean Validation
 * (constraints on {@code @RequestParam}s are validated by Spring MVC's built-in method validation); failures are
 * mapped to 400 in {@link ApiErrors}.
 */
@RestController
@RequestMapping("/api")
public class ApiController {

    public record StaticResponse(String status, long timestamp) {}

    public record TxResponse(int abalance) {}

    private final Repository repository;
    private final TpcbService tpcb;

    public ApiController(Repository repository, TpcbService tpcb) {
        this.repository = repository;
        this.tpcb = tpcb;
    }

    @GetMapping("/static")
    public StaticResponse staticResponse() {
        return new StaticResponse("ok", System.currentTimeMillis());
    }

    @GetMapping("/users")
    public List<Repository.User> users(@RequestParam("limit") @Min(1) @Max(10_000) int limit) {
        return repository.users(limit);
    }

    @GetMapping("/perf-test")
    public List<Repository.PerfRow> perfTest(
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
        return repository.perfTest(records, text, intValue, bigintValue, numericValue, realValue, doubleValue,
                boolValue, date, timestamp, timestamptz, uuid, json, jsonb, intArray, textArray);
    }

    @PostMapping(path = "/tx", consumes = MediaType.APPLICATION_JSON_VALUE)
    public TxResponse tx(@Valid @RequestBody TpcbService.TxRequest request) {
        return new TxResponse(tpcb.run(request));
    }
}
