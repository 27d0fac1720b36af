import { sql } from '../../../lib/db'
import { errorResponse, intParam } from '../../../lib/http'

export const dynamic = 'force-dynamic'

export async function GET(request) {
  try {
    const sizeKb = intParam(request.nextUrl.searchParams, '_size_kb', 1, 1024)
    return Response.json(await sql`SELECT * FROM perf_large_payload(${sizeKb})`)
  } catch (err) {
    return errorResponse(err)
  }
}
