// The wallets table: every statement on an account's wallet row, in one place. Billing's parts
// (admission, settlement, the wallet lifecycle, account operations, the sweeper, alerts) and the
// payments' balance read call these and write no wallet SQL of their own.
//
// Most statements are the same on both databases and live in WalletStoreBase. Where the two differ,
// both versions sit side by side behind the one WalletStore interface: SQLite's here
// (SqliteWalletStore), PostgreSQL's in ./wallet-store-postgres.ts. test/wallet-store.test.ts runs
// one contract suite against both.
//
// Lock order. A transaction that touches an existing hold and its wallet takes the hold row first,
// then the wallet row: consumeHold (below) is the one function that does it, used by settlement and
// the sweeper; PostgreSQL's batched settlement statement is built in the same order. Admission
// locks the wallet row and only inserts new holds, which no other transaction can see yet, so no
// cycle can form. test/wallet-store.test.ts records the statements of every path and fails if a
// path writes a wallet row before the hold it consumes.
import type { DatabaseKind } from '../../db/connection.js';
import { isTier, type Tier } from '../accounts/accounts-service.js';
import type { CallOutcome, Undelivered } from '../inference/inference-service.js';
import { appendTransaction, type TransactionView } from '../ledger/ledger.js';
import type { HeldCall, WalletRow } from './billing-types.js';
import { HOT_PATH, USAGE_EVENT_INSERT, WALLET_COLUMNS, walletRow } from './billing-types.js';
import { periodOf, usageDay } from './period.js';
import { big, exec, inList, int, rows, run, type BillingDatabase, type Binding, type Db } from './sql.js';

/** The once-per-period alert flags (see ./alerts.ts). */
export type PeriodAlertColumn = 'allocation_alert_period' | 'allocation_full_period' | 'spending_alert_period';

/** A hold as it is released or settled: what it holds on the wallet. */
export interface HoldRef {
  id: string;
  accountId: string;
  period: string;
  allocationTokens: number | bigint;
  walletNanos: bigint;
}

/** What a settled call moves: the wallet money charged (at most what was held) and the allocation used. */
export interface Charge {
  charge: bigint;
  allocationUsed: number;
}

/** A held call's settlement, as the store writes it: hold deleted, wallet moved, ledger row, usage event. */
export interface Settling extends Charge {
  call: HeldCall;
  outcome: CallOutcome;
  promptTokens: number;
  completionTokens: number;
  note: string | null;
  /** The ledger row's description (cut to the column). */
  description: string;
  now: Date;
  /** Asked inside the settlement's transaction, before its commit (MeterTicket.settle). */
  undelivered?: Undelivered;
}

/**
 * The settlement as it is written: when its answer can no longer be delivered (asked as late as
 * the store can), at that outcome with nothing charged and no tokens, as a call whose client left
 * before the answer.
 */
export function asDelivered(s: Settling): Settling {
  const late = s.undelivered?.();
  if (!late) return s;
  return { ...s, outcome: late, promptTokens: 0, completionTokens: 0, charge: 0n, allocationUsed: 0, note: null, description: '' };
}

export interface Settled {
  /** The wallet row after the settlement (its tier is not read: 'free'). */
  row: WalletRow;
  /** The ledger row written; null when nothing was charged. */
  transaction: TransactionView | null;
}

/** The hold an admission places, decided on a read of the wallet row. */
export interface PlannedHold {
  call: HeldCall;
  /** The hold row's bindings, in HOLD_COLUMNS order. */
  row: Binding[];
}

/**
 * What a batch of holds planned on one unlocked read relied on (PostgreSQL's optimistic
 * admission): the period, the money and spending-limit room (at least the sum held), and the
 * allocation left (at least the sum held, or exactly as read when a plan split a call by it).
 */
export interface HoldCondition {
  accountId: string;
  /** The tier the plans followed (the account's tier may have changed since the row was read). */
  tier: Tier;
  period: string;
  monthlyTokens: number;
  walletNanos: bigint;
  allocationTokens: number;
  /** null: every call fits the allocation left whole; else the allocation left as read. */
  exactAllocationLeft: number | null;
  now: Date;
}

