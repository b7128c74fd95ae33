// The payments tables in plain SQL that reads the same on SQLite and PostgreSQL (the way the
// billing hot path speaks to the database, and inside the same transactions as its ledger):
// top-ups (checkouts and automatic top-ups), the processor's customer of each account, and each
// account's automatic top-up settings. Money columns are 64-bit nanos read back as text.
import { big, bool, date, exec, inList, int, rows, run, type Db } from '../billing/sql.js';
import { isTopUpState, type TopUpState } from './checkout-state.js';
import type { ProcessorName } from './processor.js';

export type { TopUpSource } from './checkout-state.js';
import type { TopUpSource } from './checkout-state.js';

export interface TopUpRecord {
  id: string;
  accountId: string;
  source: TopUpSource;
  processor: ProcessorName;
  status: TopUpState;
  /** Nanos paid (the amount asked); the bonus is credited on top. */
  amount: bigint;
  bonus: bigint;
  bonusBasisPoints: bigint;
  currency: string;
  idempotencyKey: string | null;
  requestHash: string | null;
  processorCheckoutId: string | null;
  paymentId: string | null;
  checkoutUrl: string | null;
  failureReason: string | null;
  createdAt: Date;
  updatedAt: Date;
  expiresAt: Date | null;
  settledAt: Date | null;
  /** How much of its payment the processor reports refunded, in cents (cumulative). */
  refundedCents: number;
  /** A dispute's funds: null (none), 'withdrawn' or 'reinstated'. */
  disputeState: DisputeState | null;
  /** Credits the dispute took back (nanos) before migration 0015; superseded by takenBackNanos. */
  disputeNanos: bigint;
  /** What the processor charged, in cents (tax included), when it said. */
  chargedCents: number | null;
  /** The credits the payment's reversals call for (its returned share of the credits bought). */
  reversedNanos: bigint;
  /** The credits actually taken back for them (at most what the wallet had; never collected later). */
  takenBackNanos: bigint;
  /** Of what they call for, what refunds could not take (already spent): forgiven, and not the dispute's to give back. */
  refundForgivenNanos: bigint;
}

export type DisputeState = 'withdrawn' | 'reinstated';

const COLUMNS =
  'id, account_id, source, processor, status, cast(amount as text) as amount, cast(bonus as text) as bonus, bonus_bps, currency, idempotency_key, request_hash, ' +
  'processor_checkout_id, payment_id, checkout_url, failure_reason, created_at, updated_at, expires_at, settled_at, refunded_cents, dispute_state, cast(dispute_nanos as text) as dispute_nanos, ' +
  'charged_cents, cast(reversed_nanos as text) as reversed_nanos, cast(taken_back_nanos as text) as taken_back_nanos, ' +
  'cast(refund_forgiven_nanos as text) as refund_forgiven_nanos';

function topUpRecord(r: Record<string, unknown>): TopUpRecord {
  const status = String(r.status);
  if (!isTopUpState(status)) throw new Error(`top-up ${String(r.id)} has an unknown status '${status}'`);
  return {
    id: String(r.id),
    accountId: String(r.account_id),
    source: r.source === 'auto' ? 'auto' : 'checkout',
    processor: r.processor === 'stripe' ? 'stripe' : 'sandbox',
    status,
    amount: big(r.amount),
    bonus: big(r.bonus),
    bonusBasisPoints: BigInt(int(r.bonus_bps)),
    currency: String(r.currency),
    idempotencyKey: (r.idempotency_key as string | null) ?? null,
    requestHash: (r.request_hash as string | null) ?? null,
    processorCheckoutId: (r.processor_checkout_id as string | null) ?? null,
    paymentId: (r.payment_id as string | null) ?? null,
    checkoutUrl: (r.checkout_url as string | null) ?? null,
    failureReason: (r.failure_reason as string | null) ?? null,
    createdAt: date(r.created_at),
    updatedAt: date(r.updated_at),
    expiresAt: r.expires_at == null ? null : date(r.expires_at),
    settledAt: r.settled_at == null ? null : date(r.settled_at),
    refundedCents: int(r.refunded_cents ?? 0),
    disputeState: r.dispute_state === 'withdrawn' || r.dispute_state === 'reinstated' ? r.dispute_state : null,
    disputeNanos: big(r.dispute_nanos ?? 0),
    chargedCents: r.charged_cents == null ? null : int(r.charged_cents),
    reversedNanos: big(r.reversed_nanos ?? 0),
    takenBackNanos: big(r.taken_back_nanos ?? 0),
    refundForgivenNanos: big(r.refund_forgiven_nanos ?? 0),
  };
}

