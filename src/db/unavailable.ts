// Whether an error is the database being unreachable for a moment (a connection PostgreSQL or a
// proxy closed, a server restarting or refusing connections, a pool with none to give), rather
// than a fault of tollgate's: the doors answer such an error 503 database_unavailable with a
// Retry-After, which clients retry, instead of 500 internal_error.
import { someInChain } from './error-chain.js';

/** PostgreSQL's SQLSTATE classes and codes of a connection gone or refused. */
const PG_UNAVAILABLE = /^(08|57P0[1-3]|53300$)/;
/** node-postgres's, knex's and the socket's messages for the same. */
const UNAVAILABLE_MESSAGE =
  /Connection terminated|connection error|terminating connection|Knex: Timeout acquiring a connection|ECONNREFUSED|ECONNRESET|EPIPE|the database system is (starting up|shutting down)|too many clients|not currently accepting connections|Client was closed/i;
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH']);

/** When each background failure was last said while the database was away (message → ms). */
const lastSaid = new Map<string, number>();
/** While the database is away, a background loop's failure is said once in this long. */
export const UNAVAILABLE_SAID_EVERY_MS = 30_000;

/**
 * Logs a background loop's failure (the sweeper, mail delivery, a poll): an error with its stack,
 * but the database being away, which every loop meets each round while it lasts, a warning
 * without a stack, once per UNAVAILABLE_SAID_EVERY_MS per message.
 */
export function logBackgroundFailure(
  logger: { error(obj: object, msg: string): void; warn(obj: object, msg: string): void },
  err: unknown,
  msg: string,
  fields: object = {},
  now = Date.now(),
): void {
  if (!isConnectionLost(err)) {
    logger.error({ ...fields, err }, msg);
    return;
  }
  if ((lastSaid.get(msg) ?? -Infinity) > now - UNAVAILABLE_SAID_EVERY_MS) return;
  lastSaid.set(msg, now);
  const reason = err instanceof Error ? err.message : String(err);
  logger.warn({ ...fields, reason: reason.slice(0, 300) }, `${msg}: the database is unavailable (said once every 30 s while it lasts)`);
}

/** knex's pool gave no connection in time: the database away (PostgreSQL), or a bug holding them all. */
const POOL_TIMEOUT = /Knex: Timeout acquiring a connection/i;

/**
 * Unavailable, and surely the database's doing, not tollgate's: not a pool with no connection to
 * give, which is also what a bug looks like (on SQLite, with its one connection, a query waiting
 * on its own transaction; on PostgreSQL, connections leaked). Those are answered 503 all the same,
 * but logged as the unexpected errors they may be.
 */
export function isConnectionLost(error: unknown): boolean {
  return isDatabaseUnavailable(error) && !someInChain(error, ({ message }) => typeof message === 'string' && POOL_TIMEOUT.test(message));
}

export function isDatabaseUnavailable(error: unknown): boolean {
  // Through GraphQL's originalError and the causes errors are wrapped in.
  return someInChain(
    error,
    ({ code, message }) =>
      (typeof code === 'string' && (PG_UNAVAILABLE.test(code) || SOCKET_CODES.has(code))) ||
      (typeof message === 'string' && UNAVAILABLE_MESSAGE.test(message)),
  );
}
