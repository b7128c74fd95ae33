// Usage billing: the Metering that InferenceService calls around every engine call (a hold placed
// before, settled after), the wallet (credits, subscription fees, tiers), account settings
// (spending limit, low-balance alert), the usage report, and the sweeper that releases holds left
// by calls that never settled. The written policy is docs/billing.md.
//
// Every write to an account's billing state is atomic on its wallet row: a transaction that first
// locks it (SELECT … FOR UPDATE on PostgreSQL; BEGIN IMMEDIATE on SQLite), or on PostgreSQL one
// conditional statement for a batch of an account's holds or settlements; checks and charges
// cannot interleave, and the hot path runs plain SQL through the wallet store (./wallet-store.ts),
// no ORM flush. Wallet changes are published (Subscription.walletUpdated) and alerts raised only
// after their change has committed (BillingCore.afterCommit), on both databases.
//
// The parts, one concern per file, each building on the one before: ./billing-core.ts (shared
// state), ./alerts.ts, ./wallet-lifecycle.ts (wallet row, periods, fees), ./settlement.ts,
// ./admission.ts, ./sweeper.ts (instances, stale holds), ./account-billing.ts (wallet, credits,
// tier, settings), ./usage-reports.ts; the vocabulary is ./billing-types.ts; the tables are the
// stores (./wallet-store.ts and ./wallet-store-postgres.ts, ./hold-store.ts, ./instance-store.ts,
// ./usage-store.ts).
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
