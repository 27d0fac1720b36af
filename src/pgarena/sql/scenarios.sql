-- Seed 000's newer scenarios: five functions that touch no table, so the database's cost is
-- constant and what differs between stacks is the framework's own work (routing, body
-- parsing, nested JSON, large responses, many query parameters).
--
-- They live in schema pgarena, next to perf_test; a stack calls them unqualified (the role's
-- search_path starts with pgarena) with the same names and parameters as the seed harness.
-- Out-of-range arguments raise invalid_parameter_value (SQLSTATE 22023), which a stack answers
-- with 400 if its own checks did not catch the input first.
--
-- PL/pgSQL with a generic plan, like perf_test: the cost must not depend on how a driver sends
-- the parameters (inlined LANGUAGE sql functions would be planned per call with bound values).

CREATE OR REPLACE FUNCTION pgarena.perf_minimal()
RETURNS TABLE (status text, ts timestamptz)
LANGUAGE plpgsql STABLE PARALLEL SAFE
AS $fn$
BEGIN
    RETURN QUERY SELECT 'ok'::text, now();
END
$fn$;

CREATE OR REPLACE FUNCTION pgarena.perf_post(_records int, _payload jsonb)
RETURNS TABLE (row_num int, echo jsonb, computed text)
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET plan_cache_mode = force_generic_plan
AS $fn$
BEGIN
    IF _records IS NULL OR _records < 1 OR _records > 1000 THEN
        RAISE EXCEPTION USING
            ERRCODE = 'invalid_parameter_value',
            MESSAGE = format('_records must be between 1 and 1000, got %s', coalesce(_records::text, 'null'));
    END IF;
    IF _payload IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value', MESSAGE = '_payload must not be null';
    END IF;
    RETURN QUERY
    SELECT g.i, _payload, 'row_' || g.i
    FROM generate_series(1, _records) AS g(i);
END
$fn$;

CREATE OR REPLACE FUNCTION pgarena.perf_nested(_records int, _depth int)
RETURNS TABLE (row_num int, nested jsonb)
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET plan_cache_mode = force_generic_plan
AS $fn$
BEGIN
    IF _records IS NULL OR _records < 1 OR _records > 1000 THEN
        RAISE EXCEPTION USING
            ERRCODE = 'invalid_parameter_value',
            MESSAGE = format('_records must be between 1 and 1000, got %s', coalesce(_records::text, 'null'));
    END IF;
    IF _depth IS NULL OR _depth < 1 OR _depth > 3 THEN
        RAISE EXCEPTION USING
            ERRCODE = 'invalid_parameter_value',
            MESSAGE = format('_depth must be between 1 and 3, got %s', coalesce(_depth::text, 'null'));
    END IF;
    RETURN QUERY
    SELECT g.i,
           CASE _depth
               WHEN 1 THEN jsonb_build_object('a', g.i)
               WHEN 2 THEN jsonb_build_object('a', jsonb_build_object('b', g.i))
               ELSE jsonb_build_object('a', jsonb_build_object('b', jsonb_build_object('c', g.i)))
           END
    FROM generate_series(1, _records) AS g(i);
END
$fn$;

CREATE OR REPLACE FUNCTION pgarena.perf_large_payload(_size_kb int)
RETURNS TABLE (data text)
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET plan_cache_mode = force_generic_plan
AS $fn$
BEGIN
    IF _size_kb IS NULL OR _size_kb < 1 OR _size_kb > 1024 THEN
        RAISE EXCEPTION USING
            ERRCODE = 'invalid_parameter_value',
            MESSAGE = format('_size_kb must be between 1 and 1024, got %s', coalesce(_size_kb::text, 'null'));
    END IF;
    RETURN QUERY SELECT repeat('x', _size_kb * 1024);
END
$fn$;

-- Twenty parameters in a repeating pattern of five types (text, int, bool, numeric, text).
-- _p1, _p10 and _p20 are text; the checksum covers the first and the two that may be absent. Every
-- parameter defaults to NULL, so a client that calls by name (PostgREST, NpgsqlRest) may leave any out.
CREATE OR REPLACE FUNCTION pgarena.perf_many_params(
    _p1 text DEFAULT NULL, _p2 int DEFAULT NULL, _p3 bool DEFAULT NULL, _p4 numeric DEFAULT NULL,
    _p5 text DEFAULT NULL, _p6 text DEFAULT NULL, _p7 int DEFAULT NULL, _p8 bool DEFAULT NULL,
    _p9 numeric DEFAULT NULL, _p10 text DEFAULT NULL, _p11 text DEFAULT NULL, _p12 int DEFAULT NULL,
    _p13 bool DEFAULT NULL, _p14 numeric DEFAULT NULL, _p15 text DEFAULT NULL, _p16 text DEFAULT NULL,
    _p17 int DEFAULT NULL, _p18 bool DEFAULT NULL, _p19 numeric DEFAULT NULL, _p20 text DEFAULT NULL
)
RETURNS TABLE (param_count int, checksum text)
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET plan_cache_mode = force_generic_plan
AS $fn$
BEGIN
    RETURN QUERY SELECT 20, md5(_p1 || coalesce(_p10, '') || coalesce(_p20, ''));
END
$fn$;

-- NpgsqlRest serves a STABLE function as GET unless its comment says otherwise (seed 000 does the same).
COMMENT ON FUNCTION pgarena.perf_post(int, jsonb) IS 'HTTP POST';
