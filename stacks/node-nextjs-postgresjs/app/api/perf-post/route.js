import { sql } from '../../../lib/db'
import { BadRequest, errorResponse } from '../../../lib/http'

export const dynamic = 'force-dynamic'

function isObject(value) {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
}

// Content-Type application/json (parameters such as charset allowed), request.json(), then
// _records an integer 1..1000 and _payload a JSON object
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
  if (!isObject(body)) throw new BadRequest('body must be a JSON object')
  const records = body._records
  if (!Number.isInteger(records) || records < 1 || records > 1000) {
    throw new BadRequest('_records must be an integer between 1 and 1000')
  }
  if (!isObject(body._payload)) throw new BadRequest('_payload must be a JSON object')
  return { records, payload: body._payload }
}

export async function POST(request) {
  try {
    const { records, payload } = await readBody(request)
    // the parsed object is bound as is: PostgreSQL describes the parameter as jsonb and postgres.js
    // serialises it with JSON.stringify (a string here would arrive as a JSON string)
    return Response.json(await sql`SELECT * FROM perf_post(${records}, ${payload})`)
  } catch (err) {
    return errorResponse(err)
  }
}
