// Wallet top-ups through a hosted checkout: the amount rules and the bonus shown before paying,
// the Idempotency-Key of POST /v1/wallet/top-up, the sandbox page's Pay and Cancel, and the
// processor's events (Stripe webhooks), each ending in TopUpSettlement, which credits once.
//
// A top-up's row is committed BEFORE the processor hears of it (its id travels in the processor's
// metadata and client_reference_id), so no event can name a checkout we have not stored; an event
// may still arrive before the processor's answer to our create call, and is matched by our id.
import { createHash } from 'node:crypto';
import type { Logger } from '../../logger.js';
import { DomainError } from '../errors.js';
import { newId } from '../ids.js';
import { formatDecimal, WALLET_CURRENCY } from '../billing/money.js';
import { isUniqueViolation, type BillingDatabase } from '../billing/sql.js';
import {
  formatMoney,
  fromCents,
  parseTopUpAmount,
  percentText,
  quoteTopUp,
  toCents,
  topUpTerms,
  type BonusTable,
  type TopUpQuote,
  type TopUpTerms,
} from './amounts.js';
import { isTopUpState, type TopUpState } from './checkout-state.js';
import {
  ProcessorError,
  WebhookSignatureError,
  type CheckoutRef,
  type PaymentEvent,
  type PaymentProcessor,
  type ProcessorName,
  type WebhookVerifier,
} from './processor.js';
import { sandboxPaymentId } from './sandbox-processor.js';
import type { ReversalOutcome, TopUpSettlement } from './top-up-settlement.js';
import {
  findCustomer,
  findTopUp,
  findTopUpByIdempotencyKey,
  findTopUpByPaymentId,
  findTopUpsByPaymentIds,
  findTopUpByProcessorCheckoutId,
  insertTopUp,
  listTopUps,
  openCheckoutsExpiredBy,
  moveTopUp,
  recordCheckoutCreated,
  recordFailureReason,
  recordProcessorCheckoutId,
  saveCustomer,
  type DisputeState,
  type TopUpRecord,
} from './top-up-store.js';

/** A top-up as the doors show it. */
export interface TopUpView {
  id: string;
  source: 'checkout' | 'auto';
  processor: ProcessorName;
  status: TopUpState;
  amount: bigint;
  bonus: bigint;
  /** e.g. "10" or "12.5" (percent). */
  bonusPercent: string;
  credits: bigint;
  currency: string;
  checkoutUrl: string | null;
  failureReason: string | null;
  createdAt: Date;
  expiresAt: Date | null;
  settledAt: Date | null;
  /** Of the payment, what the processor reports refunded (its credits taken back). */
  refunded: bigint;
  /** A dispute of the payment: its funds withdrawn, or reinstated (the dispute won); null: none. */
  dispute: DisputeState | null;
}

export function topUpView(t: TopUpRecord): TopUpView {
  return {
    id: t.id,
    source: t.source,
    processor: t.processor,
    status: t.status,
    amount: t.amount,
    bonus: t.bonus,
    bonusPercent: percentText(t.bonusBasisPoints),
    credits: t.amount + t.bonus,
    currency: t.currency,
    checkoutUrl: t.checkoutUrl,
    failureReason: t.failureReason,
    createdAt: t.createdAt,
    expiresAt: t.expiresAt,
    settledAt: t.settledAt,
    refunded: fromCents(t.refundedCents),
    dispute: t.disputeState,
  };
}

