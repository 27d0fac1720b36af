import { sql } from '../../../lib/db'
import { BadRequest, errorResponse } from '../../../lib/http'

export const dynamic = 'force-dynamic'

const FIELDS = { aid: [1, 1000000], tid: [1, 100], bid: [1, 10], delta: [-5000, 5000] }

async function readBody(request) {
  const type = request.headers.get('content-type') ?? ''
  if (type.split(';')[0].trim().toLowerCase() !== 'application/json') {
    throw new BadRequest('Content-Type must be application/json')
  }
  let body
  try {
    body = await request.json()
  } catch {
    throw new BadRequest('body is not valid JSON')
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new BadRequest('body must be a JSON object')
  }
  // extra keys are allowed and ignored
  for (const [name, [min, max]] of Object.entries(FIELDS)) {
    const value = body[name]
    if (!Number.isInteger(value) || value < min || value > max) {
      throw new BadRequest(`${name} must be an integer between ${min} and ${max}`)
    }
  }
  return body
}

// pgbench's TPC-B transaction (seed 001): sql.begin() runs BEGIN, the callback, COMMIT (ROLLBACK
// if it throws) on one reserved connection.
export async function POST(request) {
  try {
    const { aid, tid, bid, delta } = await readBody(request)
    const abalance = await sql.begin(async (tx) => {
      await tx`UPDATE pgbench_accounts SET abalance = abalance + ${delta} WHERE aid = ${aid}`
      const [account] = await tx`SELECT abalance FROM pgbench_accounts WHERE aid = ${aid}`
      if (!account) throw new Error(`pgbench_accounts has no row aid=${aid}`)
      await tx`UPDATE pgbench_tellers SET tbalance = tbalance + ${delta} WHERE tid = ${tid}`
      await tx`UPDATE pgbench_branches SET bbalance = bbalance + ${delta} WHERE bid = ${bid}`
      await tx`
        INSERT INTO pgbench_history (tid, bid, aid, delta, mtime)
        VALUES (${tid}, ${bid}, ${aid}, ${delta}, CURRENT_TIMESTAMP)`
      return account.abalance
    })
    return Response.json({ abalance })
  } catch (err) {
    return errorResponse(err)
  }
}
