// pgarena stack: Bun.serve + postgres.js (porsager/postgres).
// PGARENA_WORKERS > 1: this process spawns that many copies of itself, each listening on the same
// port with reusePort (SO_REUSEPORT: the kernel spreads connections) and holding its own pool.
import postgres from "postgres";

const env = process.env;
const HOST = env.PGARENA_HOST || "127.0.0.1";
const PORT = Number(env.PGARENA_PORT || 8080);
const WORKERS = Math.max(1, Number(env.PGARENA_WORKERS || 1));
const POOL_SIZE = Math.max(1, Number(env.PGARENA_POOL_SIZE_PER_WORKER || 10));

const PERF_PARAMS = [
  "_records", "_text", "_int", "_bigint", "_numeric", "_real", "_double", "_bool", "_date",
  "_timestamp", "_timestamptz", "_uuid", "_json", "_jsonb", "_int_array", "_text_array",
];
const INTEGER = /^-?\d+$/;
const MANY_PARAMS = Array.from({ length: 20 }, (_, i) => `_p${i + 1}`);

class BadRequest extends Error {}

function json(body, status = 200) {
  return Response.json(body, { status });
}

function intParam(params, name, min, max) {
  const raw = params.get(name);
  if (raw === null) throw new BadRequest(`${name} is required`);
  const n = Number(raw);
  if (!INTEGER.test(raw) || n < min || n > max) {
    throw new BadRequest(`${name} must be an integer from ${min} to ${max}`);
  }
  return n;
}

const TX_RANGES = { aid: [1, 1000000], tid: [1, 100], bid: [1, 10], delta: [-5000, 5000] };

