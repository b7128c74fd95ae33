// Usage billing: the Metering that InferenceService calls around every engine call (a hold placed
// before, settled after), the wallet (credits, subscription fees, tiers), account settings
// (spending limit, low-balance alert), the usage report, and the sweeper that releases holds left
// by calls that never settled. The written policy is docs/billing.md.
//
// Every write to an account's billing state runs in one database transaction that first locks the
// account's wallet row (SELECT … FOR UPDATE on PostgreSQL; BEGIN IMMEDIATE on SQLite), so checks
// and charges cannot interleave; the hot path is a handful of plain SQL statements, no ORM flush.
// Wallet changes are published (Subscription.walletUpdated) only after their transaction commits.
import { hostname } from 'node:os';
import type { MikroORM } from '@mikro-orm/core';
import type { ModelConfig } from '../catalog/model.js';
import type { Tier as TierName, TierPolicy } from '../accounts/tiers.js';
import type { BillingSettings } from './settings.js';
import type { Logger } from '../../logger.js';
import { isTier, type Tier } from '../accounts/accounts-service.js';
import { DomainError } from '../errors.js';
import type { CallOutcome, MeterRequest, MeterTicket, Metering } from '../inference/inference-service.js';
import type { Usage } from '../inference/engine.js';
import { newId } from '../ids.js';
import { appendTransaction, findByIdempotencyKey, listTransactions, verifyLedger, type TransactionPage, type TransactionQuery, type TransactionView } from '../ledger/ledger.js';
import { enqueueNotification, listNotifications, type NotificationView } from '../notifications/outbox.js';
import { planHold, pricesOf, split } from './hold-plan.js';
import { formatDecimal, MAX_NANOS, parseDecimal, WALLET_CURRENCY, type Prices } from './money.js';
import { dayOf, isDay, periodBounds, periodDays, periodOf } from './period.js';
import { big, bigOrNull, billingDatabase, bool, date, exec, int, rows, run, type BillingDatabase, type Binding, type Db, type Queryable } from './sql.js';
import { WalletEvents, type WalletChange } from './wallet-events.js';

/** How a usage event ended: a call's outcome, or 'abandoned' when its hold was released unsettled. */
export type UsageOutcome = CallOutcome | 'abandoned';

export type SpendingLimitAction = 'block' | 'alert';
export const SPENDING_LIMIT_ACTIONS: readonly SpendingLimitAction[] = ['block', 'alert'];
export type CreditType = 'topup' | 'bonus' | 'refund';

export interface WalletView {
  accountId: string;
  balance: bigint;
  /** Promised to calls in flight; not spendable until they settle. */
  held: bigint;
  currency: string;
}

export interface AllocationView {
  period: string;
  periodStart: Date;
  periodEnd: Date;
  tier: Tier;
  /** null: unlimited. */
  monthlyTokens: number | null;
  used: number;
  held: number;
  /** null: unlimited. Tokens held by calls in flight are neither used nor remaining. */
  remaining: number | null;
}

export interface SettingsView {
  /** Whose settings (other modules add their own settings beside these, e.g. automatic top-up). */
  accountId: string;
  spendingLimit: { enabled: boolean; monthlyLimit: bigint | null; action: SpendingLimitAction };
  lowBalanceAlert: bigint | null;
  /** Wallet money charged for usage this period: what the spending limit compares. */
  monthlySpend: bigint;
}

export interface UsageDay {
  date: string;
  model: string;
  requests: number;
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
  /** Wallet money charged for these calls (allocation tokens cost nothing here). */
  cost: bigint;
}

export interface UsageReport {
  start: string;
  end: string;
  allocation: AllocationView;
  data: UsageDay[];
}

export interface UsageEventView {
  id: string;
  accountId: string;
  keyId: string | null;
  model: string;
  requestId: string;
  outcome: UsageOutcome;
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
  allocationTokens: number;
  walletNanos: bigint;
  billingNote: string | null;
  createdAt: Date;
}

/** The wallet row of an account, as locked at the start of a billing transaction. */
interface WalletRow {
  tier: Tier;
  balance: bigint;
  held: bigint;
  period: string;
  periodUsed: number;
  periodHeld: number;
  periodSpent: bigint;
  feePeriod: string | null;
  feeTier: string | null;
  spendingLimitEnabled: boolean;
  spendingLimit: bigint | null;
  spendingLimitAction: SpendingLimitAction;
  lowBalanceThreshold: bigint | null;
  lowBalanceAlerted: boolean;
  allocationAlertPeriod: string | null;
  /** The period whose "monthly tokens used up" alert was written. */
  allocationFullPeriod: string | null;
  spendingAlertPeriod: string | null;
}

const WALLET_COLUMNS =
  'cast(w.balance as text) as balance, cast(w.held as text) as held, w.period, w.period_used, w.period_held, cast(w.period_spent as text) as period_spent, ' +
  'w.fee_period, w.fee_tier, w.spending_limit_enabled, cast(w.spending_limit as text) as spending_limit, w.spending_limit_action, ' +
  'cast(w.low_balance_threshold as text) as low_balance_threshold, w.low_balance_alerted, w.allocation_alert_period, w.allocation_full_period, w.spending_alert_period';

function walletRow(r: Record<string, unknown>, tier: Tier): WalletRow {
  return {
    tier,
    balance: big(r.balance),
    held: big(r.held),
    period: String(r.period),
    periodUsed: int(r.period_used),
    periodHeld: int(r.period_held),
    periodSpent: big(r.period_spent),
    feePeriod: (r.fee_period as string | null) ?? null,
    feeTier: (r.fee_tier as string | null) ?? null,
    spendingLimitEnabled: bool(r.spending_limit_enabled),
    spendingLimit: bigOrNull(r.spending_limit),
    spendingLimitAction: r.spending_limit_action === 'alert' ? 'alert' : 'block',
    lowBalanceThreshold: bigOrNull(r.low_balance_threshold),
    lowBalanceAlerted: bool(r.low_balance_alerted),
    allocationAlertPeriod: (r.allocation_alert_period as string | null) ?? null,
    allocationFullPeriod: (r.allocation_full_period as string | null) ?? null,
    spendingAlertPeriod: (r.spending_alert_period as string | null) ?? null,
  };
}

interface CallBase {
  id: string;
  accountId: string;
  keyId: string | null;
  requestId: string;
  model: string;
  prices: Prices;
}

/** What a ticket carries from admission to settlement. */
interface HeldCall extends CallBase {
  /** 'held': a hold row exists; 'unlimited': the tier is not billed; 'free': the model costs nothing. */
  kind: 'held' | 'unlimited' | 'free';
  period: string;
  allocationTokens: number;
  walletNanos: bigint;
  monthlyTokens: number | null;
}

