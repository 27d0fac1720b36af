package pgarena;

import org.springframework.r2dbc.core.DatabaseClient;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;
import reactor.core.publisher.Mono;

/** pgbench's TPC-B transaction: five statements in one database transaction. */
@Service
public class TpcbService {

    private static final String UPDATE_ACCOUNT = "UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2";
    private static final String SELECT_BALANCE = "SELECT abalance FROM pgbench_accounts WHERE aid = $1";
    private static final String UPDATE_TELLER = "UPDATE pgbench_tellers SET tbalance = tbalance + $1 WHERE tid = $2";
    private static final String UPDATE_BRANCH = "UPDATE pgbench_branches SET bbalance = bbalance + $1 WHERE bid = $2";
    private static final String INSERT_HISTORY =
            "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES ($1, $2, $3, $4, CURRENT_TIMESTAMP)";

    private final DatabaseClient db;

    public TpcbService(DatabaseClient db) {
        this.db = db;
    }

    /** Runs the transaction and returns the account's balance read back; commits on success, rolls back on error. */
    @Transactional
    public Mono<Integer> transfer(int aid, int tid, int bid, int delta) {
        return db.sql(UPDATE_ACCOUNT).bind(0, delta).bind(1, aid).then()
                .then(db.sql(SELECT_BALANCE).bind(0, aid).map(row -> row.get(0, Integer.class)).one())
                .flatMap(balance -> db.sql(UPDATE_TELLER).bind(0, delta).bind(1, tid).then()
                        .then(db.sql(UPDATE_BRANCH).bind(0, delta).bind(1, bid).then())
                        .then(db.sql(INSERT_HISTORY).bind(0, tid).bind(1, bid).bind(2, aid).bind(3, delta).then())
                        .thenReturn(balance));
    }
}