/** An account's tier and its wallet's period counters (no wallet row yet: no period, zeros). */
export interface AllocationRow {
  tier: Tier;
  period: string | null;
  used: number;
  held: number;
  /** The period and tier whose monthly fee was last charged (null: none). */
  feePeriod: string | null;
  feeTier: string | null;
}

export interface WalletStore {
  readonly kind: DatabaseKind;
  /** Whether admission may first try placing holds on an unlocked read (placeHoldsIfUnchanged). */
  readonly optimistic: boolean;
  /** The account's wallet row with its tier, unlocked; null when it has none yet. */
  read(db: Db, accountId: string): Promise<WalletRow | null>;
  /**
   * The row admission plans on: on PostgreSQL the last row this process saw for the account (from
   * its own holds and settlements, at most a second old) when there is one, saving a round trip;
   * else a fresh read. `cached`: not read just now, so a refusal must be checked on a fresh read.
   * Whatever a cached row says wrong, placeHoldsIfUnchanged checks the database's own values.
   */
  readForAdmission(accountId: string): Promise<{ row: WalletRow | null; cached: boolean }>;
  /** The same, locked until the transaction ends (FOR UPDATE on PostgreSQL; BEGIN IMMEDIATE locks SQLite whole). */
  lock(db: Db, accountId: string): Promise<WalletRow | null>;
  /** Creates the wallet row unless it exists; false when the account does not exist. */
  create(db: Db, accountId: string, period: string, now: Date): Promise<boolean>;
  /** Moves the row into a new period: its counters start at zero. */
  rollPeriod(db: Db, accountId: string, period: string, now: Date): Promise<void>;
  /** Marks `tier`'s fee for `period` as paid (without charging it: it was, earlier this period). */
  markFeePaid(db: Db, accountId: string, period: string, tier: Tier): Promise<void>;
  /** Charges a tier's fee; returns the balance after. */
  debitFee(db: Db, accountId: string, fee: bigint, period: string, tier: Tier, now: Date): Promise<bigint>;
  /** Adds credits (re-arming the low-balance alert once above its threshold); returns the balance after. */
  credit(db: Db, accountId: string, amount: bigint, now: Date): Promise<bigint>;
  /** The wallet side of a hold placed under the row's lock; false if it does not fit (it always should). */
  hold(db: Db, h: HoldRef & { monthlyTokens: number }, now: Date): Promise<boolean>;
  /**
   * Places holds planned on an unlocked read in one statement, if the row still allows them all
   * (`cond`); all or none. false: the row changed; plan again. Only when `optimistic`.
   */
  placeHoldsIfUnchanged(cond: HoldCondition, holds: readonly PlannedHold[]): Promise<boolean>;
  /** Deletes the hold, then moves the wallet: the one lock order. null when the hold was gone. */
  consumeHold(db: Db, hold: HoldRef, change: Charge, now: Date): Promise<WalletRow | null>;
  /** Settles a held call atomically; null when its hold was gone (released by the sweeper). */
  settle(s: Settling): Promise<Settled | null>;
  /** An unlimited tier's call: its tokens counted as used this period, and its usage event. */
  recordUnlimited(s: Settling): Promise<void>;
  /** `rearm`: the setting changed, a new occasion for its alert (its flag cleared, its version counted). */
  setSpendingLimit(
    db: Db,
    accountId: string,
    s: { enabled: boolean; limit: bigint | null; action: string; rearm: boolean },
    now: Date,
  ): Promise<void>;
  setLowBalanceAlert(db: Db, accountId: string, threshold: bigint | null, alerted: boolean, now: Date): Promise<void>;
  /** Flips the low-balance flag; false when another change did first. */
  claimLowBalanceAlert(db: Db, accountId: string): Promise<boolean>;
  /** Marks a once-per-period alert as written for `period`; false when another change did first. */
  claimPeriodAlert(db: Db, column: PeriodAlertColumn, accountId: string, period: string): Promise<boolean>;
  /** Balance and held money; zero for an account without a wallet. */
  balance(db: Db, accountId: string): Promise<{ balance: bigint; held: bigint }>;
  /** The balances of several accounts in one query; those without a wallet row are left out. */
  balances(db: Db, accountIds: readonly string[]): Promise<Map<string, { balance: bigint; held: bigint }>>;
  /** The wallet rows of several accounts, unlocked, in one query; those without a wallet row are left out. */
  readMany(db: Db, accountIds: readonly string[]): Promise<Map<string, WalletRow>>;
  /** The account's tier and its wallet's period counters; null when the account does not exist. */
  allocation(db: Db, accountId: string): Promise<AllocationRow | null>;
  /** allocation() of several accounts in one query; accounts that do not exist are left out. */
  allocations(db: Db, accountIds: readonly string[]): Promise<Map<string, AllocationRow>>;
  /** Accounts on one of `tiers` whose fee for `period` is not paid. */
  feesDue(db: Db, tiers: readonly string[], period: string): Promise<string[]>;
}

