//! pgarena stack: actix-web 4 + tokio-postgres with a deadpool-postgres pool (REST only).

mod interval;

use std::{env, fmt, io, str::FromStr};

use actix_web::{
    error::{JsonPayloadError, QueryPayloadError},
    http::StatusCode,
    web, App, HttpRequest, HttpResponse, HttpServer, Resource, ResponseError,
};
use chrono::{DateTime, FixedOffset, NaiveDate, NaiveDateTime, NaiveTime, Utc};
use deadpool_postgres::{Manager, ManagerConfig, Pool, PoolError, RecyclingMethod};
use rust_decimal::Decimal;
use serde::{de, Deserialize, Deserializer, Serialize};
use serde_json::Value;
use tokio_postgres::{NoTls, Row};
use uuid::Uuid;

use crate::interval::Interval;

const USERS_SQL: &str =
    "SELECT id, username, full_name, email, age, created_at FROM users ORDER BY id LIMIT $1";

// json/jsonb and the arrays are bound as text and parsed by PostgreSQL, which owns the
// array-literal syntax and keeps JSON numbers exact; the other parameters are bound typed.
const PERF_TEST_SQL: &str = "SELECT * FROM perf_test($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, \
     $11, $12, $13::text::json, $14::text::jsonb, $15::text::int[], $16::text::text[])";

const PERF_MINIMAL_SQL: &str = "SELECT * FROM perf_minimal()";
// $2 is a jsonb parameter: the parsed payload (serde_json::Value) is sent as JSON text.
const PERF_POST_SQL: &str = "SELECT * FROM perf_post($1, $2)";
const PERF_NESTED_SQL: &str = "SELECT * FROM perf_nested($1, $2)";
const PERF_LARGE_PAYLOAD_SQL: &str = "SELECT * FROM perf_large_payload($1)";
// All twenty bound as text (NULL when absent) and cast by PostgreSQL to the function's types.
const PERF_MANY_PARAMS_SQL: &str = "SELECT * FROM perf_many_params(\
     $1::text, $2::text::int, $3::text::bool, $4::text::numeric, $5::text, \
     $6::text, $7::text::int, $8::text::bool, $9::text::numeric, $10::text, \
     $11::text, $12::text::int, $13::text::bool, $14::text::numeric, $15::text, \
     $16::text, $17::text::int, $18::text::bool, $19::text::numeric, $20::text)";

const TX_SQL: [&str; 5] = [
    "UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2",
    "SELECT abalance FROM pgbench_accounts WHERE aid = $1",
    "UPDATE pgbench_tellers SET tbalance = tbalance + $1 WHERE tid = $2",
    "UPDATE pgbench_branches SET bbalance = bbalance + $1 WHERE bid = $2",
    "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) \
     VALUES ($1, $2, $3, $4, CURRENT_TIMESTAMP)",
];

// ---------------------------------------------------------------------------------------------
// Errors: bad input (incl. SQLSTATE class 22) is 400, anything else 500; always a JSON body.

#[derive(Debug)]
enum ApiError {
    BadRequest(String),
    NotFound,
    MethodNotAllowed,
    Internal,
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ApiError::BadRequest(msg) => f.write_str(msg),
            ApiError::NotFound => f.write_str("not found"),
            ApiError::MethodNotAllowed => f.write_str("method not allowed"),
            ApiError::Internal => f.write_str("internal server error"),
        }
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        match self {
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::NotFound => StatusCode::NOT_FOUND,
            ApiError::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn error_response(&self) -> HttpResponse {
        #[derive(Serialize)]
        struct Body {
            error: String,
        }
        HttpResponse::build(self.status_code()).json(Body {
            error: self.to_string(),
        })
    }
}

impl From<tokio_postgres::Error> for ApiError {
    fn from(err: tokio_postgres::Error) -> Self {
        match err.as_db_error() {
            Some(db) if db.code().code().starts_with("22") => {
                ApiError::BadRequest(db.message().to_owned())
            }
            Some(db) => {
                eprintln!("database error: {db}");
                ApiError::Internal
            }
            None => {
                eprintln!("database error: {err}");
                ApiError::Internal
            }
        }
    }
}

