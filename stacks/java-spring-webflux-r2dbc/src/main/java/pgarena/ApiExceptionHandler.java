package pgarena;

import com.fasterxml.jackson.core.JsonProcessingException;
import io.r2dbc.spi.R2dbcException;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.core.MethodParameter;
import org.springframework.dao.DataAccessException;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestControllerAdvice;
import org.springframework.web.bind.support.WebExchangeBindException;
import org.springframework.web.method.annotation.HandlerMethodValidationException;
import org.springframework.web.server.ResponseStatusException;
import org.springframework.web.server.ServerWebInputException;
import org.springframework.web.server.UnsupportedMediaTypeStatusException;

/** Errors as JSON {"error": ...}: bad input (including SQLSTATE class 22) is 400, anything else 500. */
@RestControllerAdvice
public class ApiExceptionHandler {

    private static final Logger log = LoggerFactory.getLogger(ApiExceptionHandler.class);

    public record ApiError(String error) {}

    /** Bean Validation of the tx body. */
    @ExceptionHandler
    public ResponseEntity<ApiError> invalidBody(WebExchangeBindException ex) {
        return badRequest(ex.getFieldErrors().stream()
                .map(e -> e.getField() + ": " + e.getDefaultMessage())
                .collect(Collectors.joining(", ")));
    }

    /** Bean Validation of query parameters (@Min/@Max on @RequestParam). */
    @ExceptionHandler
    public ResponseEntity<ApiError> invalidParameter(HandlerMethodValidationException ex) {
        return badRequest(ex.getParameterValidationResults().stream()
                .flatMap(result -> result.getResolvableErrors().stream()
                        .map(e -> queryParameter(result.getMethodParameter()) + e.getDefaultMessage()))
                .collect(Collectors.joining(", ")));
    }

    /** Missing or unconvertible parameters, a missing or malformed body, and a Content-Type other than JSON (415). */
    @ExceptionHandler({ServerWebInputException.class, UnsupportedMediaTypeStatusException.class})
    public ResponseEntity<ApiError> badInput(ResponseStatusException ex) {
        Throwable cause = ex.getMostSpecificCause();
        String detail = cause instanceof JsonProcessingException json ? json.getOriginalMessage()
                : cause instanceof ResponseStatusException ? null : cause.getMessage();
        MethodParameter parameter = ex instanceof ServerWebInputException input ? input.getMethodParameter() : null;
        String reason = ex.getReason();
        return badRequest(queryParameter(parameter) + reason
                + (detail == null || detail.equals(reason) || reason != null && detail.startsWith(reason) ? "" : ": " + detail));
    }

    /** "_records: " for a @RequestParam("_records"), "" for anything else. */
    private static String queryParameter(MethodParameter parameter) {
        RequestParam param = parameter == null ? null : parameter.getParameterAnnotation(RequestParam.class);
        if (param == null) {
            return "";
        }
        return (param.name().isEmpty() ? parameter.getParameterName() : param.name()) + ": ";
    }

    @ExceptionHandler({DataAccessException.class, R2dbcException.class})
    public ResponseEntity<ApiError> database(Exception ex) {
        for (Throwable t = ex; t != null; t = t.getCause()) {
            if (t instanceof R2dbcException r2dbc && r2dbc.getSqlState() != null && r2dbc.getSqlState().startsWith("22")) {
                return badRequest(r2dbc.getMessage()); // data exception caused by the client's values
            }
        }
        return internalError(ex);
    }

    @ExceptionHandler
    public ResponseEntity<ApiError> other(Exception ex) {
        if (ex instanceof ResponseStatusException rse && rse.getStatusCode().value() == HttpStatus.UNSUPPORTED_MEDIA_TYPE.value()) {
            // WebFlux's form reader answers a body sent as application/x-www-form-urlencoded with a bare 415.
            return badRequest("Content-Type must be application/json");
        }
        if (ex instanceof ResponseStatusException rse && !rse.getStatusCode().is5xxServerError()) {
            // e.g. 413 for a body over the codecs' 256 KiB in-memory limit, whose reason is null
            String reason = rse.getReason() != null ? rse.getReason() : rse.getMessage();
            return ResponseEntity.status(rse.getStatusCode()).body(new ApiError(reason));
        }
        return internalError(ex);
    }

    private static ResponseEntity<ApiError> badRequest(String message) {
        return ResponseEntity.badRequest().body(new ApiError(message));
    }

    private static ResponseEntity<ApiError> internalError(Exception ex) {
        log.error("request failed", ex);
        return ResponseEntity.status(HttpStatus.INTERNAL_SERVER_ERROR).body(new ApiError("internal server error"));
    }
}
