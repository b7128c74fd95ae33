// The wallet store (src/domain/billing/wallet-store.ts, and PostgreSQL's version beside it in
// wallet-store-postgres.ts): one contract suite that runs against both databases, so the two
// versions cannot drift apart; then what holds around it on both: alerts are raised after the
// commit (a failing alert cannot undo a charge), the lock order (hold row, then wallet row) that
// every path takes, and exact money when two billing instances batch against one wallet.
import type { MikroORM } from '@mikro-orm/core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { TIER_DEFAULTS, type TierName, type TierPolicy } from '../src/config.js';
import { MODEL, SETTINGS } from './support/billing-fixtures.js';
import { closeDatabase, getKnex, openDatabase } from '../src/db/orm.js';
import { AccountsService } from '../src/domain/accounts/accounts-service.js';
import type { HeldCall } from '../src/domain/billing/billing-types.js';
import { BillingService } from '../src/domain/billing/billing-service.js';
import { insertHold } from '../src/domain/billing/hold-store.js';
import { parseDecimal } from '../src/domain/billing/money.js';
import { big, exec, rows, type Binding } from '../src/domain/billing/sql.js';
import type { Settling, WalletStore } from '../src/domain/billing/wallet-store.js';
import type { MeterRequest } from '../src/domain/inference/inference-service.js';
import { createLogger } from '../src/logger.js';
import { BACKENDS, createTestDatabase, HAS_POSTGRES, type TestDatabase } from './support/databases.js';

const BEYOND_DOUBLES = 9_007_199_254_740_993n; // 2^53 + 1
const TIERS: Record<TierName, TierPolicy> = {
  ...TIER_DEFAULTS,
  free: { monthly_tokens: 100, overage: false, monthly_fee: 0, self_service: true },
  developer: { monthly_tokens: 50, overage: true, monthly_fee: 0, self_service: true },
  startup: { monthly_tokens: 0, overage: true, monthly_fee: 0, self_service: true },
  enterprise: { monthly_tokens: null, overage: false, monthly_fee: 0, self_service: false },
};

const PERIOD = '2031-05';
const NOW = new Date('2031-05-14T12:00:00Z');

function setup(backend: (typeof BACKENDS)[number]) {
  const s = {} as { tdb: TestDatabase; orm: MikroORM; accounts: AccountsService; services: BillingService[] };
  s.services = [];
  beforeAll(async () => {
    s.tdb = await createTestDatabase(backend);
    s.orm = await openDatabase(s.tdb.url);
    s.accounts = new AccountsService(s.orm);
  });
  afterEach(async () => {
    for (const b of s.services.splice(0)) await b.stop();
  });
  afterAll(async () => {
    await closeDatabase(s.orm);
    await s.tdb.drop();
  });
  let made = 0;
  return {
    s,
    billing(now: () => Date = () => NOW) {
      const b = new BillingService({ orm: s.orm, tiers: TIERS, settings: SETTINGS, logger: createLogger('silent'), now });
      s.services.push(b);
      return b;
    },
    async account(tier: TierName = 'startup') {
      return (await s.accounts.createAccount({ email: `w${++made}-${backend}@example.com`, tier })).account.id;
    },
  };
}

const holdRow = (call: HeldCall, owner = 'inst_test'): Binding[] => [
  call.id,
  call.accountId,
  null,
  call.requestId,
  call.model,
  call.period,
  call.allocationTokens,
  call.walletNanos,
  10,
  10,
  owner,
  NOW,
  new Date(NOW.getTime() + 60_000),
  call.endUser,
];

const heldCall = (accountId: string, id: string, walletNanos: bigint, allocationTokens = 0): HeldCall => ({
  id,
  accountId,
  keyId: null,
  endUser: `user_${id}`,
  requestId: `req_${id}`,
  model: 'chat-test',
  prices: { inputPerMillion: 1_000_000_000n, outputPerMillion: 2_000_000_000n },
  kind: 'held',
  period: PERIOD,
  allocationTokens,
  walletNanos,
  monthlyTokens: 0,
});

const settling = (call: HeldCall, charge: bigint, allocationUsed = 0): Settling => ({
  call,
  outcome: 'completed',
  promptTokens: 3,
  completionTokens: 4,
  charge,
  allocationUsed,
  note: null,
  description: `settle ${call.id}`,
  now: NOW,
});