impl From<PoolError> for ApiError {
    fn from(err: PoolError) -> Self {
        match err {
            PoolError::Backend(err) => err.into(),
            err => {
                eprintln!("pool error: {err}");
                ApiError::Internal
            }
        }
    }
}

type ApiResult<T> = Result<T, ApiError>;

fn check_range(name: &str, value: i64, min: i64, max: i64) -> ApiResult<()> {
    if (min..=max).contains(&value) {
        Ok(())
    } else {
        Err(ApiError::BadRequest(format!(
            "{name} must be an integer between {min} and {max}"
        )))
    }
}

/// A query-string integer: an optional minus sign and ASCII digits only. serde_urlencoded parses
/// with `FromStr`, which for Rust's integers also takes a leading "+"; overflow stays an error.
fn strict_int<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: FromStr,
    T::Err: fmt::Display,
{
    let text = String::deserialize(deserializer)?;
    let digits = text.strip_prefix('-').unwrap_or(&text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(de::Error::custom(format!("not an integer: {text:?}")));
    }
    text.parse().map_err(de::Error::custom)
}

// ---------------------------------------------------------------------------------------------
// GET /api/static

#[derive(Serialize)]
struct Status {
    status: &'static str,
    timestamp: i64,
}

async fn static_handler() -> HttpResponse {
    HttpResponse::Ok().json(Status {
        status: "ok",
        timestamp: Utc::now().timestamp_millis(),
    })
}

// ---------------------------------------------------------------------------------------------
// GET /api/users?limit=N

#[derive(Deserialize)]
struct UsersQuery {
    #[serde(deserialize_with = "strict_int")]
    limit: i64,
}

#[derive(Serialize)]
struct User {
    id: i32,
    username: String,
    full_name: String,
    email: String,
    age: i16,
    created_at: DateTime<Utc>,
}

impl TryFrom<&Row> for User {
    type Error = tokio_postgres::Error;

    fn try_from(row: &Row) -> Result<Self, Self::Error> {
        Ok(User {
            id: row.try_get("id")?,
            username: row.try_get("username")?,
            full_name: row.try_get("full_name")?,
            email: row.try_get("email")?,
            age: row.try_get("age")?,
            created_at: row.try_get("created_at")?,
        })
    }
}

async fn users_handler(
    pool: web::Data<Pool>,
    query: web::Query<UsersQuery>,
) -> ApiResult<HttpResponse> {
    let limit = query.limit;
    check_range("limit", limit, 1, 10_000)?;
    let client = pool.get().await?;
    let stmt = client.prepare_cached(USERS_SQL).await?;
    let users = client
        .query(&stmt, &[&limit])
        .await?
        .iter()
        .map(User::try_from)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(HttpResponse::Ok().json(users))
}

// ---------------------------------------------------------------------------------------------
// GET /api/perf-test?_records=…&…

#[derive(Deserialize)]
struct PerfTestQuery {
    #[serde(deserialize_with = "strict_int")]
    _records: i32,
    _text: String,
    _int: i32,
    _bigint: i64,
    _numeric: Decimal,
    _real: f32,
    _double: f64,
    _bool: bool,
    _date: NaiveDate,
    _timestamp: NaiveDateTime,
    _timestamptz: DateTime<FixedOffset>,
    _uuid: Uuid,
    _json: String,
    _jsonb: String,
    _int_array: String,
    _text_array: String,
}

#[derive(Serialize)]
struct PerfTestRow {
    row_num: i32,
    text_val: String,
    varchar_val: String,
    char_val: String,
    smallint_val: i16,
    int_val: i32,
    bigint_val: i64,
    numeric_val: Decimal,
    real_val: f32,
    double_val: f64,
    bool_val: bool,
    date_val: NaiveDate,
    time_val: NaiveTime,
    timestamp_val: NaiveDateTime,
    timestamptz_val: DateTime<Utc>,
    interval_val: Interval,
    uuid_val: Uuid,
    json_val: Value,
    jsonb_val: Value,
    int_array_val: Vec<i32>,
    text_array_val: Vec<String>,
    nullable_text: Option<String>,
    nullable_int: Option<i32>,
}

