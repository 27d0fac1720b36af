package pgarena;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.databind.SerializerProvider;
import com.fasterxml.jackson.databind.module.SimpleModule;
import com.fasterxml.jackson.databind.ser.std.StdSerializer;
import io.r2dbc.postgresql.codec.Interval;
import io.r2dbc.postgresql.codec.Json;
import java.io.IOException;
import java.time.Duration;
import org.springframework.stereotype.Component;

/**
 * Jackson serializers for r2dbc-postgresql's own value types (picked up by Spring Boot's ObjectMapper
 * as a Module bean): json/jsonb nested as they are, interval as an ISO 8601 duration.
 */
@Component
public class PostgresJsonModule extends SimpleModule {

    public PostgresJsonModule() {
        super("r2dbc-postgresql");
        addSerializer(new StdSerializer<>(Json.class) {
            @Override
            public void serialize(Json value, JsonGenerator gen, SerializerProvider provider) throws IOException {
                gen.writeRawValue(value.asString()); // PostgreSQL produced it, so it is valid JSON
            }
        });
        addSerializer(new StdSerializer<>(Interval.class) {
            @Override
            public void serialize(Interval value, JsonGenerator gen, SerializerProvider provider) throws IOException {
                gen.writeString(iso8601(value));
            }
        });
    }

    /** 1 day 01:01:01.5 → P1DT1H1M1.5S: java.time's Period (years, months, days) and Duration (the rest) joined. */
    static String iso8601(Interval interval) {
        String period = interval.getPeriod().toString();
        Duration duration = interval.getDuration();
        if (duration.isZero()) {
            return period;
        }
        return period.equals("P0D") ? duration.toString() : period + duration.toString().substring(1);
    }
}