describe.each(BACKENDS)('the wallet store on %s', (backend) => {
  const t = setup(backend);
  let store: WalletStore;
  let billing: BillingService;
  beforeAll(() => {
    billing = new BillingService({ orm: t.s.orm, tiers: TIERS, settings: SETTINGS, logger: createLogger('silent'), now: () => NOW });
    store = billing.wallets;
  });
  const db = () => billing.db;

  /** A wallet in PERIOD with `balance`, and `held` of it held by a hold row per call. */
  async function walletWith(balance: bigint, calls: HeldCall[] = []) {
    const id = calls[0]?.accountId ?? (await t.account());
    expect(await store.create(db(), id, PERIOD, NOW)).toBe(true);
    await store.credit(db(), id, balance, NOW);
    for (const call of calls) {
      expect(await store.hold(db(), { ...call, monthlyTokens: 100 }, NOW)).toBe(true);
      await insertHold(db(), holdRow(call));
    }
    return id;
  }

  it('speaks its dialect, and only PostgreSQL places holds on an unlocked read', () => {
    expect(store.kind).toBe(backend === 'SQLite' ? 'sqlite' : 'postgresql');
    expect(store.optimistic).toBe(backend === 'PostgreSQL');
  });

  it('creates a wallet once, for an existing account only; reads and locks it with its tier', async () => {
    const id = await t.account('developer');
    expect(await store.read(db(), id)).toBeNull();
    expect(await store.create(db(), 'acct_nobody000000000000000', PERIOD, NOW)).toBe(false);
    expect(await store.create(db(), id, PERIOD, NOW)).toBe(true);
    expect(await store.create(db(), id, PERIOD, NOW)).toBe(true);
    const read = await store.read(db(), id);
    expect(read).toMatchObject({ tier: 'developer', balance: 0n, held: 0n, period: PERIOD, periodUsed: 0, spendingLimitAction: 'block' });
    const locked = await db().transaction((trx) => store.lock(trx, id));
    expect(locked).toEqual(read);
    expect(await store.balance(db(), 'acct_nobody000000000000000')).toEqual({ balance: 0n, held: 0n });
    expect(await store.allocation(db(), 'acct_nobody000000000000000')).toBeNull();
  });

  it('reads several balances in one query, lists of any length sharing a few statements', async () => {
    const ids = [await walletWith(5n), await walletWith(7n), await walletWith(11n)];
    const sql: string[] = [];
    const seen = {
      kind: db().kind,
      rows: <T>(text: string, bindings?: readonly Binding[]) => {
        sql.push(text);
        return db().rows<T>(text, bindings);
      },
      run: (text: string, bindings?: readonly Binding[]) => db().run(text, bindings),
    };
    const two = await store.balances(seen, [ids[0]!, ids[1]!]);
    const three = await store.balances(seen, [...ids, 'acct_nobody000000000000000']);
    expect([...two.entries()]).toEqual([
      [ids[0], { balance: 5n, held: 0n }],
      [ids[1], { balance: 7n, held: 0n }],
    ]);
    expect(three.get(ids[2]!)).toEqual({ balance: 11n, held: 0n });
    expect(three.has('acct_nobody000000000000000')).toBe(false);
    expect(new Set(sql).size).toBe(1);
  });

  it("reads several wallet rows and allocations in one query each, as read and allocation read one account's", async () => {
    const ids = [await walletWith(5n), await walletWith(7n), await t.account('startup')];
    await store.setLowBalanceAlert(db(), ids[1]!, 3n, false, NOW);
    const nobody = 'acct_nobody000000000000000';
    const sql: string[] = [];
    const seen = {
      kind: db().kind,
      rows: <T>(text: string, bindings?: readonly Binding[]) => {
        sql.push(text);
        return db().rows<T>(text, bindings);
      },
      run: (text: string, bindings?: readonly Binding[]) => db().run(text, bindings),
    };
    const walletRows = await store.readMany(seen, [...ids, nobody, ids[0]!]);
    expect([...walletRows.keys()].sort()).toEqual([ids[0], ids[1]].sort());
    for (const id of ids.slice(0, 2)) expect(walletRows.get(id!)).toEqual(await store.read(db(), id!));
    expect(walletRows.get(ids[1]!)).toMatchObject({ balance: 7n, lowBalanceThreshold: 3n });
    const allocations = await store.allocations(seen, [...ids, nobody]);
    expect([...allocations.keys()].sort()).toEqual([...ids].sort());
    for (const id of ids) expect(allocations.get(id!)).toEqual(await store.allocation(db(), id!));
    expect(allocations.get(ids[2]!)).toEqual({ tier: 'startup', period: null, used: 0, held: 0, feePeriod: null, feeTier: null });
    expect(sql).toHaveLength(2);
    expect(await store.readMany(seen, [])).toEqual(new Map());
  });

  it('moves money exactly beyond 2^53: credits, fees, and the period roll', async () => {
    const id = await walletWith(BEYOND_DOUBLES);
    expect(await store.credit(db(), id, 2n, NOW)).toBe(BEYOND_DOUBLES + 2n);
    expect(await store.debitFee(db(), id, 5n, PERIOD, 'developer', NOW)).toBe(BEYOND_DOUBLES - 3n);
    await store.markFeePaid(db(), id, PERIOD, 'startup');
    expect(await store.read(db(), id)).toMatchObject({ balance: BEYOND_DOUBLES - 3n, feePeriod: PERIOD, feeTier: 'startup' });
    await store.rollPeriod(db(), id, '2031-06', NOW);
    // The fee paid is the last period's until this one's is charged (Allocation.feePaidTier reads it so).
    expect(await store.allocation(db(), id)).toEqual({
      tier: 'startup',
      period: '2031-06',
      used: 0,
      held: 0,
      feePeriod: PERIOD,
      feeTier: 'startup',
    });
    expect(await store.feesDue(db(), ['startup'], '2031-06')).toContain(id);
    await store.markFeePaid(db(), id, '2031-06', 'startup');
    expect(await store.feesDue(db(), ['startup'], '2031-06')).not.toContain(id);
  });

  it('holds only what fits the money and the allocation', async () => {
    const id = await walletWith(100n);
    const call = heldCall(id, 'hold_fit', 60n, 5);
    expect(await store.hold(db(), { ...call, monthlyTokens: 10 }, NOW)).toBe(true);
    expect(await store.hold(db(), { ...call, monthlyTokens: 10 }, NOW)).toBe(false); // 120 > 100
    expect(await store.hold(db(), { ...call, walletNanos: 40n, allocationTokens: 6, monthlyTokens: 10 }, NOW)).toBe(false); // 11 > 10
    expect(await store.read(db(), id)).toMatchObject({ balance: 100n, held: 60n, periodHeld: 5 });
  });

  it('consumes a hold once: the hold row goes, then the wallet moves; a second time finds nothing', async () => {
    const call = heldCall(await t.account(), 'hold_once', 50n, 3);
    const id = await walletWith(100n, [call]);
    const row = await store.consumeHold(db(), call, { charge: 20n, allocationUsed: 2 }, NOW);
    expect(row).toMatchObject({ balance: 80n, held: 0n, periodHeld: 0, periodUsed: 2, periodSpent: 20n });
    expect(await store.consumeHold(db(), call, { charge: 20n, allocationUsed: 2 }, NOW)).toBeNull();
    expect(await store.balance(db(), id)).toEqual({ balance: 80n, held: 0n });
  });

  it('settles many calls of one wallet at once: each its ledger row in a chain, its usage event, its hold gone', async () => {
    const account = await t.account();
    const calls = Array.from({ length: 12 }, (_, i) => heldCall(account, `hold_many_${i}`, 100n));
    const id = await walletWith(10_000n, calls);
    const settled = await Promise.all(calls.map((c, i) => store.settle(settling(c, BigInt(i * 7)))));
    expect(settled.every((x) => x !== null)).toBe(true);
    const charged = calls.reduce((sum, _, i) => sum + BigInt(i * 7), 0n);
    expect(await store.balance(db(), id)).toEqual({ balance: 10_000n - charged, held: 0n });
    // Every ledger row's balance_after is the one before it plus its amount, in seq order.
    const ledger = await rows<{ amount: unknown; after: unknown }>(
      db(),
      'select cast(amount as text) as amount, cast(balance_after as text) as after from wallet_transactions where account_id = ? order by seq',
      [id],
    );
    let balance = 10_000n; // credited by the store alone, without a ledger row
    for (const r of ledger) {
      balance += big(r.amount);
      expect(big(r.after)).toBe(balance);
    }
    expect(balance).toBe(10_000n - charged);
    expect(ledger).toHaveLength(11); // the 11 calls that cost something
    const returned = settled.map((x) => x!.transaction?.balanceAfter ?? null).filter((x) => x !== null);
    expect(returned.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))).toEqual(
      ledger.map((r) => big(r.after)).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)),
    );
    // One usage event per call, each with its call's end user.
    const events = await rows<{ id: string; end_user: string }>(db(), 'select id, end_user from usage_events where account_id = ?', [id]);
    expect(events.map((e) => `${e.id} ${e.end_user}`).sort()).toEqual(calls.map((c) => `${c.id} user_${c.id}`).sort());
    expect(await billing.countOpenHolds(id)).toBe(0);
    // A hold already gone (released by the sweeper) settles to nothing.
    expect(await store.settle(settling(calls[0]!, 5n))).toBeNull();
  });

  it('places holds planned on a read all together, or none when the wallet changed (PostgreSQL), never on SQLite', async () => {
    const account = await t.account();
    const id = await walletWith(100n);
    const calls = [heldCall(account, 'hold_cas_1', 30n), heldCall(account, 'hold_cas_2', 30n)];
    const cond = {
      accountId: id,
      tier: 'startup' as const,
      period: PERIOD,
      monthlyTokens: 0,
      walletNanos: 60n,
      allocationTokens: 0,
      exactAllocationLeft: null,
      now: NOW,
    };
    const planned = calls.map((call) => ({ call, row: holdRow(call) }));
    if (backend === 'SQLite') {
      expect(await store.placeHoldsIfUnchanged(cond, planned)).toBe(false);
      expect(await billing.countOpenHolds(id)).toBe(0);
      return;
    }
    expect(await store.placeHoldsIfUnchanged(cond, planned)).toBe(true);
    expect(await billing.countOpenHolds(id)).toBe(2);
    const more = [heldCall(account, 'hold_cas_3', 30n), heldCall(account, 'hold_cas_4', 30n)];
    expect(
      await store.placeHoldsIfUnchanged(
        cond,
        more.map((call) => ({ call, row: holdRow(call) })),
      ),
    ).toBe(false); // 60 > 40 left
    expect(await billing.countOpenHolds(id)).toBe(2);
    expect(await store.balance(db(), id)).toEqual({ balance: 100n, held: 60n });
    // Planned for a tier the account no longer has: nothing placed, though the money would do.
    await exec(db(), "update accounts set tier = 'developer' where id = ?", [id]);
    const one = heldCall(account, 'hold_cas_5', 10n);
    expect(await store.placeHoldsIfUnchanged({ ...cond, walletNanos: 10n }, [{ call: one, row: holdRow(one) }])).toBe(false);
    await exec(db(), "update accounts set tier = 'startup' where id = ?", [id]);
    expect(await store.placeHoldsIfUnchanged({ ...cond, walletNanos: 10n }, [{ call: one, row: holdRow(one) }])).toBe(true);
    expect(await store.balance(db(), id)).toEqual({ balance: 100n, held: 70n });
  });

  it('claims each alert once', async () => {
    const id = await walletWith(10n);
    await store.setLowBalanceAlert(db(), id, 50n, false, NOW);
    expect(await store.claimLowBalanceAlert(db(), id)).toBe(true);
    expect(await store.claimLowBalanceAlert(db(), id)).toBe(false);
    expect(await store.claimPeriodAlert(db(), 'spending_alert_period', id, PERIOD)).toBe(true);
    expect(await store.claimPeriodAlert(db(), 'spending_alert_period', id, PERIOD)).toBe(false);
    await store.setSpendingLimit(db(), id, { enabled: true, limit: 7n, action: 'alert', rearm: true }, NOW);
    expect(await store.read(db(), id)).toMatchObject({
      spendingLimitEnabled: true,
      spendingLimit: 7n,
      spendingLimitAction: 'alert',
      spendingAlertPeriod: null,
      lowBalanceThreshold: 50n,
      lowBalanceAlerted: true,
    });
    // A credit back above the threshold arms the alert again.
    await store.credit(db(), id, 100n, NOW);
    expect(await store.claimLowBalanceAlert(db(), id)).toBe(true);
  });
});

