// Unusual-usage detection with a frozen clock and generated usage: a spike is alerted once that
// day; a steady heavy user is not; a new account's first busy hour below the floor is not. On
// SQLite, and on PostgreSQL when TEST_DATABASE_URL is set. Usage is written in time order, as the
// server writes it (the check finds the hour's first row by `seq`): each test starts 30 days after
// the one before, its history first.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase, closeDatabase } from '../src/db/orm.js';
import { AccountsService } from '../src/domain/accounts/accounts-service.js';
import { billingDatabase, exec, rows, type BillingDatabase } from '../src/domain/billing/sql.js';
import { listNotifications } from '../src/domain/notifications/outbox.js';
import { HOUR_SLICE_SQL, SEQ_BOUNDS_SQL, UnusualUsageDetector } from '../src/domain/notifications/unusual-usage.js';
import { createLogger } from '../src/logger.js';
import { BACKENDS, createTestDatabase, type TestDatabase } from './support/databases.js';
import type { MikroORM } from '@mikro-orm/core';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const START = new Date('2026-11-26T15:30:00.000Z');
/** This test's present: 30 days after the previous test's, so every test writes after the others. */
let NOW = START;
let tests = 0;
const SETTINGS = { factor: 5, min_tokens: 10_000, min_spend: 1, check_interval_seconds: 300, enabled: true };

let n = 0;
/** One usage event of `tokens` tokens (and `nanos` of wallet money) at `at`. */
async function usage(db: BillingDatabase, accountId: string, at: Date, tokens: number, nanos = 0n): Promise<void> {
  n++;
  await exec(
    db,
    'insert into usage_events (id, account_id, key_id, model, request_id, outcome, prompt_tokens, completion_tokens, total_tokens, allocation_tokens, wallet_nanos, billing_note, day, created_at) values (?, ?, null, ?, ?, ?, ?, ?, ?, ?, ?, null, ?, ?)',
    [`use_${n}`, accountId, 'chat-test', `req_${n}`, 'completed', 0, tokens, tokens, 0, nanos, at.toISOString().slice(0, 10), at],
  );
}

type Use = [accountId: string, at: Date, tokens: number, nanos?: bigint];

/** The same hour (ending at NOW minus d days) on each of the previous 7 days, `tokens` each. */
const history = (accountId: string, tokens: number, nanos = 0n): Use[] =>
  [7, 6, 5, 4, 3, 2, 1].map((d) => [accountId, new Date(NOW.getTime() - d * DAY - 20 * 60_000), tokens, nanos]);

/** Writes usage in time order, as the server does. */
async function inOrder(db: BillingDatabase, uses: Use[]): Promise<void> {
  for (const [accountId, at, tokens, nanos] of [...uses].sort((x, y) => x[1].getTime() - y[1].getTime()))
    await usage(db, accountId, at, tokens, nanos);
}

const usualHours = (db: BillingDatabase, accountId: string, tokens: number, nanos = 0n) => inOrder(db, history(accountId, tokens, nanos));