const SELECT_WITH_TIER = `select ${WALLET_COLUMNS}, a.tier from wallets w join accounts a on a.id = w.account_id where w.account_id = ?`;

const ALLOCATION_COLUMNS = 'a.id, a.tier, w.period, w.period_used, w.period_held, w.fee_period, w.fee_tier';

interface AllocationColumns {
  tier: string;
  period: string | null;
  period_used: unknown;
  period_held: unknown;
  fee_period: string | null;
  fee_tier: string | null;
}

function allocationRow(r: AllocationColumns): AllocationRow {
  return {
    tier: isTier(r.tier) ? r.tier : 'free',
    period: r.period ?? null,
    used: int(r.period_used),
    held: int(r.period_held),
    feePeriod: r.fee_period ?? null,
    feeTier: r.fee_tier ?? null,
  };
}

/**
 * The wallet update of a consumed hold: held money and allocation released, the charge taken. A
 * wallet still in an earlier period than the settlement's (a call held in one month and settled in
 * the next, before anything else rolled the wallet) is rolled here as openWallet rolls it, so the
 * charge counts in the month it settled in (a fee still due is charged by the next openWallet).
 * SET expressions read the row as it was before the update.
 */
const CONSUME_HOLD_UPDATE =
  'update wallets set held = held - ?, balance = balance - ?, ' +
  'period_held = case when period < ? then 0 when period = ? then period_held - ? else period_held end, ' +
  'period_used = case when period < ? then 0 when period = ? then period_used + ? else period_used end, ' +
  'period_spent = case when period < ? then ? else period_spent + ? end, ' +
  'period = case when period < ? then ? else period end, updated_at = ? where account_id = ?';

export const COUNT_USAGE =
  'update wallets set period_used = case when period = ? then period_used + ? else period_used end, updated_at = ? where account_id = ?';

export const countUsageBindings = (s: Settling): Binding[] => [s.call.period, s.promptTokens + s.completionTokens, s.now, s.call.accountId];

const consumeHoldBindings = (hold: HoldRef, change: Charge, now: Date): Binding[] => {
  const period = periodOf(now);
  return [
    hold.walletNanos,
    change.charge,
    period,
    hold.period,
    hold.allocationTokens,
    period,
    hold.period,
    change.allocationUsed,
    period,
    change.charge,
    change.charge,
    period,
    period,
    now,
    hold.accountId,
  ];
};

export function withTier(r: Record<string, unknown>): WalletRow {
  return walletRow(r, isTier(r.tier) ? r.tier : 'free');
}

/** The usage event's bindings, in USAGE_EVENT_COLUMNS order. */
export function usageEventRow(s: Settling, allocationTokens: number, walletNanos: bigint, note: string | null): Binding[] {
  const { call, now } = s;
  return [
    call.id,
    call.accountId,
    call.keyId,
    call.model,
    call.requestId,
    s.outcome,
    s.promptTokens,
    s.completionTokens,
    s.promptTokens + s.completionTokens,
    allocationTokens,
    walletNanos,
    note,
    usageDay(call.period, now),
    now,
    call.endUser,
  ];
}