export interface NewTopUp {
  id: string;
  accountId: string;
  source: TopUpSource;
  processor: ProcessorName;
  amount: bigint;
  bonus: bigint;
  bonusBasisPoints: bigint;
  currency: string;
  idempotencyKey: string | null;
  requestHash: string | null;
  expiresAt: Date | null;
  now: Date;
}

export async function insertTopUp(db: Db, t: NewTopUp): Promise<void> {
  await exec(
    db,
    'insert into top_ups (id, account_id, source, processor, status, amount, bonus, bonus_bps, currency, idempotency_key, request_hash, created_at, updated_at, expires_at) ' +
      "values (?, ?, ?, ?, 'open', ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    [
      t.id,
      t.accountId,
      t.source,
      t.processor,
      t.amount,
      t.bonus,
      Number(t.bonusBasisPoints),
      t.currency,
      t.idempotencyKey,
      t.requestHash,
      t.now,
      t.now,
      t.expiresAt,
    ],
  );
}

export async function findTopUp(db: Db, id: string): Promise<TopUpRecord | null> {
  const found = await rows<Record<string, unknown>>(db, `select ${COLUMNS} from top_ups where id = ?`, [id]);
  return found[0] ? topUpRecord(found[0]) : null;
}

/** The top-up row, locked until the transaction ends (FOR UPDATE on PostgreSQL; SQLite's writer lock). */
export async function lockTopUp(db: Db, id: string, forUpdate: string): Promise<TopUpRecord | null> {
  const found = await rows<Record<string, unknown>>(db, `select ${COLUMNS} from top_ups where id = ?${forUpdate}`, [id]);
  return found[0] ? topUpRecord(found[0]) : null;
}

export async function findTopUpByIdempotencyKey(db: Db, accountId: string, key: string): Promise<TopUpRecord | null> {
  const found = await rows<Record<string, unknown>>(db, `select ${COLUMNS} from top_ups where account_id = ? and idempotency_key = ?`, [
    accountId,
    key,
  ]);
  return found[0] ? topUpRecord(found[0]) : null;
}

export async function findTopUpByProcessorCheckoutId(db: Db, processorCheckoutId: string): Promise<TopUpRecord | null> {
  const found = await rows<Record<string, unknown>>(db, `select ${COLUMNS} from top_ups where processor_checkout_id = ?`, [
    processorCheckoutId,
  ]);
  return found[0] ? topUpRecord(found[0]) : null;
}

export async function findTopUpByPaymentId(db: Db, paymentId: string): Promise<TopUpRecord | null> {
  const found = await rows<Record<string, unknown>>(db, `select ${COLUMNS} from top_ups where payment_id = ?`, [paymentId]);
  return found[0] ? topUpRecord(found[0]) : null;
}

/** The top-ups paid by these payments, in one query (unknown ids left out). */
export async function findTopUpsByPaymentIds(db: Db, paymentIds: readonly string[]): Promise<TopUpRecord[]> {
  if (paymentIds.length === 0) return [];
  const marks = paymentIds.map(() => '?').join(', ');
  const found = await rows<Record<string, unknown>>(db, `select ${COLUMNS} from top_ups where payment_id in (${marks})`, [...paymentIds]);
  return found.map(topUpRecord);
}

