// BillingService on its own, with a clock the tests move: billing periods, monthly fees, hold
// expiry and the release of holds left by servers that stopped, on SQLite and PostgreSQL.
import { hostname } from 'node:os';
import Database from 'better-sqlite3';
import type { MikroORM } from '@mikro-orm/core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { TIER_DEFAULTS, type TierName, type TierPolicy } from '../src/config.js';
import { MODEL, SETTINGS } from './support/billing-fixtures.js';
import { closeDatabase, getKnex, openDatabase } from '../src/db/orm.js';
import { AccountsService } from '../src/domain/accounts/accounts-service.js';
import { BillingService } from '../src/domain/billing/billing-service.js';
import { HeartbeatWatch } from '../src/domain/billing/sweeper.js';
import { parseDecimal } from '../src/domain/billing/money.js';
import { DomainError } from '../src/domain/errors.js';
import type { MeterRequest } from '../src/domain/inference/inference-service.js';
import { createLogger } from '../src/logger.js';
import { BACKENDS, createTestDatabase, type TestDatabase } from './support/databases.js';
import { until } from './support/wait.js';

const TIERS: Record<TierName, TierPolicy> = {
  ...TIER_DEFAULTS,
  free: { monthly_tokens: 100, overage: false, monthly_fee: 0, self_service: true },
  developer: { monthly_tokens: 50, overage: true, monthly_fee: 5, self_service: true },
  startup: { monthly_tokens: 0, overage: true, monthly_fee: 0, self_service: true },
  enterprise: { monthly_tokens: null, overage: false, monthly_fee: 20, self_service: false },
};

const usd = (text: string) => parseDecimal(text);

