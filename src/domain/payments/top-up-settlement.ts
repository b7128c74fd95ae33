// Where a top-up's outcome is written, once: a payment becomes credits (the `topup` row keyed by
// the processor's payment id, then the `bonus` row) in ONE database transaction with the top-up's
// move to `paid`; a failure, an expiry or a cancellation is a conditional move that only the first
// caller wins. Duplicate, concurrent, late and out-of-order callbacks all come through here: the
// top-up row's lock serialises them and its state tells the later ones there is nothing left to do
// (with the ledger's unique idempotency key as the last line of defence).
import type { Logger } from '../../logger.js';
import { formatDecimal, WALLET_CURRENCY } from '../billing/money.js';
import { isUniqueViolation, type BillingDatabase, type Queryable } from '../billing/sql.js';
import type { WalletChange } from '../billing/wallet-events.js';
import { formatMoney, fromCents, percentText, toCents } from './amounts.js';
import { randomBase62 } from '../ids.js';
import { canMove, type TopUpState } from './checkout-state.js';
import type { NotifierPort, WalletPort } from './ports.js';
import type { ProcessorName } from './processor.js';
import {
  disableAutoTopup,
  findAutoTopup,
  anyReversal,
  findTopUp,
  lockReversal,
  findTopUpByPaymentId,
  finishAutoTopUp,
  lockTopUp,
  mergeReversal,
  moveTopUp,
  type PaymentReversal,
  type ReversalNews,
  recordReversal,
  saveCustomer,
  type TopUpRecord,
} from './top-up-store.js';

export type PaidOutcome = 'credited' | 'already_paid' | 'not_open' | 'unknown';
export type FailedOutcome = 'failed' | 'not_open' | 'unknown';
export type ClosedOutcome = 'closed' | 'not_open' | 'unknown';
/** `reversed`: credits taken back (or due and none available); `reinstated`: given back. */
export type ReversalOutcome = 'reversed' | 'reinstated' | 'unchanged' | 'not_paid' | 'unknown';

export interface SettlementOptions {
  /** Billing's database: payments' transactions share its transaction runner (and, on SQLite, its group commit). */
  db: BillingDatabase;
  wallet: WalletPort;
  notifier: NotifierPort;
  logger: Logger;
  now: () => Date;
  /** Failed automatic top-ups in a row that turn automatic top-up off. */
  maxConsecutiveFailures: number;
}

export class TopUpSettlement {
  constructor(private readonly o: SettlementOptions) {}