/** An account's top-ups, newest first. */
export async function listTopUps(
  db: Db,
  accountId: string,
  opts: { limit: number; status?: TopUpState | null; after?: { createdAt: Date; id: string } | null },
): Promise<TopUpRecord[]> {
  const where = ['account_id = ?'];
  const bindings: (string | number | Date)[] = [accountId];
  if (opts.status) {
    where.push('status = ?');
    bindings.push(opts.status);
  }
  if (opts.after) {
    // Newest first: the page after a cursor holds what is older than it (ties broken by id).
    where.push('(created_at < ? or (created_at = ? and id < ?))');
    bindings.push(opts.after.createdAt, opts.after.createdAt, opts.after.id);
  }
  const found = await rows<Record<string, unknown>>(
    db,
    `select ${COLUMNS} from top_ups where ${where.join(' and ')} order by created_at desc, id desc limit ?`,
    [...bindings, opts.limit],
  );
  return found.map(topUpRecord);
}

/** The account's checkouts still open past their expiry (a few at most: each is expired when read). */
export async function openCheckoutsExpiredBy(db: Db, accountId: string, now: Date): Promise<TopUpRecord[]> {
  const found = await rows<Record<string, unknown>>(
    db,
    `select ${COLUMNS} from top_ups where account_id = ? and status = 'open' and source = 'checkout' and expires_at <= ? limit 100`,
    [accountId, now],
  );
  return found.map(topUpRecord);
}

/** Records what the processor answered; the state is left alone (an event may have moved it already). */
export async function recordCheckoutCreated(
  db: Db,
  id: string,
  c: { processorCheckoutId: string; url: string; expiresAt: Date; now: Date },
): Promise<void> {
  await exec(
    db,
    'update top_ups set processor_checkout_id = coalesce(processor_checkout_id, ?), checkout_url = ?, expires_at = ?, updated_at = ? where id = ?',
    [c.processorCheckoutId, c.url, c.expiresAt, c.now, id],
  );
}

export async function recordProcessorCheckoutId(db: Db, id: string, processorCheckoutId: string, now: Date): Promise<void> {
  await exec(db, 'update top_ups set processor_checkout_id = ?, updated_at = ? where id = ? and processor_checkout_id is null', [
    processorCheckoutId,
    now,
    id,
  ]);
}

/**
 * The reason a closed top-up (expired, canceled or failed) did not credit a payment it received
 * afterwards; its state is left alone. A paid top-up is never touched.
 */
export async function recordFailureReason(db: Db, id: string, reason: string, now: Date): Promise<void> {
  await exec(db, "update top_ups set failure_reason = ?, updated_at = ? where id = ? and status in ('expired', 'canceled', 'failed')", [
    reason.slice(0, 500),
    now,
    id,
  ]);
}

export async function recordPendingPayment(db: Db, id: string, paymentId: string, now: Date): Promise<void> {
  await exec(db, 'update top_ups set payment_id = ?, updated_at = ? where id = ? and payment_id is null', [paymentId, now, id]);
}

/**
 * Moves a top-up from `from` to `to` if it is still in `from`; returns whether it moved. The
 * condition on the current state is what makes two racing moves end with one winner. A move to
 * paid clears the failure reason an earlier state left (a failed or expired checkout paid after
 * all): a paid top-up has none.
 */
export async function moveTopUp(
  db: Db,
  id: string,
  from: TopUpState,
  to: TopUpState,
  fields: { paymentId?: string | null; failureReason?: string | null; chargedCents?: number | null; now: Date },
): Promise<boolean> {
  const changed = await run(
    db,
    'update top_ups set status = ?, payment_id = coalesce(?, payment_id), failure_reason = case when ? then null else coalesce(?, failure_reason) end, charged_cents = coalesce(?, charged_cents), settled_at = ?, updated_at = ? where id = ? and status = ?',
    [
      to,
      fields.paymentId ?? null,
      to === 'paid',
      fields.failureReason?.slice(0, 500) ?? null,
      fields.chargedCents ?? null,
      fields.now,
      fields.now,
      id,
      from,
    ],
  );
  return changed === 1;
}