describe.each(BACKENDS)('BillingService on %s', (backend) => {
  let db: TestDatabase;
  let orm: MikroORM;
  let accounts: AccountsService;
  let clock: Date;
  const services: BillingService[] = [];

  const billingService = (settings = SETTINGS) => {
    const b = new BillingService({ orm, tiers: TIERS, settings, logger: createLogger('silent'), now: () => clock });
    services.push(b);
    return b;
  };
  const meter = (accountId: string, promptTokens: number, maxTokens: number | null): MeterRequest => ({
    caller: { accountId, keyId: null, requestId: `req-${Math.random()}` },
    model: MODEL,
    promptTokens,
    requestedOutputTokens: maxTokens,
    maxOutputTokens: 256,
  });
  // One account per e-mail address: each gets its own.
  let made = 0;
  const newAccount = async (tier: TierName) => (await accounts.createAccount({ email: `x${++made}@example.com`, tier })).account.id;

  beforeAll(async () => {
    db = await createTestDatabase(backend);
    orm = await openDatabase(db.url);
    accounts = new AccountsService(orm);
  });
  afterEach(async () => {
    expect(await services[0]!.verifyLedger()).toEqual([]);
    for (const b of services.splice(0)) await b.stop();
  });
  afterAll(async () => {
    await closeDatabase(orm);
    await db.drop();
  });

  it('resets the allocation at the start of each calendar month (UTC); a hold settles in the period it was taken from', async () => {
    clock = new Date('2026-01-31T23:59:00Z');
    const billing = billingService();
    const id = await newAccount('free');
    const open = await billing.admit(meter(id, 10, 20)); // holds 30 tokens of January's 100
    const done = await billing.admit(meter(id, 10, 50));
    await done.settle({ promptTokens: 10, completionTokens: 50, totalTokens: 60 }, 'completed');
    expect(await billing.getAllocation(id)).toMatchObject({ period: '2026-01', used: 60, held: 30, remaining: 10 });
    await expect(billing.admit(meter(id, 10, 10))).rejects.toMatchObject({ code: 'monthly_allocation_exhausted' });

    clock = new Date('2026-02-01T00:00:00Z');
    expect(await billing.getAllocation(id)).toMatchObject({
      period: '2026-02',
      used: 0,
      held: 0,
      remaining: 100,
      periodStart: new Date('2026-02-01T00:00:00Z'),
      periodEnd: new Date('2026-03-01T00:00:00Z'),
    });
    const february = await billing.admit(meter(id, 10, 80));
    expect(february.maxOutputTokens).toBe(80);
    // January's hold settles against January: February's counters do not move.
    await open.settle({ promptTokens: 10, completionTokens: 20, totalTokens: 30 }, 'completed');
    expect(await billing.getAllocation(id)).toMatchObject({ used: 0, held: 90 });
    await february.settle({ promptTokens: 10, completionTokens: 5, totalTokens: 15 }, 'completed');
    expect(await billing.getAllocation(id)).toMatchObject({ used: 15, held: 0, remaining: 85 });
    // The usage report agrees with the allocations: January's late call is reported on January's
    // last day, where its tokens counted, not on the day it ended.
    const days = (report: { data: { date: string; requests: number; totalTokens: number }[] }) =>
      report.data.map((d) => [d.date, d.requests, d.totalTokens]);
    expect(days(await billing.usageReport(id, { start: '2026-01-01', end: '2026-01-31' }))).toEqual([['2026-01-31', 2, 90]]);
    expect(days(await billing.usageReport(id))).toEqual([['2026-02-01', 1, 15]]);
  });

  it("a call held in one month and settled in the next counts in the new month's spend, whether or not the wallet rolled first", async () => {
    clock = new Date('2026-03-31T23:59:58Z');
    const billing = billingService();
    const id = await newAccount('startup'); // no allocation, no fee: every call is paid from the wallet
    await billing.creditWallet({ accountId: id, amount: usd('1'), type: 'bonus', description: 'start' });
    const straddling = await billing.admit(meter(id, 10, 20));
    // Settled in April, before anything else rolled the wallet into April: 10·1000 + 20·2000 nanos.
    clock = new Date('2026-04-01T00:00:02Z');
    await straddling.settle({ promptTokens: 10, completionTokens: 20, totalTokens: 30 }, 'completed');
    expect((await billing.getSettings(id)).monthlySpend).toBe(50_000n);
    // The next April call adds to it (the straddling charge is not wiped by April's first roll).
    await (await billing.admit(meter(id, 10, 5))).settle({ promptTokens: 10, completionTokens: 5, totalTokens: 15 }, 'completed');
    expect((await billing.getSettings(id)).monthlySpend).toBe(70_000n);

    // The other order: another call rolls the wallet into May first; the straddling one still counts in May.
    clock = new Date('2026-04-30T23:59:58Z');
    const late = await billing.admit(meter(id, 10, 20));
    clock = new Date('2026-05-01T00:00:01Z');
    await (await billing.admit(meter(id, 10, 5))).settle({ promptTokens: 10, completionTokens: 5, totalTokens: 15 }, 'completed');
    await late.settle({ promptTokens: 10, completionTokens: 20, totalTokens: 30 }, 'completed');
    expect((await billing.getSettings(id)).monthlySpend).toBe(70_000n);
    expect(await billing.getAllocation(id)).toMatchObject({ period: '2026-05', held: 0 });
  });

  it('charges a monthly fee when a tier is taken and at each period start; an unpaid fee moves the account to free and notifies it', async () => {
    clock = new Date('2026-03-10T12:00:00Z');
    const billing = billingService();
    const id = await newAccount('free');
    await billing.creditWallet({ accountId: id, amount: usd('7'), type: 'bonus', description: 'start' });

    await expect(billing.setTier(id, 'enterprise')).rejects.toMatchObject({
      code: 'insufficient_balance',
      message: expect.stringContaining('costs 20 USD a month'),
    });
    expect((await accounts.getAccount(id)).tier).toBe('free');
    await billing.setTier(id, 'developer');
    expect((await billing.getWallet(id)).balance).toBe(usd('2'));
    // Leaving the tier and coming back in the same period costs nothing more.
    await billing.setTier(id, 'free');
    await billing.setTier(id, 'developer');
    let ledger = (await billing.listTransactions(id)).transactions;
    expect(ledger.map((t) => [t.type, t.amount, t.reference])).toEqual([
      ['bonus', usd('7'), null],
      ['subscription', -usd('5'), '2026-03'],
    ]);
    expect(ledger[1]!.description).toBe('developer tier, 2026-03');

    // April: the sweeper finds the fee due and the wallet short (2 < 5).
    clock = new Date('2026-04-01T00:00:01Z');
    expect(await billing.chargeDueFees()).toBe(1);
    expect((await accounts.getAccount(id)).tier).toBe('free');
    expect((await billing.getWallet(id)).balance).toBe(usd('2'));
    const notes = await billing.listNotifications(id);
    // March's fee was charged (and notified); April's could not be.
    expect(notes.map((n) => [n.kind, n.payload.tier, n.payload.fee])).toEqual([
      ['subscription_charged', 'developer', '5'],
      ['subscription_unpaid', 'developer', '5'],
    ]);
    expect((await billing.getAllocation(id)).monthlyTokens).toBe(100);

    // Paid again in April; in May the first call of the month charges the fee before it runs.
    await billing.creditWallet({ accountId: id, amount: usd('8'), type: 'refund', description: 'top' });
    await billing.setTier(id, 'developer');
    expect((await billing.getWallet(id)).balance).toBe(usd('5'));
    clock = new Date('2026-05-02T08:00:00Z');
    const ticket = await billing.admit(meter(id, 10, 10));
    await ticket.settle({ promptTokens: 10, completionTokens: 10, totalTokens: 20 }, 'completed');
    ledger = (await billing.listTransactions(id)).transactions;
    expect(ledger.slice(-1).map((t) => [t.type, t.amount, t.balanceAfter, t.reference])).toEqual([
      ['subscription', -usd('5'), 0n, '2026-05'],
    ]);
    expect((await accounts.getAccount(id)).tier).toBe('developer');
    expect(await billing.chargeDueFees()).toBe(0);
  });

  it('an account created on a paying tier keeps it until its first billing action, and its first credit pays the fee', async () => {
    clock = new Date('2026-03-12T09:00:00Z');
    const billing = billingService();
    const id = await newAccount('developer');
    // The sweeper leaves an account that has done nothing yet alone.
    await billing.chargeDueFees();
    expect(await billing.listNotifications(id)).toEqual([]);
    expect((await accounts.getAccount(id)).tier).toBe('developer');
    // The credit lands first and pays the fee: 12 in, 5 out.
    await billing.creditWallet({ accountId: id, amount: usd('12'), type: 'bonus', description: 'first top-up' });
    expect((await accounts.getAccount(id)).tier).toBe('developer');
    expect((await billing.getWallet(id)).balance).toBe(usd('7'));
    const ledger = (await billing.listTransactions(id)).transactions;
    expect(ledger.map((t) => [t.type, t.amount, t.balanceAfter])).toEqual([
      ['bonus', usd('12'), usd('12')],
      ['subscription', -usd('5'), usd('7')],
    ]);
    // A credit too small for the fee still lands; the fee stays due for the next billing action.
    const short = await newAccount('developer');
    await billing.creditWallet({ accountId: short, amount: usd('2'), type: 'bonus', description: 'a little' });
    expect((await billing.getWallet(short)).balance).toBe(usd('2'));
    expect((await accounts.getAccount(short)).tier).toBe('developer');
    await billing.creditWallet({ accountId: short, amount: usd('4'), type: 'bonus', description: 'the rest' });
    expect((await billing.getWallet(short)).balance).toBe(usd('1'));
    expect((await accounts.getAccount(short)).tier).toBe('developer');
  });

  it('tries a settlement again through a database blip of a second, and charges it', async () => {
    clock = new Date('2026-06-01T09:00:00Z');
    const billing = billingService();
    const id = await newAccount('startup');
    await billing.creditWallet({ accountId: id, amount: usd('1'), type: 'bonus', description: 'start' });
    const ticket = await billing.admit(meter(id, 10, 20));
    // The database refuses every statement of the settlement for about a second (a restart, a failover).
    const settle = billing.wallets.settle.bind(billing.wallets);
    const until = Date.now() + 1_000;
    let refused = 0;
    billing.wallets.settle = async (s) => {
      if (Date.now() < until) {
        refused++;
        throw new Error('Connection terminated unexpectedly');
      }
      return settle(s);
    };
    try {
      await ticket.settle({ promptTokens: 10, completionTokens: 20, totalTokens: 30 }, 'completed');
    } finally {
      billing.wallets.settle = settle;
    }
    expect(refused).toBeGreaterThan(3);
    expect(await billing.countOpenHolds(id)).toBe(0);
    expect((await billing.getWallet(id)).balance).toBe(usd('1') - 50_000n);
    expect(await billing.listUsageEvents(id)).toMatchObject([{ outcome: 'completed', walletNanos: 50_000n }]);
  });

  it('stops only once a settlement retrying through a blip has ended, charged', async () => {
    clock = new Date('2026-06-01T09:30:00Z');
    const billing = billingService();
    await billing.start();
    const id = await newAccount('startup');
    await billing.creditWallet({ accountId: id, amount: usd('1'), type: 'bonus', description: 'start' });
    const ticket = await billing.admit(meter(id, 10, 20));
    const settle = billing.wallets.settle.bind(billing.wallets);
    const until = Date.now() + 500;
    billing.wallets.settle = async (s) => {
      if (Date.now() < until) throw new Error('Connection terminated unexpectedly');
      return settle(s);
    };
    try {
      const settling = ticket.settle({ promptTokens: 10, completionTokens: 20, totalTokens: 30 }, 'completed');
      await billing.stop();
      // Stopped: the settlement had ended, charged.
      expect(await billing.countOpenHolds(id)).toBe(0);
      expect((await billing.getWallet(id)).balance).toBe(usd('1') - 50_000n);
      await settling;
    } finally {
      billing.wallets.settle = settle;
    }
  });

  it('releases an expired hold unbilled; a settlement that comes later records the usage without charging', async () => {
    clock = new Date('2026-06-01T10:00:00Z');
    const billing = billingService();
    const id = await newAccount('startup');
    await billing.creditWallet({ accountId: id, amount: usd('1'), type: 'bonus', description: 'start' });
    // 10·1000 + 20·2000 = 50,000 nanos held; the end user travels with the hold.
    const ticket = await billing.admit({ ...meter(id, 10, 20), endUser: 'end-user-7' });
    expect(await billing.getWallet(id)).toMatchObject({ balance: usd('1'), held: 50_000n });

    clock = new Date('2026-06-01T10:01:01Z'); // 61 s later: past the 60 s expiry
    expect(await billing.verifyLedger()).toEqual([
      expect.stringMatching(/^hold call_\w+ \(account acct_\w+\): still open after its expiry at 2026-06-01T10:01:00.000Z$/),
    ]);
    expect(await billing.releaseStaleHolds()).toBe(1);
    expect(await billing.getWallet(id)).toMatchObject({ balance: usd('1'), held: 0n });
    expect(await billing.listUsageEvents(id)).toMatchObject([
      { outcome: 'abandoned', totalTokens: 0, walletNanos: 0n, billingNote: 'hold_released', endUser: 'end-user-7' },
    ]);

    await ticket.settle({ promptTokens: 10, completionTokens: 20, totalTokens: 30 }, 'completed');
    expect(await billing.getWallet(id)).toMatchObject({ balance: usd('1'), held: 0n });
    expect(await billing.listUsageEvents(id)).toMatchObject([
      { outcome: 'completed', totalTokens: 30, walletNanos: 0n, billingNote: 'hold_released', endUser: 'end-user-7' },
    ]);
  });

  it.runIf(backend === 'PostgreSQL')(
    'beats its heartbeat while a release waits on a locked wallet row, so no other server takes it for dead',
    async () => {
      clock = new Date('2026-06-03T10:00:00Z');
      const billing = billingService();
      await billing.start();
      const id = await newAccount('startup');
      await billing.creditWallet({ accountId: id, amount: usd('1'), type: 'bonus', description: 'start' });
      await billing.admit(meter(id, 10, 20));
      const knex = getKnex(orm);
      const heartbeat = async () =>
        new Date((await knex('billing_instances').where({ id: billing.instanceId }).first('heartbeat_at')).heartbeat_at).getTime();
      // Past the hold's expiry: the sweep's release waits on the wallet row another connection holds.
      clock = new Date('2026-06-03T10:02:00Z');
      const locker = await knex.transaction();
      try {
        await locker.raw('select * from wallets where account_id = ? for update', [id]);
        const swept = billing.sweep();
        await until(async () => (await heartbeat()) === clock.getTime());
        // The next round beats again, the release still waiting.
        clock = new Date('2026-06-03T10:02:30Z');
        void billing.sweep();
        await until(async () => (await heartbeat()) === clock.getTime());
        expect((await billing.getWallet(id)).held).toBeGreaterThan(0n);
        await locker.commit();
        await swept;
      } finally {
        if (!locker.isCompleted()) await locker.rollback();
      }
      expect((await billing.getWallet(id)).held).toBe(0n);
    },
  );

  it('never charges more than was held: usage above the hold is recorded and capped', async () => {
    clock = new Date('2026-06-02T10:00:00Z');
    const billing = billingService();
    const id = await newAccount('startup');
    await billing.creditWallet({ accountId: id, amount: usd('1'), type: 'bonus', description: 'start' });
    const ticket = await billing.admit(meter(id, 5, 10)); // 5·1000 + 10·2000 = 25,000 held
    await ticket.settle({ promptTokens: 50, completionTokens: 10, totalTokens: 60 }, 'completed');
    expect((await billing.getWallet(id)).balance).toBe(usd('1') - 25_000n);
    expect(await billing.listUsageEvents(id)).toMatchObject([{ promptTokens: 50, walletNanos: 25_000n, billingNote: 'capped_at_hold' }]);
    // Settling twice changes nothing.
    await ticket.settle({ promptTokens: 50, completionTokens: 10, totalTokens: 60 }, 'completed');
    expect((await billing.listTransactions(id)).transactions).toHaveLength(2);
  });

  it('asks, in the settlement, whether the answer can still be delivered: an answer that cannot is charged nothing, allocation and wallet', async () => {
    clock = new Date('2026-06-02T11:00:00Z');
    const billing = billingService();
    const usage = { promptTokens: 5, completionTokens: 10, totalTokens: 15 };
    const asked: string[] = [];
    const ask = (name: string, outcome: 'client_disconnected' | 'failed' | null) => () => {
      asked.push(name);
      return outcome;
    };
    // From the monthly allocation (free: 100 tokens).
    const allotted = await newAccount('free');
    await (await billing.admit(meter(allotted, 5, 10))).settle(usage, 'completed', ask('gone', 'client_disconnected'));
    await (await billing.admit(meter(allotted, 5, 10))).settle(usage, 'completed', ask('kept', null));
    expect(asked).toEqual(['gone', 'kept']);
    const events = await billing.listUsageEvents(allotted);
    expect(events.map((e) => [e.outcome, e.promptTokens, e.completionTokens]).sort()).toEqual([
      ['client_disconnected', 0, 0],
      ['completed', 5, 10],
    ]);
    expect(await billing.getAllocation(allotted)).toMatchObject({ used: 15, held: 0 });

    // From the wallet (startup: no allocation).
    const paying = await newAccount('startup');
    await billing.creditWallet({ accountId: paying, amount: usd('1'), type: 'bonus', description: 'start' });
    await (await billing.admit(meter(paying, 5, 10))).settle(usage, 'completed', ask('ended by the server', 'failed'));
    expect(await billing.listUsageEvents(paying)).toMatchObject([{ outcome: 'failed', promptTokens: 0, walletNanos: 0n }]);
    expect(await billing.getWallet(paying)).toMatchObject({ balance: usd('1'), held: 0n });
    expect((await billing.listTransactions(paying)).transactions).toHaveLength(1);
  });

  it('releases at start-up the holds of a server that stopped, and never those of a live one', async () => {
    clock = new Date('2026-06-03T10:00:00Z');
    const knex = getKnex(orm);
    const id = await newAccount('startup');
    const dead = billingService();
    await dead.start();
    const elsewhere = billingService();
    await elsewhere.start();
    await dead.creditWallet({ accountId: id, amount: usd('1'), type: 'bonus', description: 'start' });
    await dead.admit(meter(id, 10, 10));
    await dead.admit(meter(id, 10, 10));
    const live = await elsewhere.admit(meter(id, 10, 10));
    expect(await dead.countOpenHolds(id)).toBe(3);
    // The first server's process is gone (a pid that runs nowhere on this host); the second runs
    // on another host and keeps its heartbeat.
    await knex('billing_instances')
      .where({ id: dead.instanceId })
      .update({ pid: 2 ** 22 + 12_345 });
    await knex('billing_instances')
      .where({ id: elsewhere.instanceId })
      .update({ host: `not-${hostname()}` });

    const restarted = billingService();
    await restarted.start();
    expect(await restarted.countOpenHolds(id)).toBe(1);
    expect((await restarted.getWallet(id)).held).toBe(30_000n);
    expect((await restarted.listUsageEvents(id)).map((e) => e.outcome)).toEqual(['abandoned', 'abandoned']);
    expect(await knex('billing_instances').where({ id: dead.instanceId }).first()).toBeUndefined();

    // A server whose heartbeat stops for longer than instance_timeout_seconds is taken as gone.
    clock = new Date(clock.getTime() + 91_000);
    await restarted.sweep();
    expect(await restarted.countOpenHolds(id)).toBe(0);
    // Its call then settles for nothing.
    await live.settle({ promptTokens: 10, completionTokens: 10, totalTokens: 20 }, 'completed');
    expect((await restarted.getWallet(id)).balance).toBe(usd('1'));
  });

  it('never takes a live server for gone: not one whose clock runs ahead, nor one in another pid namespace of the same host name', async () => {
    clock = new Date('2026-06-05T10:00:00Z');
    const knex = getKnex(orm);
    const id = await newAccount('startup');
    // Holds that outlast the watch (the default here expires them after 60 s).
    const LONG_HOLDS = { ...SETTINGS, hold_expiry_seconds: 900 };
    const ahead = billingService(LONG_HOLDS);
    await ahead.start();
    // On another host (these servers all share this test's pid), its clock two minutes ahead.
    await knex('billing_instances').where({ id: ahead.instanceId }).update({ host: 'another-host' });
    const sameName = billingService(LONG_HOLDS);
    await sameName.start();
    await ahead.creditWallet({ accountId: id, amount: usd('1'), type: 'bonus', description: 'start' });
    const calls = [await ahead.admit(meter(id, 10, 10)), await sameName.admit(meter(id, 10, 10))];
    // The other runs under the same host name in another pid namespace (host networking): its
    // pid means nothing here.
    await knex('billing_instances')
      .where({ id: sameName.instanceId })
      .update({ host: hostname(), pid: 2 ** 22 + 54_321 });
    const observer = billingService(LONG_HOLDS);
    for (let beat = 0; beat < 4; beat++) {
      await knex('billing_instances')
        .where({ id: ahead.instanceId })
        .update({ heartbeat_at: new Date(clock.getTime() + 120_000) });
      await knex('billing_instances').where({ id: sameName.instanceId }).update({ heartbeat_at: clock });
      if (beat === 0) await observer.start();
      else await observer.sweep();
      expect(await observer.countOpenHolds(id), `beat ${beat}`).toBe(2);
      clock = new Date(clock.getTime() + 30_000);
    }
    // A server whose own clock runs two minutes ahead does not take the others for dead either.
    const skewed = billingService(LONG_HOLDS);
    clock = new Date(clock.getTime() + 120_000);
    await skewed.start();
    await skewed.sweep();
    expect(await skewed.countOpenHolds(id)).toBe(2);
    expect(await knex('billing_instances').whereIn('id', [ahead.instanceId, sameName.instanceId])).toHaveLength(2);
    // Their calls end charged as they used, not released unbilled.
    for (const call of calls) await call.settle({ promptTokens: 10, completionTokens: 10, totalTokens: 20 }, 'completed');
    expect((await skewed.getWallet(id)).balance).toBe(usd('1') - 2n * 30_000n);
  });

  it('never releases the holds of a server that starts while a long release runs', async () => {
    clock = new Date('2026-06-06T10:00:00Z');
    const knex = getKnex(orm);
    const id = await newAccount('startup');
    const LONG_HOLDS = { ...SETTINGS, hold_expiry_seconds: 900 };
    const gone = billingService(LONG_HOLDS);
    await gone.start();
    await gone.creditWallet({ accountId: id, amount: usd('100'), type: 'bonus', description: 'start' });
    // More than one batch of the release (500) left behind by a server that is gone.
    for (let i = 0; i < 501; i++) await gone.admit(meter(id, 1, 1));
    await knex('billing_instances')
      .where({ id: gone.instanceId })
      .update({ pid: 2 ** 22 + 23_456 });
    const sweeper = billingService(LONG_HOLDS);
    // A server starts, and takes a call, while the first batch is being released.
    let late: { call: Awaited<ReturnType<BillingService['admit']>> } | undefined;
    const release = (sweeper as unknown as { releaseHold: (...a: unknown[]) => Promise<boolean> }).releaseHold.bind(sweeper);
    (sweeper as unknown as { releaseHold: (...a: unknown[]) => Promise<boolean> }).releaseHold = async (...a: unknown[]) => {
      if (!late) {
        const starting = billingService(LONG_HOLDS);
        await starting.start();
        late = { call: await starting.admit(meter(id, 10, 10)) };
      }
      return release(...a);
    };
    // (The starting server releases the gone server's holds too, at its own start.)
    await sweeper.releaseStaleHolds();
    expect(late).toBeDefined();
    expect(await sweeper.countOpenHolds(id)).toBe(1);
    await late!.call.settle({ promptTokens: 10, completionTokens: 10, totalTokens: 20 }, 'completed');
    expect((await sweeper.getWallet(id)).balance).toBe(usd('100') - 30_000n);
  });

  it('refuses a credit to an unknown account, a zero amount or an empty description', async () => {
    clock = new Date('2026-06-04T10:00:00Z');
    const billing = billingService();
    const id = await newAccount('free');
    await expect(billing.creditWallet({ accountId: 'acct_nope', amount: 1n, type: 'bonus', description: 'x' })).rejects.toMatchObject({
      code: 'not_found',
    });
    await expect(billing.creditWallet({ accountId: id, amount: 0n, type: 'bonus', description: 'x' })).rejects.toBeInstanceOf(DomainError);
    await expect(billing.creditWallet({ accountId: id, amount: 1n, type: 'bonus', description: '  ' })).rejects.toMatchObject({
      param: 'description',
    });
    await expect(billing.creditWallet({ accountId: id, amount: 1n, type: 'usage' as never, description: 'x' })).rejects.toMatchObject({
      param: 'type',
    });
    // Near the 64-bit column's end: refused with what a wallet holds, never an overflow.
    const most = 2n ** 62n - 1n;
    await expect(billing.creditWallet({ accountId: id, amount: most + 1n, type: 'bonus', description: 'x' })).rejects.toMatchObject({
      code: 'invalid_value',
      message: expect.stringContaining('at most 4611686018.427387903 USD'),
    });
    const fourBillion = usd('4000000000');
    await billing.creditWallet({ accountId: id, amount: fourBillion, type: 'bonus', description: 'x' });
    await expect(billing.creditWallet({ accountId: id, amount: fourBillion, type: 'bonus', description: 'x' })).rejects.toMatchObject({
      code: 'invalid_value',
      message: expect.stringContaining('would bring the balance past 4611686018.427387903 USD'),
    });
    expect((await billing.getWallet(id)).balance).toBe(fourBillion);
  });

  it('admits an unlimited tier on one read of its wallet row, and takes the locked path whenever the row disagrees', async () => {
    clock = new Date('2026-06-10T12:00:00Z');
    const billing = billingService();
    const id = await newAccount('free');
    await billing.creditWallet({ accountId: id, amount: usd('50'), type: 'bonus', description: 'start' });
    await billing.setTier(id, 'enterprise'); // charges June's fee (20)
    // The key was read as enterprise: the tier the caller's rate-limit profile carries.
    const asEnterprise = (accountId: string): MeterRequest => {
      const r = meter(accountId, 10, 20);
      return { ...r, caller: { ...r.caller, rateLimitProfile: { tier: 'enterprise', rpm: null, tpm: null } } };
    };
    if (backend === 'SQLite') {
      // Another connection holds SQLite's write lock: an admission that took it would wait out
      // busy_timeout (the event loop blocked) and fail; one read needs no lock.
      const blocker = new Database(db.url.slice('sqlite:'.length));
      blocker.exec('begin immediate');
      try {
        const ticket = await billing.admit(asEnterprise(id));
        expect(ticket.maxOutputTokens).toBe(20);
      } finally {
        blocker.exec('rollback');
        blocker.close();
      }
    }
    const ticket = await billing.admit(asEnterprise(id));
    await ticket.settle({ promptTokens: 10, completionTokens: 20, totalTokens: 30 }, 'completed');
    expect(await billing.getAllocation(id)).toMatchObject({ period: '2026-06', held: 0 });
    expect((await billing.getWallet(id)).balance).toBe(usd('30'));

    // July: the fee is due, so the first call takes the locked path, which charges it.
    clock = new Date('2026-07-01T00:00:05Z');
    await (await billing.admit(asEnterprise(id))).settle({ promptTokens: 1, completionTokens: 1, totalTokens: 2 }, 'completed');
    expect((await billing.getWallet(id)).balance).toBe(usd('10'));

    // The tier changed after the key was read: the row's tier decides, and the call is held.
    await billing.setTier(id, 'free');
    const held = await billing.admit(asEnterprise(id));
    expect(await billing.getAllocation(id)).toMatchObject({ tier: 'free', held: 30 });
    await held.settle({ promptTokens: 10, completionTokens: 20, totalTokens: 30 }, 'completed');
    // July's first (unlimited) call counted its 2 tokens too.
    expect(await billing.getAllocation(id)).toMatchObject({ used: 32, held: 0 });
  });
});