  /**
   * Credits a top-up whose payment the processor confirmed, at most once. `requireOpen` (the
   * sandbox page's Pay button) refuses a top-up that was canceled or expired meanwhile; a
   * processor's confirmation credits it anyway, since the money was received.
   */
  async markPaid(
    topUpId: string,
    payment: { paymentId: string; customerId?: string | null; requireOpen?: boolean; chargedCents?: number | null },
  ): Promise<{ outcome: PaidOutcome; topUp: TopUpRecord | null }> {
    const now = this.o.now();
    const effects: WalletChange[] = [];
    const { db } = this.o;
    const { forUpdate } = db;
    let result: { outcome: PaidOutcome; topUp: TopUpRecord | null };
    try {
      result = await db.transaction(async (trx) => {
        // The payment's reversal record first, as a reversal event takes it (top-up-store.ts, lockReversal).
        const seen = await findTopUp(trx, topUpId);
        const reversal =
          seen && seen.processor !== 'sandbox' ? await lockReversal(trx, seen.processor, payment.paymentId, forUpdate, now) : null;
        const t = await lockTopUp(trx, topUpId, forUpdate);
        if (!t) return { outcome: 'unknown' as const, topUp: null };
        if (t.status === 'paid') {
          if (t.paymentId !== payment.paymentId) {
            this.o.logger.error(
              { topUp: t.id, paid: t.paymentId, again: payment.paymentId },
              'a second payment was confirmed for a top-up already paid; it was not credited',
            );
          }
          return { outcome: 'already_paid' as const, topUp: t };
        }
        if (payment.requireOpen && t.status !== 'open') return { outcome: 'not_open' as const, topUp: t };
        if (!canMove(t.status, 'paid', 'confirmed_payment')) return { outcome: 'not_open' as const, topUp: t };
        if (t.status !== 'open')
          this.o.logger.warn(
            { topUp: t.id, was: t.status, payment: payment.paymentId },
            'payment confirmed for a top-up that was no longer open: crediting it',
          );
        // What was charged (tax included) is kept: refunds and disputes are measured against it.
        await moveTopUp(trx, t.id, t.status, 'paid', { paymentId: payment.paymentId, chargedCents: payment.chargedCents, now });
        await this.o.wallet.creditWithin(
          trx,
          {
            accountId: t.accountId,
            type: 'topup',
            amount: t.amount,
            description: topUpDescription(t, payment.paymentId),
            reference: payment.paymentId,
            idempotencyKey: `topup:${t.processor}:${payment.paymentId}`,
          },
          now,
          effects,
        );
        if (t.bonus > 0n) {
          await this.o.wallet.creditWithin(
            trx,
            {
              accountId: t.accountId,
              type: 'bonus',
              amount: t.bonus,
              description: `Bonus of ${percentText(t.bonusBasisPoints)}% on the ${formatMoney(t.amount)} ${WALLET_CURRENCY} top-up`,
              reference: payment.paymentId,
              idempotencyKey: `bonus:${t.processor}:${payment.paymentId}`,
            },
            now,
            effects,
          );
        }
        if (t.source === 'auto') await finishAutoTopUp(trx, t.accountId, t.id, 'succeeded', now);
        // The receipt (and, for an automatic top-up, its success notice), e-mailed after the commit.
        await this.o.notifier.enqueue(trx, {
          accountId: t.accountId,
          kind: 'receipt',
          dedupeKey: `receipt:${t.id}`,
          payload: {
            top_up_id: t.id,
            source: t.source,
            payment_id: t.processor === 'sandbox' ? null : payment.paymentId,
            amount: formatMoney(t.amount),
            bonus: formatMoney(t.bonus),
            credits: formatMoney(t.amount + t.bonus),
            balance: formatDecimal(effects.at(-1)?.balance ?? 0n),
            currency: WALLET_CURRENCY,
          },
          now,
        });
        if (payment.customerId) await saveCustomer(trx, t.accountId, t.processor, payment.customerId, now);
        const paid: TopUpRecord = { ...t, status: 'paid', paymentId: payment.paymentId, chargedCents: payment.chargedCents ?? null };
        // A refund or dispute that came before this payment's credit is applied now.
        if (reversal && anyReversal(reversal)) await this.applyReversal(trx, paid, reversal, now, effects);
        return {
          outcome: 'credited' as const,
          topUp: { ...t, status: 'paid' as TopUpState, paymentId: payment.paymentId, settledAt: now },
        };
      });
    } catch (e) {
      // The payment id is unique among top-ups and its ledger key unique among transactions: a
      // violation means this payment was credited already (through another top-up row).
      if (isUniqueViolation(e)) {
        this.o.logger.error(
          { err: e, topUp: topUpId, payment: payment.paymentId },
          'payment already credited elsewhere; not credited again',
        );
        return { outcome: 'already_paid', topUp: null };
      }
      throw e;
    }
    this.o.wallet.publish(effects);
    if (result.outcome === 'credited') {
      this.o.logger.info(
        { topUp: topUpId, account: result.topUp?.accountId, payment: payment.paymentId, amount: formatDecimal(result.topUp!.amount) },
        'top-up credited',
      );
    }
    return result;
  }