describe.each(BACKENDS)('billing alerts on %s', (backend) => {
  const t = setup(backend);
  const meter = (accountId: string): MeterRequest => ({
    caller: { accountId, keyId: null, requestId: `req-${Math.random()}` },
    model: MODEL,
    promptTokens: 10,
    requestedOutputTokens: 10,
    maxOutputTokens: 256,
  });

  it('are raised after the commit: one that cannot be written leaves the charge standing, and is not raised inside it', async () => {
    const billing = t.billing();
    const id = await t.account('startup');
    await billing.creditWallet({ accountId: id, amount: parseDecimal('1'), type: 'bonus', description: 'test' });
    await billing.setLowBalanceAlert(id, parseDecimal('0.99999'));
    const notifications = async () =>
      (await rows<{ kind: string }>(billing.db, 'select kind from notifications where account_id = ?', [id])).map((n) => n.kind);

    // The notifications table cannot be written to: inside the settlement's transaction the
    // alert would roll the charge back (and the hold would wait for the sweeper).
    await exec(billing.db, 'alter table notifications rename to notifications_away');
    try {
      const ticket = await billing.admit(meter(id));
      await ticket.settle({ promptTokens: 10, completionTokens: 10, totalTokens: 20 }, 'completed');
    } finally {
      await exec(billing.db, 'alter table notifications_away rename to notifications');
    }
    const cost = 10n * 1_000n + 10n * 2_000n;
    expect((await billing.getWallet(id)).balance).toBe(parseDecimal('1') - cost);
    expect(await billing.countOpenHolds(id)).toBe(0);
    expect(await notifications()).toEqual([]);
    // The next change past the line raises it (the flag was never claimed).
    const again = await billing.admit(meter(id));
    await again.settle({ promptTokens: 10, completionTokens: 10, totalTokens: 20 }, 'completed');
    expect(await notifications()).toEqual(['low_balance']);
    expect(await billing.verifyLedger()).toEqual([]);
  });

  it('are decided on the row as it is when raised: a top-up committed in between gets none, the next real crossing gets one', async () => {
    const billing = t.billing();
    const id = await t.account('startup');
    const cost = 10n * 1_000n + 10n * 2_000n;
    // One call takes the balance under the threshold.
    await billing.creditWallet({ accountId: id, amount: 5n * cost, type: 'bonus', description: 'test' });
    await billing.setLowBalanceAlert(id, 5n * cost - 1n);
    const notifications = async () =>
      (await rows<{ kind: string }>(billing.db, 'select kind from notifications where account_id = ?', [id])).map((n) => n.kind);
    // The interleaving: a top-up commits after the settlement's commit, before its alerts are raised.
    const hooks = billing as unknown as { raiseAfterCommit(check: unknown): Promise<void> };
    const raise = hooks.raiseAfterCommit.bind(billing);
    let topUpFirst = true;
    hooks.raiseAfterCommit = async (check) => {
      if (topUpFirst) {
        topUpFirst = false;
        await billing.creditWallet({ accountId: id, amount: 10n * cost, type: 'bonus', description: 'top-up' });
      }
      return raise(check);
    };
    const call = async () =>
      (await billing.admit(meter(id))).settle({ promptTokens: 10, completionTokens: 10, totalTokens: 20 }, 'completed');
    await call();
    expect((await billing.getWallet(id)).balance).toBe(14n * cost);
    expect(await notifications()).toEqual([]);
    // Spending down past the line for real raises it, once.
    for (let i = 0; i < 11; i++) await call();
    expect((await billing.getWallet(id)).balance).toBe(3n * cost);
    expect(await notifications()).toEqual(['low_balance']);
  });
});

