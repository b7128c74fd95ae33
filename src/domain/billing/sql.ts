// The few helpers the billing hot path needs to speak plain SQL to SQLite and PostgreSQL alike,
// through the knex connection behind MikroORM (src/db/orm.ts): rows and affected counts from raw
// statements, BigInt money read exactly, dates read back from either driver.
import type { MikroORM } from '@mikro-orm/core';
import type { Knex } from '@mikro-orm/better-sqlite';
import { databaseKind, getKnex, type DatabaseKind } from '../../db/orm.js';

export type Db = Knex | Knex.Transaction;

export interface SqlContext {
  knex: Knex;
  kind: DatabaseKind;
  /** ' for update' on PostgreSQL; SQLite's writers are serialised by BEGIN IMMEDIATE instead. */
  forUpdate: string;
}

export function sqlContext(orm: MikroORM): SqlContext {
  const kind = databaseKind(orm);
  return { knex: getKnex(orm), kind, forUpdate: kind === 'postgresql' ? ' for update' : '' };
}

type Binding = string | number | bigint | boolean | Date | null;

/** Rows of a SELECT, or of a statement with RETURNING. */
export async function rows<T>(db: Db, sql: string, bindings: readonly Binding[] = []): Promise<T[]> {
  const result: unknown = await db.raw(sql, bindings as never);
  if (Array.isArray(result)) return result as T[];
  return ((result as { rows?: T[] }).rows ?? []) as T[];
}

/** The number of rows a statement without RETURNING changed. */
export async function run(db: Db, sql: string, bindings: readonly Binding[] = []): Promise<number> {
  const result = (await db.raw(sql, bindings as never)) as { changes?: number; rowCount?: number | null };
  return Number(result.changes ?? result.rowCount ?? 0);
}

/** A 64-bit column read as text (CAST(x AS TEXT)) or as the driver gives it, as a BigInt. */
export function big(value: unknown): bigint {
  if (value === null || value === undefined) return 0n;
  if (typeof value === 'bigint') return value;
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value)) throw new Error(`unsafe integer read from the database: ${value}`);
    return BigInt(value);
  }
  return BigInt(String(value));
}

export function bigOrNull(value: unknown): bigint | null {
  return value === null || value === undefined ? null : big(value);
}

/** Token counters: exact as numbers up to 2^53. */
export function int(value: unknown): number {
  return Number(value ?? 0);
}

/** SQLite gives epoch milliseconds, PostgreSQL a Date (or text). */
export function date(value: unknown): Date {
  if (value instanceof Date) return value;
  if (typeof value === 'number' || typeof value === 'bigint') return new Date(Number(value));
  const text = String(value);
  return /^\d+$/.test(text) ? new Date(Number(text)) : new Date(text);
}

export function bool(value: unknown): boolean {
  return value === true || value === 1 || value === '1' || value === 't' || value === 'true';
}

/** Unique-constraint violation, on either database. */
export function isUniqueViolation(e: unknown): boolean {
  const err = e as { code?: string; message?: string };
  return err?.code === '23505' || err?.code === 'SQLITE_CONSTRAINT_UNIQUE' || err?.code === 'SQLITE_CONSTRAINT_PRIMARYKEY' || /UNIQUE constraint failed/.test(err?.message ?? '');
}

/** Runs a statement whose result does not matter. */
export async function exec(db: Db, sql: string, bindings: readonly Binding[] = []): Promise<void> {
  await db.raw(sql, bindings as never);
}
