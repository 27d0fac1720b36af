import { sql } from '../../../lib/db'
import { errorResponse } from '../../../lib/http'

export const dynamic = 'force-dynamic'

const NAMES = Array.from({ length: 20 }, (_, i) => `_p${i + 1}`)

export async function GET(request) {
  try {
    // all optional (absent -> null -> SQL NULL) and bound as the request's text; PostgreSQL casts
    // them (a value it rejects is SQLSTATE 22P02 -> 400). The bool ones go through ::text because
    // postgres.js would serialise a string for a bool parameter as false ("true" is not === true).
    const params = request.nextUrl.searchParams
    const p = NAMES.map((name) => params.get(name))
    return Response.json(await sql`
      SELECT * FROM perf_many_params(
        ${p[0]}, ${p[1]}, ${p[2]}::text::bool, ${p[3]}, ${p[4]},
        ${p[5]}, ${p[6]}, ${p[7]}::text::bool, ${p[8]}, ${p[9]},
        ${p[10]}, ${p[11]}, ${p[12]}::text::bool, ${p[13]}, ${p[14]},
        ${p[15]}, ${p[16]}, ${p[17]}::text::bool, ${p[18]}, ${p[19]})`)
  } catch (err) {
    return errorResponse(err)
  }
}