const USAGE_EVENT_COLUMNS =
  'id, account_id, key_id, model, request_id, outcome, prompt_tokens, completion_tokens, total_tokens, allocation_tokens, wallet_nanos, billing_note, day, created_at';
const USAGE_EVENT_INSERT = `insert into usage_events (${USAGE_EVENT_COLUMNS}) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`;
const HOLD_COLUMNS = 'id, account_id, key_id, request_id, model, period, allocation_tokens, wallet_nanos, prompt_tokens, max_output_tokens, owner, created_at, expires_at';
/** Optimistic admissions before the locked path takes over (PostgreSQL). */
const OPTIMISTIC_ATTEMPTS = 4;

const MAX_USAGE_REPORT_DAYS = 366;
const SETTLE_ATTEMPTS = 3;

export interface BillingOptions {
  orm: MikroORM;
  tiers: Record<TierName, TierPolicy>;
  settings: BillingSettings;
  logger: Logger;
  events?: WalletEvents;
  /** The clock (tests move it across period boundaries). */
  now?: () => Date;
}

export class BillingService implements Metering {
  readonly events: WalletEvents;
  /** This process's identity in billing_instances; its holds carry it as their owner. */
  readonly instanceId = newId('inst');
  /** The database runner; payments run their crediting transactions on it (creditWithin). */
  readonly db: BillingDatabase;
  private readonly tiers: Record<TierName, TierPolicy>;
  private readonly fees: Record<TierName, bigint>;
  private readonly settings: BillingSettings;
  private readonly logger: Logger;
  private readonly now: () => Date;
  private readonly prices = new Map<string, Prices>();
  private sweeper: NodeJS.Timeout | undefined;
  private sweeping: Promise<void> | undefined;
  private readonly host = hostname();

  constructor(opts: BillingOptions) {
    this.db = billingDatabase(opts.orm);
    this.tiers = opts.tiers;
    this.fees = Object.fromEntries(Object.entries(opts.tiers).map(([name, t]) => [name, parseDecimal(t.monthly_fee)])) as Record<TierName, bigint>;
    this.settings = opts.settings;
    this.logger = opts.logger;
    this.events = opts.events ?? new WalletEvents();
    this.now = opts.now ?? (() => new Date());
  }

  // ---------------------------------------------------------------------------------------------
  // Life cycle: register, release what dead servers left, sweep on an interval.

  /** Registers this server, releases holds of dead servers and expired holds, starts the sweeper. */
  async start(): Promise<void> {
    const now = this.now();
    await exec(this.db, 'insert into billing_instances (id, host, pid, started_at, heartbeat_at) values (?, ?, ?, ?, ?)', [
      this.instanceId,
      this.host,
      process.pid,
      now,
      now,
    ]);
    const released = await this.releaseStaleHolds();
    if (released > 0) this.logger.info({ released }, 'released holds left open by stopped servers or past their expiry');
    await this.chargeDueFees();
    this.sweeper = setInterval(() => void this.sweep(), this.settings.sweep_interval_seconds * 1000);
    // The sweeper never keeps the process alive on its own.
    this.sweeper.unref();
  }

  /** Stops the sweeper and unregisters; call after in-flight calls have settled. */
  async stop(): Promise<void> {
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = undefined;
    await this.sweeping;
    await exec(this.db, 'delete from billing_instances where id = ?', [this.instanceId]).catch(() => {});
  }

  /** One sweeper round: heartbeat, release stale holds, charge fees due at a period start. */
  sweep(): Promise<void> {
    this.sweeping ??= (async () => {
      try {
        const now = this.now();
        const beat = await run(this.db, 'update billing_instances set heartbeat_at = ? where id = ?', [now, this.instanceId]);
        if (beat === 0) {
          // Taken for dead by another server (a long pause): come back; our holds were released.
          await exec(this.db, 'insert into billing_instances (id, host, pid, started_at, heartbeat_at) values (?, ?, ?, ?, ?)', [this.instanceId, this.host, process.pid, now, now]);
        }
        await this.releaseStaleHolds();
        await this.chargeDueFees();
      } catch (err) {
        this.logger.error({ err }, 'billing sweep failed');
      } finally {
        this.sweeping = undefined;
      }
    })();
    return this.sweeping;
  }

  /**
   * Releases, charging nothing, the holds past their expiry and those of servers that are gone:
   * a heartbeat older than instance_timeout_seconds, or on this host a process that no longer
   * runs (or whose pid is now ours: our own previous life, restarted). Returns how many.
   */
  async releaseStaleHolds(): Promise<number> {
    const now = this.now();
    const instances = await rows<{ id: string; host: string; pid: unknown; heartbeat_at: unknown }>(this.db, 'select id, host, pid, heartbeat_at from billing_instances');
    const staleBefore = now.getTime() - this.settings.instance_timeout_seconds * 1000;
    const dead = instances.filter(
      (i) => i.id !== this.instanceId && (date(i.heartbeat_at).getTime() < staleBefore || (i.host === this.host && (int(i.pid) === process.pid || !processRuns(int(i.pid))))),
    );
    const live = instances.filter((i) => !dead.includes(i)).map((i) => i.id);
    if (!live.includes(this.instanceId)) live.push(this.instanceId);
    let released = 0;
    for (;;) {
      const stale = await rows<{ id: string; account_id: string; key_id: string | null; request_id: string; model: string; period: string; allocation_tokens: unknown; wallet_nanos: unknown }>(
        this.db,
        `select id, account_id, key_id, request_id, model, period, cast(allocation_tokens as text) as allocation_tokens, cast(wallet_nanos as text) as wallet_nanos
           from holds where expires_at < ? or owner not in (${live.map(() => '?').join(', ')}) limit 500`,
        [now, ...live],
      );
      for (const h of stale) {
        if (await this.releaseHold(h, now)) released++;
      }
      if (stale.length < 500) break;
    }
    if (dead.length > 0) {
      await exec(this.db, `delete from billing_instances where id in (${dead.map(() => '?').join(', ')})`, dead.map((d) => d.id));
    }
    return released;
  }