impl TryFrom<&Row> for PerfTestRow {
    type Error = tokio_postgres::Error;

    fn try_from(row: &Row) -> Result<Self, Self::Error> {
        Ok(PerfTestRow {
            row_num: row.try_get("row_num")?,
            text_val: row.try_get("text_val")?,
            varchar_val: row.try_get("varchar_val")?,
            char_val: row.try_get("char_val")?,
            smallint_val: row.try_get("smallint_val")?,
            int_val: row.try_get("int_val")?,
            bigint_val: row.try_get("bigint_val")?,
            numeric_val: row.try_get("numeric_val")?,
            real_val: row.try_get("real_val")?,
            double_val: row.try_get("double_val")?,
            bool_val: row.try_get("bool_val")?,
            date_val: row.try_get("date_val")?,
            time_val: row.try_get("time_val")?,
            timestamp_val: row.try_get("timestamp_val")?,
            timestamptz_val: row.try_get("timestamptz_val")?,
            interval_val: row.try_get("interval_val")?,
            uuid_val: row.try_get("uuid_val")?,
            json_val: row.try_get("json_val")?,
            jsonb_val: row.try_get("jsonb_val")?,
            int_array_val: row.try_get("int_array_val")?,
            text_array_val: row.try_get("text_array_val")?,
            nullable_text: row.try_get("nullable_text")?,
            nullable_int: row.try_get("nullable_int")?,
        })
    }
}

async fn perf_test_handler(
    pool: web::Data<Pool>,
    query: web::Query<PerfTestQuery>,
) -> ApiResult<HttpResponse> {
    let q = query.into_inner();
    check_range("_records", q._records.into(), 1, 1000)?;
    let client = pool.get().await?;
    let stmt = client.prepare_cached(PERF_TEST_SQL).await?;
    let rows = client
        .query(
            &stmt,
            &[
                &q._records,
                &q._text,
                &q._int,
                &q._bigint,
                &q._numeric,
                &q._real,
                &q._double,
                &q._bool,
                &q._date,
                &q._timestamp,
                &q._timestamptz,
                &q._uuid,
                &q._json,
                &q._jsonb,
                &q._int_array,
                &q._text_array,
            ],
        )
        .await?;
    let rows = rows
        .iter()
        .map(PerfTestRow::try_from)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(HttpResponse::Ok().json(rows))
}

// ---------------------------------------------------------------------------------------------
// GET /api/perf-minimal

#[derive(Serialize)]
struct MinimalRow {
    status: String,
    ts: DateTime<Utc>,
}

async fn perf_minimal_handler(pool: web::Data<Pool>) -> ApiResult<HttpResponse> {
    let client = pool.get().await?;
    let stmt = client.prepare_cached(PERF_MINIMAL_SQL).await?;
    let rows = client
        .query(&stmt, &[])
        .await?
        .iter()
        .map(|row| {
            Ok(MinimalRow {
                status: row.try_get("status")?,
                ts: row.try_get("ts")?,
            })
        })
        .collect::<Result<Vec<_>, tokio_postgres::Error>>()?;
    Ok(HttpResponse::Ok().json(rows))
}

// ---------------------------------------------------------------------------------------------
// POST /api/perf-post {"_records": n, "_payload": {...}}

#[derive(Serialize)]
struct PostRow {
    row_num: i32,
    echo: Value,
    computed: String,
}

