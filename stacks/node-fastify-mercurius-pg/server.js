'use strict'

const cluster = require('node:cluster')
const Fastify = require('fastify')
const mercurius = require('mercurius')
const { Pool } = require('pg')

const env = process.env
const HOST = env.PGARENA_HOST || '127.0.0.1'
const PORT = Number(env.PGARENA_PORT || 8080)
const WORKERS = Math.max(1, Number(env.PGARENA_WORKERS || 1))
const POOL_SIZE = Math.max(1, Number(env.PGARENA_POOL_SIZE_PER_WORKER || 10))

const USERS_MAX = 10000
const POSTS_MAX = 100
const USERS_POSTS_PER_USER = 5 // users-posts: each user's first five posts

const USERS_SQL =
  'SELECT id, username, full_name, email, age, created_at FROM users ORDER BY id LIMIT $1'
const USERS_BRIEF_SQL = 'SELECT id, username FROM users ORDER BY id LIMIT $1'
// every given user's first $2 posts by id, in one statement (the (user_id, id) index, once per user)
const POSTS_SQL = `SELECT u.id AS user_id, p.id, p.title
FROM unnest($1::int[]) AS u(id)
CROSS JOIN LATERAL (SELECT id, title FROM posts WHERE user_id = u.id ORDER BY id LIMIT $2) AS p`

const schema = `
  type Query {
    users(limit: Int!): [User!]!
  }
  type User {
    id: Int!
    username: String!
    fullName: String!
    email: String!
    age: Int!
    createdAt: String!
    posts(limit: Int!): [Post!]!
  }
  type Post {
    id: Int!
    title: String!
  }
`

// A query-string integer in [min, max], strictly decimal. Fastify's Ajv coerces any string that
// Number() accepts ("1e3", " 7", "+7", "0x10"), so the text must first match the pattern; the second
// subschema then coerces it to a number and checks the range.
function queryInt (min, max) {
  return { allOf: [{ type: 'string', pattern: '^-?[0-9]+$' }, { type: 'integer', minimum: min, maximum: max }] }
}

const limitSchema = {
  querystring: {
    type: 'object',
    required: ['limit'],
    properties: {
      limit: queryInt(1, USERS_MAX)
    }
  }
}

// A GraphQL argument out of range: Mercurius answers a single error carrying a statusCode with that status.
function checkLimit (name, value, max) {
  if (value < 1 || value > max) {
    throw new mercurius.ErrorWithProps(`${name} must be an integer from 1 to ${max}`, { code: 'BAD_USER_INPUT' }, 400)
  }
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

async function runWorker () {
  const pool = new Pool({ connectionString: env.PGARENA_DATABASE_URL, max: POOL_SIZE })
  pool.on('error', (err) => console.error('idle pg client error:', err.message))

  async function fetchUsers (limit) {
    const { rows } = await pool.query(USERS_SQL, [limit])
    return rows
  }

  // The first `limit` posts of each user id, one statement for all of them: Map user id -> [{id, title}]
  // (every id present, [] for a user without posts).
  async function fetchPostsByUser (userIds, limit) {
    const { rows } = await pool.query(POSTS_SQL, [userIds, limit])
    const byUser = new Map(userIds.map((id) => [id, []]))
    for (const { user_id: userId, id, title } of rows) byUser.get(userId).push({ id, title })
    return byUser
  }

  const resolvers = {
    Query: {
      users: async (_, { limit }) => {
        checkLimit('limit', limit, USERS_MAX)
        return fetchUsers(limit)
      }
    },
    User: {
      fullName: (user) => user.full_name,
      // node-postgres gives a Date; GraphQL's String would serialise its valueOf() (epoch milliseconds)
      createdAt: (user) => user.created_at.toISOString()
    }
  }

  // User.posts through a Mercurius loader: every User.posts field of one request arrives in a single batch
  // (queries = [{obj: user, params: {limit}}, ...]), answered in the same order.
  const loaders = {
    User: {
      async posts (queries) {
        // one statement per distinct posts(limit) in the request: one, unless the query aliases posts
        const byLimit = new Map()
        for (const { obj, params } of queries) {
          checkLimit('posts limit', params.limit, POSTS_MAX)
          if (!byLimit.has(params.limit)) byLimit.set(params.limit, [])
          byLimit.get(params.limit).push(obj.id)
        }
        const fetched = new Map(await Promise.all(
          [...byLimit].map(async ([limit, ids]) => [limit, await fetchPostsByUser(ids, limit)])))
        return queries.map(({ obj, params }) => fetched.get(params.limit).get(obj.id))
      }
    }
  }

  const app = Fastify({ logger: false })

  // REST routes; /graphql has Mercurius' own error handler (GraphQL-shaped errors) in its plugin scope
  app.setErrorHandler((err, request, reply) => {
    if (err.validation) {
      return reply.code(400).send({ error: err.message })
    }
    // body parsing: unsupported Content-Type (415), malformed or empty JSON, body too large (413)
    if (typeof err.code === 'string' && err.code.startsWith('FST_ERR_CTP_') &&
        err.statusCode >= 400 && err.statusCode < 500) {
      return reply.code(400).send({ error: err.message })
    }
    // SQLSTATE class 22 (data exception)
    if (typeof err.code === 'string' && err.code.startsWith('22')) {
      return reply.code(400).send({ error: err.message })
    }
    if (err.statusCode >= 400 && err.statusCode < 500) {
      return reply.code(err.statusCode).send({ error: err.message })
    }
    console.error(err)
    return reply.code(500).send({ error: 'internal server error' })
  })

  app.register(mercurius, { schema, resolvers, loaders })

  app.get('/api/static', async () => {
    return { status: 'ok', timestamp: Date.now() }
  })

  app.get('/api/users', { schema: limitSchema }, async (request) => {
    return fetchUsers(request.query.limit)
  })

  // REST twin of graphql-nested: the users, then all their posts in one statement
  app.get('/api/users-posts', { schema: limitSchema }, async (request) => {
    const { rows: users } = await pool.query(USERS_BRIEF_SQL, [request.query.limit])
    const posts = await fetchPostsByUser(users.map((user) => user.id), USERS_POSTS_PER_USER)
    return users.map(({ id, username }) => ({ id, username, posts: posts.get(id) }))
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