/** Sum of the automatic top-ups (open or paid) an account started since `since`. */
/**
 * How a given-up automatic top-up's failure reason begins: its processor never said whether it
 * charged, so it still counts against the monthly cap (a late confirmation credits it).
 */
export const UNDECIDED_REASON_START = 'The payment processor gave no answer about this charge';

/** What automatic top-ups started since `since` may have charged: open, paid, and given up undecided. */
export async function sumAutoTopUpsSince(db: Db, accountId: string, since: Date): Promise<bigint> {
  const found = await rows<{ total: unknown }>(
    db,
    "select cast(coalesce(sum(amount), 0) as text) as total from top_ups where account_id = ? and source = 'auto' and created_at >= ? " +
      "and (status in ('open', 'paid') or (status = 'failed' and failure_reason like ?))",
    [accountId, since, `${UNDECIDED_REASON_START}%`],
  );
  return big(found[0]?.total ?? 0);
}

// ------------------------------------------------------------------------------------------------
// The processor's customer of an account (Stripe: cus_…), reused for every checkout and charged
// off-session for automatic top-ups.

export async function findCustomer(db: Db, accountId: string, processor: ProcessorName): Promise<string | null> {
  const found = await rows<{ customer_id: string }>(
    db,
    'select customer_id from payment_customers where account_id = ? and processor = ?',
    [accountId, processor],
  );
  return found[0]?.customer_id ?? null;
}

/** Keeps the first customer recorded for the account (a racing second one is the same, by idempotency). */
export async function saveCustomer(db: Db, accountId: string, processor: ProcessorName, customerId: string, now: Date): Promise<void> {
  await exec(
    db,
    'insert into payment_customers (account_id, processor, customer_id, created_at) values (?, ?, ?, ?) on conflict (account_id, processor) do nothing',
    [accountId, processor, customerId, now],
  );
}

// ------------------------------------------------------------------------------------------------
// Automatic top-up settings and state: one row per account.

export interface AutoTopupRecord {
  accountId: string;
  enabled: boolean;
  threshold: bigint;
  amount: bigint;
  consecutiveFailures: number;
  /** The automatic top-up being charged now, if any: at most one per account. */
  inFlightId: string | null;
  disabledReason: string | null;
  updatedAt: Date;
}

const AUTO_COLUMNS =
  'account_id, enabled, cast(threshold as text) as threshold, cast(amount as text) as amount, consecutive_failures, in_flight_id, disabled_reason, updated_at';

function autoTopupRecord(r: Record<string, unknown>): AutoTopupRecord {
  return {
    accountId: String(r.account_id),
    enabled: bool(r.enabled),
    threshold: big(r.threshold),
    amount: big(r.amount),
    consecutiveFailures: int(r.consecutive_failures),
    inFlightId: (r.in_flight_id as string | null) ?? null,
    disabledReason: (r.disabled_reason as string | null) ?? null,
    updatedAt: date(r.updated_at),
  };
}

export async function findAutoTopup(db: Db, accountId: string, forUpdate = ''): Promise<AutoTopupRecord | null> {
  const found = await rows<Record<string, unknown>>(db, `select ${AUTO_COLUMNS} from auto_topups where account_id = ?${forUpdate}`, [
    accountId,
  ]);
  return found[0] ? autoTopupRecord(found[0]) : null;
}

/** The automatic top-up settings of several accounts, in one query (accounts that never set them left out). */
export async function findAutoTopupsOf(db: Db, accountIds: readonly string[]): Promise<AutoTopupRecord[]> {
  if (accountIds.length === 0) return [];
  const { ids, list } = inList(accountIds);
  const found = await rows<Record<string, unknown>>(db, `select ${AUTO_COLUMNS} from auto_topups where account_id in ${list}`, ids);
  return found.map(autoTopupRecord);
}

