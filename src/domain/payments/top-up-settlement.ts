// Where a top-up's outcome is written, once: a payment becomes credits (the `topup` row keyed by
// the processor's payment id, then the `bonus` row) in ONE database transaction with the top-up's
// move to `paid`; a failure, an expiry or a cancellation is a conditional move that only the first
// caller wins. Duplicate, concurrent, late and out-of-order callbacks all come through here: the
// top-up row's lock serialises them and its state tells the later ones there is nothing left to do
// (with the ledger's unique idempotency key as the last line of defence).
import type { Logger } from '../../logger.js';
import { formatDecimal, WALLET_CURRENCY } from '../billing/money.js';
import { isUniqueViolation, type BillingDatabase } from '../billing/sql.js';
import type { WalletChange } from '../billing/wallet-events.js';
import { formatMoney, percentText } from './amounts.js';
import { canMove, type TopUpState } from './checkout-state.js';
import type { NotifierPort, WalletPort } from './ports.js';
import type { ProcessorName } from './processor.js';
import { disableAutoTopup, findAutoTopup, finishAutoTopUp, lockTopUp, moveTopUp, saveCustomer, type TopUpRecord } from './top-up-store.js';

export type PaidOutcome = 'credited' | 'already_paid' | 'not_open' | 'unknown';
export type FailedOutcome = 'failed' | 'not_open' | 'unknown';
export type ClosedOutcome = 'closed' | 'not_open' | 'unknown';

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

function topUpDescription(t: TopUpRecord, paymentId: string): string {
  const what = t.source === 'auto' ? 'Automatic top-up' : 'Top-up';
  const via = t.processor === 'sandbox' ? 'sandbox test processor, no real money' : `${processorLabel(t.processor)} ${paymentId}`;
  return `${what} of ${formatMoney(t.amount)} ${WALLET_CURRENCY} (${via})`;
}

function processorLabel(name: ProcessorName): string {
  return name === 'stripe' ? 'Stripe' : name;
}
