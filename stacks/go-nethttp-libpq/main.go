// pgarena stack: Go net/http (stdlib ServeMux) + database/sql + lib/pq, no prepared statements.
//
// Every query is a plain db.Query / tx.Exec with bound arguments. lib/pq runs such a call on the
// unnamed statement: Parse("") + Describe + Sync, then Bind + Execute + Sync (two round trips,
// parameters as text); nothing is prepared by name or cached between calls.
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"github.com/lib/pq"
)

type User struct {
	ID        int32     `json:"id"`
	Username  string    `json:"username"`
	FullName  string    `json:"full_name"`
	Email     string    `json:"email"`
	Age       int16     `json:"age"`
	CreatedAt time.Time `json:"created_at"`
}

type PerfRow struct {
	RowNum         int32           `json:"row_num"`
	TextVal        string          `json:"text_val"`
	VarcharVal     string          `json:"varchar_val"`
	CharVal        string          `json:"char_val"`
	SmallintVal    int16           `json:"smallint_val"`
	IntVal         int32           `json:"int_val"`
	BigintVal      int64           `json:"bigint_val"`
	NumericVal     json.Number     `json:"numeric_val"`
	RealVal        float32         `json:"real_val"`
	DoubleVal      float64         `json:"double_val"`
	BoolVal        bool            `json:"bool_val"`
	DateVal        time.Time       `json:"date_val"`
	TimeVal        time.Time       `json:"time_val"`
	TimestampVal   time.Time       `json:"timestamp_val"`
	TimestamptzVal time.Time       `json:"timestamptz_val"`
	IntervalVal    string          `json:"interval_val"`
	UUIDVal        string          `json:"uuid_val"`
	JSONVal        json.RawMessage `json:"json_val"`
	JSONBVal       json.RawMessage `json:"jsonb_val"`
	IntArrayVal    pq.Int32Array   `json:"int_array_val"`
	TextArrayVal   pq.StringArray  `json:"text_array_val"`
	NullableText   *string         `json:"nullable_text"`
	NullableInt    *int32          `json:"nullable_int"`
}

// scanTargets lists the fields in the column order of perf_test's result.
func (p *PerfRow) scanTargets() []any {
	return []any{
		&p.RowNum, &p.TextVal, &p.VarcharVal, &p.CharVal, &p.SmallintVal, &p.IntVal, &p.BigintVal,
		&p.NumericVal, &p.RealVal, &p.DoubleVal, &p.BoolVal, &p.DateVal, &p.TimeVal, &p.TimestampVal,
		&p.TimestamptzVal, &p.IntervalVal, &p.UUIDVal, &p.JSONVal, &p.JSONBVal, &p.IntArrayVal,
		&p.TextArrayVal, &p.NullableText, &p.NullableInt,
	}
}

// Seed 000's newer scenarios (src/pgarena/sql/scenarios.sql): functions that touch no table.
type MinimalRow struct {
	Status string    `json:"status"`
	TS     time.Time `json:"ts"`
}

type PostRow struct {
	RowNum   int32           `json:"row_num"`
	Echo     json.RawMessage `json:"echo"`
	Computed string          `json:"computed"`
}

type NestedRow struct {
	RowNum int32           `json:"row_num"`
	Nested json.RawMessage `json:"nested"`
}

type LargePayloadRow struct {
	Data string `json:"data"`
}

type ManyParamsRow struct {
	ParamCount int32   `json:"param_count"`
	Checksum   *string `json:"checksum"` // md5(NULL) is NULL when _p1 is absent
}

const usersSQL = `SELECT id, username, full_name, email, age, created_at FROM users ORDER BY id LIMIT $1`

const perfTestSQL = `SELECT row_num, text_val, varchar_val, char_val, smallint_val, int_val, bigint_val,
	numeric_val, real_val, double_val, bool_val, date_val, time_val, timestamp_val, timestamptz_val,
	interval_val, uuid_val, json_val, jsonb_val, int_array_val, text_array_val, nullable_text, nullable_int
	FROM perf_test($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)`

const (
	perfMinimalSQL      = `SELECT status, ts FROM perf_minimal()`
	perfPostSQL         = `SELECT row_num, echo, computed FROM perf_post($1, $2)`
	perfNestedSQL       = `SELECT row_num, nested FROM perf_nested($1, $2)`
	perfLargePayloadSQL = `SELECT data FROM perf_large_payload($1)`
	perfManyParamsSQL   = `SELECT param_count, checksum FROM perf_many_params($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20)`
)

// perfManyParams names perf_many_params' query parameters in call order. Each is bound as text
// (absent: SQL NULL) and PostgreSQL parses it into the function's parameter type.
var perfManyParams = func() []string {
	names := make([]string, 20)
	for i := range names {
		names[i] = "_p" + strconv.Itoa(i+1)
	}
	return names
}()

