'use strict'

// Runs `next start -H $PGARENA_HOST -p $PGARENA_PORT`: in this process when PGARENA_WORKERS=1,
// otherwise as PGARENA_WORKERS node:cluster workers sharing the port (Next's server is one process).
const cluster = require('node:cluster')

const env = process.env
const HOST = env.PGARENA_HOST || '127.0.0.1'
const PORT = String(env.PGARENA_PORT || 3000)
const WORKERS = Math.max(1, Number(env.PGARENA_WORKERS || 1))
const POOL_SIZE = Math.max(1, Number(env.PGARENA_POOL_SIZE_PER_WORKER || 10))

const nextBin = require.resolve('next/dist/bin/next')
const nextArgs = ['start', '-H', HOST, '-p', PORT]

function runPrimary () {
  let stopping = false
  const listening = new Set()
  const stop = () => {
    if (stopping) return
    stopping = true
    for (const worker of Object.values(cluster.workers)) worker.process.kill('SIGTERM')
    if (Object.keys(cluster.workers).length === 0) process.exit()
    setTimeout(() => process.exit(), 5000).unref()
  }
  process.on('SIGTERM', stop)
  process.on('SIGINT', stop)

  cluster.on('listening', (worker) => listening.add(worker.id))
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
    } else if (!listening.has(worker.id)) {
      // failed during start-up: stop everything instead of crash-looping
      console.error(`worker ${worker.process.pid} failed to start (${signal || code})`)
      process.exitCode = 1
      stop()
    } else {
      console.error(`worker ${worker.process.pid} died (${signal || code}), forking a new one`)
      forkWorker(shares.get(worker.id) ?? POOL_SIZE)
    }
  })

  // every worker is the Next.js CLI itself: node node_modules/next/dist/bin/next start …
  cluster.setupPrimary({ exec: nextBin, args: nextArgs })
  for (let i = 0; i < WORKERS; i++) forkWorker(sizes[i] ?? POOL_SIZE)
  console.log(`primary ${process.pid}: ${WORKERS} x next start, pools ${sizes.join('+') || POOL_SIZE + ' each'}, http://${HOST}:${PORT}`)
}

if (WORKERS > 1) {
  runPrimary()
} else {
  process.argv = [process.argv[0], nextBin, ...nextArgs]
  require(nextBin)
}