export interface PaymentsOptions {
  /** Billing's database: payments' transactions share its transaction runner (and, on SQLite, its group commit). */
  db: BillingDatabase;
  processor: PaymentProcessor;
  /** The processor's webhook verifier (Stripe); null when it does not call back. */
  webhooks: WebhookVerifier | null;
  settlement: TopUpSettlement;
  bonusTable: BonusTable;
  /** Where larger top-ups are arranged (payments.sales_contact as a mailto: or https: URL), or null. */
  salesContact?: string | null;
  /** The address clients reach, read on each use (known once the server listens). */
  publicUrl: () => string;
  /** Where the processor sends the customer after paying / canceling; `{CHECKOUT_ID}` is replaced. Default: our status page. */
  successUrl: string | null;
  cancelUrl: string | null;
  /** How long a checkout stays payable (Stripe accepts 30 minutes to 24 hours). */
  checkoutTtlSeconds: number;
  /** The customer's way back from the status page (payments.return_url); default: the dashboard's top-up result page on PUBLIC_URL. */
  returnUrl?: string | null;
  /** The wallet's balance, shown on the status page once a top-up is paid. */
  walletBalance?: (accountId: string) => Promise<bigint>;
  logger: Logger;
  now?: () => Date;
}

export const MAX_IDEMPOTENCY_KEY_LENGTH = 255;
const IDEMPOTENCY_KEY = /^[\x21-\x7e]+$/;
const LIST_LIMIT = { default: 50, max: 200 } as const;

export type EventOutcome =
  | 'credited'
  | 'already_paid'
  | 'pending'
  | 'failed'
  | 'expired'
  | 'unchanged'
  | 'unknown_checkout'
  | 'mismatch'
  | 'amount_mismatch'
  | 'reversed'
  | 'reinstated'
  | 'ignored';

/** How long after a top-up is paid its status page shows the wallet's balance. */
const BALANCE_SHOWN_MS = 15 * 60_000;

export class PaymentsService {
  readonly processorName: ProcessorName;
  readonly simulated: boolean;
  private readonly now: () => Date;

  constructor(private readonly o: PaymentsOptions) {
    this.processorName = o.processor.name;
    this.simulated = o.processor.simulated;
    this.now = o.now ?? (() => new Date());
  }

  get bonusTable(): BonusTable {
    return this.o.bonusTable;
  }

  /** The rules of a self-serve top-up: the amounts, the bonus table and where to arrange more. */
  terms(): TopUpTerms {
    return topUpTerms(this.o.bonusTable, this.o.salesContact ?? null);
  }

  /** What a top-up of `amount` would add, bonus included, before anything is created. */
  quote(amount: unknown): TopUpQuote {
    return quoteTopUp(parseTopUpAmount(amount, 'amount', this.o.salesContact ?? null), this.o.bonusTable);
  }

