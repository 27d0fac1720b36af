package pgarena.stack;

import jakarta.validation.Valid;
import jakarta.validation.constraints.Max;
import jakarta.validation.constraints.Min;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.databind.node.ObjectNode;
import jakarta.validation.constraints.NotNull;
import java.math.BigDecimal;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.OffsetDateTime;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
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

    /** A user of users-posts with its first {@link #POSTS_PER_USER} posts. */
    public record UserPosts(int id, String username, List<Repository.Post> posts) {}

    /** users-posts shows each user's first five posts (the contract's twin of graphql-nested's posts(limit: 5)). */
    static final int POSTS_PER_USER = 5;

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

    /** Two statements at any limit: the users (the same query as /api/users), then all their posts at once. */
    @GetMapping("/users-posts")
    public List<UserPosts> usersPosts(@RequestParam("limit") @Min(1) @Max(10_000) int limit) {
        List<Repository.User> users = repository.users(limit);
        Map<Integer, List<Repository.Post>> posts =
                repository.postsByUser(users.stream().map(Repository.User::id).toList(), POSTS_PER_USER);
        return users.stream().map(u -> new UserPosts(u.id(), u.username(), posts.get(u.id()))).toList();
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

    @GetMapping("/perf-minimal")
    public List<Repository.MinimalRow> perfMinimal() {
        return repository.perfMinimal();
    }

    /**
     * The body is parsed by Spring's Jackson message converter into a record: {@code _records} an Integer (strict:
     * no "5", 1.5 or true, see application.properties), {@code _payload} an ObjectNode (Jackson's tree: a JSON
     * array or scalar there fails to deserialize; big integers stay BigInteger).
     */
    public record PerfPostRequest(
            @JsonProperty("_records") @NotNull @Min(1) @Max(1000) Integer records,
            @JsonProperty("_payload") @NotNull ObjectNode payload) {}

    @PostMapping(path = "/perf-post", consumes = MediaType.APPLICATION_JSON_VALUE)
    public List<Repository.PostRow> perfPost(@Valid @RequestBody PerfPostRequest request) {
        return repository.perfPost(request.records(), request.payload().toString());
    }

    @GetMapping("/perf-nested")
    public List<Repository.NestedRow> perfNested(
            @RequestParam("_records") @Min(1) @Max(1000) int records,
            @RequestParam("_depth") @Min(1) @Max(3) int depth) {
        return repository.perfNested(records, depth);
    }

    @GetMapping("/perf-large-payload")
    public List<Repository.LargeRow> perfLargePayload(@RequestParam("_size_kb") @Min(1) @Max(1024) int sizeKb) {
        return repository.perfLargePayload(sizeKb);
    }

    /** Every parameter is optional text (absent: SQL NULL); PostgreSQL casts them to the function's types. */
    @GetMapping("/perf-many-params")
    public List<Repository.ManyParamsRow> perfManyParams(
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
        return repository.perfManyParams(Arrays.asList(p1, p2, p3, p4, p5, p6, p7, p8, p9, p10,
                p11, p12, p13, p14, p15, p16, p17, p18, p19, p20));
    }

    @PostMapping(path = "/tx", consumes = MediaType.APPLICATION_JSON_VALUE)
    public TxResponse tx(@Valid @RequestBody TpcbService.TxRequest request) {
        return new TxResponse(tpcb.run(request));
    }
}
