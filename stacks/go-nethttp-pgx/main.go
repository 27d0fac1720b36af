// pgarena stack: Go net/http (stdlib ServeMux) + jackc/pgx v5 (pgxpool).
package main

import (
	"context"
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

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
)

type User struct {
	ID        int32     `db:"id" json:"id"`
	Username  string    `db:"username" json:"username"`
	FullName  string    `db:"full_name" json:"full_name"`
	Email     string    `db:"email" json:"email"`
	Age       int16     `db:"age" json:"age"`
	CreatedAt time.Time `db:"created_at" json:"created_at"`
}

type PerfRow struct {
	RowNum         int32            `db:"row_num" json:"row_num"`
	TextVal        string           `db:"text_val" json:"text_val"`
	VarcharVal     string           `db:"varchar_val" json:"varchar_val"`
	CharVal        string           `db:"char_val" json:"char_val"`
	SmallintVal    int16            `db:"smallint_val" json:"smallint_val"`
	IntVal         int32            `db:"int_val" json:"int_val"`
	BigintVal      int64            `db:"bigint_val" json:"bigint_val"`
	NumericVal     pgtype.Numeric   `db:"numeric_val" json:"numeric_val"`
	RealVal        float32          `db:"real_val" json:"real_val"`
	DoubleVal      float64          `db:"double_val" json:"double_val"`
	BoolVal        bool             `db:"bool_val" json:"bool_val"`
	DateVal        pgtype.Date      `db:"date_val" json:"date_val"`
	TimeVal        string           `db:"time_val" json:"time_val"`
	TimestampVal   pgtype.Timestamp `db:"timestamp_val" json:"timestamp_val"`
	TimestamptzVal time.Time        `db:"timestamptz_val" json:"timestamptz_val"`
	IntervalVal    time.Duration    `db:"interval_val" json:"interval_val"`
	UUIDVal        pgtype.UUID      `db:"uuid_val" json:"uuid_val"`
	JSONVal        json.RawMessage  `db:"json_val" json:"json_val"`
	JSONBVal       json.RawMessage  `db:"jsonb_val" json:"jsonb_val"`
	IntArrayVal    []int32          `db:"int_array_val" json:"int_array_val"`
	TextArrayVal   []string         `db:"text_array_val" json:"text_array_val"`
	NullableText   *string          `db:"nullable_text" json:"nullable_text"`
	NullableInt    *int32           `db:"nullable_int" json:"nullable_int"`
}

// Seed 000's newer scenarios (src/pgarena/sql/scenarios.sql): functions that touch no table.
type MinimalRow struct {
	Status string    `db:"status" json:"status"`
	TS     time.Time `db:"ts" json:"ts"`
}

type PostRow struct {
	RowNum   int32           `db:"row_num" json:"row_num"`
	Echo     json.RawMessage `db:"echo" json:"echo"`
	Computed string          `db:"computed" json:"computed"`
}

type NestedRow struct {
	RowNum int32           `db:"row_num" json:"row_num"`
	Nested json.RawMessage `db:"nested" json:"nested"`
}

type LargePayloadRow struct {
	Data string `db:"data" json:"data"`
}

type ManyParamsRow struct {
	ParamCount int32   `db:"param_count" json:"param_count"`
	Checksum   *string `db:"checksum" json:"checksum"` // md5(NULL) is NULL when _p1 is absent
}

const usersSQL = `SELECT id, username, full_name, email, age, created_at FROM users ORDER BY id LIMIT $1`

const perfTestSQL = `SELECT * FROM perf_test($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)`

const (
	perfMinimalSQL      = `SELECT * FROM perf_minimal()`
	perfPostSQL         = `SELECT * FROM perf_post($1, $2)`
	perfNestedSQL       = `SELECT * FROM perf_nested($1, $2)`
	perfLargePayloadSQL = `SELECT * FROM perf_large_payload($1)`
	perfManyParamsSQL   = `SELECT * FROM perf_many_params($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20)`
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
	pool *pgxpool.Pool
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
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && len(pgErr.Code) == 5 && pgErr.Code[:2] == "22" {
		writeError(w, http.StatusBadRequest, pgErr.Message)
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
	rows, _ := s.pool.Query(r.Context(), usersSQL, limit)
	users, err := pgx.CollectRows(rows, pgx.RowToStructByName[User])
	if err != nil {
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
	rows, _ := s.pool.Query(r.Context(), perfTestSQL, args...)
	result, err := pgx.CollectRows(rows, pgx.RowToStructByName[PerfRow])
	if err != nil {
		writeDBError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, result)
}

func (s *server) perfMinimal(w http.ResponseWriter, r *http.Request) {
	rows, _ := s.pool.Query(r.Context(), perfMinimalSQL)
	result, err := pgx.CollectRows(rows, pgx.RowToStructByName[MinimalRow])
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
	// json.RawMessage is encoded as the JSON text itself (jsonb parameter, or a quoted literal in
	// simple-protocol mode), so the payload reaches PostgreSQL exactly as the client sent it.
	rows, _ := s.pool.Query(r.Context(), perfPostSQL, *req.Records, req.Payload)
	result, err := pgx.CollectRows(rows, pgx.RowToStructByName[PostRow])
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
	rows, _ := s.pool.Query(r.Context(), perfNestedSQL, records, depth)
	result, err := pgx.CollectRows(rows, pgx.RowToStructByName[NestedRow])
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
	rows, _ := s.pool.Query(r.Context(), perfLargePayloadSQL, sizeKB)
	result, err := pgx.CollectRows(rows, pgx.RowToStructByName[LargePayloadRow])
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
	rows, _ := s.pool.Query(r.Context(), perfManyParamsSQL, args...)
	result, err := pgx.CollectRows(rows, pgx.RowToStructByName[ManyParamsRow])
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

func (s *server) tx(w http.ResponseWriter, r *http.Request) {
	req, err := decodeTx(w, r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	aid, tid, bid, delta := *req.AID, *req.TID, *req.BID, *req.Delta
	var res TxResponse
	// BeginFunc commits when the function returns nil and rolls back on any error.
	err = pgx.BeginFunc(r.Context(), s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(r.Context(), txUpdateAccountSQL, delta, aid); err != nil {
			return err
		}
		if err := tx.QueryRow(r.Context(), txSelectBalanceSQL, aid).Scan(&res.ABalance); err != nil {
			return err
		}
		if _, err := tx.Exec(r.Context(), txUpdateTellerSQL, delta, tid); err != nil {
			return err
		}
		if _, err := tx.Exec(r.Context(), txUpdateBranchSQL, delta, bid); err != nil {
			return err
		}
		_, err := tx.Exec(r.Context(), txInsertHistorySQL, tid, bid, aid, delta)
		return err
	})
	if err != nil {
		writeDBError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
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

func main() {
	runtime.GOMAXPROCS(envInt("PGARENA_WORKERS", runtime.GOMAXPROCS(0)))

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()

	cfg, err := pgxpool.ParseConfig(os.Getenv("PGARENA_DATABASE_URL"))
	if err != nil {
		log.Fatalf("parse PGARENA_DATABASE_URL: %v", err)
	}
	cfg.MaxConns = int32(envInt("PGARENA_POOL_SIZE", 10))

	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		log.Fatalf("create pool: %v", err)
	}
	defer pool.Close()
	if err := pool.Ping(ctx); err != nil {
		log.Fatalf("connect to database: %v", err)
	}

	s := &server{pool: pool}
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
	log.Printf("listening on %s (GOMAXPROCS=%d, pool max conns=%d)", srv.Addr, runtime.GOMAXPROCS(0), cfg.MaxConns)

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
