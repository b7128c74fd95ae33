// Whether an error is the database being unreachable for a moment (a connection PostgreSQL or a
// proxy closed, a server restarting or refusing connections, a pool with none to give), rather
// than a fault of tollgate's: the doors answer such an error 503 database_unavailable with a
// Retry-After, which clients retry, instead of 500 internal_error.

/** PostgreSQL's SQLSTATE classes and codes of a connection gone or refused. */
const PG_UNAVAILABLE = /^(08|57P0[1-3]|53300$)/;
/** node-postgres's, knex's and the socket's messages for the same. */
const UNAVAILABLE_MESSAGE =
  /Connection terminated|connection error|terminating connection|Knex: Timeout acquiring a connection|ECONNREFUSED|ECONNRESET|EPIPE|the database system is (starting up|shutting down)|too many clients|not currently accepting connections|Client was closed/i;
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH']);

export function isDatabaseUnavailable(error: unknown): boolean {
  let e: unknown = error;
  // Through GraphQL's originalError and the causes errors are wrapped in.
  for (let depth = 0; depth < 6 && e && typeof e === 'object'; depth++) {
    const { code, message } = e as { code?: unknown; message?: unknown };
    if (typeof code === 'string' && (PG_UNAVAILABLE.test(code) || SOCKET_CODES.has(code))) return true;
    if (typeof message === 'string' && UNAVAILABLE_MESSAGE.test(message)) return true;
    e = (e as { originalError?: unknown; cause?: unknown }).originalError ?? (e as { cause?: unknown }).cause;
  }
  return false;
}