  private async releaseHold(
    h: { id: string; account_id: string; key_id: string | null; request_id: string; model: string; period: string; allocation_tokens: unknown; wallet_nanos: unknown },
    now: Date,
  ): Promise<boolean> {
    return this.db.transaction(async (trx) => {
      // The hold row first, then the wallet row: the order settlement takes them in.
      if ((await run(trx, 'delete from holds where id = ?', [h.id])) === 0) return false; // settled meanwhile
      await exec(trx, 
        'update wallets set held = held - ?, period_held = case when period = ? then period_held - ? else period_held end, updated_at = ? where account_id = ?',
        [big(h.wallet_nanos), h.period, big(h.allocation_tokens), now, h.account_id],
      );
      await exec(trx, USAGE_EVENT_INSERT, [h.id, h.account_id, h.key_id, h.model, h.request_id, 'abandoned', 0, 0, 0, 0, 0n, 'hold_released', dayOf(now), now]);
      return true;
    });
  }

  // ---------------------------------------------------------------------------------------------
  // Metering: admission before the engine, settlement after.

  async admit(req: MeterRequest): Promise<MeterTicket> {
    const { caller, model } = req;
    const prices = this.pricesOf(model);
    const base: CallBase = {
      id: newId('call'),
      accountId: caller.accountId,
      keyId: caller.keyId ?? null,
      requestId: caller.requestId,
      model: model.id,
      prices,
    };
    if (prices.inputPerMillion === 0n && prices.outputPerMillion === 0n) {
      // A free model (moderation, by default) holds nothing and draws on no allocation.
      const call: HeldCall = { ...base, kind: 'free', period: periodOf(this.now()), allocationTokens: 0, walletNanos: 0n, monthlyTokens: null };
      return this.ticket(call, req.requestedOutputTokens ?? req.maxOutputTokens);
    }
    if (this.db.kind === 'postgresql') {
      const placed = await this.admitOptimistically(req, base);
      if (placed) return placed;
    }
    return this.admitLocked(req, base);
  }

  /** The hold plan for a call against a wallet row, under the tier's policy. */
  private plan(req: MeterRequest, w: WalletRow, policy: TierPolicy & { monthly_tokens: number }, prices: Prices) {
    return planHold({
      promptTokens: req.promptTokens,
      requestedOutputTokens: req.requestedOutputTokens,
      maxOutputTokens: req.maxOutputTokens,
      chat: req.model.category === 'chat',
      prices,
      tier: w.tier,
      monthlyTokens: policy.monthly_tokens,
      allocationLeft: policy.monthly_tokens - w.periodUsed - w.periodHeld,
      overage: policy.overage,
      walletAvailable: w.balance - w.held,
      spendingLimit:
        w.spendingLimitEnabled && w.spendingLimitAction === 'block' && w.spendingLimit !== null ? { limit: w.spendingLimit, spent: w.periodSpent, held: w.held } : null,
      resetsAt: periodBounds(w.period).next,
    });
  }

  private holdRow(call: HeldCall, req: MeterRequest, outputTokens: number, now: Date): Binding[] {
    const expiresAt = new Date(now.getTime() + this.settings.hold_expiry_seconds * 1000);
    return [call.id, call.accountId, call.keyId, call.requestId, call.model, call.period, call.allocationTokens, call.walletNanos, req.promptTokens, outputTokens, this.instanceId, now, expiresAt];
  }

