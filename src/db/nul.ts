// Text with a NUL character (U+0000) is not text either database takes: PostgreSQL refuses it
// bound (22021) and drops the connection's message written into a statement (08P01, which reads
// as the database being away), and SQLite's statement ends at it (the rest of the statement,
// after a quote MikroORM opened, is then an unrecognized token; bound, SQLite would store it).
// Whatever a client sent with one, an id, a cursor, a description, is refused 400 invalid_value
// before any statement holding it is sent, on both databases alike, never a 500 or a 503 to
// retry, and nothing is written (the transaction it was in is rolled back). Three gates: MikroORM's
// onQuery, knex's 'query' event, and the billing store's own SQLite bindings (src/domain/billing/sql.ts).
import { DomainError } from '../domain/errors.js';
import { someInChain } from './error-chain.js';

export const NUL_REFUSED = 'Text sent may not contain the NUL character (U+0000).';

export function nulRefused(): DomainError {
  return new DomainError('invalid_value', NUL_REFUSED);
}

/**
 * MikroORM's onQuery: every statement it runs passes here with its values before they are written
 * into it. One holding a NUL is refused before it reaches the database.
 */
export function refuseNulValues(sql: string, params: unknown[]): string {
  refuseNul(params);
  return sql;
}

/** knex's 'query' event: a statement with a NUL among its values is refused before it is sent. */
export function refuseNulBindings(query: { bindings?: readonly unknown[] }): void {
  refuseNul(query.bindings ?? []);
}

function refuseNul(values: readonly unknown[]): void {
  for (const v of values) if (typeof v === 'string' && v.includes('\0')) throw nulRefused();
}

/**
 * Whether an error is the refusal of a NUL: refuseNulValues' (MikroORM hands it on wrapped in its
 * DriverException, with its message) or PostgreSQL's of a bound value (knex statements, which
 * MikroORM does not see).
 */
export function isNulRefused(error: unknown): boolean {
  return someInChain(
    error,
    ({ code, message }) => message === NUL_REFUSED || (code === '22021' && typeof message === 'string' && message.includes('0x00')),
  );
}
