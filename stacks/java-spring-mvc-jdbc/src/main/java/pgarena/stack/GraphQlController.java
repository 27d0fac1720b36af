package pgarena.stack;

import graphql.GraphQLError;
import graphql.GraphqlErrorBuilder;
import graphql.schema.DataFetchingEnvironment;
import jakarta.validation.ConstraintViolation;
import jakarta.validation.ConstraintViolationException;
import jakarta.validation.constraints.Max;
import jakarta.validation.constraints.Min;
import java.time.format.DateTimeFormatter;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.stream.Collectors;
import org.dataloader.DataLoader;
import org.springframework.graphql.data.method.annotation.Argument;
import org.springframework.graphql.data.method.annotation.GraphQlExceptionHandler;
import org.springframework.graphql.data.method.annotation.QueryMapping;
import org.springframework.graphql.data.method.annotation.SchemaMapping;
import org.springframework.graphql.execution.BatchLoaderRegistry;
import org.springframework.graphql.execution.ErrorType;
import org.springframework.stereotype.Controller;
import reactor.core.publisher.Mono;

/**
 * The GraphQL schema (resources/graphql/schema.graphqls) served at POST /graphql by Spring for GraphQL. Query.users
 * runs the same repository query as GET /api/users; User.posts goes through a DataLoader, so the posts of all users
 * in a response are read by one statement (two statements per request at any users limit).
 */
@Controller
public class GraphQlController {

    /** The DataLoader's key: one user's posts at one posts(limit) (two fields may ask with different limits). */
    record PostsKey(int userId, int limit) {}

    private final Repository repository;

    /**
     * Registers the posts DataLoader under the name of the posts method's DataLoader parameter. A @BatchMapping
     * method cannot see the field's arguments (its batch function gets only the parent objects), hence a
     * registered batch function keyed by (user id, limit) and a @SchemaMapping that loads through it.
     */
    public GraphQlController(Repository repository, BatchLoaderRegistry registry) {
        this.repository = repository;
        registry.<PostsKey, List<Repository.Post>>forName("postsByUser")
                .registerMappedBatchLoader((keys, environment) -> Mono.fromSupplier(() -> postsByUser(keys)));
    }

    @QueryMapping
    public List<Repository.User> users(@Argument @Min(1) @Max(10_000) int limit) {
        return repository.users(limit);
    }

    /** RFC 3339 with seconds always written (OffsetDateTime.toString() drops ":00" seconds). */
    @SchemaMapping
    public String createdAt(Repository.User user) {
        return DateTimeFormatter.ISO_OFFSET_DATE_TIME.format(user.createdAt());
    }

    @SchemaMapping
    public CompletableFuture<List<Repository.Post>> posts(Repository.User user, @Argument @Min(1) @Max(100) int limit,
            DataLoader<PostsKey, List<Repository.Post>> postsByUser) {
        return postsByUser.load(new PostsKey(user.id(), limit));
    }

    /** The DataLoader's batch function: one statement per distinct posts limit among the keys (normally one). */
    private Map<PostsKey, List<Repository.Post>> postsByUser(Set<PostsKey> keys) {
        Map<PostsKey, List<Repository.Post>> result = new HashMap<>(keys.size() * 2);
        keys.stream()
                .collect(Collectors.groupingBy(PostsKey::limit,
                        Collectors.mapping(PostsKey::userId, Collectors.toList())))
                .forEach((limit, userIds) -> repository.postsByUser(userIds, limit)
                        .forEach((userId, posts) -> result.put(new PostsKey(userId, limit), posts)));
        return result;
    }

    /** An argument outside its @Min/@Max range: a GraphQL error of type BAD_REQUEST at the field. */
    @GraphQlExceptionHandler
    public GraphQLError invalidArgument(ConstraintViolationException e, DataFetchingEnvironment environment) {
        String message = e.getConstraintViolations().stream()
                .map(GraphQlController::describe)
                .collect(Collectors.joining("; "));
        return GraphqlErrorBuilder.newError(environment).errorType(ErrorType.BAD_REQUEST).message(message).build();
    }

    private static String describe(ConstraintViolation<?> violation) {
        String path = violation.getPropertyPath().toString(); // method.argument, e.g. "users.limit"
        return path.substring(path.indexOf('.') + 1) + ": " + violation.getMessage();
    }
}
