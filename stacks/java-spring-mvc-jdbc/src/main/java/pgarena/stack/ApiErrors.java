package pgarena.stack;

import com.fasterxml.jackson.core.JsonProcessingException;
import java.sql.SQLException;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.TypeMismatchException;
import org.springframework.core.NestedExceptionUtils;
import org.springframework.dao.DataAccessException;
import org.springframework.http.HttpStatus;
import org.springframework.http.HttpStatusCode;
import org.springframework.http.ResponseEntity;
import org.springframework.http.converter.HttpMessageNotReadableException;
import org.springframework.validation.method.ParameterValidationResult;
import org.springframework.web.ErrorResponse;
import org.springframework.web.HttpMediaTypeNotSupportedException;
import org.springframework.web.bind.MethodArgumentNotValidException;
import org.springframework.web.bind.ServletRequestBindingException;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestControllerAdvice;
import org.springframework.web.method.annotation.HandlerMethodValidationException;

/**
 * Maps exceptions to {@code {"error": "..."}}: bad client input (missing or unconvertible parameters, constraint
 * violations, unreadable JSON, a Content-Type other than JSON, SQLSTATE class 22) to 400, Spring MVC's own errors
 * (404, 405, ...) to their status, anything else to 500.
 */
@RestControllerAdvice
public class ApiErrors {

    private static final Logger log = LoggerFactory.getLogger(ApiErrors.class);

    public record Error(String error) {}

    /** Missing parameter, or one that does not convert to its Java type ("abc", "1.5", "2024-13-45"). */
    @ExceptionHandler({ServletRequestBindingException.class, TypeMismatchException.class})
    ResponseEntity<Error> badParameter(Exception e) {
        return error(HttpStatus.BAD_REQUEST, e.getMessage());
    }

    /** A @RequestParam outside its @Min/@Max range. */
    @ExceptionHandler(HandlerMethodValidationException.class)
    ResponseEntity<Error> invalidParameter(HandlerMethodValidationException e) {
        String message = e.getParameterValidationResults().stream()
                .map(ApiErrors::describe)
                .collect(Collectors.joining("; "));
        return error(HttpStatus.BAD_REQUEST, message);
    }

    /** A @Valid request body that violates its constraints (missing field, out of range). */
    @ExceptionHandler(MethodArgumentNotValidException.class)
    ResponseEntity<Error> invalidBody(MethodArgumentNotValidException e) {
        String message = e.getBindingResult().getFieldErrors().stream()
                .map(f -> f.getField() + ": " + f.getDefaultMessage())
                .collect(Collectors.joining("; "));
        return error(HttpStatus.BAD_REQUEST, message);
    }

    /** Empty or malformed JSON, or a value of the wrong JSON type ("5", 1.5, true for an integer). */
    @ExceptionHandler(HttpMessageNotReadableException.class)
    ResponseEntity<Error> unreadableBody(HttpMessageNotReadableException e) {
        String detail = e.getCause() instanceof JsonProcessingException json ? ": " + json.getOriginalMessage() : "";
        return error(HttpStatus.BAD_REQUEST, "invalid JSON body" + detail);
    }

    /** Spring answers 415 by default; the contract wants 400. */
    @ExceptionHandler(HttpMediaTypeNotSupportedException.class)
    ResponseEntity<Error> unsupportedMediaType(HttpMediaTypeNotSupportedException e) {
        return error(HttpStatus.BAD_REQUEST, "Content-Type must be application/json");
    }

    /** SQLSTATE class 22 (data exception) is the client's input that PostgreSQL rejected: 400. */
    @ExceptionHandler(DataAccessException.class)
    ResponseEntity<Error> database(DataAccessException e) {
        if (NestedExceptionUtils.getMostSpecificCause(e) instanceof SQLException sql
                && sql.getSQLState() != null && sql.getSQLState().startsWith("22")) {
            return error(HttpStatus.BAD_REQUEST, sql.getMessage().lines().findFirst().orElse(sql.getSQLState()));
        }
        log.error("database error", e);
        return error(HttpStatus.INTERNAL_SERVER_ERROR, "internal server error");
    }

    /** Spring MVC's own exceptions (no route, wrong method, ...) keep their status; the rest is a 500. */
    @ExceptionHandler(Exception.class)
    ResponseEntity<Error> other(Exception e) {
        if (e instanceof ErrorResponse response) {
            HttpStatusCode status = response.getStatusCode();
            return error(status, Optional.ofNullable(response.getBody().getDetail()).orElse(e.getMessage()));
        }
        log.error("request failed", e);
        return error(HttpStatus.INTERNAL_SERVER_ERROR, "internal server error");
    }

    private static String describe(ParameterValidationResult result) {
        RequestParam param = result.getMethodParameter().getParameterAnnotation(RequestParam.class);
        String name = param != null ? param.value() : result.getMethodParameter().getParameterName();
        return result.getResolvableErrors().stream()
                .map(error -> name + ": " + error.getDefaultMessage())
                .collect(Collectors.joining("; "));
    }

    private static ResponseEntity<Error> error(HttpStatusCode status, String message) {
        return ResponseEntity.status(status).body(new Error(message));
    }
}
