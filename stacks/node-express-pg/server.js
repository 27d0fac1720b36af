'use strict'

const cluster = require('node:cluster')
const express = require('express')
const { Pool } = require('pg')

const env = process.env
const HOST = env.PGARENA_HOST || '127.0.0.1'
const PORT = Number(env.PGARENA_PORT || 8080)
const WORKERS = Math.max(1, Number(env.PGARENA_WORKERS || 1))
const POOL_SIZE = Math.max(1, Number(env.PGARENA_POOL_SIZE_PER_WORKER || 10))

const USERS_SQL =
  'SELECT id, username, full_name, email, age, created_at FROM users ORDER BY id LIMIT $1'

const PERF_PARAMS = [
  '_records', '_text', '_int', '_bigint', '_numeric', '_real', '_double', '_bool', '_date',
  '_timestamp', '_timestamptz', '_uuid', '_json', '_jsonb', '_int_array', '_text_array'
]
const PERF_SQL =
  `SELECT * FROM perf_test(${PERF_PARAMS.map((_, i) => `$${i + 1}`).join(', ')})`

// seed 000's newer scenarios (scenarios.sql): no table access, so what differs is the framework's work
const MINIMAL_SQL = 'SELECT * FROM perf_minimal()'
const POST_SQL = 'SELECT * FROM perf_post($1, $2)'
const NESTED_SQL = 'SELECT * FROM perf_nested($1, $2)'
const LARGE_PAYLOAD_SQL = 'SELECT * FROM perf_large_payload($1)'
const MANY_PARAMS = Array.from({ length: 20 }, (_, i) => `_p${i + 1}`)
const MANY_PARAMS_SQL =
  `SELECT * FROM perf_many_params(${MANY_PARAMS.map((_, i) => `$${i + 1}`).join(', ')})`

// pgbench's TPC-B transaction (seed 001), run statement by statement on one pooled client
const TX_UPDATE_ACCOUNT = 'UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2'
const TX_SELECT_BALANCE = 'SELECT abalance FROM pgbench_accounts WHERE aid = $1'
const TX_UPDATE_TELLER = 'UPDATE pgbench_tellers SET tbalance = tbalance + $1 WHERE tid = $2'
const TX_UPDATE_BRANCH = 'UPDATE pgbench_branches SET bbalance = bbalance + $1 WHERE bid = $2'
const TX_INSERT_HISTORY =
  'INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES ($1, $2, $3, $4, CURRENT_TIMESTAMP)'

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
  const pool = new Pool({ connectionString: env.PGARENA_DATABASE_URL, max: POOL_SIZE })
  pool.on('error', (err) => console.error('idle pg client error:', err.message))

  const app = express()
  app.disable('x-powered-by')

  app.get('/api/static', (req, res) => {
    res.json({ status: 'ok', timestamp: Date.now() })
  })

  app.get('/api/users', async (req, res) => {
    const limit = intParam(req.query, 'limit', 1, 10000)
    const { rows } = await pool.query(USERS_SQL, [limit])
    res.json(rows)
  })

  app.get('/api/perf-test', async (req, res) => {
    // _records is checked here; the other 15 are bound as text and PostgreSQL casts them to the
    // function's parameter types (a value it rejects is SQLSTATE class 22 -> 400)
    const values = PERF_PARAMS.map((name) =>
      name === '_records' ? intParam(req.query, name, 1, 1000) : param(req.query, name))
    const { rows } = await pool.query(PERF_SQL, values)
    res.json(rows)
  })

  app.get('/api/perf-minimal', async (req, res) => {
    const { rows } = await pool.query(MINIMAL_SQL)
    res.json(rows)
  })

  app.post('/api/perf-post', express.json(), async (req, res) => {
    const { records, payload } = parsePerfPost(req.body)
    // the parsed payload goes back to JSON text, bound to the function's jsonb parameter
    const { rows } = await pool.query(POST_SQL, [records, JSON.stringify(payload)])
    res.json(rows)
  })

  app.get('/api/perf-nested', async (req, res) => {
    const records = intParam(req.query, '_records', 1, 1000)
    const depth = intParam(req.query, '_depth', 1, 3)
    const { rows } = await pool.query(NESTED_SQL, [records, depth])
    res.json(rows)
  })

  app.get('/api/perf-large-payload', async (req, res) => {
    const sizeKb = intParam(req.query, '_size_kb', 1, 1024)
    const { rows } = await pool.query(LARGE_PAYLOAD_SQL, [sizeKb])
    res.json(rows)
  })

  app.get('/api/perf-many-params', async (req, res) => {
    // all optional and bound as text (absent -> NULL); PostgreSQL casts them to the function's
    // int/bool/numeric parameters, a value it rejects is SQLSTATE 22P02 -> 400
    const values = MANY_PARAMS.map((name) => optionalParam(req.query, name))
    const { rows } = await pool.query(MANY_PARAMS_SQL, values)
    res.json(rows)
  })

  app.post('/api/tx', express.json(), async (req, res) => {
    const { aid, tid, bid, delta } = parseTx(req.body)
    const client = await pool.connect()
    // while checked out, the pool no longer listens for the client's 'error' event: if the connection
    // dies mid-transaction the pending query rejects, and this listener keeps the event from crashing
    // the process and marks the client for destruction on release
    let broken
    const onClientError = (err) => { broken = err }
    client.on('error', onClientError)
    try {
      await client.query('BEGIN')
      await client.query(TX_UPDATE_ACCOUNT, [delta, aid])
      const { rows } = await client.query(TX_SELECT_BALANCE, [aid])
      if (rows.length !== 1) throw new Error(`pgbench_accounts has no row aid=${aid}`)
      await client.query(TX_UPDATE_TELLER, [delta, tid])
      await client.query(TX_UPDATE_BRANCH, [delta, bid])
      await client.query(TX_INSERT_HISTORY, [tid, bid, aid, delta])
      await client.query('COMMIT')
      res.json({ abalance: rows[0].abalance })
    } catch (err) {
      // a client whose ROLLBACK fails is in an unknown state: release(err) destroys it
      if (!broken) await client.query('ROLLBACK').catch((rollbackErr) => { broken = rollbackErr })
      throw err
    } finally {
      client.removeListener('error', onClientError)
      client.release(broken)
    }
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
    // SQLSTATE class 22 (data exception): malformed date, uuid, array literal, out-of-range number,
    // 22001 for a _text over 1000 characters
    if (typeof err.code === 'string' && err.code.startsWith('22')) {
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
    server.close(() => pool.end().then(() => process.exit(0), () => process.exit(1)))
  }
  process.on('SIGTERM', shutdown)
  process.on('SIGINT', shutdown)
}

if (WORKERS > 1 && cluster.isPrimary) {
  runPrimary()
} else {
  runWorker()
}