export async function saveAutoTopup(
  db: Db,
  s: { accountId: string; enabled: boolean; threshold: bigint; amount: bigint; resetFailures: boolean; now: Date },
): Promise<void> {
  const updated = await run(
    db,
    'update auto_topups set enabled = ?, threshold = ?, amount = ?, ' +
      'consecutive_failures = case when ? then 0 else consecutive_failures end, disabled_reason = case when ? then null else disabled_reason end, updated_at = ? where account_id = ?',
    [s.enabled, s.threshold, s.amount, s.resetFailures, s.resetFailures, s.now, s.accountId],
  );
  if (updated === 0) {
    await exec(
      db,
      'insert into auto_topups (account_id, enabled, threshold, amount, consecutive_failures, updated_at) values (?, ?, ?, ?, 0, ?)',
      [s.accountId, s.enabled, s.threshold, s.amount, s.now],
    );
  }
}

/**
 * Accounts whose automatic top-up attempt has been undecided since before `before` (its slot held
 * by an open attempt): left by a server that stopped between claiming and crediting, or by a
 * processor that has not answered. At most `limit`, the oldest first. Automatic top-up turned off
 * since does not leave one out: its attempt is canceled by the check (never asked again), which
 * frees the slot and takes the account off the list.
 */
export async function stalledAutoTopUps(db: Db, before: Date, limit: number): Promise<string[]> {
  const found = await rows<{ account_id: string }>(
    db,
    `select a.account_id from auto_topups a join top_ups t on t.id = a.in_flight_id
     where t.status = 'open' and t.updated_at < ? order by t.updated_at limit ${Number(limit)}`,
    [before],
  );
  return found.map((r) => r.account_id);
}

/** Claims the account's one in-flight slot; false when another top-up holds it. */
export async function claimInFlight(db: Db, accountId: string, topUpId: string, now: Date): Promise<boolean> {
  return (
    (await run(db, 'update auto_topups set in_flight_id = ?, updated_at = ? where account_id = ? and in_flight_id is null', [
      topUpId,
      now,
      accountId,
    ])) === 1
  );
}

/**
 * Records how an automatic top-up ended: the slot it held is freed, and the run of consecutive
 * failures grows by one (failed) or starts again (succeeded); 'abandoned' only frees the slot.
 */
export async function finishAutoTopUp(
  db: Db,
  accountId: string,
  topUpId: string,
  outcome: 'succeeded' | 'failed' | 'abandoned',
  now: Date,
): Promise<void> {
  const failures = outcome === 'succeeded' ? '0' : outcome === 'failed' ? 'consecutive_failures + 1' : 'consecutive_failures';
  await exec(
    db,
    `update auto_topups set in_flight_id = case when in_flight_id = ? then null else in_flight_id end, consecutive_failures = ${failures}, updated_at = ? where account_id = ?`,
    [topUpId, now, accountId],
  );
}

/** Frees a slot whose top-up is no longer open (left by a crash between two steps). */
export async function releaseInFlight(db: Db, accountId: string, topUpId: string, now: Date): Promise<void> {
  await exec(db, 'update auto_topups set in_flight_id = null, updated_at = ? where account_id = ? and in_flight_id = ?', [
    now,
    accountId,
    topUpId,
  ]);
}

/** Records what the processor reports of a paid top-up's payment going back (under the top-up's lock). */
/** A top-up's reversal state after its payment's reversals were applied. */
export async function recordReversal(
  db: Db,
  id: string,
  fields: {
    refundedCents: number;
    disputeState: DisputeState | null;
    chargedCents: number | null;
    reversedNanos: bigint;
    takenBackNanos: bigint;
    refundForgivenNanos: bigint;
  },
  now: Date,
): Promise<void> {
  await exec(
    db,
    'update top_ups set refunded_cents = ?, dispute_state = ?, charged_cents = coalesce(charged_cents, ?), reversed_nanos = ?, taken_back_nanos = ?, refund_forgiven_nanos = ?, updated_at = ? where id = ?',
    [
      fields.refundedCents,
      fields.disputeState,
      fields.chargedCents,
      fields.reversedNanos,
      fields.takenBackNanos,
      fields.refundForgivenNanos,
      now,
      id,
    ],
  );
}