describe.each(BACKENDS)('a settlement whose answer is lost after it committed, on %s', (backend) => {
  const t = setup(backend);

  it('is retried to no effect: charged once, its usage event and its charge stand', async () => {
    const billing = t.billing();
    const id = await t.account('startup');
    await billing.creditWallet({ accountId: id, amount: parseDecimal('1'), type: 'bonus', description: 'test' });
    // The store commits the settlement, then the connection "drops" before the answer arrives.
    const store = (billing as unknown as { wallets: { settle(s: unknown): Promise<unknown> } }).wallets;
    const settle = store.settle.bind(store);
    let lose = true;
    store.settle = async (s) => {
      const answer = await settle(s);
      if (lose) {
        lose = false;
        throw new Error('connection lost after commit');
      }
      return answer;
    };
    const ticket = await billing.admit({
      caller: { accountId: id, keyId: null, requestId: 'req-lost' },
      model: MODEL,
      promptTokens: 10,
      requestedOutputTokens: 10,
      maxOutputTokens: 256,
    });
    await ticket.settle({ promptTokens: 10, completionTokens: 10, totalTokens: 20 }, 'completed');
    const cost = 10n * 1_000n + 10n * 2_000n;
    expect((await billing.getWallet(id)).balance).toBe(parseDecimal('1') - cost);
    const events = await billing.listUsageEvents(id);
    expect(events.map((e) => [e.outcome, e.walletNanos, e.billingNote])).toEqual([['completed', cost, null]]);
    expect(await billing.countOpenHolds(id)).toBe(0);
    expect(await billing.verifyLedger()).toEqual([]);
  });
});