// perf_test parameters after _records, in call order. They are bound as text and
// PostgreSQL parses them into the function's parameter types.
var perfTestParams = []string{
	"_text", "_int", "_bigint", "_numeric", "_real", "_double", "_bool", "_date",
	"_timestamp", "_timestamptz", "_uuid", "_json", "_jsonb", "_int_array", "_text_array",
}

// TPC-B transaction (pgbench's built-in script), run statement by statement in one transaction.
const (
	txUpdateAccountSQL = `UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2`
	txSelectBalanceSQL = `SELECT abalance FROM pgbench_accounts WHERE aid = $1`
	txUpdateTellerSQL  = `UPDATE pgbench_tellers SET tbalance = tbalance + $1 WHERE tid = $2`
	txUpdateBranchSQL  = `UPDATE pgbench_branches SET bbalance = bbalance + $1 WHERE bid = $2`
	txInsertHistorySQL = `INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES ($1, $2, $3, $4, CURRENT_TIMESTAMP)`
)

// TxRequest is the body of POST /api/tx. Pointers tell a missing or null field from a zero.
type TxRequest struct {
	AID   *int `json:"aid"`
	TID   *int `json:"tid"`
	BID   *int `json:"bid"`
	Delta *int `json:"delta"`
}

type TxResponse struct {
	ABalance int32 `json:"abalance"`
}

// maxTxBody bounds the request body of POST /api/tx.
const maxTxBody = 64 << 10

// PostRequest is the body of POST /api/perf-post. _records is a pointer to tell a missing or null
// field from a zero; _payload stays raw JSON (checked by the decoder, passed to PostgreSQL as is).
type PostRequest struct {
	Records *int            `json:"_records"`
	Payload json.RawMessage `json:"_payload"`
}

// maxPostBody bounds the request body of POST /api/perf-post.
const maxPostBody = 1 << 20

type server struct {
	db *sql.DB
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if err := json.NewEncoder(w).Encode(v); err != nil {
		log.Printf("write response: %v", err)
	}
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}

// writeDBError maps SQLSTATE class 22 (data exception: bad client input) to 400, anything else to 500.
func writeDBError(w http.ResponseWriter, err error) {
	var pqErr *pq.Error
	if errors.As(err, &pqErr) && len(pqErr.Code) == 5 && pqErr.Code.Class() == "22" {
		writeError(w, http.StatusBadRequest, pqErr.Message)
		return
	}
	log.Printf("database error: %v", err)
	writeError(w, http.StatusInternalServerError, "internal server error")
}

// intParam parses a required integer query parameter within [min, max].
func intParam(q url.Values, name string, min, max int) (int, error) {
	s := q.Get(name)
	if s == "" {
		return 0, fmt.Errorf("%s is required", name)
	}
	n, err := strconv.Atoi(s)
	if err != nil || s[0] == '+' || n < min || n > max { // Atoi would accept a leading '+'
		return 0, fmt.Errorf("%s must be an integer between %d and %d", name, min, max)
	}
	return n, nil
}

func (s *server) static(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "timestamp": time.Now().UnixMilli()})
}

func (s *server) users(w http.ResponseWriter, r *http.Request) {
	limit, err := intParam(r.URL.Query(), "limit", 1, 10000)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	rows, err := s.db.QueryContext(r.Context(), usersSQL, limit)
	if err != nil {
		writeDBError(w, err)
		return
	}
	defer rows.Close()
	users := make([]User, 0, limit)
	for rows.Next() {
		var u User
		if err := rows.Scan(&u.ID, &u.Username, &u.FullName, &u.Email, &u.Age, &u.CreatedAt); err != nil {
			writeDBError(w, err)
			return
		}
		users = append(users, u)
	}
	if err := rows.Err(); err != nil {
		writeDBError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, users)
}

func (s *server) perfTest(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	records, err := intParam(q, "_records", 1, 1000)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	args := make([]any, 0, 16)
	args = append(args, records)
	for _, name := range perfTestParams {
		if !q.Has(name) {
			writeError(w, http.StatusBadRequest, name+" is required")
			return
		}
		args = append(args, q.Get(name))
	}
	rows, err := s.db.QueryContext(r.Context(), perfTestSQL, args...)
	if err != nil {
		writeDBError(w, err)
		return
	}
	defer rows.Close()
	result := make([]PerfRow, 0, records)
	for rows.Next() {
		var p PerfRow
		if err := rows.Scan(p.scanTargets()...); err != nil {
			writeDBError(w, err)
			return
		}
		result = append(result, p)
	}
	if err := rows.Err(); err != nil {
		writeDBError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, result)
}