  /**
   * Admission in one transaction holding the wallet row's lock: read, decide, hold. Creates the
   * wallet and rolls the period (charging its fee) on the way. The path on SQLite, where the
   * transaction runs synchronously and shares its commit with the others of the same tick.
   */
  private async admitLocked(req: MeterRequest, base: CallBase): Promise<MeterTicket> {
    const now = this.now();
    const effects: WalletChange[] = [];
    const { call, outputTokens } = await this.db.transaction(async (trx) => {
      const w = await this.openWallet(trx, base.accountId, now, effects);
      const policy = this.tiers[w.tier];
      if (policy.monthly_tokens === null) {
        // Unlimited: nothing is held; usage is recorded at settlement.
        const unlimited: HeldCall = { ...base, kind: 'unlimited', period: w.period, allocationTokens: 0, walletNanos: 0n, monthlyTokens: null };
        return { call: unlimited, outputTokens: req.requestedOutputTokens ?? req.maxOutputTokens };
      }
      const plan = this.plan(req, w, { ...policy, monthly_tokens: policy.monthly_tokens }, base.prices);
      if (!plan.ok) throw new DomainError(plan.code, plan.message);
      const call: HeldCall = { ...base, kind: 'held', period: w.period, allocationTokens: plan.allocationTokens, walletNanos: plan.walletNanos, monthlyTokens: policy.monthly_tokens };
      // The row is locked: the conditions cannot fail; they stay as the last line of defence.
      const placed = await run(
        trx,
        'update wallets set held = held + ?, period_held = period_held + ?, updated_at = ? ' +
          'where account_id = ? and period = ? and balance - held >= ? and period_used + period_held + ? <= ?',
        [plan.walletNanos, plan.allocationTokens, now, base.accountId, w.period, plan.walletNanos, plan.allocationTokens, policy.monthly_tokens],
      );
      if (placed !== 1) throw new Error(`hold for ${base.accountId} did not fit its locked wallet row`);
      await exec(trx, `insert into holds (${HOLD_COLUMNS}) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, this.holdRow(call, req, plan.outputTokens, now));
      return { call, outputTokens: plan.outputTokens };
    });
    this.publish(effects);
    return this.ticket(call, outputTokens);
  }

  /**
   * Admission on PostgreSQL in two statements and no held lock: read the wallet row, decide, then
   * place the hold with one conditional update (compare-and-set on what the decision relied on:
   * the period, the money available, the allocation left, the spending-limit room) that inserts
   * the hold row in the same statement. When another call changed those values in between, the
   * update matches nothing and admission starts over; after a few tries, or when the wallet must
   * be created or rolled into a new period, it takes the locked path. Returns null for it.
   */
  private async admitOptimistically(req: MeterRequest, base: CallBase): Promise<MeterTicket | null> {
    for (let attempt = 0; attempt < OPTIMISTIC_ATTEMPTS; attempt++) {
      const now = this.now();
      const found = await rows<Record<string, unknown>>(this.db, `select ${WALLET_COLUMNS}, a.tier from wallets w join accounts a on a.id = w.account_id where w.account_id = ?`, [
        base.accountId,
      ]);
      const r = found[0];
      if (!r) return null;
      const w = walletRow(r, isTier(r.tier) ? r.tier : 'free');
      if (w.period !== periodOf(now) || this.feeDue(w)) return null;
      const policy = this.tiers[w.tier];
      if (policy.monthly_tokens === null) {
        const unlimited: HeldCall = { ...base, kind: 'unlimited', period: w.period, allocationTokens: 0, walletNanos: 0n, monthlyTokens: null };
        return this.ticket(unlimited, req.requestedOutputTokens ?? req.maxOutputTokens);
      }
      const plan = this.plan(req, w, { ...policy, monthly_tokens: policy.monthly_tokens }, base.prices);
      if (!plan.ok) throw new DomainError(plan.code, plan.message);
      const call: HeldCall = { ...base, kind: 'held', period: w.period, allocationTokens: plan.allocationTokens, walletNanos: plan.walletNanos, monthlyTokens: policy.monthly_tokens };
      // Allocation first: when the allocation could not cover the whole call, the hold is only
      // right if the allocation left is still exactly what the plan split the call with.
      const allocationLeft = policy.monthly_tokens - w.periodUsed - w.periodHeld;
      const coversAll = plan.allocationTokens === req.promptTokens + plan.outputTokens;
      const limitCheck = plan.walletNanos > 0n ? " and (not (spending_limit_enabled and spending_limit_action = 'block' and spending_limit is not null) or spending_limit - period_spent - held >= ?)" : '';
      const placed = await run(
        this.db,
        'with w as (update wallets set held = held + ?, period_held = period_held + ?, updated_at = ? ' +
          `where account_id = ? and period = ? and balance - held >= ? and ? - period_used - period_held ${coversAll ? '>=' : '='} ?${limitCheck} returning account_id) ` +
          `insert into holds (${HOLD_COLUMNS}) select ?, w.account_id, ?, ?, ?, ?, ?::bigint, ?::bigint, ?::int, ?::int, ?, ?::timestamptz, ?::timestamptz from w`,
        [
          plan.walletNanos,
          plan.allocationTokens,
          now,
          base.accountId,
          w.period,
          plan.walletNanos,
          policy.monthly_tokens,
          coversAll ? plan.allocationTokens : allocationLeft,
          ...(plan.walletNanos > 0n ? [plan.walletNanos] : []),
          ...this.holdRow(call, req, plan.outputTokens, now).filter((_, i) => i !== 1),
        ],
      );
      if (placed === 1) return this.ticket(call, plan.outputTokens);
    }
    return null;
  }

  private ticket(call: HeldCall, maxOutputTokens: number): MeterTicket {
    let settled = false;
    return {
      maxOutputTokens,
      settle: async (usage, outcome) => {
        if (settled) return;
        settled = true;
        await this.settle(call, usage, outcome);
      },
    };
  }

  /**
   * Charges the real usage (allocation first: prompt, then completion tokens; the rest from the
   * wallet at the matching prices, never more than was held), releases the rest of the hold and
   * records the usage event, in one transaction. A failure is retried, then logged: the hold
   * stays until the sweeper releases it, and the call is charged nothing.
   */
  private async settle(call: HeldCall, usage: Usage, outcome: CallOutcome): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await this.settleOnce(call, usage, outcome);
        return;
      } catch (err) {
        if (attempt >= SETTLE_ATTEMPTS) {
          this.logger.error({ err, reqId: call.requestId, hold: call.id, account: call.accountId }, 'settlement failed; the hold is released unbilled by the sweeper');
          return;
        }
        await new Promise((r) => setTimeout(r, 20 * attempt));
      }
    }
  }

  private async settleOnce(call: HeldCall, usage: Usage, outcome: CallOutcome): Promise<void> {
    const now = this.now();
    const promptTokens = Math.max(0, usage.promptTokens);
    const completionTokens = Math.max(0, usage.completionTokens);
    const totalTokens = promptTokens + completionTokens;
    const event = (allocationTokens: number, walletNanos: bigint, note: string | null): Binding[] => [
      call.id,
      call.accountId,
      call.keyId,
      call.model,
      call.requestId,
      outcome,
      promptTokens,
      completionTokens,
      totalTokens,
      allocationTokens,
      walletNanos,
      note,
      dayOf(now),
      now,
    ];

    if (call.kind === 'free') {
      await exec(this.db, USAGE_EVENT_INSERT, event(0, 0n, null));
      return;
    }
    if (call.kind === 'unlimited') {
      const count = 'update wallets set period_used = case when period = ? then period_used + ? else period_used end, updated_at = ? where account_id = ?';
      const countBindings: Binding[] = [call.period, totalTokens, now, call.accountId];
      if (this.db.kind === 'postgresql') {
        await exec(this.db, `with u as (${count}) ${USAGE_EVENT_INSERT}`, [...countBindings, ...event(0, 0n, null)]);
        return;
      }
      await this.db.transaction(async (trx) => {
        await exec(trx, count, countBindings);
        await exec(trx, USAGE_EVENT_INSERT, event(0, 0n, null));
      });
      return;
    }

    const { allocationUsed, walletNanos: cost } = split(promptTokens, completionTokens, call.allocationTokens, call.prices);
    const charge = cost < call.walletNanos ? cost : call.walletNanos;
    const note = cost > call.walletNanos ? 'capped_at_hold' : null;
    const description = `${call.model}: ${promptTokens} prompt + ${completionTokens} completion tokens${allocationUsed > 0 ? ` (${allocationUsed} from the monthly allocation)` : ''}`;
    const effects: WalletChange[] = [];
    const walletUpdate: [string, Binding[]] = [
      'update wallets set held = held - ?, balance = balance - ?, ' +
        'period_held = case when period = ? then period_held - ? else period_held end, ' +
        'period_used = case when period = ? then period_used + ? else period_used end, ' +
        'period_spent = period_spent + ?, updated_at = ? where account_id = ?',
      [call.walletNanos, charge, call.period, call.allocationTokens, call.period, allocationUsed, charge, now, call.accountId],
    ];
    const recordReleased = async (trx: Db) => {
      // The sweeper released the hold (expired, or this server was taken for dead) and wrote an
      // 'abandoned' event: the call is charged nothing; the event gets its real usage.
      const updated = await run(
        trx,
        "update usage_events set outcome = ?, prompt_tokens = ?, completion_tokens = ?, total_tokens = ?, billing_note = 'hold_released' where id = ?",
        [outcome, promptTokens, completionTokens, totalTokens, call.id],
      );
      if (updated === 0) await exec(trx, USAGE_EVENT_INSERT, event(0, 0n, 'hold_released'));
    };

    if (this.db.kind === 'postgresql') {
      // One statement, one round trip: delete the hold, move the wallet, append the ledger row
      // and the usage event, atomically; the wallet row is locked only while it runs.
      const transactionId = newId('txn');
      const [after] = await rows<Record<string, unknown>>(
        this.db,
        'with d as (delete from holds where id = ? returning id), ' +
          `w as (${walletUpdate[0]} and exists (select 1 from d) returning *), ` +
          't as (insert into wallet_transactions (id, account_id, type, amount, balance_after, description, reference, idempotency_key, created_at) ' +
          "select ?, w.account_id, 'usage', ?::bigint, w.balance, ?, ?, ?, ?::timestamptz from w where ?::bigint > 0), " +
          `e as (insert into usage_events (${USAGE_EVENT_COLUMNS}) select ?, w.account_id, ?, ?, ?, ?, ?::bigint, ?::bigint, ?::bigint, ?::bigint, ?::bigint, ?, ?, ?::timestamptz from w) ` +
          `select ${WALLET_COLUMNS} from w`,
        [
          call.id,
          ...walletUpdate[1],
          transactionId,
          -charge,
          description,
          call.requestId,
          `usage:${call.id}`,
          now,
          charge,
          ...event(allocationUsed, charge, note).filter((_, i) => i !== 1),
        ],
      );
      if (!after) {
        await this.db.transaction(recordReleased);
        return;
      }
      const row = walletRow(after, 'free');
      const monthly = row.period === call.period ? call.monthlyTokens : null;
      if (this.alertDue(row, monthly)) await this.db.transaction((trx) => this.raiseAlerts(trx, call.accountId, row, monthly, now, call.id));
      if (charge > 0n) {
        this.publish([
          {
            accountId: call.accountId,
            balance: row.balance,
            transaction: { id: transactionId, accountId: call.accountId, type: 'usage', amount: -charge, balanceAfter: row.balance, description, reference: call.requestId, createdAt: now },
          },
        ]);
      }
      return;
    }

    await this.db.transaction(async (trx) => {
      // Deleting the hold is what makes settlement happen once: of a settlement and the sweeper
      // releasing the same hold, only one deletes it. (Lock order: hold row, then wallet row;
      // admission locks the wallet row and only inserts new holds, so no cycle can form.)
      if ((await run(trx, 'delete from holds where id = ?', [call.id])) === 0) return recordReleased(trx);
      const [after] = await rows<Record<string, unknown>>(trx, `${walletUpdate[0]} returning ${WALLET_COLUMNS.replaceAll('w.', '')}`, walletUpdate[1]);
      const row = walletRow(after!, 'free');
      if (charge > 0n) {
        const transaction = await appendTransaction(trx, {
          accountId: call.accountId,
          type: 'usage',
          amount: -charge,
          balanceAfter: row.balance,
          description,
          reference: call.requestId,
          idempotencyKey: `usage:${call.id}`,
          createdAt: now,
        });
        effects.push({ accountId: call.accountId, balance: row.balance, transaction });
      }
      await exec(trx, USAGE_EVENT_INSERT, event(allocationUsed, charge, note));
      await this.raiseAlerts(trx, call.accountId, row, row.period === call.period ? call.monthlyTokens : null, now, call.id);
    });
    this.publish(effects);
  }

  /** The alerts a change left due: past their line and not yet written for this crossing or period. */
  private dueAlerts(w: WalletRow, monthlyTokens: number | null): { lowBalance: boolean; allocation: boolean; allocationFull: boolean; spending: boolean } {
    return {
      lowBalance: w.lowBalanceThreshold !== null && w.balance < w.lowBalanceThreshold && !w.lowBalanceAlerted,
      allocation: monthlyTokens !== null && monthlyTokens > 0 && w.periodUsed * 5 >= monthlyTokens * 4 && w.allocationAlertPeriod !== w.period,
      allocationFull: monthlyTokens !== null && monthlyTokens > 0 && w.periodUsed >= monthlyTokens && w.allocationFullPeriod !== w.period,
      spending: w.spendingLimitEnabled && w.spendingLimit !== null && w.periodSpent > 0n && w.periodSpent >= w.spendingLimit && w.spendingAlertPeriod !== w.period,
    };
  }

  /** Whether a change left the wallet past an alert's line (see raiseAlerts). */
  private alertDue(w: WalletRow, monthlyTokens: number | null): boolean {
    const due = this.dueAlerts(w, monthlyTokens);
    return due.lowBalance || due.allocation || due.allocationFull || due.spending;
  }

  /** Marks a once-per-period alert as written for `period`; false when another change did first. */
  private async claimPeriodAlert(trx: Db, column: 'allocation_alert_period' | 'allocation_full_period' | 'spending_alert_period', accountId: string, period: string): Promise<boolean> {
    const flipped = await run(trx, `update wallets set ${column} = ? where account_id = ? and (${column} is null or ${column} <> ?)`, [period, accountId, period]);
    return flipped > 0;
  }

  /**
   * Writes the alerts a change crossed, once per crossing (low balance) or per period (80% of the
   * allocation, spending limit). Each alert first flips its flag with a conditional update, so of
   * two changes racing past the same line only one writes the notification.
   */
  private async raiseAlerts(trx: Db, accountId: string, w: WalletRow, monthlyTokens: number | null, now: Date, occasion: string): Promise<void> {
    const due = this.dueAlerts(w, monthlyTokens);
    if (due.lowBalance) {
      const flipped = await run(trx, 'update wallets set low_balance_alerted = ? where account_id = ? and low_balance_alerted = ?', [true, accountId, false]);
      if (flipped > 0) {
        await enqueueNotification(trx, {
          accountId,
          kind: 'low_balance',
          dedupeKey: `low_balance:${accountId}:${occasion}`,
          payload: { balance: formatDecimal(w.balance), threshold: formatDecimal(w.lowBalanceThreshold!), currency: WALLET_CURRENCY },
          now,
        });
      }
    }
    if (due.allocation && (await this.claimPeriodAlert(trx, 'allocation_alert_period', accountId, w.period))) {
      await enqueueNotification(trx, {
        accountId,
        kind: 'allocation_80',
        dedupeKey: `allocation_80:${accountId}:${w.period}`,
        payload: { period: w.period, used: w.periodUsed, monthly_tokens: monthlyTokens },
        now,
      });
    }
    if (due.allocationFull && (await this.claimPeriodAlert(trx, 'allocation_full_period', accountId, w.period))) {
      await enqueueNotification(trx, {
        accountId,
        kind: 'allocation_100',
        dedupeKey: `allocation_100:${accountId}:${w.period}`,
        payload: { period: w.period, used: w.periodUsed, monthly_tokens: monthlyTokens },
        now,
      });
    }
    if (due.spending && (await this.claimPeriodAlert(trx, 'spending_alert_period', accountId, w.period))) {
      await enqueueNotification(trx, {
        accountId,
        kind: 'spending_limit',
        dedupeKey: `spending_limit:${accountId}:${w.period}:${w.spendingLimit}`,
        payload: { period: w.period, spent: formatDecimal(w.periodSpent), limit: formatDecimal(w.spendingLimit!), action: w.spendingLimitAction, currency: WALLET_CURRENCY },
        now,
      });
    }
  }

  // ---------------------------------------------------------------------------------------------
  // The wallet row: lock, create, roll over to a new period (and charge its fee).

  private async lockWalletRow(trx: Db, accountId: string): Promise<WalletRow | null> {
    const found = await rows<Record<string, unknown>>(
      trx,
      `select ${WALLET_COLUMNS}, a.tier from wallets w join accounts a on a.id = w.account_id where w.account_id = ?${this.db.kind === 'postgresql' ? ' for update of w' : ''}`,
      [accountId],
    );
    const r = found[0];
    if (!r) return null;
    return walletRow(r, isTier(r.tier) ? r.tier : 'free');
  }

  /**
   * Locks the account's wallet row, creating it on first use, and brings it to the current
   * period: counters reset, and the tier's fee charged (or the account moved to free when the
   * wallet cannot pay it). Must run inside a transaction.
   */
  private async openWallet(trx: Db, accountId: string, now: Date, effects: WalletChange[]): Promise<WalletRow> {
    let w = await this.lockWalletRow(trx, accountId);
    if (!w) {
      const account = await rows<{ id: string }>(trx, 'select id from accounts where id = ?', [accountId]);
      if (!account[0]) throw new DomainError('not_found', `No account with id '${accountId}'.`, { param: 'account_id' });
      await exec(trx, 'insert into wallets (account_id, period, created_at, updated_at) values (?, ?, ?, ?) on conflict (account_id) do nothing', [
        accountId,
        periodOf(now),
        now,
        now,
      ]);
      w = await this.lockWalletRow(trx, accountId);
      if (!w) throw new Error(`wallet of ${accountId} vanished`);
    }
    const period = periodOf(now);
    if (w.period !== period) {
      await exec(trx, 'update wallets set period = ?, period_used = 0, period_held = 0, period_spent = 0, updated_at = ? where account_id = ?', [period, now, accountId]);
      w = { ...w, period, periodUsed: 0, periodHeld: 0, periodSpent: 0n };
    }
    if (this.feeDue(w)) w = await this.chargeFee(trx, accountId, w, w.tier, now, effects, 'period');
    return w;
  }

  private feeDue(w: WalletRow): boolean {
    return this.fees[w.tier] > 0n && !(w.feePeriod === w.period && w.feeTier === w.tier);
  }

  /**
   * Charges `tier`'s fee for the wallet's period as a `subscription` transaction (at most once per
   * tier and period). When the wallet cannot pay: at a period start the account falls back to
   * free and is notified; when the tier is being taken, the change is refused.
   */
  private async chargeFee(trx: Db, accountId: string, w: WalletRow, tier: Tier, now: Date, effects: WalletChange[], when: 'period' | 'taken'): Promise<WalletRow> {
    const fee = this.fees[tier];
    const key = `subscription:${accountId}:${w.period}:${tier}`;
    if (await findByIdempotencyKey(trx, key)) {
      // Paid already this period (the account left the tier and came back).
      await exec(trx, 'update wallets set fee_period = ?, fee_tier = ? where account_id = ?', [w.period, tier, accountId]);
      return { ...w, feePeriod: w.period, feeTier: tier };
    }
    if (w.balance - w.held < fee) {
      if (when === 'taken') {
        throw new DomainError(
          'insufficient_balance',
          `The ${tier} tier costs ${formatDecimal(fee)} ${WALLET_CURRENCY} a month, charged when it is taken; the wallet has ${formatDecimal(w.balance - w.held)} ${WALLET_CURRENCY} available.`,
        );
      }
      await exec(trx, "update accounts set tier = 'free' where id = ?", [accountId]);
      await enqueueNotification(trx, {
        accountId,
        kind: 'subscription_unpaid',
        dedupeKey: `subscription_unpaid:${accountId}:${w.period}:${tier}`,
        payload: { period: w.period, tier, fee: formatDecimal(fee), available: formatDecimal(w.balance - w.held), currency: WALLET_CURRENCY, now_tier: 'free' },
        now,
      });
      this.logger.info({ account: accountId, tier, period: w.period }, 'monthly fee unpaid: account moved to the free tier');
      return { ...w, tier: 'free' };
    }
    const [after] = await rows<{ balance: unknown }>(
      trx,
      'update wallets set balance = balance - ?, fee_period = ?, fee_tier = ?, updated_at = ? where account_id = ? returning cast(balance as text) as balance',
      [fee, w.period, tier, now, accountId],
    );
    const balance = big(after!.balance);
    const transaction = await appendTransaction(trx, {
      accountId,
      type: 'subscription',
      amount: -fee,
      balanceAfter: balance,
      description: `${tier} tier, ${w.period}`,
      reference: w.period,
      idempotencyKey: key,
      createdAt: now,
    });
    effects.push({ accountId, balance, transaction });
    await enqueueNotification(trx, {
      accountId,
      kind: 'subscription_charged',
      dedupeKey: key,
      payload: { period: w.period, tier, fee: formatDecimal(fee), balance: formatDecimal(balance), currency: WALLET_CURRENCY },
      now,
    });
    const next = { ...w, balance, feePeriod: w.period, feeTier: tier };
    await this.raiseAlerts(trx, accountId, next, null, now, transaction.id);
    return next;
  }

  /** Charges the fees of accounts on fee-paying tiers that have not paid for the current period. */
  async chargeDueFees(): Promise<number> {
    const feeTiers = (Object.keys(this.fees) as TierName[]).filter((t) => this.fees[t] > 0n);
    if (feeTiers.length === 0) return 0;
    const now = this.now();
    const period = periodOf(now);
    const due = await rows<{ id: string }>(
      this.db,
      `select a.id from accounts a left join wallets w on w.account_id = a.id
        where a.tier in (${feeTiers.map(() => '?').join(', ')}) and (w.account_id is null or w.fee_period is null or w.fee_period <> ? or w.fee_tier <> a.tier)`,
      [...feeTiers, period],
    );
    for (const { id } of due) {
      const effects: WalletChange[] = [];
      await this.db.transaction((trx) => this.openWallet(trx, id, now, effects));
      this.publish(effects);
    }
    return due.length;
  }

  private publish(effects: WalletChange[]): void {
    for (const change of effects) this.events.publish(change);
  }

  private pricesOf(model: ModelConfig): Prices {
    let prices = this.prices.get(model.id);
    if (!prices) this.prices.set(model.id, (prices = pricesOf(model)));
    return prices;
  }

  // ---------------------------------------------------------------------------------------------
  // Wallet, tiers, settings: the operations behind GraphQL, /v1 and the CLI.

  async getWallet(accountId: string): Promise<WalletView> {
    const found = await rows<{ balance: unknown; held: unknown }>(this.db, 'select cast(balance as text) as balance, cast(held as text) as held from wallets where account_id = ?', [
      accountId,
    ]);
    return { accountId, balance: big(found[0]?.balance ?? 0), held: big(found[0]?.held ?? 0), currency: WALLET_CURRENCY };
  }

  listTransactions(accountId: string, query: TransactionQuery = {}): Promise<TransactionPage> {
    return listTransactions(this.db, accountId, query);
  }

  /**
   * Adds credits (an operator's bonus or refund; payments add top-ups) as one transaction. With an
   * idempotency key, a repeated call returns the first transaction instead of crediting twice.
   */
  async creditWallet(input: {
    accountId: string;
    amount: bigint;
    type: CreditType;
    description: string;
    reference?: string | null;
    idempotencyKey?: string | null;
  }): Promise<TransactionView> {
    if (!['topup', 'bonus', 'refund'].includes(input.type)) {
      throw new DomainError('invalid_value', `type must be one of topup, bonus, refund; got '${String(input.type).slice(0, 40)}'.`, { param: 'type' });
    }
    if (input.amount <= 0n || input.amount > MAX_NANOS / 2n) {
      throw new DomainError('invalid_value', `amount must be a positive number of ${WALLET_CURRENCY} with at most 9 decimal places.`, { param: 'amount' });
    }
    const description = input.description.trim();
    if (!description || description.length > 500) throw new DomainError('invalid_value', 'description must be text of 1 to 500 characters.', { param: 'description' });
    const key = input.idempotencyKey ? `credit:${input.accountId}:${input.idempotencyKey}` : null;
    if (key && key.length > 240) throw new DomainError('invalid_value', 'idempotency key is too long (at most 200 characters).', { param: 'idempotency_key' });
    const now = this.now();
    const effects: WalletChange[] = [];
    const transaction = await this.db.transaction((trx) => this.creditWithin(trx, { ...input, description, idempotencyKey: key }, now, effects));
    this.publish(effects);
    return transaction;
  }

  /**
   * Credits the wallet inside the caller's transaction (payments: a top-up's state change and its
   * ledger rows commit together), under the wallet row's lock. With an idempotency key (used as
   * given: unique across the ledger), a repeated credit returns the first transaction. Changes
   * to publish after the commit are pushed onto `effects` (see publishChanges).
   */
  async creditWithin(
    trx: Queryable,
    input: { accountId: string; amount: bigint; type: CreditType; description: string; reference?: string | null; idempotencyKey: string | null },
    now: Date,
    effects: WalletChange[],
  ): Promise<TransactionView> {
    await this.openWallet(trx, input.accountId, now, effects);
    // Checked under the wallet's lock: a concurrent twin has committed or not started.
    if (input.idempotencyKey) {
      const existing = await findByIdempotencyKey(trx, input.idempotencyKey);
      if (existing) return replayed(existing, input);
    }
    const [after] = await rows<{ balance: unknown }>(
      trx,
      'update wallets set balance = balance + ?, ' +
        'low_balance_alerted = case when low_balance_threshold is not null and balance + ? >= low_balance_threshold then ? else low_balance_alerted end, ' +
        'updated_at = ? where account_id = ? returning cast(balance as text) as balance',
      [input.amount, input.amount, false, now, input.accountId],
    );
    const balance = big(after!.balance);
    const transaction = await appendTransaction(trx, {
      accountId: input.accountId,
      type: input.type,
      amount: input.amount,
      balanceAfter: balance,
      description: input.description,
      reference: input.reference ?? null,
      idempotencyKey: input.idempotencyKey,
      createdAt: now,
    });
    effects.push({ accountId: input.accountId, balance, transaction });
    return transaction;
  }

  /** Publishes wallet changes once the transaction that made them has committed. */
  publishChanges(effects: WalletChange[]): void {
    this.publish(effects);
  }

  /**
   * Moves an account to a tier. A tier with a monthly fee charges it now (once per period);
   * when the wallet cannot pay, the change is refused with insufficient_balance.
   */
  async setTier(accountId: string, tier: string): Promise<{ id: string; tier: Tier }> {
    if (!isTier(tier)) throw new DomainError('invalid_value', `tier must be one of ${Object.keys(this.tiers).join(', ')}.`, { param: 'tier' });
    const now = this.now();
    const effects: WalletChange[] = [];
    await this.db.transaction(async (trx) => {
      let w = await this.openWallet(trx, accountId, now, effects);
      if (w.tier === tier) return;
      if (this.fees[tier] > 0n && !(w.feePeriod === w.period && w.feeTier === tier)) w = await this.chargeFee(trx, accountId, w, tier, now, effects, 'taken');
      await exec(trx, 'update accounts set tier = ? where id = ?', [tier, accountId]);
    });
    this.publish(effects);
    return { id: accountId, tier };
  }

  async getAllocation(accountId: string): Promise<AllocationView> {
    const found = await rows<{ tier: string; period: string | null; period_used: unknown; period_held: unknown }>(
      this.db,
      'select a.tier, w.period, w.period_used, w.period_held from accounts a left join wallets w on w.account_id = a.id where a.id = ?',
      [accountId],
    );
    const r = found[0];
    if (!r) throw new DomainError('not_found', `No account with id '${accountId}'.`, { param: 'account_id' });
    const tier: Tier = isTier(r.tier) ? r.tier : 'free';
    const period = periodOf(this.now());
    const current = r.period === period;
    const used = current ? int(r.period_used) : 0;
    const held = current ? int(r.period_held) : 0;
    const monthlyTokens = this.tiers[tier].monthly_tokens;
    const { start, next } = periodBounds(period);
    return {
      period,
      periodStart: start,
      periodEnd: next,
      tier,
      monthlyTokens,
      used,
      held,
      remaining: monthlyTokens === null ? null : Math.max(0, monthlyTokens - used - held),
    };
  }

  async getSettings(accountId: string): Promise<SettingsView> {
    const found = await rows<Record<string, unknown>>(
      this.db,
      `select ${WALLET_COLUMNS} from wallets w where w.account_id = ?`,
      [accountId],
    );
    const w = found[0] ? walletRow(found[0], 'free') : null;
    const period = periodOf(this.now());
    return {
      accountId,
      spendingLimit: { enabled: w?.spendingLimitEnabled ?? false, monthlyLimit: w?.spendingLimit ?? null, action: w?.spendingLimitAction ?? 'block' },
      lowBalanceAlert: w?.lowBalanceThreshold ?? null,
      monthlySpend: w && w.period === period ? w.periodSpent : 0n,
    };
  }

  /** Sets the monthly spending limit; a new limit is a new occasion for its alert. */
  async updateSpendingLimit(accountId: string, input: { enabled: boolean; monthlyLimit?: bigint | null; action?: SpendingLimitAction | null }): Promise<SettingsView> {
    const action = input.action ?? 'block';
    if (!SPENDING_LIMIT_ACTIONS.includes(action)) throw new DomainError('invalid_value', "action must be 'block' or 'alert'.", { param: 'action' });
    const limit = input.monthlyLimit ?? null;
    if (input.enabled && limit === null) throw new DomainError('missing_required_parameter', 'monthlyLimit is required when the spending limit is enabled.', { param: 'monthlyLimit' });
    if (limit !== null && (limit < 0n || limit > MAX_NANOS / 2n)) throw new DomainError('invalid_value', 'monthlyLimit must be zero or a positive amount.', { param: 'monthlyLimit' });
    const now = this.now();
    const effects: WalletChange[] = [];
    await this.db.transaction(async (trx) => {
      await this.openWallet(trx, accountId, now, effects);
      await exec(trx, 
        'update wallets set spending_limit_enabled = ?, spending_limit = ?, spending_limit_action = ?, spending_alert_period = null, updated_at = ? where account_id = ?',
        [input.enabled, limit, action, now, accountId],
      );
    });
    this.publish(effects);
    return this.getSettings(accountId);
  }

  /**
   * Sets (or with null, clears) the low-balance alert threshold. An alert is written when the
   * balance crosses below it; a balance already below it when it is set is no crossing.
   */
  async setLowBalanceAlert(accountId: string, threshold: bigint | null): Promise<SettingsView> {
    if (threshold !== null && (threshold < 0n || threshold > MAX_NANOS / 2n)) throw new DomainError('invalid_value', 'threshold must be zero or a positive amount.', { param: 'threshold' });
    const now = this.now();
    const effects: WalletChange[] = [];
    await this.db.transaction(async (trx) => {
      const w = await this.openWallet(trx, accountId, now, effects);
      const alreadyBelow = threshold !== null && w.balance < threshold;
      await exec(trx, 'update wallets set low_balance_threshold = ?, low_balance_alerted = ?, updated_at = ? where account_id = ?', [threshold, alreadyBelow, now, accountId]);
    });
    this.publish(effects);
    return this.getSettings(accountId);
  }

  /**
   * Daily sums per model of the account's usage events between two UTC dates (inclusive;
   * default: the current period), with the current period's allocation.
   */
  async usageReport(accountId: string, range: { start?: string | null; end?: string | null } = {}): Promise<UsageReport> {
    const allocation = await this.getAllocation(accountId);
    const days = periodDays(allocation.period);
    const start = range.start ?? days.first;
    const end = range.end ?? days.last;
    for (const [param, value] of [
      ['start', start],
      ['end', end],
    ] as const) {
      if (!isDay(value)) throw new DomainError('invalid_value', `'${param}' must be a date written YYYY-MM-DD; got '${value.slice(0, 40)}'.`, { param });
    }
    if (start > end) throw new DomainError('invalid_value', `'start' (${start}) must not be after 'end' (${end}).`, { param: 'start' });
    if ((Date.parse(end) - Date.parse(start)) / 86_400_000 >= MAX_USAGE_REPORT_DAYS) {
      throw new DomainError('invalid_value', `The range from 'start' to 'end' covers at most ${MAX_USAGE_REPORT_DAYS} days.`, { param: 'end' });
    }
    const found = await rows<Record<string, unknown>>(
      this.db,
      'select day, model, count(*) as requests, sum(prompt_tokens) as prompt_tokens, sum(completion_tokens) as completion_tokens, ' +
        'sum(total_tokens) as total_tokens, cast(sum(wallet_nanos) as text) as cost ' +
        'from usage_events where account_id = ? and day >= ? and day <= ? group by day, model order by day, model',
      [accountId, start, end],
    );
    return {
      start,
      end,
      allocation,
      data: found.map((r) => ({
        date: String(r.day),
        model: String(r.model),
        requests: int(r.requests),
        promptTokens: int(r.prompt_tokens),
        completionTokens: int(r.completion_tokens),
        totalTokens: int(r.total_tokens),
        cost: big(String(r.cost).split('.')[0]),
      })),
    };
  }

  /** The account's usage events, oldest first (operators and tests). */
  async listUsageEvents(accountId: string): Promise<UsageEventView[]> {
    const found = await rows<Record<string, unknown>>(
      this.db,
      'select id, account_id, key_id, model, request_id, outcome, prompt_tokens, completion_tokens, total_tokens, allocation_tokens, cast(wallet_nanos as text) as wallet_nanos, billing_note, created_at ' +
        'from usage_events where account_id = ? order by seq',
      [accountId],
    );
    return found.map((r) => ({
      id: String(r.id),
      accountId: String(r.account_id),
      keyId: (r.key_id as string | null) ?? null,
      model: String(r.model),
      requestId: String(r.request_id),
      outcome: r.outcome as UsageOutcome,
      promptTokens: int(r.prompt_tokens),
      completionTokens: int(r.completion_tokens),
      totalTokens: int(r.total_tokens),
      allocationTokens: int(r.allocation_tokens),
      walletNanos: big(r.wallet_nanos),
      billingNote: (r.billing_note as string | null) ?? null,
      createdAt: date(r.created_at),
    }));
  }

  listNotifications(accountId: string): Promise<NotificationView[]> {
    return listNotifications(this.db, accountId);
  }

  /** Open holds (all accounts, or one). */
  async countOpenHolds(accountId?: string): Promise<number> {
    const found = await rows<{ n: unknown }>(
      this.db,
      accountId ? 'select count(*) as n from holds where account_id = ?' : 'select count(*) as n from holds',
      accountId ? [accountId] : [],
    );
    return int(found[0]?.n);
  }

  verifyLedger(): Promise<string[]> {
    return verifyLedger(this.db, this.now());
  }
}

function replayed(existing: TransactionView, input: { accountId: string; amount: bigint; type: string }): TransactionView {
  if (existing.accountId !== input.accountId || existing.amount !== input.amount || existing.type !== input.type) {
    throw new DomainError('invalid_value', 'This idempotency key was already used for a different credit.', { param: 'idempotency_key' });
  }
  return existing;
}

/** Whether a process with this pid runs on this host (EPERM: it runs, as another user). */
function processRuns(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}
