'use strict'

const cluster = require('node:cluster')
const express = require('express')
const postgres = require('postgres')

const env = process.env
const HOST = env.PGARENA_HOST || '127.0.0.1'
const PORT = Number(env.PGARENA_PORT || 8080)
const WORKERS = Math.max(1, Number(env.PGARENA_WORKERS || 1))
const POOL_SIZE = Math.max(1, Number(env.PGARENA_POOL_SIZE_PER_WORKER || 10))

function badRequest (message) {
  return Object.assign(new Error(message), { status: 400 })
}

function param (query, name) {
  const raw = query[name]
  if (raw === undefined) throw badRequest(`${name} is required`)
  if (typeof raw !== 'string') throw badRequest(`${name} must be given once`)
  return raw
}

// optional query string value: absent -> null (SQL NULL), repeated -> 400
function optionalParam (query, name) {
  const raw = query[name]
  if (raw === undefined) return null
  if (typeof raw !== 'string') throw badRequest(`${name} must be given once`)
  return raw
}

// query string value -> integer in [min, max]; anything else (missing, repeated, "1.5", "abc") is a 400
function intParam (query, name, min, max) {
  const raw = param(query, name)
  if (!/^-?\d+$/.test(raw)) throw badRequest(`${name} must be an integer`)
  const value = Number(raw)
  if (value < min || value > max) throw badRequest(`${name} must be between ${min} and ${max}`)
  return value
}

function boolParam (query, name) {
  const raw = param(query, name)
  if (raw === 'true') return true
  if (raw === 'false') return false
  throw badRequest(`${name} must be true or false`)
}

function jsonParam (query, name) {
  try {
    return JSON.parse(param(query, name))
  } catch (err) {
    if (err instanceof SyntaxError) throw badRequest(`${name} is not valid JSON: ${err.message}`)
    throw err
  }
}

// ISO 8601 shapes of the contract, checked before JavaScript's lenient Date parser sees them
const DATE_RE = /^\d{4}-\d{2}-\d{2}$/
const TIMESTAMP_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?$/
const TIMESTAMPTZ_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/

// The string itself is bound: postgres.js serialises date/timestamp/timestamptz parameters with
// new Date(x).toISOString() (a Date argument would be typed timestamptz and match no perf_test), so
// the value is checked here, where an invalid one is still a 400 rather than a RangeError.
function dateParam (query, name, shape) {
  const raw = param(query, name)
  if (!shape.test(raw) || Number.isNaN(new Date(raw).getTime())) {
    throw badRequest(`${name} is not a valid ISO 8601 value`)
  }
  return raw
}

// postgres.js serialises each parameter by the type PostgreSQL describes for it: numbers, uuid and
// array literals go as text (PostgreSQL parses them), but bool needs a JS boolean (any string is sent
// as false) and json/jsonb a JS value (it JSON.stringify()s what it gets).
function perfTestParams (q) {
  return {
    records: intParam(q, '_records', 1, 1000),
    text: param(q, '_text'),
    int: param(q, '_int'),
    bigint: param(q, '_bigint'),
    numeric: param(q, '_numeric'),
    real: param(q, '_real'),
    double: param(q, '_double'),
    bool: boolParam(q, '_bool'),
    date: dateParam(q, '_date', DATE_RE),
    timestamp: dateParam(q, '_timestamp', TIMESTAMP_RE),
    timestamptz: dateParam(q, '_timestamptz', TIMESTAMPTZ_RE),
    uuid: param(q, '_uuid'),
    json: jsonParam(q, '_json'),
    jsonb: jsonParam(q, '_jsonb'),
    intArray: param(q, '_int_array'),
    textArray: param(q, '_text_array')
  }
}

function isObject (value) {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
}

// JSON body field -> integer in [min, max]; "5", 1.5, null, true are rejected
function intField (body, name, min, max) {
  const value = body[name]
  if (!Number.isInteger(value)) throw badRequest(`${name} must be an integer`)
  if (value < min || value > max) throw badRequest(`${name} must be between ${min} and ${max}`)
  return value
}

function parseTx (body) {
  // express.json() only parses application/json: any other Content-Type leaves req.body undefined
  if (!isObject(body)) throw badRequest('body must be a JSON object sent as application/json')
  return {
    aid: intField(body, 'aid', 1, 1000000),
    tid: intField(body, 'tid', 1, 100),
    bid: intField(body, 'bid', 1, 10),
    delta: intField(body, 'delta', -5000, 5000)
  }
}

