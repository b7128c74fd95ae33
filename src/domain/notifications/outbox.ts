// The notifications outbox: alerts (low balance, 80% and 100% of the monthly allocation, spending
// limit, monthly fee, frequent rate-limit hits, unusual usage, automatic top-up, receipts) are
// written here in the same database transaction as the change that caused them, once per occasion
// (a unique dedupe key). The delivery worker (delivery-worker.ts) e-mails them after the commit;
// the feed (Account.notifications) reads them.
import { newId } from '../ids.js';
import { date, exec, rows, type Db } from '../billing/sql.js';

export type NotificationKind =
  | 'low_balance'
  | 'allocation_80'
  | 'allocation_100'
  | 'spending_limit'
  | 'subscription_charged'
  | 'subscription_unpaid'
  | 'rate_limit_hits'
  | 'unusual_usage'
  // payments: an automatic top-up failed, was turned off after failing 3 times, hit the monthly cap
  | 'auto_topup_failed'
  | 'auto_topup_disabled'
  | 'auto_topup_capped'
  // payments: a paid top-up (checkout or automatic): amount, bonus, credits, new balance
  | 'receipt'
  // payments: a paid top-up's payment refunded or disputed (credits taken back), or its dispute's
  // funds reinstated (credits given back)
  | 'topup_reversed';

export const NOTIFICATION_KINDS: readonly NotificationKind[] = [
  'low_balance',
  'allocation_80',
  'allocation_100',
  'spending_limit',
  'subscription_charged',
  'subscription_unpaid',
  'rate_limit_hits',
  'unusual_usage',
  'auto_topup_failed',
  'auto_topup_disabled',
  'auto_topup_capped',
  'receipt',
  'topup_reversed',
];

/** The alerts a person turns on or off; each kind belongs to one. Receipts cannot be turned off. */
export const ALERTS = [
  'low_balance',
  'allocation_80',
  'allocation_100',
  'spending_limit',
  'rate_limit',
  'unusual_usage',
  'auto_topup',
  'monthly_fee',
  'receipt',
] as const;
export type Alert = (typeof ALERTS)[number];
export const OPTIONAL_ALERTS: readonly Alert[] = ALERTS.filter((a) => a !== 'receipt');

export function alertOf(kind: NotificationKind): Alert {
  switch (kind) {
    case 'rate_limit_hits':
      return 'rate_limit';
    case 'auto_topup_failed':
    case 'auto_topup_disabled':
    case 'auto_topup_capped':
      return 'auto_topup';
    case 'subscription_charged':
    case 'subscription_unpaid':
      return 'monthly_fee';
    // A record of money, as a receipt is: cannot be turned off.
    case 'topup_reversed':
      return 'receipt';
    default:
      return kind;
  }
}

export interface NotificationView {
  id: string;
  accountId: string;
  kind: NotificationKind;
  payload: Record<string, unknown>;
  createdAt: Date;
  sentAt: Date | null;
}

/**
 * Queues one notification inside the caller's transaction. `dedupeKey` names the occasion
 * (e.g. `allocation_80:acct_…:2026-11`): a second write for it is silently dropped.
 */
export async function enqueueNotification(
  db: Db,
  n: { accountId: string; kind: NotificationKind; dedupeKey: string; payload: Record<string, unknown>; now: Date },
): Promise<void> {
  await exec(
    db,
    'insert into notifications (id, account_id, kind, dedupe_key, payload, created_at) values (?, ?, ?, ?, ?, ?) on conflict (dedupe_key) do nothing',
    [newId('ntf'), n.accountId, n.kind, n.dedupeKey, JSON.stringify(n.payload), n.now],
  );
}

/** An account's notifications, oldest first (for the dashboard, the sender and tests). */
export async function listNotifications(db: Db, accountId: string): Promise<NotificationView[]> {
  const found = await rows<{
    id: string;
    account_id: string;
    kind: NotificationKind;
    payload: string;
    created_at: unknown;
    sent_at: unknown;
  }>(db, 'select id, account_id, kind, payload, created_at, sent_at from notifications where account_id = ? order by seq', [accountId]);
  return found.map((r) => ({
    id: r.id,
    accountId: r.account_id,
    kind: r.kind,
    payload: JSON.parse(r.payload) as Record<string, unknown>,
    createdAt: date(r.created_at),
    sentAt: r.sent_at == null ? null : date(r.sent_at),
  }));
}
