import { sql } from '../../../lib/db'
import { errorResponse, intParam } from '../../../lib/http'

export const dynamic = 'force-dynamic'

export async function GET(request) {
  try {
    const params = request.nextUrl.searchParams
    const records = intParam(params, '_records', 1, 1000)
    const depth = intParam(params, '_depth', 1, 3)
    return Response.json(await sql`SELECT * FROM perf_nested(${records}, ${depth})`)
  } catch (err) {
    return errorResponse(err)
  }
}
