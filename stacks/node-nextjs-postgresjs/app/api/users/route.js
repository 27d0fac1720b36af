import { sql } from '../../../lib/db'
import { errorResponse, intParam } from '../../../lib/http'

export const dynamic = 'force-dynamic'

export async function GET(request) {
  try {
    const limit = intParam(request.nextUrl.searchParams, 'limit', 1, 10000)
    const rows = await sql`
      SELECT id, username, full_name, email, age, created_at FROM users ORDER BY id LIMIT ${limit}`
    return Response.json(rows)
  } catch (err) {
    return errorResponse(err)
  }
}
