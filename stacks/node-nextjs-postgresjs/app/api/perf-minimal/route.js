import { sql } from '../../../lib/db'
import { errorResponse } from '../../../lib/http'

export const dynamic = 'force-dynamic'

export async function GET() {
  try {
    return Response.json(await sql`SELECT * FROM perf_minimal()`)
  } catch (err) {
    return errorResponse(err)
  }
}