/// The body is parsed by web::Json into a JSON object (serde_json::Map: an array, scalar or null
/// body is an extractor error); `_records` must be a JSON integer (serde_json keeps 1.5, 1.0 and
/// 1e3 as floats, so `as_i64` is None for them) and `_payload` a JSON object.
async fn perf_post_handler(
    pool: web::Data<Pool>,
    body: web::Json<serde_json::Map<String, Value>>,
) -> ApiResult<HttpResponse> {
    let mut body = body.into_inner();
    let records = body
        .get("_records")
        .and_then(Value::as_i64)
        .ok_or_else(|| ApiError::BadRequest("_records must be an integer".into()))?;
    check_range("_records", records, 1, 1000)?;
    let records = records as i32;
    let payload = match body.remove("_payload") {
        Some(payload @ Value::Object(_)) => payload,
        _ => {
            return Err(ApiError::BadRequest(
                "_payload must be a JSON object".into(),
            ))
        }
    };
    let client = pool.get().await?;
    let stmt = client.prepare_cached(PERF_POST_SQL).await?;
    let rows = client
        .query(&stmt, &[&records, &payload])
        .await?
        .iter()
        .map(|row| {
            Ok(PostRow {
                row_num: row.try_get("row_num")?,
                echo: row.try_get("echo")?,
                computed: row.try_get("computed")?,
            })
        })
        .collect::<Result<Vec<_>, tokio_postgres::Error>>()?;
    Ok(HttpResponse::Ok().json(rows))
}

// ---------------------------------------------------------------------------------------------
// GET /api/perf-nested?_records=n&_depth=d

#[derive(Deserialize)]
struct PerfNestedQuery {
    #[serde(deserialize_with = "strict_int")]
    _records: i32,
    #[serde(deserialize_with = "strict_int")]
    _depth: i32,
}

#[derive(Serialize)]
struct NestedRow {
    row_num: i32,
    nested: Value,
}

async fn perf_nested_handler(
    pool: web::Data<Pool>,
    query: web::Query<PerfNestedQuery>,
) -> ApiResult<HttpResponse> {
    let PerfNestedQuery { _records, _depth } = query.into_inner();
    check_range("_records", _records.into(), 1, 1000)?;
    check_range("_depth", _depth.into(), 1, 3)?;
    let client = pool.get().await?;
    let stmt = client.prepare_cached(PERF_NESTED_SQL).await?;
    let rows = client
        .query(&stmt, &[&_records, &_depth])
        .await?
        .iter()
        .map(|row| {
            Ok(NestedRow {
                row_num: row.try_get("row_num")?,
                nested: row.try_get("nested")?,
            })
        })
        .collect::<Result<Vec<_>, tokio_postgres::Error>>()?;
    Ok(HttpResponse::Ok().json(rows))
}

// ---------------------------------------------------------------------------------------------
// GET /api/perf-large-payload?_size_kb=k

#[derive(Deserialize)]
struct PerfLargePayloadQuery {
    #[serde(deserialize_with = "strict_int")]
    _size_kb: i32,
}

#[derive(Serialize)]
struct LargeRow {
    data: String,
}

async fn perf_large_payload_handler(
    pool: web::Data<Pool>,
    query: web::Query<PerfLargePayloadQuery>,
) -> ApiResult<HttpResponse> {
    let size_kb = query._size_kb;
    check_range("_size_kb", size_kb.into(), 1, 1024)?;
    let client = pool.get().await?;
    let stmt = client.prepare_cached(PERF_LARGE_PAYLOAD_SQL).await?;
    let rows = client
        .query(&stmt, &[&size_kb])
        .await?
        .iter()
        .map(|row| {
            Ok(LargeRow {
                data: row.try_get("data")?,
            })
        })
        .collect::<Result<Vec<_>, tokio_postgres::Error>>()?;
    Ok(HttpResponse::Ok().json(rows))
}

// ---------------------------------------------------------------------------------------------
// GET /api/perf-many-params?_p1=…&…&_p20=… (every parameter optional)