/** What a processor has said of a payment going back to its payer (refunds, a dispute), whether or not its top-up is paid yet. */
export interface PaymentReversal {
  /** The payment's refunded total, in cents (cumulative). */
  refundedCents: number;
  /** What was charged, in cents, when an event said. */
  chargedCents: number | null;
  disputeId: string | null;
  disputeState: DisputeState | null;
  /** The disputed amount, in cents, when the event said. */
  disputeCents: number | null;
}

/** A refund or dispute event's news, merged into what is known of the payment (never backwards). */
export type ReversalNews =
  | { kind: 'refund'; refundedCents: number; chargedCents: number | null }
  | { kind: 'dispute'; disputeId: string; funds: DisputeState; amountCents: number | null };

/**
 * Merges an event's news into the payment's reversal record, locked: a refunded total only grows;
 * a dispute goes withdrawn → reinstated, and reinstated is final (funds reinstated before they were
 * withdrawn: nothing is ever taken for it). Returns the record before and after.
 */
export async function mergeReversal(
  db: Db,
  processor: ProcessorName,
  paymentId: string,
  news: ReversalNews,
  forUpdate: string,
  now: Date,
): Promise<{ before: PaymentReversal; after: PaymentReversal }> {
  const before = await lockReversal(db, processor, paymentId, forUpdate, now);
  const after = { ...before };
  if (news.kind === 'refund') {
    after.refundedCents = Math.max(before.refundedCents, news.refundedCents);
    after.chargedCents = news.chargedCents ?? before.chargedCents;
  } else if (before.disputeId === null || before.disputeId === news.disputeId) {
    after.disputeId = news.disputeId;
    after.disputeCents = news.amountCents ?? before.disputeCents;
    if (before.disputeState !== 'reinstated') after.disputeState = news.funds;
  }
  await exec(
    db,
    'update payment_reversals set refunded_cents = ?, charged_cents = ?, dispute_id = ?, dispute_state = ?, dispute_cents = ?, updated_at = ? where processor = ? and payment_id = ?',
    [after.refundedCents, after.chargedCents, after.disputeId, after.disputeState, after.disputeCents, now, processor, paymentId],
  );
  return { before, after };
}

/**
 * What is known of a payment's reversals, its row locked (made first, empty, when there is none):
 * both a reversal event and the credit of the payment's top-up take this lock before the top-up's,
 * so on PostgreSQL each waits for the other's commit and neither misses what the other wrote.
 */
export async function lockReversal(
  db: Db,
  processor: ProcessorName,
  paymentId: string,
  forUpdate: string,
  now: Date,
): Promise<PaymentReversal> {
  // Inserted first: a concurrent transaction's uncommitted row is waited for here (a select would not see it).
  await exec(
    db,
    'insert into payment_reversals (processor, payment_id, refunded_cents, updated_at) values (?, ?, 0, ?) on conflict do nothing',
    [processor, paymentId, now],
  );
  const [r] = await rows<Record<string, unknown>>(
    db,
    `select refunded_cents, charged_cents, dispute_id, dispute_state, dispute_cents from payment_reversals where processor = ? and payment_id = ?${forUpdate}`,
    [processor, paymentId],
  );
  return {
    refundedCents: int(r!.refunded_cents),
    chargedCents: r!.charged_cents == null ? null : int(r!.charged_cents),
    disputeId: (r!.dispute_id as string | null) ?? null,
    disputeState: r!.dispute_state === 'withdrawn' || r!.dispute_state === 'reinstated' ? r!.dispute_state : null,
    disputeCents: r!.dispute_cents == null ? null : int(r!.dispute_cents),
  };
}

/** Whether a payment's reversal record says anything went back. */
export const anyReversal = (r: PaymentReversal) => r.refundedCents > 0 || r.disputeState !== null;

export async function disableAutoTopup(db: Db, accountId: string, reason: string, now: Date): Promise<void> {
  await exec(db, 'update auto_topups set enabled = ?, disabled_reason = ?, updated_at = ? where account_id = ?', [
    false,
    reason.slice(0, 500),
    now,
    accountId,
  ]);
}