  /**
   * Marks an open top-up failed. For an automatic top-up, the account's run of failures grows,
   * the customer is notified, and at `maxConsecutiveFailures` automatic top-up is turned off.
   */
  async markFailed(
    topUpId: string,
    failure: { reason: string; paymentId?: string | null },
  ): Promise<{ outcome: FailedOutcome; topUp: TopUpRecord | null }> {
    const now = this.o.now();
    const { db } = this.o;
    const { forUpdate } = db;
    return db.transaction(async (trx) => {
      const t = await lockTopUp(trx, topUpId, forUpdate);
      if (!t) return { outcome: 'unknown' as const, topUp: null };
      if (!canMove(t.status, 'failed')) return { outcome: 'not_open' as const, topUp: t };
      // A failed attempt's payment id is not kept: a later retry of the same top-up may succeed with another.
      await moveTopUp(trx, t.id, t.status, 'failed', { failureReason: failure.reason, now });
      if (t.source === 'auto') {
        await findAutoTopup(trx, t.accountId, forUpdate);
        await finishAutoTopUp(trx, t.accountId, t.id, 'failed', now);
        const settings = await findAutoTopup(trx, t.accountId);
        const failures = settings?.consecutiveFailures ?? 1;
        const turnOff = settings?.enabled && failures >= this.o.maxConsecutiveFailures;
        const payload = {
          top_up_id: t.id,
          amount: formatMoney(t.amount),
          currency: WALLET_CURRENCY,
          reason: failure.reason,
          consecutive_failures: failures,
        };
        if (turnOff) {
          const why = `Turned off after ${failures} failed automatic top-ups in a row; the last: ${failure.reason}`;
          await disableAutoTopup(trx, t.accountId, why, now);
          await this.o.notifier.enqueue(trx, {
            accountId: t.accountId,
            kind: 'auto_topup_disabled',
            dedupeKey: `auto_topup_failed:${t.id}`,
            payload: { ...payload, disabled: true },
            now,
          });
        } else {
          await this.o.notifier.enqueue(trx, {
            accountId: t.accountId,
            kind: 'auto_topup_failed',
            dedupeKey: `auto_topup_failed:${t.id}`,
            payload,
            now,
          });
        }
        this.o.logger.warn(
          { topUp: t.id, account: t.accountId, failures, turnedOff: turnOff, reason: failure.reason },
          'automatic top-up failed',
        );
      }
      return { outcome: 'failed' as const, topUp: { ...t, status: 'failed' as TopUpState, failureReason: failure.reason, settledAt: now } };
    });
  }

  /**
   * A refund or dispute event of a payment. What the processor said is merged into the payment's
   * reversal record first (refunded totals only grow, a dispute goes withdrawn → reinstated), so
   * a repeated, late or out-of-order event changes nothing twice, and one that comes before the
   * event that credits the top-up (a failed delivery retried later, an automatic top-up still
   * processing) is applied when the top-up is credited. Then, when the payment's top-up is paid,
   * its credits are brought to what the payment's reversals call for: `applyReversal`.
   */
  async markReversed(
    paymentId: string,
    processor: ProcessorName,
    news: ReversalNews,
  ): Promise<{ outcome: ReversalOutcome; due: bigint; taken: bigint }> {
    const now = this.o.now();
    const effects: WalletChange[] = [];
    const { db } = this.o;
    const result = await db.transaction(async (trx) => {
      const { before, after } = await mergeReversal(trx, processor, paymentId, news, db.forUpdate, now);
      const found = await findTopUpByPaymentId(trx, paymentId);
      const t = found && (await lockTopUp(trx, found.id, db.forUpdate));
      if (!t || t.processor !== processor) return { outcome: 'unknown' as const, due: 0n, taken: 0n };
      // Another payment of the same top-up (an automatic top-up retried with a new intent) is not this one.
      if (t.status !== 'paid' || t.paymentId !== paymentId) {
        this.o.logger.warn(
          { topUp: t.id, status: t.status, payment: paymentId },
          'a refund or dispute came before its payment credited the top-up: kept, applied when it is credited',
        );
        return { outcome: 'not_paid' as const, due: 0n, taken: 0n };
      }
      if (sameReversal(before, after) && t.refundedCents === after.refundedCents && t.disputeState === after.disputeState)
        return { outcome: 'unchanged' as const, due: 0n, taken: 0n };
      return this.applyReversal(trx, t, after, now, effects);
    });
    this.o.wallet.publish(effects);
    return result;
  }

