// The SQL connection behind an opened ORM and its dialect, for the stores: without the drivers,
// the migrations or the code that opens a database (src/db/orm.ts), so the domain can use it.
import type { MikroORM } from '@mikro-orm/core';
import type { AbstractSqlConnection, Knex } from '@mikro-orm/knex';

export type DatabaseKind = 'sqlite' | 'postgresql';

/** The knex instance of the ORM's connection, for the hot paths that skip the unit of work. */
export function getKnex(orm: MikroORM): Knex {
  return (orm.em.getConnection() as unknown as AbstractSqlConnection).getKnex();
}

/** For the statements that differ by dialect (SQLite has no row locks, for one). */
export function databaseKind(orm: MikroORM): DatabaseKind {
  return knexKind(getKnex(orm));
}

/** The dialect of a knex connection or transaction. */
export function knexKind(knex: Knex | Knex.Transaction): DatabaseKind {
  const dialect = (knex as unknown as { client?: { dialect?: string } }).client?.dialect ?? '';
  return dialect.startsWith('postgres') ? 'postgresql' : 'sqlite';
}

type Param = string | number | null;

/** A better-sqlite3 prepared statement, as the stores use it. */
export interface SqliteStatement {
  /** It returns rows (a SELECT, a pragma, or a write with RETURNING). */
  readonly reader: boolean;
  /** It changes nothing in the database. */
  readonly readonly: boolean;
  all(...params: unknown[]): unknown[];
  run(...params: unknown[]): { changes: number };
}

/** A better-sqlite3 connection, as the stores, the ORM's pool set-up and the checkpoint worker use it. */
export interface SqliteHandle {
  prepare(sql: string): SqliteStatement;
  pragma(source: string): unknown;
  readonly inTransaction: boolean;
  readonly name: string;
  readonly memory: boolean;
}

/** SQLite's safety level for every commit (src/db/orm.ts sets it), but billing's lazySync batches. */
export const SQLITE_SYNC = 'FULL';
/** What billing's lazySync batches commit at (src/domain/billing/sql.ts). */
export const SQLITE_LAZY_SYNC = 'NORMAL';

/** The safety level each connection is at, as setSqliteSync left it. */
const syncLevels = new WeakMap<SqliteHandle, string>();

/**
 * Puts `conn` at safety level `level`, with a pragma only when it is at another. Billing's hot
 * batches leave the connection at NORMAL for the next one (a pragma before and after every batch
 * cost about as much as one of its statements); whatever else takes the connection from the pool
 * gets it back at FULL first (src/db/orm.ts), as do billing's own writes outside its batches.
 * SQLite cannot change the level inside a transaction: on a connection a failed rollback left in
 * one this changes nothing (no throw, which would keep a pool's acquire from handing it back), and
 * what runs next fails on that transaction as it would have.
 */
export function setSqliteSync(conn: SqliteHandle, level: string): void {
  if (conn.inTransaction || syncLevels.get(conn) === level) return;
  conn.pragma(`synchronous = ${level}`);
  syncLevels.set(conn, level);
}

const statements = new WeakMap<SqliteHandle, Map<string, SqliteStatement>>();

/** `sql` prepared on `conn`, once per connection (the stores' statements, the key lookup). */
export function sqliteStatement(conn: SqliteHandle, sql: string): SqliteStatement {
  let cache = statements.get(conn);
  if (!cache) statements.set(conn, (cache = new Map()));
  let statement = cache.get(sql);
  if (!statement) {
    statement = conn.prepare(sql);
    // Statements built with a variable number of placeholders are few; keep the cache bounded.
    if (cache.size < 500) cache.set(sql, statement);
  }
  return statement;
}

interface PoolCounts {
  numUsed(): number;
  numFree(): number;
  numPendingAcquires(): number;
  numPendingCreates(): number;
}

/** SQLite's one pooled connection, by the knex client whose pool holds it (src/db/orm.ts registers it). */
const sqliteHandles = new WeakMap<object, SqliteHandle>();

export function registerSqliteHandle(knex: Knex, handle: SqliteHandle): void {
  sqliteHandles.set((knex as unknown as { client: object }).client, handle);
}

/** The pool's own acquire, by knex client, before src/db/orm.ts made it restore FULL. */
const acquiresAsIs = new WeakMap<object, () => Promise<SqliteHandle>>();

export function registerAcquireAsIs(client: object, acquire: () => Promise<SqliteHandle>): void {
  acquiresAsIs.set(client, acquire);
}

/**
 * Takes SQLite's connection from the pool at whatever safety level it is: for billing's batches,
 * which set their own, and for reads, which commit nothing. Everything else acquires through knex.
 */
export function acquireAsIs(knex: Knex): Promise<SqliteHandle> {
  const client = (knex as unknown as { client: PoolClient }).client;
  return (acquiresAsIs.get(client) ?? client.acquireConnection).call(client);
}

/**
 * SQLite's connection when nobody holds it: the pool's one connection free, no acquire waiting.
 * Then a statement run synchronously on it cannot come between the statements of anything else
 * (a knex or MikroORM transaction holds the connection acquired from start to end), and taking
 * it through the pool, an allocation-heavy promise dance per statement, is not needed. Only for
 * work that is synchronous from start to end: anything that awaits must acquire it.
 */
export function idleSqliteHandle(knex: Knex): SqliteHandle | null {
  const client = (knex as unknown as { client: { pool?: PoolCounts } }).client;
  const handle = sqliteHandles.get(client);
  const pool = client.pool;
  if (!handle || !pool) return null;
  if (pool.numFree() !== 1 || pool.numUsed() !== 0 || pool.numPendingAcquires() !== 0 || pool.numPendingCreates() !== 0) return null;
  return handle;
}

interface PoolClient {
  acquireConnection(): Promise<SqliteHandle>;
  releaseConnection(connection: SqliteHandle): Promise<unknown>;
}

/**
 * Rows of one SELECT, for lookups every request makes (the API key's): on SQLite the statement is
 * prepared once per connection and run on the pool's connection (knex prepares it again on every
 * call, the larger part of such a lookup's cost); on PostgreSQL knex's raw query.
 */
export function selectRows(orm: MikroORM): <T>(sql: string, params: readonly Param[]) => Promise<T[]> {
  const knex = getKnex(orm);
  if (knexKind(knex) === 'postgresql') {
    return async <T>(sql: string, params: readonly Param[]) => ((await knex.raw(sql, params as Param[])) as { rows: T[] }).rows;
  }
  const client = (knex as unknown as { client: PoolClient }).client;
  return async <T>(sql: string, params: readonly Param[]) => {
    // Listeners of knex's 'query' event (tracing, tests counting queries) hear it as they would from knex.
    if (knex.listenerCount('query') > 0) knex.emit('query', { sql, bindings: params, method: 'select' });
    const idle = idleSqliteHandle(knex);
    if (idle) return sqliteStatement(idle, sql).all(...params) as T[];
    const conn = await acquireAsIs(knex);
    try {
      return sqliteStatement(conn, sql).all(...params) as T[];
    } finally {
      await client.releaseConnection(conn);
    }
  };
}
