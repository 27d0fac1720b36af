-- perf-test workload (seed 000): call-compatible with the seed's public.perf_test;
-- it lives in schema pgarena (pgarena never replaces a function of the user's).
--
-- Same name, same 16 parameters in the same order and types, same 23 output columns.
-- Every value is derived from the parameters and the row number, so the expected answer
-- is computable from the parameters alone.
--
-- NOTE: the database's cost must not depend on how a driver sends the parameters.
-- A LANGUAGE sql set-returning function is inlined into the caller's query, and with bound
-- parameters that query gets a fresh custom plan on every call. PL/pgSQL is never inlined
-- (the caller's statement is a plain Function Scan), but its body would still get a custom
-- plan per call; `SET plan_cache_mode = force_generic_plan` makes the body plan once per
-- session, whether the client pastes literals or binds parameters. Measured with
-- `pgarena param-modes`; numbers in docs/workloads.md.
CREATE OR REPLACE FUNCTION pgarena.perf_test(
    _records int,
    _text text,
    _int int,
    _bigint bigint,
    _numeric numeric,
    _real real,
    _double double precision,
    _bool bool,
    _date date,
    _timestamp timestamp,
    _timestamptz timestamptz,
    _uuid uuid,
    _json json,
    _jsonb jsonb,
    _int_array int[],
    _text_array text[]
)
RETURNS TABLE (
    row_num int,
    text_val text,
    varchar_val varchar(100),
    char_val char(10),
    smallint_val smallint,
    int_val int,
    bigint_val bigint,
    numeric_val numeric(12, 4),
    real_val real,
    double_val double precision,
    bool_val bool,
    date_val date,
    time_val time,
    timestamp_val timestamp,
    timestamptz_val timestamptz,
    interval_val interval,
    uuid_val uuid,
    json_val json,
    jsonb_val jsonb,
    int_array_val int[],
    text_array_val text[],
    nullable_text text,
    nullable_int int
)
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET plan_cache_mode = force_generic_plan
AS $fn$
BEGIN
    IF _records IS NULL OR _records < 1 OR _records > 1000 THEN
        RAISE EXCEPTION USING
            ERRCODE = 'invalid_parameter_value',
            MESSAGE = format('_records must be between 1 and 1000, got %s', coalesce(_records::text, 'null'));
    END IF;
    IF length(_text) > 1000 THEN
        RAISE EXCEPTION USING
            ERRCODE = 'string_data_right_truncation',
            MESSAGE = format('_text must be at most 1000 characters, got %s', length(_text));
    END IF;
    RETURN QUERY
    SELECT
        g.i,
        _text || '-' || g.i,
        (left(_text, 90) || g.i)::varchar(100),
        (left(_text, 3) || g.i % 1000)::char(10),
        ((abs(_int::bigint) + g.i) % 32767)::smallint,
        _int - g.i,
        _bigint - g.i,
        (_numeric + g.i * 0.0001)::numeric(12, 4),
        (_real + g.i)::real,
        _double + g.i * 0.5,
        CASE WHEN g.i % 2 = 1 THEN _bool ELSE NOT _bool END,
        _date + g.i,
        (_timestamp + g.i * interval '1 minute')::time,
        _timestamp + g.i * interval '1 hour',
        _timestamptz + g.i * interval '1 hour',
        make_interval(days => g.i, hours => g.i % 24, mins => g.i % 60, secs => g.i * 1.5),
        md5(_uuid::text || g.i)::uuid,
        (_json::jsonb || jsonb_build_object('i', g.i))::json,
        _jsonb || jsonb_build_object('row', g.i),
        _int_array || g.i,
        _text_array || ('test' || g.i),
        CASE WHEN g.i % 2 = 0 THEN NULL ELSE 'text' || g.i END,
        CASE WHEN g.i % 2 = 0 THEN NULL ELSE g.i END
    FROM generate_series(1, _records) AS g(i);
END
$fn$;
