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