describe.skipIf(!HAS_POSTGRES)('lock order on PostgreSQL: the hold row, then the wallet row', () => {
  const t = setup('PostgreSQL');

  /**
   * Runs `path` (which consumes hold `holdId`) while another transaction holds the wallet row's
   * lock, waits until `path`'s `statements` are all blocked on a lock, and reports whether the
   * hold row was locked meanwhile: true when `path` took the hold row before it reached for the
   * wallet row. (Counting one waiter when two statements run at once could probe the hold row
   * before the settlement has even reached it.)
   */
  async function holdLockedWhileWalletWaits(
    accountId: string,
    holdId: string,
    path: () => Promise<unknown>,
    statements = 1,
  ): Promise<boolean> {
    const knex = getKnex(t.s.orm);
    const blocker = await knex.transaction();
    await blocker.raw('select 1 from wallets where account_id = ? for update', [accountId]);
    const running = path();
    try {
      for (;;) {
        const waiting = await knex.raw(
          "select count(*) as n from pg_stat_activity where wait_event_type = 'Lock' and datname = current_database()",
        );
        if (Number(waiting.rows[0].n) >= statements) break;
        await new Promise((r) => setTimeout(r, 10));
      }
      const probe = await knex.transaction();
      try {
        await probe.raw('select 1 from holds where id = ? for update nowait', [holdId]);
        return false;
      } catch (e) {
        expect((e as { code?: string }).code).toBe('55P03'); // lock_not_available
        return true;
      } finally {
        await probe.rollback().catch(() => {});
      }
    } finally {
      await blocker.rollback();
      await running;
    }
  }

  it('settlement takes the hold row first', async () => {
    const billing = t.billing();
    const id = await t.account('startup');
    await billing.creditWallet({ accountId: id, amount: 1_000_000n, type: 'bonus', description: 'test' });
    const call = heldCall(id, 'hold_order_settle', 1_000n);
    await billing.wallets.hold(
      billing.db,
      { ...call, period: (await billing.wallets.read(billing.db, id))!.period, monthlyTokens: 0 },
      NOW,
    );
    const period = (await billing.wallets.read(billing.db, id))!.period;
    await insertHold(billing.db, holdRow({ ...call, period }));
    expect(await holdLockedWhileWalletWaits(id, call.id, () => billing.wallets.settle(settling({ ...call, period }, 500n)))).toBe(true);
    expect(await billing.wallets.balance(billing.db, id)).toEqual({ balance: 1_000_000n - 500n, held: 0n });
  });

  /** A startup account's wallet with 1 000 000 nanos and a hold of 1 000 on it (its row owned by `owner`). */
  async function walletWithHold(holdId: string, owner?: string) {
    const billing = t.billing();
    const id = await t.account('startup');
    await billing.creditWallet({ accountId: id, amount: 1_000_000n, type: 'bonus', description: 'test' });
    const period = (await billing.wallets.read(billing.db, id))!.period;
    const call = { ...heldCall(id, holdId, 1_000n), period };
    await billing.wallets.hold(billing.db, { ...call, monthlyTokens: 0 }, NOW);
    await insertHold(billing.db, holdRow(call, owner));
    return { billing, id, period, call };
  }

  it("settlement beside an admission's holds takes the hold row first", async () => {
    const { billing, id, period, call } = await walletWithHold('hold_order_both');
    const fresh = { ...heldCall(id, 'hold_order_both_new', 1_000n), period };
    const cond = {
      accountId: id,
      tier: 'startup' as const,
      period,
      monthlyTokens: 0,
      walletNanos: 1_000n,
      allocationTokens: 0,
      exactAllocationLeft: 0,
      now: NOW,
    };
    const both = () =>
      Promise.all([
        billing.wallets.settle(settling(call, 500n)),
        billing.wallets.placeHoldsIfUnchanged(cond, [{ call: fresh, row: holdRow(fresh) }]),
      ]);
    // Both wait for the wallet row: the settlement holding the hold row, the admission's update.
    expect(await holdLockedWhileWalletWaits(id, call.id, both, 2)).toBe(true);
    expect(await billing.wallets.balance(billing.db, id)).toEqual({ balance: 1_000_000n - 500n, held: 1_000n });
  });

  it('the sweeper takes the hold row first', async () => {
    const { billing, id, call } = await walletWithHold('hold_order_sweep', 'inst_gone');
    expect(await holdLockedWhileWalletWaits(id, call.id, () => billing.releaseStaleHolds())).toBe(true);
    expect(await billing.wallets.balance(billing.db, id)).toEqual({ balance: 1_000_000n, held: 0n });
  });
});