function parsePerfPost (body) {
  // express.json() only parses application/json: any other Content-Type leaves req.body undefined
  if (!isObject(body)) throw badRequest('body must be a JSON object sent as application/json')
  const records = intField(body, '_records', 1, 1000)
  if (!isObject(body._payload)) throw badRequest('_payload must be a JSON object')
  return { records, payload: body._payload }
}

const MANY_PARAMS = Array.from({ length: 20 }, (_, i) => `_p${i + 1}`)

function runPrimary () {
  let stopping = false
  const stop = () => {
    if (stopping) return
    stopping = true
    for (const worker of Object.values(cluster.workers)) worker.process.kill('SIGTERM')
    if (Object.keys(cluster.workers).length === 0) process.exit()
    setTimeout(() => process.exit(), 5000).unref()
  }
  process.on('SIGTERM', stop)
  process.on('SIGINT', stop)

  cluster.on('listening', (worker) => { worker.listened = true })
  // Each worker's share of PGARENA_POOL_SIZE (PGARENA_POOL_SIZES, e.g. "4,3,3": the remainder goes to the
  // first workers, so the shares add up to the total); a worker forked to replace a dead one keeps its share.
  const sizes = (env.PGARENA_POOL_SIZES || '').split(',').filter(Boolean).map(Number)
  const shares = new Map()
  const forkWorker = (size) => {
    const worker = cluster.fork({ PGARENA_POOL_SIZE_PER_WORKER: String(size) })
    shares.set(worker.id, size)
  }
  cluster.on('exit', (worker, code, signal) => {
    if (stopping) {
      if (Object.keys(cluster.workers).length === 0) process.exit()
    } else if (!worker.listened) {
      // failed during start-up: stop everything instead of crash-looping
      console.error(`worker ${worker.process.pid} failed to start (${signal || code})`)
      process.exitCode = 1
      stop()
    } else {
      console.error(`worker ${worker.process.pid} died (${signal || code}), forking a new one`)
      forkWorker(shares.get(worker.id) ?? POOL_SIZE)
    }
  })

  for (let i = 0; i < WORKERS; i++) forkWorker(sizes[i] ?? POOL_SIZE)
  console.log(`primary ${process.pid}: ${WORKERS} workers, pools ${sizes.join('+') || POOL_SIZE + ' each'}, http://${HOST}:${PORT}`)
}

