'use strict'

const cluster = require('node:cluster')
const Ajv = require('ajv')
const Fastify = require('fastify')
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

// A query-string integer in [min, max], strictly decimal. Fastify's Ajv coerces any string that
// Number() accepts ("1e3", " 7", "+7", "0x10"), so the text must first match the pattern; the second
// subschema then coerces it to a number and checks the range.
function queryInt (min, max) {
  return { allOf: [{ type: 'string', pattern: '^-?[0-9]+$' }, { type: 'integer', minimum: min, maximum: max }] }
}

const usersSchema = {
  querystring: {
    type: 'object',
    required: ['limit'],
    properties: {
      limit: queryInt(1, 10000)
    }
  }
}

const perfTestSchema = {
  querystring: {
    type: 'object',
    required: PERF_PARAMS,
    properties: {
      _records: queryInt(1, 1000),
      // the rest are bound as text; PostgreSQL casts them to the function's parameter types
      ...Object.fromEntries(PERF_PARAMS.slice(1).map((name) => [name, { type: 'string' }]))
    }
  }
}

// seed 000's newer scenarios (scenarios.sql): no table access, so what differs is the framework's work
const MINIMAL_SQL = 'SELECT * FROM perf_minimal()'
const POST_SQL = 'SELECT * FROM perf_post($1, $2)'
const NESTED_SQL = 'SELECT * FROM perf_nested($1, $2)'
const LARGE_PAYLOAD_SQL = 'SELECT * FROM perf_large_payload($1)'
const MANY_PARAMS = Array.from({ length: 20 }, (_, i) => `_p${i + 1}`)
const MANY_PARAMS_SQL =
  `SELECT * FROM perf_many_params(${MANY_PARAMS.map((_, i) => `$${i + 1}`).join(', ')})`

const perfNestedSchema = {
  querystring: {
    type: 'object',
    required: ['_records', '_depth'],
    properties: { _records: queryInt(1, 1000), _depth: queryInt(1, 3) }
  }
}

const perfLargePayloadSchema = {
  querystring: {
    type: 'object',
    required: ['_size_kb'],
    properties: { _size_kb: queryInt(1, 1024) }
  }
}

// all optional (absent -> SQL NULL), bound as text: PostgreSQL casts them to the function's types
const perfManyParamsSchema = {
  querystring: {
    type: 'object',
    properties: Object.fromEntries(MANY_PARAMS.map((name) => [name, { type: 'string' }]))
  }
}

// compiled by the strict (non-coercing) Ajv below, like tx: "3", 1.5, true, null are not integers
const perfPostSchema = {
  body: {
    type: 'object',
    required: ['_records', '_payload'],
    properties: {
      _records: { type: 'integer', minimum: 1, maximum: 1000 },
      _payload: { type: 'object' }
    }
  }
}

// pgbench's TPC-B transaction (seed 001), run statement by statement on one pooled client
const TX_UPDATE_ACCOUNT = 'UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2'
const TX_SELECT_BALANCE = 'SELECT abalance FROM pgbench_accounts WHERE aid = $1'
const TX_UPDATE_TELLER = 'UPDATE pgbench_tellers SET tbalance = tbalance + $1 WHERE tid = $2'
const TX_UPDATE_BRANCH = 'UPDATE pgbench_branches SET bbalance = bbalance + $1 WHERE bid = $2'
const TX_INSERT_HISTORY =
  'INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES ($1, $2, $3, $4, CURRENT_TIMESTAMP)'

const txSchema = {
  body: {
    type: 'object',
    required: ['aid', 'tid', 'bid', 'delta'],
    // extra keys are allowed and ignored
    properties: {
      aid: { type: 'integer', minimum: 1, maximum: 1000000 },
      tid: { type: 'integer', minimum: 1, maximum: 100 },
      bid: { type: 'integer', minimum: 1, maximum: 10 },
      delta: { type: 'integer', minimum: -5000, maximum: 5000 }
    }
  }
}

// Fastify's default Ajv coerces types ("5" -> 5, [5] -> 5, null -> 0), which suits query strings
// but not a JSON body: the tx route compiles its body schema with a strict, non-coercing Ajv.
const strictAjv = new Ajv({ coerceTypes: false, useDefaults: false, removeAdditional: false })
const strictValidatorCompiler = ({ schema }) => strictAjv.compile(schema)

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