describe.each(BACKENDS)('unusual usage on %s', (backend) => {
  let tdb: TestDatabase;
  let orm: MikroORM;
  let db: BillingDatabase;
  let accounts: AccountsService;
  let clock = NOW;
  let detector: UnusualUsageDetector;
  const newAccount = async () =>
    (await accounts.createAccount({ email: `u${Math.random().toString(36).slice(2)}@example.com`, tier: 'developer' })).account.id;
  const alerts = async (accountId: string) => (await listNotifications(db, accountId)).filter((x) => x.kind === 'unusual_usage');

  beforeAll(async () => {
    tdb = await createTestDatabase(backend);
    orm = await openDatabase(tdb.url);
    db = billingDatabase(orm);
    accounts = new AccountsService(orm);
    detector = new UnusualUsageDetector({ db, settings: SETTINGS, logger: createLogger('silent'), now: () => clock });
  });
  afterAll(async () => {
    await closeDatabase(orm);
    await tdb.drop();
  });
  beforeEach(() => {
    NOW = new Date(START.getTime() + tests++ * 30 * DAY);
  });

  it('alerts a spike far above the same hour of the previous 7 days, once that day', async () => {
    clock = NOW;
    const a = await newAccount();
    await usualHours(db, a, 20_000);
    await usage(db, a, new Date(NOW.getTime() - 10 * 60_000), 150_000);
    expect((await detector.check()).map((s) => s.accountId)).toContain(a);
    const [alert] = await alerts(a);
    expect(alert!.payload).toMatchObject({ tokens: 150_000, usual_tokens: 20_000, factor: 5, on: ['tokens'] });
    // Later the same day, another spike: no second alert.
    clock = new Date(NOW.getTime() + 3 * HOUR);
    await usage(db, a, new Date(clock.getTime() - 5 * 60_000), 300_000);
    await detector.check();
    expect(await alerts(a)).toHaveLength(1);
    // The next day it can alert again.
    clock = new Date(NOW.getTime() + DAY);
    await usage(db, a, new Date(clock.getTime() - 5 * 60_000), 900_000);
    await detector.check();
    expect(await alerts(a)).toHaveLength(2);
  });

  it('alerts a spike in spend even when the tokens look usual', async () => {
    clock = NOW;
    const a = await newAccount();
    await usualHours(db, a, 20_000, 100_000_000n); // 0.10 a day at this hour
    await usage(db, a, new Date(NOW.getTime() - 10 * 60_000), 20_000, 2_000_000_000n); // 2.00 now
    await detector.check();
    const [alert] = await alerts(a);
    expect(alert!.payload).toMatchObject({ spend: '2', usual_spend: '0.1', on: ['spend'] });
  });

  it('does not alert a steady heavy user, nor one earlier spike that makes the median', async () => {
    clock = NOW;
    const a = await newAccount();
    const b = await newAccount();
    await inOrder(db, [
      ...history(a, 500_000, 5_000_000_000n),
      [a, new Date(NOW.getTime() - 30 * 60_000), 600_000, 6_000_000_000n],
      // One huge day among seven quiet ones does not raise the usual (a median, not a mean) …
      ...history(b, 30_000),
      [b, new Date(NOW.getTime() - 2 * DAY - 5 * 60_000), 5_000_000],
      // … and an hour at the usual level is not unusual.
      [b, new Date(NOW.getTime() - 10 * 60_000), 40_000],
    ]);
    const spikes = (await detector.check()).map((s) => s.accountId);
    expect(spikes).not.toContain(a);
    expect(spikes).not.toContain(b);
    expect(await alerts(a)).toEqual([]);
    expect(await alerts(b)).toEqual([]);
  });

  it("does not alert a new account's first busy hour below the floor, and alerts one above it", async () => {
    clock = NOW;
    const fresh = await newAccount();
    await usage(db, fresh, new Date(NOW.getTime() - 10 * 60_000), 9_000, 900_000_000n);
    const big = await newAccount();
    await usage(db, big, new Date(NOW.getTime() - 10 * 60_000), 50_000);
    const spikes = (await detector.check()).map((s) => s.accountId);
    expect(spikes).not.toContain(fresh);
    expect(await alerts(fresh)).toEqual([]);
    expect(spikes).toContain(big);
  });

  it('sums the hour in slices of seq, the event loop turning between them, whatever the table holds before it', async () => {
    const a = await newAccount();
    const b = await newAccount();
    // Older usage the check must not read into its sums: a month of it (the previous tests' too).
    for (let i = 0; i < 6; i++) await usage(db, a, new Date(NOW.getTime() - (20 - i) * DAY), 1_000_000);
    await usage(db, a, new Date(NOW.getTime() - HOUR - 60_000), 1_000_000);
    for (let i = 0; i < 5; i++) {
      await usage(db, a, new Date(NOW.getTime() - (50 - i) * 60_000), 30_000, 1_000_000n);
      await usage(db, b, new Date(NOW.getTime() - (45 - i) * 60_000), 7, 3n);
    }
    const sliced = new UnusualUsageDetector({ db, settings: SETTINGS, logger: createLogger('silent'), now: () => NOW, chunkRows: 2 });
    let turns = 0;
    let counting = true;
    const count = () => {
      if (!counting) return;
      turns++;
      setImmediate(count);
    };
    setImmediate(count);
    const sums = await sliced.hourByAccount(new Date(NOW.getTime() - HOUR), NOW);
    counting = false;
    expect(sums.get(a)).toEqual({ tokens: 150_000, spend: 5_000_000n });
    expect(sums.get(b)).toEqual({ tokens: 35, spend: 15n });
    // Ten rows in the hour, two per slice: the loop turned between the slices.
    expect(turns).toBeGreaterThanOrEqual(4);
    expect(await sliced.hourByAccount(new Date(NOW.getTime() + DAY), new Date(NOW.getTime() + DAY + HOUR))).toEqual(new Map());
  });

  it('counts rows written out of order by a few minutes (clock skew between instances)', async () => {
    const a = await newAccount();
    const from = new Date(NOW.getTime() - HOUR);
    const at = (minutes: number) => new Date(from.getTime() + minutes * 60_000);
    await usage(db, a, at(-30), 1_000_000); // before the hour
    await usage(db, a, at(-3), 1_000_000); // before the hour, just
    await usage(db, a, at(1), 100);
    await usage(db, a, at(-4), 1_000_000); // written after, by a clock behind: before the hour still
    await usage(db, a, at(2), 20);
    await usage(db, a, at(0.5), 3); // written last, stamped earlier
    const sliced = new UnusualUsageDetector({ db, settings: SETTINGS, logger: createLogger('silent'), now: () => NOW, chunkRows: 1 });
    expect((await sliced.hourByAccount(from, NOW)).get(a)).toEqual({ tokens: 123, spend: 0n });
  });

  it.runIf(backend === 'SQLite')("reads a slice through the primary key's range, not the table", async () => {
    const plan = await rows<{ detail: string }>(db, `explain query plan ${HOUR_SLICE_SQL}`, [1, 2, NOW, NOW]);
    const details = plan.map((p) => p.detail).join('; ');
    expect(details).toMatch(/SEARCH usage_events USING INTEGER PRIMARY KEY \(rowid>\? AND rowid<\?\)/);
    expect(details).not.toMatch(/SCAN usage_events/);
    // The table's ends: each read from the key (min and max in one statement scan the table).
    for (const sql of SEQ_BOUNDS_SQL) {
      const ends = await rows<{ detail: string }>(db, `explain query plan ${sql}`);
      expect(ends.map((p) => p.detail).join('; '), sql).not.toMatch(/SCAN/);
    }
  });
});