  /**
   * Starts a top-up: checks the amount, stores the top-up (open), and asks the processor for its
   * hosted checkout. With an idempotency key, the same key and amount return the same checkout
   * (retrying the processor if the first try failed); the same key with another amount is refused
   * with 422.
   */
  async startCheckout(input: {
    accountId: string;
    email: string;
    amount: unknown;
    /** The currency the customer means to pay in; only the wallet's (any case), when given. */
    currency?: string | null;
    idempotencyKey?: string | null;
  }): Promise<TopUpView> {
    if (input.currency != null && input.currency.toUpperCase() !== WALLET_CURRENCY)
      throw new DomainError(
        'invalid_value',
        `Top-ups are paid in ${WALLET_CURRENCY}, the wallet's currency; got '${input.currency.slice(0, 20)}'. Leave 'currency' out or send '${WALLET_CURRENCY.toLowerCase()}'.`,
        { param: 'currency' },
      );
    const amount = parseTopUpAmount(input.amount, 'amount', this.o.salesContact ?? null);
    const key = validIdempotencyKey(input.idempotencyKey);
    const quote = quoteTopUp(amount, this.o.bonusTable);
    // The body as it matters: the amount in its exact decimal form (10 and 10.00 are one body).
    const requestHash = key
      ? createHash('sha256')
          .update(JSON.stringify({ amount: formatDecimal(amount) }))
          .digest('hex')
      : null;
    const { db } = this.o;
    const now = this.now();

    let topUp = key ? await findTopUpByIdempotencyKey(db, input.accountId, key) : null;
    if (!topUp) {
      const id = newId('chk');
      try {
        await insertTopUp(db, {
          id,
          accountId: input.accountId,
          source: 'checkout',
          processor: this.o.processor.name,
          amount,
          bonus: quote.bonus,
          bonusBasisPoints: quote.bonusBasisPoints,
          currency: WALLET_CURRENCY,
          idempotencyKey: key,
          requestHash,
          expiresAt: this.firstExpiry(now),
          now,
        });
        topUp = await findTopUp(db, id);
      } catch (e) {
        // A concurrent request with the same key stored its top-up first: answer as its twin.
        if (!key || !isUniqueViolation(e)) throw e;
        topUp = await findTopUpByIdempotencyKey(db, input.accountId, key);
      }
      if (!topUp) throw new Error('top-up vanished after insert');
    }
    if (key && topUp.requestHash !== requestHash) {
      throw new DomainError(
        'idempotency_key_reused',
        `This Idempotency-Key was already used with a different amount (${formatMoney(topUp.amount)} ${topUp.currency}); use a new key for a new top-up.`,
        { param: 'Idempotency-Key' },
      );
    }
    if (!topUp.checkoutUrl && topUp.status === 'expired' && key) throw neverOpened();
    if (topUp.checkoutUrl || topUp.status !== 'open') return topUpView(topUp);
    // A retry of a checkout the processor did not open: it is asked again with the very request
    // it may have seen (the same idempotency key and expiry; Stripe refuses the same key with other
    // parameters). An expiry too near for the processor to accept can only be closed: the
    // customer starts a new top-up under a new key.
    if (!this.sendable(topUp, now)) {
      await this.o.settlement.markClosed(topUp.id, 'expired', NEVER_OPENED_REASON);
      throw neverOpened();
    }
    return topUpView(await this.openAtProcessor(topUp, input.email, key !== null));
  }

  /**
   * A new checkout's expiry: the configured time from now, but never so near that the processor
   * (Stripe: 30 minutes from its call) would refuse it. payments.checkout_expires_after_minutes is
   * at most 24 hours, Stripe's longest.
   */
  private firstExpiry(now: Date): Date {
    const lead = this.o.processor.checkoutMinimumLeadMs;
    return new Date(now.getTime() + Math.max(this.o.checkoutTtlSeconds * 1000, lead > 0 ? lead + 60_000 : 0));
  }

  /** Whether a stored expiry may still be sent to the processor. */
  private sendable(t: TopUpRecord, now: Date): boolean {
    return t.expiresAt !== null && t.expiresAt.getTime() - now.getTime() > this.o.processor.checkoutMinimumLeadMs;
  }

  /** Asks the processor for the checkout of a stored top-up (idempotent per top-up id). */
  private async openAtProcessor(topUp: TopUpRecord, email: string, retryable: boolean): Promise<TopUpRecord> {
    const { db } = this.o;
    const processor = this.o.processor;
    try {
      let customerId = await findCustomer(db, topUp.accountId, processor.name);
      if (!customerId) {
        customerId = await processor.ensureCustomer(topUp.accountId, email);
        if (customerId) await saveCustomer(db, topUp.accountId, processor.name, customerId, this.now());
        // Two first checkouts racing: keep whichever customer was recorded first.
        customerId = (await findCustomer(db, topUp.accountId, processor.name)) ?? customerId;
      }
      const created = await processor.createCheckout({
        topUpId: topUp.id,
        accountId: topUp.accountId,
        email,
        amountCents: toCents(topUp.amount),
        currency: topUp.currency.toLowerCase(),
        description: describeTopUp(topUp),
        customerId,
        successUrl: this.returnUrl(this.o.successUrl, topUp.id),
        cancelUrl: this.returnUrl(this.o.cancelUrl, topUp.id),
        expiresAt: topUp.expiresAt ?? this.firstExpiry(this.now()),
      });
      await recordCheckoutCreated(db, topUp.id, { ...created, now: this.now() });
      if (created.customerId && created.customerId !== customerId)
        await saveCustomer(db, topUp.accountId, processor.name, created.customerId, this.now());
    } catch (e) {
      this.o.logger.error({ err: e, topUp: topUp.id, account: topUp.accountId }, 'the payment processor could not open a checkout');
      if (!(e instanceof ProcessorError)) throw e;
      // Without an idempotency key nobody can come back for this checkout: it failed. With one,
      // it stays open and a retry with the same key asks the processor again.
      if (!retryable)
        await moveTopUp(db, topUp.id, 'open', 'failed', {
          failureReason: 'The payment processor could not open the checkout.',
          now: this.now(),
        });
      throw new DomainError(
        'payment_processor_error',
        `The payment processor could not open the checkout; please try again${retryable ? ' with the same Idempotency-Key' : ''}.`,
      );
    }
    const stored = await findTopUp(db, topUp.id);
    if (!stored) throw new Error('top-up vanished');
    return stored;
  }

