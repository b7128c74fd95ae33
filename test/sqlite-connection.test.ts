// SQLite's one pooled connection: single statements run on it directly while the pool holds it
// free (src/db/connection.ts idleSqliteHandle), and wait for the pool while anything else holds it,
// so they never run in the middle of another transaction.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MikroORM } from '@mikro-orm/core';
import { closeDatabase, getKnex, openDatabase } from '../src/db/orm.js';
import { idleSqliteHandle, selectRows } from '../src/db/connection.js';
import { billingDatabase } from '../src/domain/billing/sql.js';

describe('SQLite connection fast path', () => {
  let dir: string;
  let orm: MikroORM;
  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'tollgate-conn-'));
    orm = await openDatabase(`sqlite:${path.join(dir, 'tollgate.db')}`);
    await getKnex(orm).raw('create table scratch (x integer not null)');
  });
  afterAll(async () => {
    await closeDatabase(orm);
    rmSync(dir, { recursive: true, force: true });
  });

  it('runs on the idle connection, and waits while a transaction holds it instead of reading its uncommitted rows', async () => {
    const knex = getKnex(orm);
    const db = billingDatabase(orm);
    const select = selectRows(orm);
    expect(idleSqliteHandle(knex)).not.toBeNull();
    let inserted!: () => void;
    const insertedOnce = new Promise<void>((resolve) => {
      inserted = resolve;
    });
    let finish!: () => void;
    const held = knex
      .transaction(async (trx) => {
        await trx.raw('insert into scratch (x) values (1)');
        inserted();
        await new Promise<void>((resolve) => {
          finish = resolve;
        });
        throw new Error('rolled back');
      })
      .catch((e: Error) => e.message);
    await insertedOnce;
    // The transaction holds the connection: no fast path now.
    expect(idleSqliteHandle(knex)).toBeNull();
    const counted = db.rows<{ n: number }>('select count(*) as n from scratch');
    const selected = select<{ n: number }>('select count(*) as n from scratch', []);
    finish();
    expect(await held).toBe('rolled back');
    // Both waited for the rollback: on the held connection they would have counted its row.
    expect(Number((await counted)[0]!.n)).toBe(0);
    expect(Number((await selected)[0]!.n)).toBe(0);
    expect(idleSqliteHandle(knex)).not.toBeNull();
  });
});
