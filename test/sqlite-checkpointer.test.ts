// SQLite's WAL is checkpointed on a worker thread (src/db/sqlite-checkpointer.ts), not by the
// server's connection in the middle of a commit: the server's own automatic checkpoint is only a
// backstop far above what the worker lets the WAL grow to.
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { MikroORM } from '@mikro-orm/core';
import { closeDatabase, getKnex, openDatabase } from '../src/db/orm.js';
import { BACKSTOP_PAGES } from '../src/db/sqlite-checkpointer.js';

const autocheckpoint = async (orm: MikroORM): Promise<number> => {
  const [row] = (await getKnex(orm).raw('pragma wal_autocheckpoint')) as { wal_autocheckpoint: number }[];
  return Number(row!.wal_autocheckpoint);
};

describe('SQLite WAL checkpoints', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it('moves committed pages into the database file from a worker, and leaves no WAL behind on close', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'tollgate-ckpt-'));
    dirs.push(dir);
    const file = path.join(dir, 'tollgate.db');
    const orm = await openDatabase(`sqlite:${file}`);
    try {
      // The server's connection checkpoints only past the backstop (SQLite's default is 1000 pages).
      expect(await autocheckpoint(orm)).toBe(BACKSTOP_PAGES);
      const knex = getKnex(orm);
      await knex.raw('create table scratch (x blob not null)');
      const before = statSync(file).size;
      // About 4 MB in 64 commits: far below the backstop (about 40 MB), so only the worker can
      // have copied it into the database file.
      for (let i = 0; i < 64; i++) {
        await knex.transaction(async (trx) => {
          for (let j = 0; j < 16; j++) await trx.raw('insert into scratch (x) values (randomblob(4096))');
        });
      }
      const deadline = Date.now() + 10_000;
      while (statSync(file).size < before + 4 * 1024 * 1024 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      expect(statSync(file).size).toBeGreaterThanOrEqual(before + 4 * 1024 * 1024);
    } finally {
      await closeDatabase(orm);
    }
    // The worker's connection closed first; the server's, closing last, removed the WAL.
    expect(existsSync(`${file}-wal`)).toBe(false);
    // And the data is all there.
    const again = await openDatabase(`sqlite:${file}`);
    try {
      const [row] = (await getKnex(again).raw('select count(*) as n from scratch')) as { n: number }[];
      expect(Number(row!.n)).toBe(64 * 16);
    } finally {
      await closeDatabase(again);
    }
  });

  it('starts no worker for an in-memory database: it checkpoints as SQLite does by default', async () => {
    const orm = await openDatabase('sqlite::memory:');
    try {
      expect(await autocheckpoint(orm)).toBe(1000);
    } finally {
      await closeDatabase(orm);
    }
  });
});