/** consumeHold's update, returning the wallet row after it (built once: settlement is a hot path). */
const CONSUME_HOLD_RETURNING = `${CONSUME_HOLD_UPDATE} returning ${WALLET_COLUMNS.replaceAll('w.', '')}`;

export abstract class WalletStoreBase implements WalletStore {
  abstract readonly kind: DatabaseKind;
  abstract readonly optimistic: boolean;
  constructor(protected readonly db: BillingDatabase) {}

  abstract lock(db: Db, accountId: string): Promise<WalletRow | null>;
  abstract placeHoldsIfUnchanged(cond: HoldCondition, holds: readonly PlannedHold[]): Promise<boolean>;
  abstract settle(s: Settling): Promise<Settled | null>;

  async read(db: Db, accountId: string): Promise<WalletRow | null> {
    const [r] = await rows<Record<string, unknown>>(db, SELECT_WITH_TIER, [accountId]);
    return r ? withTier(r) : null;
  }

  async readForAdmission(accountId: string): Promise<{ row: WalletRow | null; cached: boolean }> {
    return { row: await this.read(this.db, accountId), cached: false };
  }

  protected async selectLocked(db: Db, accountId: string, clause: string): Promise<WalletRow | null> {
    const [r] = await rows<Record<string, unknown>>(db, SELECT_WITH_TIER + clause, [accountId]);
    return r ? withTier(r) : null;
  }

  async create(db: Db, accountId: string, period: string, now: Date): Promise<boolean> {
    const [account] = await rows<{ id: string }>(db, 'select id from accounts where id = ?', [accountId]);
    if (!account) return false;
    await exec(
      db,
      'insert into wallets (account_id, period, created_at, updated_at) values (?, ?, ?, ?) on conflict (account_id) do nothing',
      [accountId, period, now, now],
    );
    return true;
  }

  async rollPeriod(db: Db, accountId: string, period: string, now: Date): Promise<void> {
    await exec(
      db,
      // Never backwards: `period` later than the row's.
      'update wallets set period = ?, period_used = 0, period_held = 0, period_spent = 0, updated_at = ? where account_id = ? and period < ?',
      [period, now, accountId, period],
    );
  }

  async markFeePaid(db: Db, accountId: string, period: string, tier: Tier): Promise<void> {
    await exec(db, 'update wallets set fee_period = ?, fee_tier = ? where account_id = ?', [period, tier, accountId]);
  }

  async debitFee(db: Db, accountId: string, fee: bigint, period: string, tier: Tier, now: Date): Promise<bigint> {
    const [after] = await rows<{ balance: unknown }>(
      db,
      'update wallets set balance = balance - ?, fee_period = ?, fee_tier = ?, updated_at = ? where account_id = ? returning cast(balance as text) as balance',
      [fee, period, tier, now, accountId],
    );
    if (!after) throw new Error(`no wallet row for ${accountId}`);
    return big(after.balance);
  }

  async credit(db: Db, accountId: string, amount: bigint, now: Date): Promise<bigint> {
    const [after] = await rows<{ balance: unknown }>(
      db,
      'update wallets set balance = balance + ?, ' +
        'low_balance_alerted = case when low_balance_threshold is not null and balance + ? >= low_balance_threshold then ? else low_balance_alerted end, ' +
        'updated_at = ? where account_id = ? returning cast(balance as text) as balance',
      [amount, amount, false, now, accountId],
    );
    if (!after) throw new Error(`no wallet row for ${accountId}`);
    return big(after.balance);
  }

