// SQLite's commits wait for the disk (synchronous = FULL) on every start, not only on a new file,
// except the batches of billing's hot path that ask for lazySync (src/domain/billing/sql.ts), which
// leave the connection at NORMAL for the next one: everything else puts it back at FULL first.
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { getKnex, idleSqliteHandle } from '../src/db/connection.js';
import type { MikroORM } from '@mikro-orm/core';
import { closeDatabase, openDatabase, SQLITE_WAL_SIZE_LIMIT_BYTES } from '../src/db/orm.js';
import { billingDatabase, type Queryable } from '../src/domain/billing/sql.js';

const FULL = 2;
const NORMAL = 1;
const level = async (q: Queryable): Promise<number> =>
  Number((await q.rows<{ synchronous: number }>('pragma synchronous'))[0]!.synchronous);

describe('SQLite durability', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  const fileUrl = () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'tollgate-sync-'));
    dirs.push(dir);
    return `sqlite:${path.join(dir, 'tollgate.db')}`;
  };

  /** Runs `fn` on a database of its own, closed after. */
  const withDatabase = async (fn: (orm: MikroORM) => Promise<void>) => {
    const orm = await openDatabase(fileUrl());
    try {
      await fn(orm);
    } finally {
      await closeDatabase(orm);
    }
  };

  it('syncs every commit to disk on a new file and on an existing one alike', async () => {
    const url = fileUrl();
    const first = await openDatabase(url);
    try {
      expect(await level(billingDatabase(first))).toBe(FULL);
    } finally {
      await closeDatabase(first);
    }
    // The file is in WAL mode now; a connection opening it would start at NORMAL by itself.
    const again = await openDatabase(url);
    try {
      expect(await level(billingDatabase(again))).toBe(FULL);
    } finally {
      await closeDatabase(again);
    }
  });

  it('shrinks the WAL file back to its limit once a checkpoint has emptied it, after a large write', async () => {
    const url = fileUrl();
    const wal = `${url.slice('sqlite:'.length)}-wal`;
    const orm = await openDatabase(url);
    try {
      const knex = getKnex(orm);
      await knex.raw('create table bulk (b blob)');
      // About 2.5 times the limit in one transaction: the WAL grows past it.
      const blob = Buffer.alloc(1024 * 1024, 7);
      await knex.transaction(async (trx) => {
        for (let i = 0; i < Math.ceil((2.5 * SQLITE_WAL_SIZE_LIMIT_BYTES) / blob.length); i++)
          await trx.raw('insert into bulk values (?)', [blob]);
      });
      expect(statSync(wal).size).toBeGreaterThan(2 * SQLITE_WAL_SIZE_LIMIT_BYTES);
      // The checkpointer copies it into the database; the next commit starts the WAL over and truncates it.
      await knex.raw('pragma wal_checkpoint(PASSIVE)');
      await knex.raw('delete from bulk');
      await knex.raw('pragma wal_checkpoint(PASSIVE)');
      await knex.raw("insert into bulk values (x'00')");
      expect(statSync(wal).size).toBeLessThanOrEqual(SQLITE_WAL_SIZE_LIMIT_BYTES);
    } finally {
      await closeDatabase(orm);
    }
  });

  it('commits a batch of lazySync transactions unsynced, a batch with any other synced, and every other write synced', async () => {
    await withDatabase(async (orm) => {
      const db = billingDatabase(orm);
      const knex = getKnex(orm);
      // Through knex (MikroORM's way, and knex transactions'), as what runs inside sees it.
      const knexLevel = async () =>
        knex.transaction(async (trx) => Number(((await trx.raw('pragma synchronous')) as { synchronous: number }[])[0]!.synchronous));
      // A batch of billing hot-path transactions alone.
      const lazy = await Promise.all([
        db.transaction((trx) => level(trx), { lazySync: true }),
        db.transaction((trx) => level(trx), { lazySync: true }),
      ]);
      expect(lazy).toEqual([NORMAL, NORMAL]);
      // Whatever takes the connection through knex next gets it at FULL.
      expect(await knexLevel()).toBe(FULL);
      expect(await orm.em.getConnection().execute('pragma synchronous')).toEqual([{ synchronous: FULL }]);
      // A credit in the same batch as a hold: the shared commit is synced.
      const mixed = await Promise.all([db.transaction((trx) => level(trx), { lazySync: true }), db.transaction((trx) => level(trx))]);
      expect(mixed).toEqual([FULL, FULL]);
      // A failing lazy transaction rolls back alone; knex's next transaction is synced all the same.
      await expect(
        db.transaction(
          async () => {
            throw new Error('boom');
          },
          { lazySync: true },
        ),
      ).rejects.toThrow('boom');
      expect(await knexLevel()).toBe(FULL);
      // Billing's own writes outside a batch (each its own commit) are synced too; its reads leave
      // the level where the last batch put it.
      await db.transaction((trx) => level(trx), { lazySync: true });
      expect(await level(db)).toBe(NORMAL);
      await db.run('create table probe (id integer)');
      expect(await level(db)).toBe(FULL);
      await db.transaction((trx) => level(trx), { lazySync: true });
      await db.rows('insert into probe (id) values (1) returning id');
      expect(await level(db)).toBe(FULL);
    });
  });

  it('hands a connection left inside a transaction back to the pool: the next statement fails, nothing hangs', async () => {
    await withDatabase(async (orm) => {
      const db = billingDatabase(orm);
      const knex = getKnex(orm);
      await db.transaction((trx) => level(trx), { lazySync: true });
      // As a rollback that failed would leave it: inside a transaction, at NORMAL.
      const handle = idleSqliteHandle(knex)!;
      handle.prepare('begin immediate').run();
      await expect(knex.transaction(async (trx) => trx.raw('select 1'))).rejects.toThrow(/within a transaction/);
      await expect(db.transaction((trx) => level(trx), { lazySync: true })).rejects.toThrow(/within a transaction/);
      handle.prepare('rollback').run();
      // The pool has its connection back, and knex gets it at FULL again.
      const inside = await knex.transaction(async (trx) => (await trx.raw('pragma synchronous')) as { synchronous: number }[]);
      expect(inside).toEqual([{ synchronous: FULL }]);
    });
  });

  it('changes the level only between batches that need another: hot batches back to back run no pragma', async () => {
    await withDatabase(async (orm) => {
      const db = billingDatabase(orm);
      await db.transaction((trx) => level(trx), { lazySync: true });
      const handle = idleSqliteHandle(getKnex(orm))!;
      const pragma = vi.spyOn(handle, 'pragma');
      for (let i = 0; i < 3; i++) expect(await db.transaction((trx) => level(trx), { lazySync: true })).toBe(NORMAL);
      expect(pragma).not.toHaveBeenCalled();
      // A synced batch changes it, once, and the next hot batch changes it back, once.
      expect(await db.transaction((trx) => level(trx))).toBe(FULL);
      expect(await db.transaction((trx) => level(trx), { lazySync: true })).toBe(NORMAL);
      expect(pragma.mock.calls).toEqual([['synchronous = FULL'], ['synchronous = NORMAL']]);
    });
  });
});
