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
import { canMove, type TopUpState } from './checkout-state.js';
import type { NotifierPort, WalletPort } from './ports.js';
import type { ProcessorName } from './processor.js';
import {
  disableAutoTopup,
  findAutoTopup,
  finishAutoTopUp,
  lockTopUp,
  moveTopUp,
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
    payment: { paymentId: string; customerId?: string | null; requireOpen?: boolean },
  ): Promise<{ outcome: PaidOutcome; topUp: TopUpRecord | null }> {
    const now = this.o.now();
    const effects: WalletChange[] = [];
    const { db } = this.o;
    const { forUpdate } = db;
    let result: { outcome: PaidOutcome; topUp: TopUpRecord | null };
    try {
      result = await db.transaction(async (trx) => {
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
        await moveTopUp(trx, t.id, t.status, 'paid', { paymentId: payment.paymentId, now });
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
   * A paid top-up's payment refunded, in part or whole: the credits it bought, bonus included, in
   * the refunded share, are taken back from the wallet. `refundedCents` is the payment's refunded
   * total (cumulative), so only its growth since the last event takes anything: a repeated, late
   * or out-of-order event takes nothing twice. What the wallet no longer has (spent, or held by
   * calls in flight) is not taken, and not collected later: the balance never goes below zero.
   */
  async markRefunded(
    topUpId: string,
    refund: { paymentId: string; refundedCents: number; chargedCents: number | null },
  ): Promise<{ outcome: ReversalOutcome; due: bigint; taken: bigint }> {
    return this.reverse(topUpId, refund.paymentId, async (trx, t, now, effects) => {
      const measure = BigInt(refund.chargedCents && refund.chargedCents > 0 ? refund.chargedCents : toCents(t.amount));
      const share = (cents: number) => (creditsOf(t) * minBig(BigInt(cents), measure)) / measure;
      if (refund.refundedCents <= t.refundedCents) return null;
      // Never more than the credits not yet taken back (a dispute's withdrawal took some).
      const disputed = t.disputeState === 'withdrawn' ? t.disputeNanos : 0n;
      const due = maxBig(
        0n,
        minBig(share(refund.refundedCents) - share(t.refundedCents), creditsOf(t) - share(t.refundedCents) - disputed),
      );
      const refundedNow = fromCents(Number(minBig(BigInt(refund.refundedCents), measure) - minBig(BigInt(t.refundedCents), measure)));
      const taken = await this.takeBack(trx, t, now, effects, {
        due,
        what: `Top-up ${t.id} refunded (${formatMoney(refundedNow)} ${WALLET_CURRENCY} of payment ${refund.paymentId})`,
        paymentId: refund.paymentId,
        idempotencyKey: `topup-refund:${t.processor}:${refund.paymentId}:${refund.refundedCents}`,
      });
      await recordReversal(trx, t.id, { refundedCents: refund.refundedCents }, now);
      return {
        outcome: 'reversed',
        due,
        taken,
        dedupeKey: `topup_reversed:${t.id}:refund:${refund.refundedCents}`,
        payload: {
          cause: 'refund',
          payment_amount: formatDecimal(refundedNow),
          credits_due: formatDecimal(due),
          credits_taken: formatDecimal(taken),
        },
        notify: due > 0n,
      };
    });
  }

  /**
   * A dispute on a paid top-up's payment. Funds withdrawn: the credits the disputed share bought
   * are taken back (at most what the wallet has available) and automatic top-up is turned off (the
   * card's owner is disputing its charges). Funds reinstated (the dispute won): exactly what was
   * taken back is given back. Each happens once per top-up, whichever order the events come in
   * (funds reinstated before withdrawn: nothing is taken).
   */
  async markDisputed(
    topUpId: string,
    dispute: { paymentId: string; disputeId: string; funds: 'withdrawn' | 'reinstated'; amountCents: number | null },
  ): Promise<{ outcome: ReversalOutcome; due: bigint; taken: bigint }> {
    return this.reverse(topUpId, dispute.paymentId, async (trx, t, now, effects) => {
      if (dispute.funds === 'reinstated') {
        if (t.disputeState === 'reinstated') return null;
        const given = t.disputeState === 'withdrawn' ? t.disputeNanos : 0n;
        if (given > 0n)
          await this.o.wallet.creditWithin(
            trx,
            {
              accountId: t.accountId,
              type: 'topup',
              amount: given,
              description: `Top-up ${t.id}: dispute of payment ${dispute.paymentId} closed, funds reinstated: ${formatDecimal(given)} ${WALLET_CURRENCY} in credits given back`,
              reference: dispute.paymentId,
              idempotencyKey: `topup-reinstated:${t.processor}:${dispute.disputeId}`,
            },
            now,
            effects,
          );
        await recordReversal(trx, t.id, { dispute: { state: 'reinstated', nanos: t.disputeNanos } }, now);
        return {
          outcome: 'reinstated',
          due: 0n,
          taken: -given,
          dedupeKey: `topup_reversed:${t.id}:dispute:${dispute.disputeId}:reinstated`,
          payload: {
            cause: 'reinstated',
            payment_amount: formatMoney(dispute.amountCents === null ? t.amount : fromCents(dispute.amountCents)),
            credits_given: formatDecimal(given),
          },
          notify: given > 0n,
        };
      }
      if (t.disputeState !== null) return null;
      const amountCents = BigInt(dispute.amountCents ?? toCents(t.amount));
      const measure = maxBig(BigInt(toCents(t.amount)), amountCents);
      const refundedShare = (creditsOf(t) * minBig(BigInt(t.refundedCents), measure)) / measure;
      const due = maxBig(0n, minBig((creditsOf(t) * amountCents) / measure, creditsOf(t) - refundedShare));
      const taken = await this.takeBack(trx, t, now, effects, {
        due,
        what: `Top-up ${t.id}: payment ${dispute.paymentId} disputed, funds withdrawn`,
        paymentId: dispute.paymentId,
        idempotencyKey: `topup-dispute:${t.processor}:${dispute.disputeId}`,
      });
      await recordReversal(trx, t.id, { dispute: { state: 'withdrawn', nanos: taken } }, now);
      const auto = await findAutoTopup(trx, t.accountId, this.o.db.forUpdate);
      const autoOff = auto?.enabled === true;
      if (autoOff) await disableAutoTopup(trx, t.accountId, `Turned off: payment ${dispute.paymentId} is disputed.`, now);
      return {
        outcome: 'reversed',
        due,
        taken,
        dedupeKey: `topup_reversed:${t.id}:dispute:${dispute.disputeId}:withdrawn`,
        payload: {
          cause: 'dispute',
          payment_amount: formatMoney(fromCents(Number(amountCents))),
          credits_due: formatDecimal(due),
          credits_taken: formatDecimal(taken),
          auto_topup_disabled: autoOff,
        },
        notify: due > 0n || autoOff,
      };
    });
  }

  /** Takes up to `due` back from the top-up's wallet (never below zero), its row saying what and how much of it. */
  private async takeBack(
    trx: Queryable,
    t: TopUpRecord,
    now: Date,
    effects: WalletChange[],
    take: { due: bigint; what: string; paymentId: string; idempotencyKey: string },
  ): Promise<bigint> {
    if (take.due === 0n) return 0n;
    return this.o.wallet.takeBackWithin(
      trx,
      {
        accountId: t.accountId,
        amount: take.due,
        describe: (n) =>
          `${take.what}: ${formatDecimal(n)} ${WALLET_CURRENCY} in credits taken back` +
          (n < take.due ? ` of ${formatDecimal(take.due)} due (the rest was already spent)` : ''),
        reference: take.paymentId,
        idempotencyKey: take.idempotencyKey,
      },
      now,
      effects,
    );
  }

  /**
   * The frame of a reversal: the top-up locked, checked paid by this payment, the change made by
   * `apply` (null: nothing to do), the customer's notice written with it, the wallet's changes
   * published after the commit.
   */
  private async reverse(
    topUpId: string,
    paymentId: string,
    apply: (
      trx: Queryable,
      t: TopUpRecord,
      now: Date,
      effects: WalletChange[],
    ) => Promise<{
      outcome: ReversalOutcome;
      due: bigint;
      taken: bigint;
      dedupeKey: string;
      payload: Record<string, unknown>;
      notify?: boolean;
    } | null>,
  ): Promise<{ outcome: ReversalOutcome; due: bigint; taken: bigint }> {
    const now = this.o.now();
    const effects: WalletChange[] = [];
    const { db } = this.o;
    const result = await db.transaction(async (trx) => {
      const t = await lockTopUp(trx, topUpId, db.forUpdate);
      if (!t) return { outcome: 'unknown' as const, due: 0n, taken: 0n };
      if (t.status !== 'paid' || t.paymentId !== paymentId) {
        this.o.logger.error(
          { topUp: t.id, status: t.status, paid: t.paymentId, payment: paymentId },
          'a refund or dispute names a payment that did not pay this top-up: nothing taken back',
        );
        return { outcome: 'not_paid' as const, due: 0n, taken: 0n };
      }
      const change = await apply(trx, t, now, effects);
      if (!change) return { outcome: 'unchanged' as const, due: 0n, taken: 0n };
      if (change.notify !== false)
        await this.o.notifier.enqueue(trx, {
          accountId: t.accountId,
          kind: 'topup_reversed',
          dedupeKey: change.dedupeKey,
          payload: {
            top_up_id: t.id,
            payment_id: paymentId,
            ...change.payload,
            balance: formatDecimal(effects.at(-1)?.balance ?? (await this.o.wallet.balanceOf(trx, t.accountId))),
            currency: WALLET_CURRENCY,
          },
          now,
        });
      if (change.taken < change.due)
        this.o.logger.error(
          { topUp: t.id, account: t.accountId, payment: paymentId, due: formatDecimal(change.due), taken: formatDecimal(change.taken) },
          'credits due back for a refunded or disputed payment were already spent: only part was taken back',
        );
      else
        this.o.logger.warn(
          {
            topUp: t.id,
            account: t.accountId,
            payment: paymentId,
            outcome: change.outcome,
            credits: formatDecimal(change.taken < 0n ? -change.taken : change.taken),
          },
          change.outcome === 'reinstated'
            ? 'dispute funds reinstated: credits given back'
            : 'payment refunded or disputed: credits taken back',
        );
      return { outcome: change.outcome, due: change.due, taken: change.taken };
    });
    this.o.wallet.publish(effects);
    return result;
  }

  /** Moves an open top-up to expired or canceled (nothing is credited). */
  async markClosed(topUpId: string, to: 'expired' | 'canceled'): Promise<{ outcome: ClosedOutcome; topUp: TopUpRecord | null }> {
    const now = this.o.now();
    const { db } = this.o;
    const { forUpdate } = db;
    return db.transaction(async (trx) => {
      const t = await lockTopUp(trx, topUpId, forUpdate);
      if (!t) return { outcome: 'unknown' as const, topUp: null };
      if (!canMove(t.status, to)) return { outcome: 'not_open' as const, topUp: t };
      await moveTopUp(trx, t.id, t.status, to, { now });
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
const maxBig = (a: bigint, b: bigint) => (a > b ? a : b);

function topUpDescription(t: TopUpRecord, paymentId: string): string {
  const what = t.source === 'auto' ? 'Automatic top-up' : 'Top-up';
  const via = t.processor === 'sandbox' ? 'sandbox test processor, no real money' : `${processorLabel(t.processor)} ${paymentId}`;
  return `${what} of ${formatMoney(t.amount)} ${WALLET_CURRENCY} (${via})`;
}

function processorLabel(name: ProcessorName): string {
  return name === 'stripe' ? 'Stripe' : name;
}