describe('HeartbeatWatch', () => {
  const row = (id: string, beatMs: number) => ({
    id,
    host: 'h',
    pid: 1,
    heartbeatAt: new Date(beatMs),
    configPath: null,
    tiersDigest: null,
  });
  const T = 90_000;

  it('takes a server for gone when its heartbeat has not moved for the timeout, by this clock, whatever the times written', () => {
    const watch = new HeartbeatWatch(() => T);
    const now = 5_000_000;
    // Written by a clock 10 minutes behind, and moving: alive.
    for (let t = 0; t <= 300_000; t += 30_000) expect(watch.stopped(row('a', now + t - 600_000), now + t)).toBe(false);
    // It stops moving: gone once the timeout has passed since the last move was seen.
    const last = now + 300_000 - 600_000;
    expect(watch.stopped(row('a', last), now + 300_000 + T - 1)).toBe(false);
    expect(watch.stopped(row('a', last), now + 300_000 + T)).toBe(true);
  });

  it('takes a heartbeat an hour old at first sight for gone (found at start-up), one a few minutes old not', () => {
    const watch = new HeartbeatWatch(() => T);
    const now = 10_000_000;
    expect(watch.stopped(row('old', now - 3_600_001), now)).toBe(true);
    expect(watch.stopped(row('recent', now - 300_000), now)).toBe(false);
  });
});