  /** Where the customer goes after paying (`success`) or canceling (`cancel`) a checkout. */
  afterCheckoutUrl(kind: 'success' | 'cancel', topUpId: string): string {
    return this.returnUrl(kind === 'success' ? this.o.successUrl : this.o.cancelUrl, topUpId);
  }

  private returnUrl(template: string | null, topUpId: string): string {
    const base = template ?? `${this.o.publicUrl().replace(/\/+$/, '')}/checkout/{CHECKOUT_ID}`;
    return base.replaceAll('{CHECKOUT_ID}', encodeURIComponent(topUpId));
  }

  /** A top-up for its status page, with the wallet's balance once it is paid (null before). */
  async checkoutStatus(id: string): Promise<{ topUp: TopUpView; balance: bigint | null }> {
    const found = await findTopUp(this.o.db, id);
    if (!found) throw topUpNotFound(id);
    const t = await this.expireIfDue(found);
    // The page needs no sign-in (its address is the key, and Stripe's success_url): the wallet's
    // balance is shown on the return from paying only, not to whoever opens the link later.
    const fresh = t.status === 'paid' && t.settledAt !== null && this.now().getTime() - t.settledAt.getTime() < BALANCE_SHOWN_MS;
    const balance = fresh && this.o.walletBalance ? await this.o.walletBalance(t.accountId) : null;
    return { topUp: topUpView(t), balance };
  }

  /** Where the status page links back to. */
  get backUrl(): string {
    return this.o.returnUrl ?? `${this.o.publicUrl().replace(/\/+$/, '')}/dashboard/top-up/return`;
  }

  /**
   * The way back from one checkout's status page: the dashboard's result page for that top-up
   * (`?top_up=` its id), or payments.return_url with its `{CHECKOUT_ID}` filled in.
   */
  backUrlFor(topUpId: string): string {
    if (this.o.returnUrl) return this.returnUrl(this.o.returnUrl, topUpId);
    return `${this.backUrl}?top_up=${encodeURIComponent(topUpId)}`;
  }

  /** One of an account's top-ups; null when it has none of that id. */
  async findTopUpOf(accountId: string, id: string): Promise<TopUpView | null> {
    const t = await findTopUp(this.o.db, id);
    return t && t.accountId === accountId ? topUpView(await this.expireIfDue(t)) : null;
  }

  async getTopUp(id: string): Promise<TopUpView> {
    const t = await findTopUp(this.o.db, id);
    if (!t) throw topUpNotFound(id);
    return topUpView(await this.expireIfDue(t));
  }