// queryRows runs query and scans every row with scan (which fills a fresh T); it returns the rows
// or the first error (query, scan or iteration).
func queryRows[T any](ctx context.Context, db *sql.DB, query string, scan func(*sql.Rows, *T) error, args ...any) ([]T, error) {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	result := make([]T, 0, 1)
	for rows.Next() {
		var v T
		if err := scan(rows, &v); err != nil {
			return nil, err
		}
		result = append(result, v)
	}
	return result, rows.Err()
}

func (s *server) perfMinimal(w http.ResponseWriter, r *http.Request) {
	result, err := queryRows(r.Context(), s.db, perfMinimalSQL, func(rows *sql.Rows, m *MinimalRow) error {
		return rows.Scan(&m.Status, &m.TS)
	})
	if err != nil {
		writeDBError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, result)
}

// decodePost reads and validates the JSON body of POST /api/perf-post.
func decodePost(w http.ResponseWriter, r *http.Request) (PostRequest, error) {
	var req PostRequest
	mediaType, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mediaType != "application/json" {
		return req, errors.New("Content-Type must be application/json")
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxPostBody))
	if err != nil {
		return req, fmt.Errorf("read body: %v", err)
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return req, fmt.Errorf("invalid JSON body: %v", err)
	}
	if req.Records == nil {
		return req, errors.New("_records is required and must be an integer")
	}
	if *req.Records < 1 || *req.Records > 1000 {
		return req, errors.New("_records must be an integer between 1 and 1000")
	}
	if len(req.Payload) == 0 || req.Payload[0] != '{' {
		return req, errors.New("_payload is required and must be a JSON object")
	}
	return req, nil
}

func (s *server) perfPost(w http.ResponseWriter, r *http.Request) {
	req, err := decodePost(w, r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	// The payload is bound as a string: lib/pq sends it as text, PostgreSQL parses it as jsonb. (A
	// []byte / json.RawMessage argument would be sent as bytea hex text.)
	result, err := queryRows(r.Context(), s.db, perfPostSQL, func(rows *sql.Rows, p *PostRow) error {
		return rows.Scan(&p.RowNum, &p.Echo, &p.Computed)
	}, *req.Records, string(req.Payload))
	if err != nil {
		writeDBError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, result)
}

func (s *server) perfNested(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	records, err := intParam(q, "_records", 1, 1000)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	depth, err := intParam(q, "_depth", 1, 3)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	result, err := queryRows(r.Context(), s.db, perfNestedSQL, func(rows *sql.Rows, n *NestedRow) error {
		return rows.Scan(&n.RowNum, &n.Nested)
	}, records, depth)
	if err != nil {
		writeDBError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, result)
}

func (s *server) perfLargePayload(w http.ResponseWriter, r *http.Request) {
	sizeKB, err := intParam(r.URL.Query(), "_size_kb", 1, 1024)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	result, err := queryRows(r.Context(), s.db, perfLargePayloadSQL, func(rows *sql.Rows, l *LargePayloadRow) error {
		return rows.Scan(&l.Data)
	}, sizeKB)
	if err != nil {
		writeDBError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, result)
}

func (s *server) perfManyParams(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	args := make([]any, len(perfManyParams))
	for i, name := range perfManyParams {
		if q.Has(name) {
			args[i] = q.Get(name)
		} // else nil: SQL NULL
	}
	result, err := queryRows(r.Context(), s.db, perfManyParamsSQL, func(rows *sql.Rows, m *ManyParamsRow) error {
		return rows.Scan(&m.ParamCount, &m.Checksum)
	}, args...)
	if err != nil {
		writeDBError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, result)
}

// decodeTx reads and validates the JSON body of POST /api/tx.
func decodeTx(w http.ResponseWriter, r *http.Request) (TxRequest, error) {
	var req TxRequest
	mediaType, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mediaType != "application/json" {
		return req, errors.New("Content-Type must be application/json")
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxTxBody))
	if err != nil {
		return req, fmt.Errorf("read body: %v", err)
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return req, fmt.Errorf("invalid JSON body: %v", err)
	}
	fields := []struct {
		name     string
		v        *int
		min, max int
	}{
		{"aid", req.AID, 1, 1000000},
		{"tid", req.TID, 1, 100},
		{"bid", req.BID, 1, 10},
		{"delta", req.Delta, -5000, 5000},
	}
	for _, f := range fields {
		if f.v == nil {
			return req, fmt.Errorf("%s is required and must be an integer", f.name)
		}
		if *f.v < f.min || *f.v > f.max {
			return req, fmt.Errorf("%s must be an integer between %d and %d", f.name, f.min, f.max)
		}
	}
	return req, nil
}