#[derive(Deserialize)]
struct PerfManyParamsQuery {
    _p1: Option<String>,
    _p2: Option<String>,
    _p3: Option<String>,
    _p4: Option<String>,
    _p5: Option<String>,
    _p6: Option<String>,
    _p7: Option<String>,
    _p8: Option<String>,
    _p9: Option<String>,
    _p10: Option<String>,
    _p11: Option<String>,
    _p12: Option<String>,
    _p13: Option<String>,
    _p14: Option<String>,
    _p15: Option<String>,
    _p16: Option<String>,
    _p17: Option<String>,
    _p18: Option<String>,
    _p19: Option<String>,
    _p20: Option<String>,
}

#[derive(Serialize)]
struct ManyParamsRow {
    param_count: i32,
    /// NULL when _p1 is absent (md5 of NULL).
    checksum: Option<String>,
}

async fn perf_many_params_handler(
    pool: web::Data<Pool>,
    query: web::Query<PerfManyParamsQuery>,
) -> ApiResult<HttpResponse> {
    let q = query.into_inner();
    let client = pool.get().await?;
    let stmt = client.prepare_cached(PERF_MANY_PARAMS_SQL).await?;
    let rows = client
        .query(
            &stmt,
            &[
                &q._p1, &q._p2, &q._p3, &q._p4, &q._p5, &q._p6, &q._p7, &q._p8, &q._p9, &q._p10,
                &q._p11, &q._p12, &q._p13, &q._p14, &q._p15, &q._p16, &q._p17, &q._p18, &q._p19,
                &q._p20,
            ],
        )
        .await?
        .iter()
        .map(|row| {
            Ok(ManyParamsRow {
                param_count: row.try_get("param_count")?,
                checksum: row.try_get("checksum")?,
            })
        })
        .collect::<Result<Vec<_>, tokio_postgres::Error>>()?;
    Ok(HttpResponse::Ok().json(rows))
}

// ---------------------------------------------------------------------------------------------
// POST /api/tx (pgbench's TPC-B transaction)

#[derive(Deserialize)]
struct TxFields {
    aid: i32,
    tid: i32,
    bid: i32,
    delta: i32,
}

/// The request body. Only a JSON object is accepted: serde's derived impl for a struct would also
/// take an array `[aid, tid, bid, delta]` positionally.
struct TxRequest(TxFields);

impl<'de> Deserialize<'de> for TxRequest {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let object = serde_json::Map::deserialize(deserializer)?;
        TxFields::deserialize(Value::Object(object))
            .map(TxRequest)
            .map_err(de::Error::custom)
    }
}

#[derive(Serialize)]
struct TxResponse {
    abalance: i32,
}

async fn tx_handler(pool: web::Data<Pool>, body: web::Json<TxRequest>) -> ApiResult<HttpResponse> {
    let TxFields {
        aid,
        tid,
        bid,
        delta,
    } = body.into_inner().0;
    check_range("aid", aid.into(), 1, 1_000_000)?;
    check_range("tid", tid.into(), 1, 100)?;
    check_range("bid", bid.into(), 1, 10)?;
    check_range("delta", delta.into(), -5000, 5000)?;

    let mut client = pool.get().await?;
    // A transaction dropped without commit (any `?` below) is rolled back.
    let tx = client.transaction().await?;
    let [update_account, select_account, update_teller, update_branch, insert_history] = [
        tx.prepare_cached(TX_SQL[0]).await?,
        tx.prepare_cached(TX_SQL[1]).await?,
        tx.prepare_cached(TX_SQL[2]).await?,
        tx.prepare_cached(TX_SQL[3]).await?,
        tx.prepare_cached(TX_SQL[4]).await?,
    ];
    tx.execute(&update_account, &[&delta, &aid]).await?;
    let abalance: i32 = tx.query_one(&select_account, &[&aid]).await?.try_get(0)?;
    tx.execute(&update_teller, &[&delta, &tid]).await?;
    tx.execute(&update_branch, &[&delta, &bid]).await?;
    tx.execute(&insert_history, &[&tid, &bid, &aid, &delta])
        .await?;
    tx.commit().await?;

    Ok(HttpResponse::Ok().json(TxResponse { abalance }))
}