function runWorker () {
  // postgres.js defaults otherwise: prepared statements (prepare: true), connections opened on demand
  const sql = postgres(env.PGARENA_DATABASE_URL, { max: POOL_SIZE })

  const app = express()
  app.disable('x-powered-by')

  app.get('/api/static', (req, res) => {
    res.json({ status: 'ok', timestamp: Date.now() })
  })

  app.get('/api/users', async (req, res) => {
    const limit = intParam(req.query, 'limit', 1, 10000)
    const rows = await sql`
      SELECT id, username, full_name, email, age, created_at FROM users ORDER BY id LIMIT ${limit}
    `
    res.json(rows)
  })

  app.get('/api/perf-test', async (req, res) => {
    const p = perfTestParams(req.query)
    const rows = await sql`
      SELECT * FROM perf_test(
        ${p.records}, ${p.text}, ${p.int}, ${p.bigint}, ${p.numeric}, ${p.real}, ${p.double}, ${p.bool},
        ${p.date}, ${p.timestamp}, ${p.timestamptz}, ${p.uuid}, ${p.json}, ${p.jsonb},
        ${p.intArray}, ${p.textArray}
      )
    `
    res.json(rows)
  })

  // seed 000's newer scenarios (scenarios.sql): no table access, so what differs is the framework's work
  app.get('/api/perf-minimal', async (req, res) => {
    res.json(await sql`SELECT * FROM perf_minimal()`)
  })

  app.post('/api/perf-post', express.json(), async (req, res) => {
    const { records, payload } = parsePerfPost(req.body)
    // the parsed object is bound as is: PostgreSQL describes the parameter as jsonb and postgres.js
    // serialises it with JSON.stringify (a string here would arrive as a JSON string)
    res.json(await sql`SELECT * FROM perf_post(${records}, ${payload})`)
  })

  app.get('/api/perf-nested', async (req, res) => {
    const records = intParam(req.query, '_records', 1, 1000)
    const depth = intParam(req.query, '_depth', 1, 3)
    res.json(await sql`SELECT * FROM perf_nested(${records}, ${depth})`)
  })

  app.get('/api/perf-large-payload', async (req, res) => {
    const sizeKb = intParam(req.query, '_size_kb', 1, 1024)
    res.json(await sql`SELECT * FROM perf_large_payload(${sizeKb})`)
  })

  app.get('/api/perf-many-params', async (req, res) => {
    // all optional and bound as the request's text (absent -> NULL); PostgreSQL casts them (a value it
    // rejects is SQLSTATE 22P02 -> 400). The bool ones go through ::text, because postgres.js would
    // serialise a string for a bool parameter as false ("true" is not === true).
    const p = MANY_PARAMS.map((name) => optionalParam(req.query, name))
    res.json(await sql`
      SELECT * FROM perf_many_params(
        ${p[0]}, ${p[1]}, ${p[2]}::text::bool, ${p[3]}, ${p[4]},
        ${p[5]}, ${p[6]}, ${p[7]}::text::bool, ${p[8]}, ${p[9]},
        ${p[10]}, ${p[11]}, ${p[12]}::text::bool, ${p[13]}, ${p[14]},
        ${p[15]}, ${p[16]}, ${p[17]}::text::bool, ${p[18]}, ${p[19]}
      )
    `)
  })

  // pgbench's TPC-B transaction (seed 001): sql.begin() runs BEGIN on one reserved connection,
  // COMMIT when the callback resolves, ROLLBACK (and rethrow) when it throws
  app.post('/api/tx', express.json(), async (req, res) => {
    const { aid, tid, bid, delta } = parseTx(req.body)
    const abalance = await sql.begin(async (sql) => {
      await sql`UPDATE pgbench_accounts SET abalance = abalance + ${delta} WHERE aid = ${aid}`
      const rows = await sql`SELECT abalance FROM pgbench_accounts WHERE aid = ${aid}`
      if (rows.length !== 1) throw new Error(`pgbench_accounts has no row aid=${aid}`)
      await sql`UPDATE pgbench_tellers SET tbalance = tbalance + ${delta} WHERE tid = ${tid}`
      await sql`UPDATE pgbench_branches SET bbalance = bbalance + ${delta} WHERE bid = ${bid}`
      await sql`
        INSERT INTO pgbench_history (tid, bid, aid, delta, mtime)
        VALUES (${tid}, ${bid}, ${aid}, ${delta}, CURRENT_TIMESTAMP)
      `
      return rows[0].abalance
    })
    res.json({ abalance })
  })

  app.use((req, res) => {
    res.status(404).json({ error: 'not found' })
  })

  // Express 5 forwards rejected promises from async handlers here
  app.use((err, req, res, next) => {
    if (res.headersSent) return next(err)
    // our own 400s and body-parser's 4xx (malformed or empty JSON, 413 too large, bad charset)
    if (err.status >= 400 && err.status < 500) {
      return res.status(400).json({ error: err.message })
    }
    // SQLSTATE class 22 (data exception): malformed uuid, array literal, out-of-range number,
    // 22001 for a _text over 1000 characters
    if (err instanceof postgres.PostgresError && err.code.startsWith('22')) {
      return res.status(400).json({ error: err.message })
    }
    console.error(err)
    res.status(500).json({ error: 'internal server error' })
  })

  const server = app.listen(PORT, HOST, (err) => {
    if (err) {
      console.error(err)
      process.exit(1)
    }
    if (WORKERS === 1) console.log(`pid ${process.pid}: pool ${POOL_SIZE}, http://${HOST}:${PORT}`)
  })

  let closing = false
  const shutdown = () => {
    if (closing) return
    closing = true
    setTimeout(() => process.exit(0), 3000).unref()
    // close() stops accepting and drops idle keep-alive connections; requests in flight finish
    server.close(() => sql.end({ timeout: 1 }).then(() => process.exit(0), () => process.exit(1)))
  }
  process.on('SIGTERM', shutdown)
  process.on('SIGINT', shutdown)
}

if (WORKERS > 1 && cluster.isPrimary) {
  runPrimary()
} else {
  runWorker()
}