describe.each(BACKENDS)('two billing instances batching against one wallet on %s', (backend) => {
  const t = setup(backend);

  it("does not lower a call's output on a wallet row cached before another instance's top-up", async () => {
    const a = t.billing(() => new Date());
    const b = t.billing(() => new Date());
    const id = await t.account('startup');
    // Enough for a 10-token prompt and 20 of output (2,000 nanos a token).
    await b.creditWallet({ accountId: id, amount: 10n * 1_000n + 20n * 2_000n, type: 'bonus', description: 'test' });
    const ask = () =>
      a.admit({
        caller: { accountId: id, keyId: null, requestId: `req-${Math.random()}` },
        model: MODEL,
        promptTokens: 10,
        requestedOutputTokens: null,
        maxOutputTokens: 256,
      });
    const first = await ask();
    expect(first.maxOutputTokens).toBe(20);
    await first.settle({ promptTokens: 10, completionTokens: 1, totalTokens: 11 }, 'completed'); // a's row is now cached
    await b.creditWallet({ accountId: id, amount: parseDecimal('10'), type: 'topup', description: 'top-up' });
    const second = await ask();
    expect(second.maxOutputTokens).toBe(256);
    await second.settle({ promptTokens: 10, completionTokens: 1, totalTokens: 11 }, 'completed');
    expect(await a.verifyLedger()).toEqual([]);
  });

  it('admit and settle 300 calls between them with every nano accounted for and no overdraft', async () => {
    const a = t.billing(() => new Date());
    const b = t.billing(() => new Date());
    const id = await t.account('startup');
    // Pays for exactly 37 calls' holds (10 prompt + 10 output tokens: 30,000 nanos each).
    await a.creditWallet({ accountId: id, amount: 37n * 30_000n, type: 'bonus', description: 'test' });
    const results = await Promise.all(
      Array.from({ length: 300 }, async (_, i) => {
        const billing = i % 2 === 0 ? a : b;
        try {
          const ticket = await billing.admit({
            caller: { accountId: id, keyId: null, requestId: `req-${i}` },
            model: MODEL,
            promptTokens: 10,
            requestedOutputTokens: 10,
            maxOutputTokens: 256,
          });
          // Uses i % 11 output tokens: charges differ, so a lost or doubled one shows.
          await ticket.settle({ promptTokens: 10, completionTokens: i % 11, totalTokens: 10 + (i % 11) }, 'completed');
          return 10n * 1_000n + BigInt(i % 11) * 2_000n;
        } catch (e) {
          expect((e as { code?: string }).code).toBe('insufficient_balance');
          return null;
        }
      }),
    );
    const charged = results.filter((r): r is bigint => r !== null);
    expect(charged.length).toBeGreaterThanOrEqual(37);
    const total = charged.reduce((s, c) => s + c, 0n);
    const wallet = await a.getWallet(id);
    expect(wallet).toMatchObject({ balance: 37n * 30_000n - total, held: 0n });
    expect(wallet.balance >= 0n).toBe(true);
    expect(await a.countOpenHolds(id)).toBe(0);
    expect(await a.verifyLedger()).toEqual([]);
  });
});
