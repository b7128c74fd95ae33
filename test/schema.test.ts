// Entities and migrations describe the same tables: an empty database, migrated, shows no
// difference from the entities in MikroORM's schema diff, on SQLite and on PostgreSQL. A column,
// index or table added to one side only fails here.
import type { MikroORM } from '@mikro-orm/core';
import { DatabaseSchema, SchemaComparator, type AbstractSqlPlatform, type Column, type ForeignKey } from '@mikro-orm/better-sqlite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeDatabase, openDatabase } from '../src/db/orm.js';
import { ENTITIES } from '../src/entities/index.js';
import { BACKENDS, createTestDatabase, type TestDatabase } from './support/databases.js';

describe.each(BACKENDS)('the schema on %s', (backend) => {
  let db: TestDatabase;
  let orm: MikroORM;

  beforeAll(async () => {
    db = await createTestDatabase(backend);
    orm = await openDatabase(db.url);
  });
  afterAll(async () => {
    await closeDatabase(orm);
    await db.drop();
  });

  it('has an entity for every table the migrations create', async () => {
    const tables = (await migratedSchema(orm))
      .getTables()
      .map((t) => t.name)
      .filter((t) => t !== 'mikro_orm_migrations');
    const entityTables = ENTITIES.map((e) => e.meta.tableName).sort();
    expect(entityTables).toEqual([...tables].sort());
  });

  if (backend === 'PostgreSQL') {
    it('matches the entities exactly: the schema diff is empty', async () => {
      const sql = await orm.getSchemaGenerator().getUpdateSchemaSQL({ wrap: false, safe: false, dropTables: true });
      expect(sql.trim()).toBe('');
    });
  } else {
    it('matches the entities: the schema diff holds only what SQLite cannot express', async () => {
      expect(await sqliteDifferences(orm)).toEqual([]);
    });
  }
});

async function migratedSchema(orm: MikroORM): Promise<DatabaseSchema> {
  const platform = orm.em.getPlatform() as AbstractSqlPlatform;
  return DatabaseSchema.create(orm.em.getConnection() as never, platform, orm.config);
}

/**
 * MikroORM's SQLite diff also reports what knex's SQLite DDL writes differently from MikroORM's and
 * SQLite stores the same: a primary key that is not INTEGER is nullable unless NOT NULL is written,
 * defaults come back quoted ('0') and booleans as 0/1, an autoincrement key must be INTEGER (not
 * BIGINT), and MikroORM's SQLite target carries no foreign keys. Those are dropped here (each one
 * checked for being exactly that); anything else is a real difference and is returned. (MikroORM
 * maps every string to TEXT on SQLite, so lengths are compared on PostgreSQL only.)
 */
async function sqliteDifferences(orm: MikroORM): Promise<string[]> {
  const platform = orm.em.getPlatform() as AbstractSqlPlatform;
  const target = (orm.getSchemaGenerator() as unknown as { getTargetSchema(): DatabaseSchema }).getTargetSchema();
  const diff = new SchemaComparator(platform).compare(await migratedSchema(orm), target);
  const found: string[] = [];
  for (const name of Object.keys(diff.newTables)) found.push(`${name}: table missing from the migrations`);
  for (const name of Object.keys(diff.removedTables)) found.push(`${name}: table without an entity`);
  for (const [table, t] of Object.entries(diff.changedTables)) {
    for (const [column, change] of Object.entries(t.changedColumns)) {
      for (const property of change.changedProperties) {
        if (!sqliteQuirk(property, change.fromColumn, change.column)) found.push(`${table}.${column}: ${property} differs`);
      }
    }
    for (const fk of Object.values(t.removedForeignKeys)) {
      if (!referencesAnEntity(orm, fk)) found.push(`${table}: foreign key ${fk.constraintName} without a relation`);
    }
    const other = [
      'addedColumns',
      'removedColumns',
      'renamedColumns',
      'addedIndexes',
      'removedIndexes',
      'changedIndexes',
      'renamedIndexes',
      'addedForeignKeys',
      'changedForeignKeys',
      'addedChecks',
      'removedChecks',
      'changedChecks',
    ] as const;
    for (const key of other) {
      const items = (t as unknown as Record<string, Record<string, unknown> | undefined>)[key];
      for (const item of Object.keys(items ?? {})) found.push(`${table}: ${key} ${item}`);
    }
  }
  return found;
}

const unquote = (v: string | null | undefined) =>
  (v ?? '')
    .replace(/^'(.*)'$/, '$1')
    .replace(/^false$/, '0')
    .replace(/^true$/, '1');

function sqliteQuirk(property: string, from: Column, to: Column): boolean {
  if (property === 'nullable') return Boolean(from.primary && to.primary && !to.nullable) && !/^integer$/i.test(from.type);
  if (property === 'default') return unquote(from.default) === unquote(to.default);
  if (property === 'type')
    return Boolean(from.autoincrement && to.autoincrement && /^integer$/i.test(from.type) && /^bigint$/i.test(to.type));
  return false;
}

function referencesAnEntity(orm: MikroORM, fk: ForeignKey): boolean {
  const meta = Object.values(orm.getMetadata().getAll()).find((m) => m.tableName === fk.localTableName);
  return Boolean(
    meta?.relations.some(
      (r) => r.fieldNames.join() === fk.columnNames.join() && orm.getMetadata().find(r.type)?.tableName === fk.referencedTableName,
    ),
  );
}