  /**
   * Brings a paid top-up's credits to what its payment's reversals call for: the credits it bought
   * (bonus included) in the share of the payment gone back to the payer, refunded or disputed
   * (withdrawn, not reinstated), measured against what was charged (tax included). More called for:
   * the growth is taken back, at most what the wallet has available (the balance never goes below
   * zero; what was spent is not collected later). Less (funds reinstated): what was taken beyond
   * the new share is given back, never more than was taken. A dispute that withdraws funds turns
   * automatic top-up off. Inside the caller's transaction, the top-up locked.
   */
  private async applyReversal(
    trx: Queryable,
    t: TopUpRecord,
    r: PaymentReversal,
    now: Date,
    effects: WalletChange[],
  ): Promise<{ outcome: ReversalOutcome; due: bigint; taken: bigint }> {
    const paymentId = t.paymentId!;
    const charged = t.chargedCents ?? r.chargedCents;
    const measure = BigInt(charged && charged > 0 ? charged : Math.max(toCents(t.amount), r.disputeCents ?? 0, 1));
    const disputed = r.disputeState === 'withdrawn' ? BigInt(r.disputeCents ?? Number(measure)) : 0n;
    const returned = minBig(measure, BigInt(r.refundedCents) + disputed);
    const target = (creditsOf(t) * returned) / measure;
    // The money this change concerns: what went back (or came back) since the top-up's last state.
    const wasDisputed = t.disputeState === 'withdrawn' ? BigInt(r.disputeCents ?? Number(measure)) : 0n;
    const before = minBig(measure, BigInt(t.refundedCents) + wasDisputed);
    const paymentAmount = formatDecimal(fromCents(Number(returned > before ? returned - before : before - returned)));
    // Unique to this change (its state is decided by the locked top-up row, not by the key): a key
    // built from the events' facts could come again with other amounts, and a replayed ledger row
    // would then count as taken without taking anything.
    const key = `topup-reversal:${t.processor}:${paymentId}:${t.reversedNanos}>${target}:${randomBase62(10)}`;
    const newlyWithdrawn = r.disputeState === 'withdrawn' && t.disputeState !== 'withdrawn';
    const cause = newlyWithdrawn ? 'dispute' : r.disputeState === 'reinstated' && t.disputeState === 'withdrawn' ? 'reinstated' : 'refund';
    let taken = t.takenBackNanos;
    let forgiven = t.refundForgivenNanos;
    let due = 0n;
    let moved = 0n;
    if (target > t.reversedNanos) {
      due = target - t.reversedNanos;
      const what =
        cause === 'dispute'
          ? `Top-up ${t.id}: payment ${paymentId} disputed, funds withdrawn`
          : `Top-up ${t.id} refunded (${formatMoney(fromCents(Math.max(0, r.refundedCents - t.refundedCents)))} ${WALLET_CURRENCY} of payment ${paymentId})`;
      moved = await this.o.wallet.takeBackWithin(
        trx,
        {
          accountId: t.accountId,
          amount: due,
          describe: (n) =>
            `${what}: ${formatDecimal(n)} ${WALLET_CURRENCY} in credits taken back` +
            (n < due ? ` of ${formatDecimal(due)} due (the rest was already spent)` : ''),
          reference: paymentId,
          idempotencyKey: key,
        },
        now,
        effects,
      );
      taken += moved;
      // A refund's shortfall (credits already spent) stays forgiven; a dispute's goes with it when its funds come back.
      if (r.refundedCents > t.refundedCents) forgiven += due - moved;
    } else if (target < t.reversedNanos) {
      // Funds reinstated (a dispute won or lowered): the credits kept are the new share less what
      // refunds could not take, at most what was taken. So what is given back is what the dispute
      // took beyond the refunds' share: never a refund's take, never a shortfall collected now.
      const owed = target > forgiven ? target - forgiven : 0n;
      moved = -(taken - minBig(taken, owed));
    }
    if (moved < 0n) {
      await this.o.wallet.creditWithin(
        trx,
        {
          accountId: t.accountId,
          type: 'topup',
          amount: -moved,
          description: `Top-up ${t.id}: dispute of payment ${paymentId} closed, funds reinstated: ${formatDecimal(-moved)} ${WALLET_CURRENCY} in credits given back`,
          reference: paymentId,
          idempotencyKey: key,
        },
        now,
        effects,
      );
      taken += moved;
    }
    await recordReversal(
      trx,
      t.id,
      {
        refundedCents: r.refundedCents,
        disputeState: r.disputeState,
        chargedCents: r.chargedCents,
        reversedNanos: target,
        takenBackNanos: taken,
        refundForgivenNanos: forgiven,
      },
      now,
    );
    let autoOff = false;
    if (newlyWithdrawn) {
      const auto = await findAutoTopup(trx, t.accountId, this.o.db.forUpdate);
      autoOff = auto?.enabled === true;
      if (autoOff) await disableAutoTopup(trx, t.accountId, `Turned off: payment ${paymentId} is disputed.`, now);
    }
    if (moved !== 0n || due > 0n || autoOff) {
      await this.o.notifier.enqueue(trx, {
        accountId: t.accountId,
        kind: 'topup_reversed',
        dedupeKey: `topup_reversed:${t.id}:${key}`,
        payload: {
          top_up_id: t.id,
          payment_id: paymentId,
          cause,
          payment_amount: paymentAmount,
          ...(moved < 0n
            ? { credits_given: formatDecimal(-moved) }
            : { credits_due: formatDecimal(due), credits_taken: formatDecimal(moved) }),
          ...(cause === 'dispute' ? { auto_topup_disabled: autoOff } : {}),
          balance: formatDecimal(effects.at(-1)?.balance ?? (await this.o.wallet.balanceOf(trx, t.accountId))),
          currency: WALLET_CURRENCY,
        },
        now,
      });
    }
    if (due > 0n && moved < due)
      this.o.logger.error(
        { topUp: t.id, account: t.accountId, payment: paymentId, due: formatDecimal(due), taken: formatDecimal(moved) },
        'credits due back for a refunded or disputed payment were already spent: only part was taken back',
      );
    else if (moved !== 0n)
      this.o.logger.warn(
        { topUp: t.id, account: t.accountId, payment: paymentId, cause, credits: formatDecimal(moved < 0n ? -moved : moved) },
        moved < 0n ? 'dispute funds reinstated: credits given back' : 'payment refunded or disputed: credits taken back',
      );
    const reinstated = r.disputeState === 'reinstated' && t.disputeState !== 'reinstated';
    const outcome = moved < 0n || reinstated ? 'reinstated' : due > 0n || autoOff || target !== t.reversedNanos ? 'reversed' : 'unchanged';
    return { outcome, due, taken: moved };
  }

