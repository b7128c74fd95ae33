// SQLite's commits wait for the disk (synchronous = FULL) on every start, not only on a new file,
// except the batches of billing's hot path that ask for lazySync (src/domain/billing/sql.ts).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { closeDatabase, openDatabase } from '../src/db/orm.js';
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

  it('commits a batch of lazySync transactions unsynced, a batch with any other synced, and returns to FULL', async () => {
    const orm = await openDatabase(fileUrl());
    try {
      const db = billingDatabase(orm);
      // A batch of billing hot-path transactions alone.
      const lazy = await Promise.all([
        db.transaction((trx) => level(trx), { lazySync: true }),
        db.transaction((trx) => level(trx), { lazySync: true }),
      ]);
      expect(lazy).toEqual([NORMAL, NORMAL]);
      expect(await level(db)).toBe(FULL);
      // A credit in the same batch as a hold: the shared commit is synced.
      const mixed = await Promise.all([db.transaction((trx) => level(trx), { lazySync: true }), db.transaction((trx) => level(trx))]);
      expect(mixed).toEqual([FULL, FULL]);
      // A failing lazy transaction rolls back alone and still leaves the connection at FULL.
      await expect(
        db.transaction(
          async () => {
            throw new Error('boom');
          },
          { lazySync: true },
        ),
      ).rejects.toThrow('boom');
      expect(await level(db)).toBe(FULL);
    } finally {
      await closeDatabase(orm);
    }
  });
});