  /**
   * The top-up each payment paid, in the order asked (null for a reference that is no payment of
   * a top-up): what a ledger page's top-up and bonus credits point at, in one query.
   */
  async topUpsByPaymentIds(paymentIds: readonly string[]): Promise<(TopUpView | null)[]> {
    const byPayment = new Map((await findTopUpsByPaymentIds(this.o.db, [...new Set(paymentIds)])).map((t) => [t.paymentId, topUpView(t)]));
    return paymentIds.map((id) => byPayment.get(id) ?? null);
  }

  /** An account's top-ups, newest first. */
  async listTopUps(accountId: string, opts: { limit?: number | null; status?: string | null } = {}): Promise<TopUpView[]> {
    return (await this.pageTopUps(accountId, opts)).topUps;
  }

  /** A page of an account's top-ups, newest first, after the top-up id `after` (a cursor). */
  async pageTopUps(
    accountId: string,
    opts: { limit?: number | null; status?: string | null; after?: string | null } = {},
  ): Promise<{ topUps: TopUpView[]; hasMore: boolean }> {
    const limit = opts.limit ?? LIST_LIMIT.default;
    if (!Number.isInteger(limit) || limit < 1 || limit > LIST_LIMIT.max) {
      throw new DomainError('invalid_value', `'limit' must be an integer from 1 to ${LIST_LIMIT.max}; got ${limit}.`, { param: 'limit' });
    }
    if (opts.status != null && !isTopUpState(opts.status))
      throw new DomainError('invalid_value', `'status' must be one of open, paid, expired, canceled, failed.`, { param: 'status' });
    let after: { createdAt: Date; id: string } | null = null;
    if (opts.after) {
      const cursor = await findTopUp(this.o.db, opts.after);
      if (!cursor || cursor.accountId !== accountId)
        throw new DomainError('invalid_value', `'after' must be the id of one of the account's top-ups.`, { param: 'after' });
      after = { createdAt: cursor.createdAt, id: cursor.id };
    }
    // A checkout past its expiry is shown expired, and listed under that state, from then on.
    for (const t of await openCheckoutsExpiredBy(this.o.db, accountId, this.now())) await this.expireIfDue(t);
    const found = await listTopUps(this.o.db, accountId, { limit: limit + 1, status: opts.status ?? null, after });
    return { topUps: found.slice(0, limit).map(topUpView), hasMore: found.length > limit };
  }

  // ---------------------------------------------------------------------------------------------
  // The sandbox's checkout page: anyone with the link (an unguessable id) may pay or cancel, as
  // with a processor's hosted page.

  /** The sandbox checkout behind a page; an open one past its expiry becomes expired here. */
  async getSandboxCheckout(id: string): Promise<TopUpView> {
    const t = await this.sandboxTopUp(id);
    return topUpView(await this.expireIfDue(t));
  }

  /** The Pay button: credits the top-up (once; paying twice answers the paid top-up). */
  async completeSandboxCheckout(id: string): Promise<TopUpView> {
    const t = await this.expireIfDue(await this.sandboxTopUp(id));
    if (t.status === 'paid') return topUpView(t);
    if (t.status !== 'open') throw notOpen(t);
    const { outcome, topUp } = await this.o.settlement.markPaid(t.id, { paymentId: sandboxPaymentId(t.id), requireOpen: true });
    if (outcome === 'not_open' && topUp) throw notOpen(topUp);
    return this.getTopUp(t.id);
  }

  /** The Cancel button: nothing is credited; canceling twice answers the canceled top-up. */
  async cancelSandboxCheckout(id: string): Promise<TopUpView> {
    const t = await this.expireIfDue(await this.sandboxTopUp(id));
    if (t.status === 'canceled') return topUpView(t);
    if (t.status !== 'open') throw notOpen(t);
    const { outcome, topUp } = await this.o.settlement.markClosed(t.id, 'canceled');
    if (outcome === 'not_open' && topUp && topUp.status !== 'canceled') throw notOpen(topUp);
    return this.getTopUp(t.id);
  }