  async hold(db: Db, h: HoldRef & { monthlyTokens: number }, now: Date): Promise<boolean> {
    const placed = await run(
      db,
      'update wallets set held = held + ?, period_held = period_held + ?, updated_at = ? ' +
        // A hold that takes nothing from the allocation needs none left: after a move to a tier
        // with a smaller one, the period's use may already be past it.
        'where account_id = ? and period = ? and balance - held >= ? and (? = 0 or period_used + period_held + ? <= ?)',
      [
        h.walletNanos,
        h.allocationTokens,
        now,
        h.accountId,
        h.period,
        h.walletNanos,
        h.allocationTokens,
        h.allocationTokens,
        h.monthlyTokens,
      ],
    );
    return placed === 1;
  }

  async consumeHold(db: Db, hold: HoldRef, change: Charge, now: Date): Promise<WalletRow | null> {
    // The hold row first: deleting it is what makes a settlement or a release happen once.
    if ((await run(db, 'delete from holds where id = ?', [hold.id])) === 0) return null;
    const [after] = await rows<Record<string, unknown>>(db, CONSUME_HOLD_RETURNING, consumeHoldBindings(hold, change, now));
    if (!after) throw new Error(`hold ${hold.id} had no wallet row`);
    return walletRow(after, 'free');
  }

  async recordUnlimited(s: Settling): Promise<void> {
    await this.db.transaction(async (trx) => {
      await exec(trx, COUNT_USAGE, countUsageBindings(s));
      await exec(trx, USAGE_EVENT_INSERT, usageEventRow(s, 0, 0n, null));
    }, HOT_PATH);
  }

  async setSpendingLimit(
    db: Db,
    accountId: string,
    s: { enabled: boolean; limit: bigint | null; action: string; rearm: boolean },
    now: Date,
  ): Promise<void> {
    await exec(
      db,
      s.rearm
        ? 'update wallets set spending_limit_enabled = ?, spending_limit = ?, spending_limit_action = ?, spending_limit_version = spending_limit_version + 1, spending_alert_period = null, updated_at = ? where account_id = ?'
        : 'update wallets set spending_limit_enabled = ?, spending_limit = ?, spending_limit_action = ?, updated_at = ? where account_id = ?',
      [s.enabled, s.limit, s.action, now, accountId],
    );
  }

  async setLowBalanceAlert(db: Db, accountId: string, threshold: bigint | null, alerted: boolean, now: Date): Promise<void> {
    await exec(db, 'update wallets set low_balance_threshold = ?, low_balance_alerted = ?, updated_at = ? where account_id = ?', [
      threshold,
      alerted,
      now,
      accountId,
    ]);
  }

  async claimLowBalanceAlert(db: Db, accountId: string): Promise<boolean> {
    return (
      (await run(db, 'update wallets set low_balance_alerted = ? where account_id = ? and low_balance_alerted = ?', [
        true,
        accountId,
        false,
      ])) > 0
    );
  }

  async claimPeriodAlert(db: Db, column: PeriodAlertColumn, accountId: string, period: string): Promise<boolean> {
    return (
      (await run(db, `update wallets set ${column} = ? where account_id = ? and (${column} is null or ${column} <> ?)`, [
        period,
        accountId,
        period,
      ])) > 0
    );
  }

  async balance(db: Db, accountId: string): Promise<{ balance: bigint; held: bigint }> {
    const [r] = await rows<{ balance: unknown; held: unknown }>(
      db,
      'select cast(balance as text) as balance, cast(held as text) as held from wallets where account_id = ?',
      [accountId],
    );
    return { balance: big(r?.balance ?? 0), held: big(r?.held ?? 0) };
  }

  /** The balances of `accountIds` in one query; accounts without a wallet row are left out. */
  async balances(db: Db, accountIds: readonly string[]): Promise<Map<string, { balance: bigint; held: bigint }>> {
    const out = new Map<string, { balance: bigint; held: bigint }>();
    if (accountIds.length === 0) return out;
    const { ids, list } = inList(accountIds);
    const found = await rows<{ account_id: string; balance: unknown; held: unknown }>(
      db,
      `select account_id, cast(balance as text) as balance, cast(held as text) as held from wallets where account_id in ${list}`,
      ids,
    );
    for (const r of found) out.set(r.account_id, { balance: big(r.balance), held: big(r.held) });
    return out;
  }