// runTx runs the TPC-B statements in one sql.Tx; it commits on success and rolls back on any error.
func (s *server) runTx(ctx context.Context, aid, tid, bid, delta int) (int32, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback() // no-op after a successful Commit

	var abalance int32
	if _, err := tx.ExecContext(ctx, txUpdateAccountSQL, delta, aid); err != nil {
		return 0, err
	}
	if err := tx.QueryRowContext(ctx, txSelectBalanceSQL, aid).Scan(&abalance); err != nil {
		return 0, err
	}
	if _, err := tx.ExecContext(ctx, txUpdateTellerSQL, delta, tid); err != nil {
		return 0, err
	}
	if _, err := tx.ExecContext(ctx, txUpdateBranchSQL, delta, bid); err != nil {
		return 0, err
	}
	if _, err := tx.ExecContext(ctx, txInsertHistorySQL, tid, bid, aid, delta); err != nil {
		return 0, err
	}
	return abalance, tx.Commit()
}

func (s *server) tx(w http.ResponseWriter, r *http.Request) {
	req, err := decodeTx(w, r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	abalance, err := s.runTx(r.Context(), *req.AID, *req.TID, *req.BID, *req.Delta)
	if err != nil {
		writeDBError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, TxResponse{ABalance: abalance})
}

func notFound(w http.ResponseWriter, r *http.Request) {
	writeError(w, http.StatusNotFound, "not found")
}

func envInt(name string, def int) int {
	if v := os.Getenv(name); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			log.Fatalf("%s must be a positive integer, got %q", name, v)
		}
		return n
	}
	return def
}

// newConnector returns lib/pq's connector for dsn (and the PG* environment), with sslmode=prefer decided
// once, here, instead of on every new connection. lib/pq 1.12.3 decides prefer per connection: it sends
// SSLRequest and, when the server refuses TLS, dials again without closing the refused socket, which stays
// open (and keeps a PostgreSQL process waiting for a startup packet) until Go's garbage collector finalises
// it, so a pool of 10 briefly holds 20 TCP connections (lib/pq issue #1390). One probe connection with
// sslmode=require tells which mode prefer would pick: require when the server accepts TLS, disable when it
// refuses it; any other failure leaves prefer as it was (the ping that follows reports it).
func newConnector(ctx context.Context, dsn string) (*pq.Connector, error) {
	cfg, err := pq.NewConfig(dsn)
	if err != nil {
		return nil, err
	}
	if cfg.SSLMode == pq.SSLModePrefer {
		probe := cfg.Clone()
		probe.SSLMode = pq.SSLModeRequire
		probeConnector, err := pq.NewConnectorConfig(probe)
		if err != nil {
			return nil, err
		}
		conn, err := probeConnector.Connect(ctx)
		switch {
		case err == nil:
			conn.Close()
			cfg.SSLMode = pq.SSLModeRequire
		case errors.Is(err, pq.ErrSSLNotSupported):
			cfg.SSLMode = pq.SSLModeDisable
		}
	}
	return pq.NewConnectorConfig(cfg)
}

func main() {
	runtime.GOMAXPROCS(envInt("PGARENA_WORKERS", runtime.GOMAXPROCS(0)))

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()

	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	connector, err := newConnector(pingCtx, os.Getenv("PGARENA_DATABASE_URL"))
	if err != nil {
		log.Fatalf("parse PGARENA_DATABASE_URL: %v", err)
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	poolSize := envInt("PGARENA_POOL_SIZE", 10)
	db.SetMaxOpenConns(poolSize)
	db.SetMaxIdleConns(poolSize) // database/sql keeps only 2 idle connections by default
	err = db.PingContext(pingCtx)
	cancel()
	if err != nil {
		log.Fatalf("connect to database: %v", err)
	}

	s := &server{db: db}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/static", s.static)
	mux.HandleFunc("GET /api/users", s.users)
	mux.HandleFunc("GET /api/perf-test", s.perfTest)
	mux.HandleFunc("POST /api/tx", s.tx)
	mux.HandleFunc("GET /api/perf-minimal", s.perfMinimal)
	mux.HandleFunc("POST /api/perf-post", s.perfPost)
	mux.HandleFunc("GET /api/perf-nested", s.perfNested)
	mux.HandleFunc("GET /api/perf-large-payload", s.perfLargePayload)
	mux.HandleFunc("GET /api/perf-many-params", s.perfManyParams)
	mux.HandleFunc("/", notFound)

	srv := &http.Server{
		Addr:              net.JoinHostPort(os.Getenv("PGARENA_HOST"), os.Getenv("PGARENA_PORT")),
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
	}

	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	log.Printf("listening on %s (GOMAXPROCS=%d, max open conns=%d)", srv.Addr, runtime.GOMAXPROCS(0), poolSize)

	select {
	case err := <-errc:
		log.Fatalf("server: %v", err)
	case <-ctx.Done():
	}
	log.Print("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		srv.Close()
	}
}