  private async sandboxTopUp(id: string): Promise<TopUpRecord> {
    const t = await findTopUp(this.o.db, id);
    if (t?.processor !== 'sandbox' || t.source !== 'checkout') throw topUpNotFound(id);
    return t;
  }

  /**
   * An open checkout past its expiry becomes expired when it is read (a payment the processor
   * confirms afterwards is still credited: expired is not final for a payment).
   */
  private async expireIfDue(t: TopUpRecord): Promise<TopUpRecord> {
    if (t.status !== 'open' || t.source !== 'checkout' || !t.expiresAt || t.expiresAt.getTime() > this.now().getTime()) return t;
    await this.o.settlement.markClosed(t.id, 'expired', t.checkoutUrl ? undefined : NEVER_OPENED_REASON);
    return (await findTopUp(this.o.db, t.id)) ?? t;
  }

  // ---------------------------------------------------------------------------------------------
  // Processor events.

  /**
   * A webhook delivery: verified against the raw body (a bad signature changes nothing and is a
   * 400 invalid_signature), then applied. Unknown checkouts are acknowledged and logged.
   */
  async handleWebhook(rawBody: Buffer, signatureHeader: string | undefined): Promise<{ eventId: string; outcome: EventOutcome }> {
    if (!this.o.webhooks) throw new DomainError('not_found', `The ${this.o.processor.name} processor takes no webhooks.`);
    let event: PaymentEvent;
    try {
      event = this.o.webhooks.parseWebhook(rawBody, signatureHeader);
    } catch (e) {
      if (e instanceof WebhookSignatureError)
        throw new DomainError('invalid_signature', `Webhook signature verification failed: ${e.message}`);
      throw e;
    }
    return { eventId: event.eventId, outcome: await this.applyEvent(event) };
  }

  /** Applies one verified processor event; safe to repeat, in any order, concurrently. */
  async applyEvent(event: PaymentEvent): Promise<EventOutcome> {
    const log = this.o.logger.child({ event: event.eventId, kind: event.kind });
    switch (event.kind) {
      case 'ignored':
        if (event.malformed)
          log.error(
            { type: event.type },
            'payment event ignored: its object is not what the processor sends (a payment in it is not credited)',
          );
        else log.debug({ type: event.type }, 'payment event ignored');
        return 'ignored';
      case 'checkout_paid': {
        const t = await this.checkoutOf(event.ref, log);
        if (!t) return 'unknown_checkout';
        if (t.status !== 'paid' && (await this.refuseShortPayment(t, event, log))) return 'amount_mismatch';
        const { outcome } = await this.o.settlement.markPaid(t.id, {
          paymentId: event.paymentId,
          customerId: event.customerId,
          chargedCents: event.amountCents,
        });
        return outcome === 'credited' ? 'credited' : outcome === 'unknown' ? 'unknown_checkout' : 'already_paid';
      }
      case 'checkout_pending': {
        const t = await this.checkoutOf(event.ref, log);
        if (!t) return 'unknown_checkout';
        if (event.customerId) await saveCustomer(this.o.db, t.accountId, t.processor, event.customerId, this.now());
        log.info({ topUp: t.id }, 'checkout submitted; waiting for its payment');
        return 'pending';
      }
      case 'checkout_failed': {
        const t = await this.checkoutOf(event.ref, log);
        if (!t) return 'unknown_checkout';
        const { outcome } = await this.o.settlement.markFailed(t.id, { reason: event.reason });
        return outcome === 'failed' ? 'failed' : 'unchanged';
      }
      case 'checkout_expired': {
        const t = await this.checkoutOf(event.ref, log);
        if (!t) return 'unknown_checkout';
        const { outcome } = await this.o.settlement.markClosed(t.id, 'expired');
        return outcome === 'closed' ? 'expired' : 'unchanged';
      }
      case 'payment_succeeded': {
        const t = await this.topUpOfPayment(event.topUpId, event.accountId, event.paymentId, log);
        if (!t) return 'unknown_checkout';
        if (t.status !== 'paid' && (await this.refuseShortPayment(t, event, log))) return 'amount_mismatch';
        const { outcome } = await this.o.settlement.markPaid(t.id, { paymentId: event.paymentId, chargedCents: event.amountCents });
        return outcome === 'credited' ? 'credited' : outcome === 'unknown' ? 'unknown_checkout' : 'already_paid';
      }
      case 'payment_failed': {
        const t = await this.topUpOfPayment(event.topUpId, event.accountId, event.paymentId, log);
        if (!t) return 'unknown_checkout';
        // At a checkout the customer may try another card: only the session's own events end it.
        if (t.source !== 'auto') return 'unchanged';
        const { outcome } = await this.o.settlement.markFailed(t.id, { reason: event.reason, paymentId: event.paymentId });
        return outcome === 'failed' ? 'failed' : 'unchanged';
      }
      // Kept even when the payment's top-up is not known or not paid yet: applied when it is credited.
      case 'payment_refunded': {
        const { outcome } = await this.o.settlement.markReversed(event.paymentId, this.o.processor.name, {
          kind: 'refund',
          refundedCents: event.refundedCents,
          chargedCents: event.chargedCents,
        });
        if (outcome === 'unknown')
          log.warn({ payment: event.paymentId }, 'refund of a payment no top-up has (yet): kept, applied if one is credited with it');
        return reversalOutcome(outcome);
      }
      case 'payment_disputed': {
        const { outcome } = await this.o.settlement.markReversed(event.paymentId, this.o.processor.name, {
          kind: 'dispute',
          disputeId: event.disputeId,
          funds: event.funds,
          amountCents: event.amountCents,
        });
        if (outcome === 'unknown')
          log.warn({ payment: event.paymentId }, 'dispute of a payment no top-up has (yet): kept, applied if one is credited with it');
        return reversalOutcome(outcome);
      }
    }
  }

