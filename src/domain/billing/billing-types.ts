// Billing's vocabulary: the views it returns (wallet, allocation, settings, usage), the wallet row
// as a billing transaction reads it, what a call carries from admission to settlement, and the
// SQL column lists its statements share.
import type { MikroORM } from '@mikro-orm/core';
import type { Tier as TierName, TierPolicy } from '../accounts/tiers.js';
import type { BillingSettings } from './settings.js';
import type { Logger } from '../../logger.js';
import type { Tier } from '../accounts/accounts-service.js';
import type { CallOutcome } from '../inference/inference-service.js';
import type { Prices } from './money.js';
import { big, bigOrNull, bool, int } from './sql.js';
import type { WalletChange, WalletEvents } from './wallet-events.js';

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
  /** The tier whose monthly fee is paid for this period (taking it again charges nothing); null: none. */
  feePaidTier: Tier | null;
}

export interface SettingsView {
  /** Whose settings (other modules add their own settings beside these, e.g. automatic top-up). */
  accountId: string;
  spendingLimit: { enabled: boolean; monthlyLimit: bigint | null; action: SpendingLimitAction };
  lowBalanceAlert: bigint | null;
  /** Wallet money charged for usage this period: what the spending limit compares. */
  monthlySpend: bigint;
}

/** What the usage report's rows are summed by, beside the day: the model, the end user or the API key. */
export type UsageGroupBy = 'model' | 'user' | 'key';
export const USAGE_GROUP_BY: readonly UsageGroupBy[] = ['model', 'user', 'key'];

export interface UsageDay {
  date: string;
  /** Null unless the report is grouped by model. */
  model: string | null;
  /** Grouped by user: the requests' `user` (null: calls that gave none). */
  user?: string | null;
  /** Grouped by key: the API key's id (null: calls made without a key). */
  keyId?: string | null;
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
  groupBy: UsageGroupBy;
  allocation: AllocationView;
  data: UsageDay[];
}

export interface UsageEventView {
  id: string;
  accountId: string;
  keyId: string | null;
  endUser: string | null;
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
export interface WalletRow {
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
  /** Counts the settings of the spending limit: each one re-arms its alert (see ./alerts.ts). */
  spendingLimitVersion: number;
  lowBalanceThreshold: bigint | null;
  lowBalanceAlerted: boolean;
  allocationAlertPeriod: string | null;
  /** The period whose "monthly tokens used up" alert was written. */
  allocationFullPeriod: string | null;
  spendingAlertPeriod: string | null;
}

export const WALLET_COLUMNS =
  'cast(w.balance as text) as balance, cast(w.held as text) as held, w.period, w.period_used, w.period_held, cast(w.period_spent as text) as period_spent, ' +
  'w.fee_period, w.fee_tier, w.spending_limit_enabled, cast(w.spending_limit as text) as spending_limit, w.spending_limit_action, w.spending_limit_version, ' +
  'cast(w.low_balance_threshold as text) as low_balance_threshold, w.low_balance_alerted, w.allocation_alert_period, w.allocation_full_period, w.spending_alert_period';

export function walletRow(r: Record<string, unknown>, tier: Tier): WalletRow {
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
    spendingLimitVersion: int(r.spending_limit_version),
    lowBalanceThreshold: bigOrNull(r.low_balance_threshold),
    lowBalanceAlerted: bool(r.low_balance_alerted),
    allocationAlertPeriod: (r.allocation_alert_period as string | null) ?? null,
    allocationFullPeriod: (r.allocation_full_period as string | null) ?? null,
    spendingAlertPeriod: (r.spending_alert_period as string | null) ?? null,
  };
}

export interface CallBase {
  id: string;
  accountId: string;
  keyId: string | null;
  /** The request's `user` (the customer's end-user id), or null. */
  endUser: string | null;
  requestId: string;
  model: string;
  prices: Prices;
}

/** What a ticket carries from admission to settlement. */
export interface HeldCall extends CallBase {
  /** 'held': a hold row exists; 'unlimited': the tier is not billed; 'free': the model costs nothing. */
  kind: 'held' | 'unlimited' | 'free';
  period: string;
  allocationTokens: number;
  walletNanos: bigint;
  monthlyTokens: number | null;
}

/** An alert check a change left to do once it has committed (./alerts.ts). */
export interface AlertCheck {
  accountId: string;
  row: WalletRow;
  monthlyTokens: number | null;
  /** What crossed the line (a call or transaction id): the low-balance alert's dedupe key. */
  occasion: string;
  now: Date;
}

/**
 * What a billing transaction leaves for after its commit: wallet changes to publish and alerts to
 * check. Neither happens for a change that rolled back, and neither can roll the change back.
 */
export class Effects {
  readonly changes: WalletChange[] = [];
  readonly alerts: AlertCheck[] = [];
}

export const USAGE_EVENT_COLUMNS =
  'id, account_id, key_id, model, request_id, outcome, prompt_tokens, completion_tokens, total_tokens, allocation_tokens, wallet_nanos, billing_note, day, created_at, end_user';
export const USAGE_EVENT_INSERT = `insert into usage_events (${USAGE_EVENT_COLUMNS}) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`;
export const HOLD_COLUMNS =
  'id, account_id, key_id, request_id, model, period, allocation_tokens, wallet_nanos, prompt_tokens, max_output_tokens, owner, created_at, expires_at, end_user';
/** Optimistic admissions before the locked path takes over (PostgreSQL). */
export const OPTIMISTIC_ATTEMPTS = 4;

export const MAX_USAGE_REPORT_DAYS = 366;
/**
 * How long a settlement that fails (the database restarting, a failover, a lock timeout) is tried
 * again before the call is left unbilled for the sweeper: the answer waits for it, so a blip of a
 * few seconds delays answers rather than losing their charges. The waits double from 20 ms, at most
 * SETTLE_MAX_WAIT_MS each.
 */
export const SETTLE_RETRY_MS = 10_000;
export const SETTLE_MAX_WAIT_MS = 1_000;

export interface BillingOptions {
  orm: MikroORM;
  tiers: Record<TierName, TierPolicy>;
  /** The config file the tiers were read from (recorded in billing_instances for the CLI). */
  configPath?: string | null;
  settings: BillingSettings;
  logger: Logger;
  events?: WalletEvents;
  /** The clock (tests move it across period boundaries). */
  now?: () => Date;
}

/**
 * The transactions of the billing hot path (a call's hold, its settlement, its usage event): on
 * SQLite their commits do not wait for the disk (lazySync: ./sql.ts says what that can lose).
 */
export const HOT_PATH = { lazySync: true } as const;
