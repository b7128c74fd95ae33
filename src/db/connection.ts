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

interface SqliteConnection {
  prepare(sql: string): { all(...params: unknown[]): unknown[] };
}

interface PoolClient {
  acquireConnection(): Promise<SqliteConnection>;
  releaseConnection(connection: SqliteConnection): Promise<unknown>;
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
  const prepared = new WeakMap<SqliteConnection, Map<string, { all(...params: unknown[]): unknown[] }>>();
  return async <T>(sql: string, params: readonly Param[]) => {
    // Listeners of knex's 'query' event (tracing, tests counting queries) hear it as they would from knex.
    if (knex.listenerCount('query') > 0) knex.emit('query', { sql, bindings: params, method: 'select' });
    const conn = await client.acquireConnection();
    try {
      let statements = prepared.get(conn);
      if (!statements) prepared.set(conn, (statements = new Map()));
      let statement = statements.get(sql);
      if (!statement) statements.set(sql, (statement = conn.prepare(sql)));
      return statement.all(...params) as T[];
    } finally {
      await client.releaseConnection(conn);
    }
  };
}
