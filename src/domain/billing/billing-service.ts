// Usage billing: the Metering that InferenceService calls around every engine call (a hold placed
// before, settled after), the wallet (credits, subscription fees, tiers), account settings
// (spending limit, low-balance alert), the usage report, and the sweeper that releases holds left
// by calls that never settled. The written policy is docs/billing.md.
//
// Every write to an account's billing state runs in one database transaction that first locks the
// account's wallet row (SELECT … FOR UPDATE on PostgreSQL; BEGIN IMMEDIATE on SQLite), so checks
// and charges cannot interleave; the hot path is a handful of plain SQL statements, no ORM flush.
// Wallet changes are published (Subscription.walletUpdated) only after their transaction commits.
//
// The parts, one concern per file, each building on the one before: ./billing-core.ts (shared
// state), ./alerts.ts, ./wallet-lifecycle.ts (wallet row, periods, fees), ./settlement.ts,
// ./admission.ts, ./sweeper.ts (instances, stale holds), ./account-billing.ts (wallet, credits,
// tier, settings), ./usage-reports.ts; the vocabulary is ./billing-types.ts.
import type { Metering } from '../inference/inference-service.js';
import { UsageReports } from './usage-reports.js';

export {
  type AllocationView,
  type BillingOptions,
  type CreditType,
  SPENDING_LIMIT_ACTIONS,
  type SettingsView,
  type SpendingLimitAction,
  type UsageDay,
  type UsageGroupBy,
  USAGE_GROUP_BY,
  type UsageEventView,
  type UsageOutcome,
  type UsageReport,
  type WalletView,
} from './billing-types.js';

export class BillingService extends UsageReports implements Metering {}
