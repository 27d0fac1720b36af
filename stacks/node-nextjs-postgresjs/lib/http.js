import postgres from 'postgres'

// The contract's error bodies: bad input -> 400 {"error": ...}, anything else 500.

export class BadRequest extends Error {}

export function badRequest(message) {
  return Response.json({ error: message }, { status: 400 })
}

export function errorResponse(err) {
  if (err instanceof BadRequest) return badRequest(err.message)
  // postgres.js' PostgresError carries the SQLSTATE; class 22 (data exception: malformed date,
  // uuid, array literal, json, a number out of range, text too long) is the client's bad input
  if (err instanceof postgres.PostgresError && err.code?.startsWith('22')) {
    return badRequest(err.message)
  }
  console.error(err)
  return Response.json({ error: 'internal server error' }, { status: 500 })
}

// A required integer query parameter in [min, max]
export function intParam(params, name, min, max) {
  const raw = params.get(name)
  if (raw === null) throw new BadRequest(`${name} is required`)
  if (!/^-?\d+$/.test(raw)) throw new BadRequest(`${name} must be an integer`)
  const value = Number(raw)
  if (value < min || value > max) throw new BadRequest(`${name} must be between ${min} and ${max}`)
  return value
}
