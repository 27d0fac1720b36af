package pgarena.stack;

import jakarta.validation.constraints.Max;
import jakarta.validation.constraints.Min;
import jakarta.validation.constraints.NotNull;
import java.sql.Types;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

/** The tx workload: pgbench's TPC-B transaction, one database transaction per call. */
@Service
public class TpcbService {

    /** The body of POST /api/tx; Integer (not int) so that a missing or null field is caught by @NotNull. */
    public record TxRequest(
            @NotNull @Min(1) @Max(1_000_000) Integer aid,
            @NotNull @Min(1) @Max(100) Integer tid,
            @NotNull @Min(1) @Max(10) Integer bid,
            @NotNull @Min(-5000) @Max(5000) Integer delta) {}

    private final JdbcClient jdbc;

    public TpcbService(JdbcClient jdbc) {
        this.jdbc = jdbc;
    }

    /** Runs the five statements in one transaction (commit on return, rollback on any exception). */
    @Transactional
    public int run(TxRequest tx) {
        jdbc.sql("UPDATE pgbench_accounts SET abalance = abalance + ? WHERE aid = ?")
                .param(1, tx.delta(), Types.INTEGER)
                .param(2, tx.aid(), Types.INTEGER)
                .update();
        int abalance = jdbc.sql("SELECT abalance FROM pgbench_accounts WHERE aid = ?")
                .param(1, tx.aid(), Types.INTEGER)
                .query(Integer.class)
                .single();
        jdbc.sql("UPDATE pgbench_tellers SET tbalance = tbalance + ? WHERE tid = ?")
                .param(1, tx.delta(), Types.INTEGER)
                .param(2, tx.tid(), Types.INTEGER)
                .update();
        jdbc.sql("UPDATE pgbench_branches SET bbalance = bbalance + ? WHERE bid = ?")
                .param(1, tx.delta(), Types.INTEGER)
                .param(2, tx.bid(), Types.INTEGER)
                .update();
        jdbc.sql("INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (?, ?, ?, ?, CURRENT_TIMESTAMP)")
                .param(1, tx.tid(), Types.INTEGER)
                .param(2, tx.bid(), Types.INTEGER)
                .param(3, tx.aid(), Types.INTEGER)
                .param(4, tx.delta(), Types.INTEGER)
                .update();
        return abalance;
    }
}
