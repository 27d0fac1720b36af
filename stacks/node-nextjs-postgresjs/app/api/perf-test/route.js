import { sql } from '../../../lib/db'
import { BadRequest, errorResponse, intParam } from '../../../lib/http'

export const dynamic = 'force-dynamic'

const TEXT_PARAMS = [
  '_text', '_int', '_bigint', '_numeric', '_real', '_double', '_bool', '_date', '_timestamp',
  '_timestamptz', '_uuid', '_json', '_jsonb', '_int_array', '_text_array',
]

export async function GET(request) {
  try {
    const params = request.nextUrl.searchParams
    const records = intParam(params, '_records', 1, 1000)
    const p = {}
    for (const name of TEXT_PARAMS) {
      p[name] = params.get(name)
      if (p[name] === null) throw new BadRequest(`${name} is required`)
    }
    // The other 15 are bound as the request's text and PostgreSQL casts them. postgres.js
    // serialises a parameter by the type the server describes for it, so bool, date/timestamp/
    // timestamptz and json/jsonb parameters go through ::text: a string would otherwise be
    // JSON.stringify'd (json), compared with `=== true` (bool) or re-parsed by JS Date (ms
    // precision, process time zone, a RangeError for garbage).
    const rows = await sql`
      SELECT * FROM perf_test(
        ${records}, ${p._text}, ${p._int}, ${p._bigint}, ${p._numeric}, ${p._real}, ${p._double},
        ${p._bool}::text::bool, ${p._date}::text::date, ${p._timestamp}::text::timestamp,
        ${p._timestamptz}::text::timestamptz, ${p._uuid}, ${p._json}::text::json,
        ${p._jsonb}::text::jsonb, ${p._int_array}, ${p._text_array})`
    return Response.json(rows)
  } catch (err) {
    return errorResponse(err)
  }
}
