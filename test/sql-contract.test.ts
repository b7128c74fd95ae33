// The contract of billing's SQL runner (src/domain/billing/sql.ts), which has one implementation
// per database side by side (better-sqlite3 statements on SQLite; on PostgreSQL named prepared
// statements outside a transaction, knex within one): the same cases run against both, so the
// two cannot drift apart.
import type { MikroORM } from '@mikro-orm/core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { closeDatabase, getKnex, openDatabase } from '../src/db/orm.js';
import { big, billingDatabase, bool, date, exec, isUniqueViolation, rows, run, type BillingDatabase } from '../src/domain/billing/sql.js';
import { BACKENDS, createTestDatabase, type TestDatabase } from './support/databases.js';

const BEYOND_DOUBLES = 9_007_199_254_740_993n; // 2^53 + 1: a float cannot hold it

describe.each(BACKENDS)("billing's SQL runner on %s", (backend) => {
  let tdb: TestDatabase;
  let orm: MikroORM;
  let db: BillingDatabase;

  beforeAll(async () => {
    tdb = await createTestDatabase(backend);
    orm = await openDatabase(tdb.url);
    db = billingDatabase(orm);
    await exec(db, 'insert into accounts (id, email, tier, created_at) values (?, ?, ?, ?)', [
      'acct_contract',
      'c@example.com',
      'free',
      new Date(),
    ]);
  });
  afterAll(async () => {
    await closeDatabase(orm);
    await tdb.drop();
  });
  beforeEach(async () => {
    await exec(db, 'delete from billing_instances');
    await exec(db, 'delete from wallets');
  });

  const wallet = (balance: bigint) =>
    exec(db, 'insert into wallets (account_id, balance, period, created_at, updated_at) values (?, ?, ?, ?, ?)', [
      'acct_contract',
      balance,
      '2031-05',
      new Date(),
      new Date(),
    ]);
  const balance = async () =>
    big((await rows<{ b: unknown }>(db, 'select cast(balance as text) as b from wallets where account_id = ?', ['acct_contract']))[0]!.b);

  it('names its dialect and its row-lock clause', () => {
    expect(db.kind).toBe(backend === 'SQLite' ? 'sqlite' : 'postgresql');
    expect(db.forUpdate).toBe(backend === 'SQLite' ? '' : ' for update');
  });

  it('reads 64-bit money exactly, and dates and booleans as the drivers give them', async () => {
    const at = new Date('2031-05-14T12:34:56.789Z');
    await exec(
      db,
      'insert into wallets (account_id, balance, period, spending_limit_enabled, created_at, updated_at) values (?, ?, ?, ?, ?, ?)',
      ['acct_contract', BEYOND_DOUBLES, '2031-05', true, at, at],
    );
    const [r] = await rows<{ b: unknown; e: unknown; c: unknown }>(
      db,
      'select cast(balance as text) as b, spending_limit_enabled as e, created_at as c from wallets',
    );
    expect(big(r!.b)).toBe(BEYOND_DOUBLES);
    expect(bool(r!.e)).toBe(true);
    expect(date(r!.c).toISOString()).toBe(at.toISOString());
  });

  it('counts the rows a statement changed', async () => {
    await wallet(10n);
    expect(await run(db, 'update wallets set balance = balance + 1 where account_id = ?', ['acct_contract'])).toBe(1);
    expect(await run(db, 'update wallets set balance = balance + 1 where account_id = ?', ['acct_nobody'])).toBe(0);
    expect(await balance()).toBe(11n);
  });

  it('commits a transaction that resolves and rolls back one that throws', async () => {
    await wallet(100n);
    await db.transaction(async (tx) => {
      await exec(tx, 'update wallets set balance = balance - 30 where account_id = ?', ['acct_contract']);
    });
    await expect(
      db.transaction(async (tx) => {
        await exec(tx, 'update wallets set balance = balance - 50 where account_id = ?', ['acct_contract']);
        throw new Error('changed my mind');
      }),
    ).rejects.toThrow('changed my mind');
    expect(await balance()).toBe(70n);
  });

  it('rolls back a throwing transaction alone among others started with it (one shared commit on SQLite)', async () => {
    await wallet(100n);
    const outcomes = await Promise.allSettled([
      db.transaction(async (tx) => exec(tx, 'update wallets set balance = balance - 10 where account_id = ?', ['acct_contract'])),
      db.transaction(async (tx) => {
        await exec(tx, 'update wallets set balance = balance - 50 where account_id = ?', ['acct_contract']);
        throw new Error('changed my mind');
      }),
      db.transaction(async (tx) => exec(tx, 'update wallets set balance = balance - 20 where account_id = ?', ['acct_contract'])),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(await balance()).toBe(70n);
  });

  it('serialises read-then-write transactions on one row: no update is lost', async () => {
    await wallet(0n);
    await Promise.all(
      Array.from({ length: 20 }, () =>
        db.transaction(async (tx) => {
          const [r] = await rows<{ b: unknown }>(tx, `select cast(balance as text) as b from wallets where account_id = ?${db.forUpdate}`, [
            'acct_contract',
          ]);
          await exec(tx, 'update wallets set balance = ? where account_id = ?', [big(r!.b) + 1n, 'acct_contract']);
        }),
      ),
    );
    expect(await balance()).toBe(20n);
  });

  it('reports a unique violation as one', async () => {
    const now = new Date();
    await exec(db, 'insert into billing_instances (id, host, pid, started_at, heartbeat_at) values (?, ?, ?, ?, ?)', [
      'inst_x',
      'h',
      1,
      now,
      now,
    ]);
    const again = await exec(db, 'insert into billing_instances (id, host, pid, started_at, heartbeat_at) values (?, ?, ?, ?, ?)', [
      'inst_x',
      'h',
      1,
      now,
      now,
    ]).catch((e: unknown) => e);
    expect(isUniqueViolation(again)).toBe(true);
    expect(isUniqueViolation(new Error('something else'))).toBe(false);
  });

  it('gives a snapshot transaction one consistent view', async () => {
    await wallet(5n);
    const seen = await db.transaction(
      async (tx) => {
        const first = await rows<{ b: unknown }>(tx, 'select cast(balance as text) as b from wallets');
        const second = await rows<{ b: unknown }>(tx, 'select cast(balance as text) as b from wallets');
        return [big(first[0]!.b), big(second[0]!.b)];
      },
      { snapshot: true },
    );
    expect(seen).toEqual([5n, 5n]);
  });

  it.runIf(backend === 'PostgreSQL')(
    'on PostgreSQL runs a statement outside a transaction prepared under a name, its placeholders numbered, and tells the query listeners',
    async () => {
      const heard: string[] = [];
      const listener = (q: { sql: string }) => heard.push(q.sql);
      const knex = getKnex(orm);
      knex.on('query', listener);
      try {
        // The statement lists itself: it is prepared on its connection before it runs.
        const sql = "select name, statement from pg_prepared_statements where statement like '%pg_prepared_statements%' and ? = ?";
        const found = await rows<{ name: string; statement: string }>(db, sql, ['a', 'a']);
        expect(found).toEqual([{ name: expect.stringMatching(/^billing_\d+$/), statement: sql.replace('? = ?', '$1 = $2') }]);
        expect(heard).toContain(sql);
      } finally {
        knex.off('query', listener);
      }
    },
  );
});