  /**
   * A payment that brought less than the top-up's amount, or another currency (a promotion code or
   * a payment made outside tollgate's checkout, carrying its ids): the top-up is marked failed with
   * the reason and nothing is credited, so no credits are made from money that was not received;
   * the operator refunds the payment or credits it by hand (`tollgate wallet credit`). More than the
   * amount (tax added by the processor) credits the top-up as quoted. Returns true when refused.
   */
  private async refuseShortPayment(
    t: TopUpRecord,
    paid: { amountCents: number | null; currency: string | null; paymentId: string },
    log: Logger,
  ): Promise<boolean> {
    const expected = toCents(t.amount);
    const currency = (paid.currency ?? '').toUpperCase();
    const sameCurrency = currency === t.currency.toUpperCase();
    // Without an amount the event can still name another currency (a payment in euros is not
    // credited as dollars); with neither, the processor's confirmation alone decides.
    if (paid.amountCents === null ? paid.currency === null || sameCurrency : sameCurrency && paid.amountCents >= expected) return false;
    const received =
      paid.amountCents === null
        ? `an amount in ${currency}`
        : sameCurrency
          ? `${formatMoney(fromCents(paid.amountCents))} ${currency}`
          : `${paid.amountCents} in the smallest unit of ${currency || 'an unnamed currency'}`;
    log.error(
      { topUp: t.id, account: t.accountId, payment: paid.paymentId, paid: paid.amountCents, currency: paid.currency, expected },
      'payment received is not the top-up amount: nothing credited; refund it, or credit it by hand',
    );
    const reason = `The payment received (${received}) is not the top-up's ${formatMoney(t.amount)} ${t.currency}; nothing was credited. Please contact support.`;
    const { outcome } = await this.o.settlement.markFailed(t.id, { reason });
    // A checkout already expired or canceled stays so (only a credited payment leaves those
    // states), but says why the money it received was not credited.
    if (outcome === 'not_open') await recordFailureReason(this.o.db, t.id, reason, this.now());
    return true;
  }

