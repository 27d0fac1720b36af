package pgarena;

import io.r2dbc.pool.ConnectionPool;
import io.r2dbc.postgresql.PostgresqlConnectionFactoryProvider;
import io.r2dbc.spi.ConnectionFactory;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.autoconfigure.r2dbc.ConnectionFactoryOptionsBuilderCustomizer;
import org.springframework.context.annotation.Bean;
import reactor.netty.http.HttpResources;

@SpringBootApplication
public class Application {

    public static void main(String[] args) {
        SpringApplication.run(Application.class, args);
    }

    /**
     * The driver's connections run on the HTTP server's event loops (reactor.netty.ioWorkerCount =
     * PGARENA_WORKERS threads) instead of a second set of loops of their own (r2dbc-postgresql's default).
     */
    @Bean
    ConnectionFactoryOptionsBuilderCustomizer sharedEventLoops() {
        return options -> options.option(PostgresqlConnectionFactoryProvider.LOOP_RESOURCES, HttpResources.get());
    }

    /**
     * Opens the pool's initial-size connections before the server starts listening; r2dbc-pool would
     * otherwise open them in the background on the first request.
     */
    @Bean
    SmartInitializingSingleton warmUpConnectionPool(ConnectionFactory connectionFactory) {
        return () -> {
            if (connectionFactory instanceof ConnectionPool pool) {
                pool.warmup().block();
            }
        };
    }
}
