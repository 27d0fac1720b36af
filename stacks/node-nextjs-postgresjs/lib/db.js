import postgres from 'postgres'

// One postgres.js pool per process (per cluster worker), sized by PGARENA_POOL_SIZE_PER_WORKER.
// Kept on globalThis so that every route bundle shares the same pool.
export const sql = (globalThis.pgarenaSql ??= postgres(process.env.PGARENA_DATABASE_URL, {
  max: Math.max(1, Number(process.env.PGARENA_POOL_SIZE_PER_WORKER ?? 10)),
}))
