package pgarena.stack;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;

/** pgarena stack: Spring Boot MVC (Tomcat) + JDBC (JdbcClient, HikariCP, PostgreSQL JDBC driver). */
@SpringBootApplication
public class Application {

    public static void main(String[] args) {
        SpringApplication.run(Application.class, args);
    }
}