async function runWorker () {
  const pool = new Pool({ connectionString: env.PGARENA_DATABASE_URL, max: POOL_SIZE })
  pool.on('error', (err) => console.error('idle pg client error:', err.message))

  const app = Fastify({ logger: false })

  app.setErrorHandler((err, request, reply) => {
    if (err.validation) {
      return reply.code(400).send({ error: err.message })
    }
    // body parsing: unsupported Content-Type (415), malformed or empty JSON, body too large (413)
    if (typeof err.code === 'string' && err.code.startsWith('FST_ERR_CTP_') &&
        err.statusCode >= 400 && err.statusCode < 500) {
      return reply.code(400).send({ error: err.message })
    }
    // SQLSTATE class 22 (data exception): malformed date, uuid, array literal, out-of-range number…
    if (typeof err.code === 'string' && err.code.startsWith('22')) {
      return reply.code(400).send({ error: err.message })
    }
    if (err.statusCode >= 400 && err.statusCode < 500) {
      return reply.code(err.statusCode).send({ error: err.message })
    }
    console.error(err)
    return reply.code(500).send({ error: 'internal server error' })
  })

  app.get('/api/static', async () => {
    return { status: 'ok', timestamp: Date.now() }
  })

  app.get('/api/users', { schema: usersSchema }, async (request) => {
    const { rows } = await pool.query(USERS_SQL, [request.query.limit])
    return rows
  })

  app.get('/api/perf-test', { schema: perfTestSchema }, async (request) => {
    const q = request.query
    const { rows } = await pool.query(PERF_SQL, PERF_PARAMS.map((name) => q[name]))
    return rows
  })

  app.get('/api/perf-minimal', async () => {
    const { rows } = await pool.query(MINIMAL_SQL)
    return rows
  })

  app.post('/api/perf-post', { schema: perfPostSchema, validatorCompiler: strictValidatorCompiler }, async (request) => {
    const { _records: records, _payload: payload } = request.body
    // the parsed payload goes back to JSON text, bound to the function's jsonb parameter
    const { rows } = await pool.query(POST_SQL, [records, JSON.stringify(payload)])
    return rows
  })

  app.get('/api/perf-nested', { schema: perfNestedSchema }, async (request) => {
    const { rows } = await pool.query(NESTED_SQL, [request.query._records, request.query._depth])
    return rows
  })

  app.get('/api/perf-large-payload', { schema: perfLargePayloadSchema }, async (request) => {
    const { rows } = await pool.query(LARGE_PAYLOAD_SQL, [request.query._size_kb])
    return rows
  })

  app.get('/api/perf-many-params', { schema: perfManyParamsSchema }, async (request) => {
    const q = request.query
    const { rows } = await pool.query(MANY_PARAMS_SQL, MANY_PARAMS.map((name) => q[name] ?? null))
    return rows
  })

  app.post('/api/tx', { schema: txSchema, validatorCompiler: strictValidatorCompiler }, async (request) => {
    const { aid, tid, bid, delta } = request.body
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
      return { abalance: rows[0].abalance }
    } catch (err) {
      // a client whose ROLLBACK fails is in an unknown state: release(err) destroys it
      if (!broken) await client.query('ROLLBACK').catch((rollbackErr) => { broken = rollbackErr })
      throw err
    } finally {
      client.removeListener('error', onClientError)
      client.release(broken)
    }
  })

  let closing = false
  const shutdown = () => {
    if (closing) return
    closing = true
    setTimeout(() => process.exit(0), 3000).unref()
    app.close()
      .then(() => pool.end())
      .then(() => process.exit(0), () => process.exit(1))
  }
  process.on('SIGTERM', shutdown)
  process.on('SIGINT', shutdown)

  await app.listen({ host: HOST, port: PORT })
  if (WORKERS === 1) console.log(`pid ${process.pid}: pool ${POOL_SIZE}, http://${HOST}:${PORT}`)
}

if (WORKERS > 1 && cluster.isPrimary) {
  runPrimary()
} else {
  runWorker().catch((err) => {
    console.error(err)
    process.exit(1)
  })
}