// ---------------------------------------------------------------------------------------------
// Extractor errors as 400 JSON (actix answers a wrong Content-Type with 415 and its errors as
// text/plain by default).

fn query_error(err: QueryPayloadError, _req: &HttpRequest) -> actix_web::Error {
    ApiError::BadRequest(err.to_string()).into()
}

fn json_error(err: JsonPayloadError, _req: &HttpRequest) -> actix_web::Error {
    let msg = match err {
        JsonPayloadError::ContentType => "Content-Type must be application/json".to_owned(),
        err => err.to_string(),
    };
    ApiError::BadRequest(msg).into()
}

// ---------------------------------------------------------------------------------------------
// Start-up

/// A resource whose other methods get a JSON 405 (actix's default 405 has an empty body).
fn resource(path: &str) -> Resource {
    web::resource(path)
        .default_service(web::to(|| async { ApiError::MethodNotAllowed.error_response() }))
}

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> io::Result<T> {
    match env::var(name) {
        Ok(v) => v
            .parse()
            .map_err(|_| io::Error::other(format!("{name}: invalid value {v:?}"))),
        Err(_) => Ok(default),
    }
}

#[actix_web::main]
async fn main() -> io::Result<()> {
    let host = env::var("PGARENA_HOST").unwrap_or_else(|_| "127.0.0.1".into());
    let port: u16 = env_or("PGARENA_PORT", 8080)?;
    let workers: usize = env_or("PGARENA_WORKERS", std::thread::available_parallelism()?.get())?;
    let pool_size: usize = env_or("PGARENA_POOL_SIZE", 10)?;
    let pg_config: tokio_postgres::Config = env::var("PGARENA_DATABASE_URL")
        .map_err(|_| io::Error::other("PGARENA_DATABASE_URL is not set"))?
        .parse()
        .map_err(|e| io::Error::other(format!("PGARENA_DATABASE_URL: {e}")))?;

    // Fail fast if the database is unreachable. A throwaway connection rather than a pooled one:
    // a pooled connection's driver task would stay on this (non-worker) thread's runtime.
    {
        let (client, connection) = pg_config
            .connect(NoTls)
            .await
            .map_err(|e| io::Error::other(format!("database: {e}")))?;
        let driver = actix_web::rt::spawn(connection);
        client
            .simple_query("SELECT 1")
            .await
            .map_err(|e| io::Error::other(format!("database: {e}")))?;
        drop(client);
        let _ = driver.await;
    }

    let manager = Manager::from_config(
        pg_config,
        NoTls,
        ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        },
    );
    let pool = Pool::builder(manager)
        .max_size(pool_size)
        .build()
        .map_err(io::Error::other)?;
    let pool = web::Data::new(pool);

    eprintln!("listening on {host}:{port} (workers={workers}, pool max_size={pool_size})");
    HttpServer::new(move || {
        App::new()
            .app_data(pool.clone())
            .app_data(web::QueryConfig::default().error_handler(query_error))
            .app_data(web::JsonConfig::default().error_handler(json_error))
            .service(resource("/api/static").route(web::get().to(static_handler)))
            .service(resource("/api/users").route(web::get().to(users_handler)))
            .service(resource("/api/perf-test").route(web::get().to(perf_test_handler)))
            .service(resource("/api/tx").route(web::post().to(tx_handler)))
            .service(resource("/api/perf-minimal").route(web::get().to(perf_minimal_handler)))
            .service(resource("/api/perf-post").route(web::post().to(perf_post_handler)))
            .service(resource("/api/perf-nested").route(web::get().to(perf_nested_handler)))
            .service(
                resource("/api/perf-large-payload")
                    .route(web::get().to(perf_large_payload_handler)),
            )
            .service(
                resource("/api/perf-many-params").route(web::get().to(perf_many_params_handler)),
            )
            .default_service(web::to(|| async { ApiError::NotFound.error_response() }))
    })
    .workers(workers)
    .shutdown_timeout(3)
    .bind((host.as_str(), port))?
    .run()
    .await
}