  /** The top-up a checkout event names: by our id first (it may precede the processor's answer), then by the processor's. */
  private async checkoutOf(ref: CheckoutRef, log: Logger): Promise<TopUpRecord | null> {
    const { db } = this.o;
    let t = ref.topUpId ? await findTopUp(db, ref.topUpId) : null;
    t ??= await findTopUpByProcessorCheckoutId(db, ref.processorCheckoutId);
    if (!t) {
      log.warn({ ref }, 'payment event for an unknown checkout: acknowledged, nothing changed');
      return null;
    }
    if ((ref.accountId && ref.accountId !== t.accountId) || t.processor !== this.o.processor.name) {
      log.error(
        { ref, topUp: t.id, account: t.accountId, processor: t.processor },
        'payment event does not match its top-up (account or processor): nothing changed',
      );
      return null;
    }
    await recordProcessorCheckoutId(db, t.id, ref.processorCheckoutId, this.now());
    return t;
  }

  private async topUpOfPayment(
    topUpId: string | null,
    accountId: string | null,
    paymentId: string,
    log: Logger,
  ): Promise<TopUpRecord | null> {
    const { db } = this.o;
    const t = (topUpId ? await findTopUp(db, topUpId) : null) ?? (await findTopUpByPaymentId(db, paymentId));
    if (!t) {
      log.warn({ topUpId, payment: paymentId }, 'payment event for an unknown top-up: acknowledged, nothing changed');
      return null;
    }
    if ((accountId && accountId !== t.accountId) || t.processor !== this.o.processor.name) {
      log.error(
        { topUp: t.id, account: t.accountId, eventAccount: accountId },
        'payment event does not match its top-up (account or processor): nothing changed',
      );
      return null;
    }
    return t;
  }
}

function reversalOutcome(outcome: ReversalOutcome): EventOutcome {
  return outcome === 'reversed' || outcome === 'reinstated' ? outcome : outcome === 'unknown' ? 'unknown_checkout' : 'unchanged';
}

function describeTopUp(t: TopUpRecord): string {
  const bonus = t.bonus > 0n ? ` + ${formatMoney(t.bonus)} bonus (${percentText(t.bonusBasisPoints)}%)` : '';
  return `Wallet top-up: ${formatMoney(t.amount)} ${t.currency}${bonus} = ${formatMoney(t.amount + t.bonus)} ${t.currency} in credits`;
}

function validIdempotencyKey(value: string | null | undefined): string | null {
  if (value == null) return null;
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_IDEMPOTENCY_KEY_LENGTH || !IDEMPOTENCY_KEY.test(value)) {
    throw new DomainError(
      'invalid_value',
      `The Idempotency-Key must be 1 to ${MAX_IDEMPOTENCY_KEY_LENGTH} visible ASCII characters (a UUID, for one).`,
      { param: 'Idempotency-Key' },
    );
  }
  return value;
}

/** Why a checkout that expired before the processor opened it was never payable. */
const NEVER_OPENED_REASON =
  'The payment processor could not open this checkout before it expired; nothing was charged. Please start a new top-up.';

/** A retry, under its Idempotency-Key, of a checkout that expired before the processor opened it. */
function neverOpened(): DomainError {
  return new DomainError(
    'idempotency_key_reused',
    `The checkout of this Idempotency-Key expired before the payment processor could open it; nothing was charged. Start a new top-up with a new Idempotency-Key.`,
    { param: 'Idempotency-Key' },
  );
}

function topUpNotFound(id: string): DomainError {
  return new DomainError('not_found', `No checkout with id '${id.slice(0, 60)}'.`, { param: 'id' });
}

function notOpen(t: TopUpRecord): DomainError {
  return new DomainError('checkout_not_open', `This checkout is ${t.status}; it can no longer be paid or canceled.`);
}
