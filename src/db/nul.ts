// Text with a NUL character (U+0000) is not text either database takes: PostgreSQL refuses it
// bound (22021) and drops the connection's message written into a statement (08P01, which reads
// as the database being away), and SQLite's statement ends at it (the rest of the statement,
// after a quote MikroORM opened, is then an unrecognized token; bound, SQLite would store it).
// Whatever a client sent with one, an id, a cursor, a description, is refused 400 invalid_value
// before any statement holding it is sent, on both databases alike, never a 500 or a 503 to
// retry, and nothing is written (the transaction it was in is rolled back). Three gates: MikroORM's
// onQuery, knex's 'query' event, and the billing store's own SQLite bindings (src/domain/billing/sql.ts).
import { DomainError } from '../domain/errors.js';

export const NUL_REFUSED = 'Text sent may not contain the NUL character (U+0000).';

export function nulRefused(): DomainError {
  return new DomainError('invalid_value', NUL_REFUSED);
}

/**
 * MikroORM's onQuery: every statement it runs passes here with its values before they are written
 * into it. One holding a NUL is refused before it reaches the database.
 */
export function refuseNulValues(sql: string, params: unknown[]): string {
  for (const p of params) if (typeof p === 'string' && p.includes('\0')) throw nulRefused();
  return sql;
}

/** knex's 'query' event: a statement with a NUL among its values is refused before it is sent. */
export function refuseNulBindings(query: { bindings?: readonly unknown[] }): void {
  for (const b of query.bindings ?? []) if (typeof b === 'string' && b.includes('\0')) throw nulRefused();
}

/**
 * Whether an error is the refusal of a NUL: refuseNulValues' (MikroORM hands it on wrapped in its
 * DriverException, with its message) or PostgreSQL's of a bound value (knex statements, which
 * MikroORM does not see).
 */
export function isNulRefused(error: unknown): boolean {
  let e: unknown = error;
  for (let depth = 0; depth < 6 && e && typeof e === 'object'; depth++) {
    const { code, message } = e as { code?: unknown; message?: unknown };
    if (message === NUL_REFUSED) return true;
    if (code === '22021' && typeof message === 'string' && message.includes('0x00')) return true;
    e = (e as { originalError?: unknown; cause?: unknown }).originalError ?? (e as { cause?: unknown }).cause;
  }
  return false;
}