function isObject(value) {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

// Content-Type application/json (parameters such as charset allowed), req.json(), a JSON object
async function jsonObjectBody(req) {
  const type = (req.headers.get("content-type") || "").split(";")[0].trim().toLowerCase();
  if (type !== "application/json") throw new BadRequest("Content-Type must be application/json");
  let body;
  try {
    body = await req.json();
  } catch {
    throw new BadRequest("body is not valid JSON");
  }
  if (!isObject(body)) throw new BadRequest("body must be a JSON object");
  return body;
}

async function perfPostBody(req) {
  const body = await jsonObjectBody(req);
  const records = body._records;
  if (!Number.isInteger(records) || records < 1 || records > 1000) {
    throw new BadRequest("_records must be an integer from 1 to 1000");
  }
  if (!isObject(body._payload)) throw new BadRequest("_payload must be a JSON object");
  return { records, payload: body._payload };
}

async function txBody(req) {
  const body = await jsonObjectBody(req);
  for (const [field, [min, max]] of Object.entries(TX_RANGES)) {
    const v = body[field];
    if (!Number.isInteger(v) || v < min || v > max) {
      throw new BadRequest(`${field} must be an integer from ${min} to ${max}`);
    }
  }
  return body;
}

function runWorker() {
  const sql = postgres(env.PGARENA_DATABASE_URL, { max: POOL_SIZE, onnotice: () => {} });

  const routes = {
    "/api/static": () => json({ status: "ok", timestamp: Date.now() }),

    "/api/users": async (req, url) => {
      const limit = intParam(url.searchParams, "limit", 1, 10000);
      return json(
        await sql`SELECT id, username, full_name, email, age, created_at FROM users ORDER BY id LIMIT ${limit}`,
      );
    },

    "/api/perf-test": async (req, url) => {
      const q = {};
      for (const name of PERF_PARAMS) {
        q[name] = url.searchParams.get(name);
        if (q[name] === null) throw new BadRequest(`${name} is required`);
      }
      intParam(url.searchParams, "_records", 1, 1000);
      // Bound as text. postgres.js serialises a parameter by the type the server infers for it, so
      // bool ("true" is not === true), date/timestamp (through a JS Date: microseconds lost) and
      // json/jsonb (JSON.stringify of the string) are cast from text in SQL instead.
      return json(await sql`SELECT * FROM perf_test(
        ${q._records}, ${q._text}, ${q._int}, ${q._bigint}, ${q._numeric}, ${q._real}, ${q._double},
        ${q._bool}::text::bool, ${q._date}::text::date, ${q._timestamp}::text::timestamp,
        ${q._timestamptz}::text::timestamptz, ${q._uuid}, ${q._json}::text::json,
        ${q._jsonb}::text::jsonb, ${q._int_array}, ${q._text_array})`);
    },

    // seed 000's newer scenarios (scenarios.sql): no table access, so what differs is the framework's work
    "/api/perf-minimal": async () => json(await sql`SELECT * FROM perf_minimal()`),

    "/api/perf-post": async (req) => {
      if (req.method !== "POST") return json({ error: "method not allowed" }, 405);
      const { records, payload } = await perfPostBody(req);
      // the parsed object is bound as is: PostgreSQL describes the parameter as jsonb and postgres.js
      // serialises it with JSON.stringify (a string here would arrive as a JSON string)
      return json(await sql`SELECT * FROM perf_post(${records}, ${payload})`);
    },

    "/api/perf-nested": async (req, url) => {
      const records = intParam(url.searchParams, "_records", 1, 1000);
      const depth = intParam(url.searchParams, "_depth", 1, 3);
      return json(await sql`SELECT * FROM perf_nested(${records}, ${depth})`);
    },

    "/api/perf-large-payload": async (req, url) => {
      const sizeKb = intParam(url.searchParams, "_size_kb", 1, 1024);
      return json(await sql`SELECT * FROM perf_large_payload(${sizeKb})`);
    },

    "/api/perf-many-params": async (req, url) => {
      // all optional, bound as the request's text (absent -> null -> SQL NULL); PostgreSQL casts them.
      // The bool ones go through ::text: postgres.js would serialise a string for a bool parameter as false.
      const p = MANY_PARAMS.map((name) => url.searchParams.get(name));
      return json(await sql`SELECT * FROM perf_many_params(
        ${p[0]}, ${p[1]}, ${p[2]}::text::bool, ${p[3]}, ${p[4]},
        ${p[5]}, ${p[6]}, ${p[7]}::text::bool, ${p[8]}, ${p[9]},
        ${p[10]}, ${p[11]}, ${p[12]}::text::bool, ${p[13]}, ${p[14]},
        ${p[15]}, ${p[16]}, ${p[17]}::text::bool, ${p[18]}, ${p[19]})`);
    },

    "/api/tx": async (req) => {
      if (req.method !== "POST") return json({ error: "method not allowed" }, 405);
      const { aid, tid, bid, delta } = await txBody(req);
      // pgbench's TPC-B transaction: sql.begin sends BEGIN, COMMIT (ROLLBACK if the callback throws)
      const abalance = await sql.begin(async (sql) => {
        await sql`UPDATE pgbench_accounts SET abalance = abalance + ${delta} WHERE aid = ${aid}`;
        const [row] = await sql`SELECT abalance FROM pgbench_accounts WHERE aid = ${aid}`;
        await sql`UPDATE pgbench_tellers SET tbalance = tbalance + ${delta} WHERE tid = ${tid}`;
        await sql`UPDATE pgbench_branches SET bbalance = bbalance + ${delta} WHERE bid = ${bid}`;
        await sql`INSERT INTO pgbench_history (tid, bid, aid, delta, mtime)
                  VALUES (${tid}, ${bid}, ${aid}, ${delta}, CURRENT_TIMESTAMP)`;
        return row.abalance;
      });
      return json({ abalance });
    },
  };

  const server = Bun.serve({
    hostname: HOST,
    port: PORT,
    reusePort: WORKERS > 1,
    async fetch(req) {
      const url = new URL(req.url);
      const route = routes[url.pathname];
      if (!route) return json({ error: "not found" }, 404);
      try {
        return await route(req, url);
      } catch (err) {
        if (err instanceof BadRequest) return json({ error: err.message }, 400);
        // SQLSTATE class 22 (data exception): malformed date, uuid, array literal, out-of-range number…
        if (err instanceof postgres.PostgresError && err.code?.startsWith("22")) {
          return json({ error: err.message }, 400);
        }
        console.error(err);
        return json({ error: "internal server error" }, 500);
      }
    },
  });

  const shutdown = async () => {
    server.stop(true);
    await sql.end({ timeout: 1 });
    process.exit(0);
  };
  process.on("SIGTERM", shutdown);
  process.on("SIGINT", shutdown);
  return server;
}

function runPrimary() {
  let stopping = false;
  const children = new Set();
  const stop = (code = 0) => {
    if (stopping) return;
    stopping = true;
    process.exitCode = code;
    for (const child of children) child.kill("SIGTERM");
    setTimeout(() => process.exit(code), 3000).unref();
  };
  // Each worker's share of PGARENA_POOL_SIZE (PGARENA_POOL_SIZES, e.g. "4,3,3": the remainder goes to the
  // first workers, so the shares add up to the total).
  const sizes = (env.PGARENA_POOL_SIZES || "").split(",").filter(Boolean).map(Number);
  for (let i = 0; i < WORKERS; i++) {
    const child = Bun.spawn([process.execPath, import.meta.path], {
      env: { ...env, PGARENA_BUN_WORKER: String(i + 1), PGARENA_POOL_SIZE_PER_WORKER: String(sizes[i] ?? POOL_SIZE) },
      stdio: ["ignore", "inherit", "inherit"],
      onExit(proc, exitCode, signal) {
        children.delete(proc);
        if (!stopping) {
          console.error(`worker ${proc.pid} exited (${signal || exitCode}), stopping`);
          stop(1);
        }
        if (children.size === 0) process.exit(process.exitCode);
      },
    });
    children.add(child);
  }
  process.on("SIGTERM", () => stop(0));
  process.on("SIGINT", () => stop(0));
  console.log(`primary ${process.pid}: ${WORKERS} workers (reusePort), pools ${sizes.join("+") || POOL_SIZE + " each"}, http://${HOST}:${PORT}`);
}

if (WORKERS > 1 && !env.PGARENA_BUN_WORKER) {
  runPrimary();
} else {
  const server = runWorker();
  if (WORKERS === 1) console.log(`pid ${process.pid}: pool ${POOL_SIZE}, http://${HOST}:${server.port}`);
}