  /** Moves an open top-up to expired or canceled (nothing is credited), with the reason shown to the customer, if any. */
  async markClosed(
    topUpId: string,
    to: 'expired' | 'canceled',
    reason?: string,
  ): Promise<{ outcome: ClosedOutcome; topUp: TopUpRecord | null }> {
    const now = this.o.now();
    const { db } = this.o;
    const { forUpdate } = db;
    return db.transaction(async (trx) => {
      const t = await lockTopUp(trx, topUpId, forUpdate);
      if (!t) return { outcome: 'unknown' as const, topUp: null };
      if (!canMove(t.status, to)) return { outcome: 'not_open' as const, topUp: t };
      await moveTopUp(trx, t.id, t.status, to, { failureReason: reason ?? null, now });
      if (t.source === 'auto') await finishAutoTopUp(trx, t.accountId, t.id, 'abandoned', now);
      return { outcome: 'closed' as const, topUp: { ...t, status: to as TopUpState, settledAt: now } };
    });
  }
}

/** The credits a top-up bought: its amount and its bonus. */
function creditsOf(t: TopUpRecord): bigint {
  return t.amount + t.bonus;
}

const minBig = (a: bigint, b: bigint) => (a < b ? a : b);

const sameReversal = (a: PaymentReversal, b: PaymentReversal) =>
  a.refundedCents === b.refundedCents &&
  a.disputeState === b.disputeState &&
  a.disputeCents === b.disputeCents &&
  a.chargedCents === b.chargedCents;

function topUpDescription(t: TopUpRecord, paymentId: string): string {
  const what = t.source === 'auto' ? 'Automatic top-up' : 'Top-up';
  const via = t.processor === 'sandbox' ? 'sandbox test processor, no real money' : `${processorLabel(t.processor)} ${paymentId}`;
  return `${what} of ${formatMoney(t.amount)} ${WALLET_CURRENCY} (${via})`;
}

function processorLabel(name: ProcessorName): string {
  return name === 'stripe' ? 'Stripe' : name;
}