  async readMany(db: Db, accountIds: readonly string[]): Promise<Map<string, WalletRow>> {
    const out = new Map<string, WalletRow>();
    if (accountIds.length === 0) return out;
    const { ids, list } = inList(accountIds);
    const found = await rows<Record<string, unknown>>(
      db,
      `select w.account_id, ${WALLET_COLUMNS}, a.tier from wallets w join accounts a on a.id = w.account_id where w.account_id in ${list}`,
      ids,
    );
    for (const r of found) out.set(String(r.account_id), withTier(r));
    return out;
  }

  async allocation(db: Db, accountId: string): Promise<AllocationRow | null> {
    const [r] = await rows<AllocationColumns>(
      db,
      `select ${ALLOCATION_COLUMNS} from accounts a left join wallets w on w.account_id = a.id where a.id = ?`,
      [accountId],
    );
    return r ? allocationRow(r) : null;
  }

  async allocations(db: Db, accountIds: readonly string[]): Promise<Map<string, AllocationRow>> {
    const out = new Map<string, AllocationRow>();
    if (accountIds.length === 0) return out;
    const { ids, list } = inList(accountIds);
    const found = await rows<AllocationColumns & { id: string }>(
      db,
      `select ${ALLOCATION_COLUMNS} from accounts a left join wallets w on w.account_id = a.id where a.id in ${list}`,
      ids,
    );
    for (const r of found) out.set(r.id, allocationRow(r));
    return out;
  }

  async feesDue(db: Db, tiers: readonly string[], period: string): Promise<string[]> {
    if (tiers.length === 0) return [];
    const due = await rows<{ id: string }>(
      db,
      // Accounts with a wallet only: one that never had a billing action (created on a paying tier,
      // its first top-up still to come) pays at its first one, not when the sweeper passes.
      `select a.id from accounts a join wallets w on w.account_id = a.id
        where a.tier in (${tiers.map(() => '?').join(', ')}) and (w.fee_period is null or w.fee_period <> ? or w.fee_tier <> a.tier)`,
      [...tiers, period],
    );
    return due.map((d) => d.id);
  }
}

/**
 * SQLite: one writer at a time (BEGIN IMMEDIATE), so no row locks and no optimistic path; a
 * settlement is a short transaction of plain statements, which shares its commit with the others
 * of the same event-loop turn (./sql.ts).
 */
export class SqliteWalletStore extends WalletStoreBase {
  readonly kind = 'sqlite' as const;
  readonly optimistic = false;

  lock(db: Db, accountId: string): Promise<WalletRow | null> {
    return this.selectLocked(db, accountId, '');
  }

  async placeHoldsIfUnchanged(): Promise<boolean> {
    return false;
  }

  settle(given: Settling): Promise<Settled | null> {
    return this.db.transaction(async (trx) => {
      // In the transaction: its write lock is held, so nothing but the commit comes after.
      const s = asDelivered(given);
      const row = await this.consumeHold(trx, holdOf(s.call), s, s.now);
      if (!row) return null;
      const transaction =
        s.charge > 0n
          ? await appendTransaction(trx, {
              accountId: s.call.accountId,
              type: 'usage',
              amount: -s.charge,
              balanceAfter: row.balance,
              description: s.description,
              reference: s.call.requestId,
              idempotencyKey: `usage:${s.call.id}`,
              createdAt: s.now,
            })
          : null;
      await exec(trx, USAGE_EVENT_INSERT, usageEventRow(s, s.allocationUsed, s.charge, s.note));
      return { row, transaction };
    }, HOT_PATH);
  }
}

export const holdOf = (call: HeldCall): HoldRef => ({
  id: call.id,
  accountId: call.accountId,
  period: call.period,
  allocationTokens: call.allocationTokens,
  walletNanos: call.walletNanos,
});
