// Stripe, through its official SDK: a Checkout Session in `payment` mode per top-up (our ids in
// metadata and client_reference_id, the card saved for off-session use), off-session
// PaymentIntents for automatic top-ups, and webhook events verified against the raw body.
// Every create call carries an idempotency key derived from our top-up id, so a retried request
// (ours, or the SDK's own network retries) returns the first result and never charges twice.
import Stripe from 'stripe';
import { stripeHostOptions } from './settings.js';
import {
  ProcessorError,
  WebhookSignatureError,
  type CheckoutRef,
  type CheckoutRequest,
  type CreatedCheckout,
  type OffSessionCharge,
  type OffSessionResult,
  type PaymentEvent,
  type PaymentProcessor,
  type WebhookVerifier,
} from './processor.js';

/** Metadata keys on sessions and payment intents: how Stripe's events find their top-up. */
export { stripeHostOptions };

export const METADATA = { topUpId: 'tollgate_top_up_id', accountId: 'tollgate_account_id' } as const;

export interface StripeSettings {
  secretKey: string;
  webhookSecret: string;
  /** The API's base URL (STRIPE_API_BASE), for tests and proxies; default Stripe's. No path. */
  apiBase?: string | null;
  /** Webhook timestamp tolerance in seconds; default the SDK's (300). */
  toleranceSeconds?: number;
  /** The SDK's network retries (same idempotency key each time). */
  maxNetworkRetries?: number;
  timeoutMs?: number;
}

/** host/port/protocol for the SDK from a base URL such as http://127.0.0.1:12111. */

export class StripeProcessor implements PaymentProcessor, WebhookVerifier {
  readonly name = 'stripe' as const;
  readonly simulated = false;
  /** Stripe keeps an idempotency key at least 24 hours; an hour's margin. */
  readonly offSessionRetryWindowMs = 23 * 3600_000;
  /** Stripe's 30 minutes, and one for its clock and ours to disagree and the call to travel. */
  readonly checkoutMinimumLeadMs = 31 * 60_000;
  private readonly stripe: Stripe;
  private readonly webhookSecret: string;
  private readonly tolerance: number | undefined;

  constructor(settings: StripeSettings) {
    this.stripe = new Stripe(settings.secretKey, {
      maxNetworkRetries: settings.maxNetworkRetries ?? 2,
      timeout: settings.timeoutMs ?? 20_000,
      telemetry: false,
      appInfo: { name: 'tollgate' },
      ...(settings.apiBase ? stripeHostOptions(settings.apiBase) : {}),
    });
    this.webhookSecret = settings.webhookSecret;
    this.tolerance = settings.toleranceSeconds;
  }

  async ensureCustomer(accountId: string, email: string): Promise<string> {
    try {
      const customer = await this.stripe.customers.create(
        { email, metadata: { [METADATA.accountId]: accountId } },
        // One customer per account, even when two first checkouts race.
        { idempotencyKey: `tollgate-customer-${accountId}` },
      );
      return customer.id;
    } catch (e) {
      throw processorError('create the customer', e);
    }
  }

  async createCheckout(req: CheckoutRequest): Promise<CreatedCheckout> {
    const metadata = { [METADATA.topUpId]: req.topUpId, [METADATA.accountId]: req.accountId };
    let session: Stripe.Checkout.Session;
    try {
      session = await this.stripe.checkout.sessions.create(
        {
          mode: 'payment',
          client_reference_id: req.topUpId,
          ...(req.customerId ? { customer: req.customerId } : { customer_email: req.email, customer_creation: 'always' as const }),
          line_items: [
            {
              quantity: 1,
              price_data: {
                currency: req.currency,
                unit_amount: req.amountCents,
                product_data: { name: 'Wallet credits', description: req.description },
              },
            },
          ],
          metadata,
          // The card is saved on the customer for automatic top-ups (charged off-session).
          payment_intent_data: { setup_future_usage: 'off_session', metadata, description: req.description },
          success_url: req.successUrl,
          cancel_url: req.cancelUrl,
          expires_at: Math.floor(req.expiresAt.getTime() / 1000),
        },
        { idempotencyKey: `tollgate-checkout-${req.topUpId}` },
      );
    } catch (e) {
      throw processorError('create the checkout session', e);
    }
    if (!session.url) throw new ProcessorError(`Stripe returned checkout session ${session.id} without a URL`, false);
    return {
      processorCheckoutId: session.id,
      url: session.url,
      customerId: idOf(session.customer),
      expiresAt: session.expires_at ? new Date(session.expires_at * 1000) : req.expiresAt,
    };
  }

  /**
   * A customer exists from the first checkout opened, paid or not: what counts is a payment method
   * saved to it (a paid checkout saves its card, setup_future_usage).
   */
  async canChargeOffSession(customerId: string | null): Promise<boolean> {
    return customerId !== null && (await this.savedPaymentMethod(customerId)) !== undefined;
  }

  private async savedPaymentMethod(customerId: string): Promise<string | undefined> {
    try {
      const methods = await this.stripe.customers.listPaymentMethods(customerId, { limit: 1 });
      return methods.data[0]?.id;
    } catch (e) {
      throw processorError('list the saved payment methods', e);
    }
  }

  async chargeOffSession(charge: OffSessionCharge): Promise<OffSessionResult> {
    if (!charge.customerId)
      return { status: 'failed', paymentId: null, reason: 'No card is saved for this account: pay one top-up at the checkout first.' };
    const paymentMethod = await this.savedPaymentMethod(charge.customerId);
    if (!paymentMethod)
      return { status: 'failed', paymentId: null, reason: 'No card is saved for this account: pay one top-up at the checkout first.' };
    const metadata = { [METADATA.topUpId]: charge.topUpId, [METADATA.accountId]: charge.accountId };
    try {
      const intent = await this.stripe.paymentIntents.create(
        {
          amount: charge.amountCents,
          currency: charge.currency,
          customer: charge.customerId,
          payment_method: paymentMethod,
          off_session: true,
          confirm: true,
          description: charge.description,
          metadata,
        },
        // Keyed by the top-up: a retry after a timeout gets this same intent, never a second charge.
        { idempotencyKey: `tollgate-auto-${charge.topUpId}` },
      );
      switch (intent.status) {
        case 'succeeded':
          return { status: 'succeeded', paymentId: intent.id };
        case 'processing':
          return { status: 'pending', paymentId: intent.id };
        case 'requires_action':
          return {
            status: 'failed',
            paymentId: intent.id,
            reason: 'The card needs the cardholder to authenticate the payment, which cannot be done off-session.',
          };
        default:
          return {
            status: 'failed',
            paymentId: intent.id,
            reason: intent.last_payment_error?.message ?? `The payment ended as ${intent.status}.`,
          };
      }
    } catch (e) {
      if (e instanceof Stripe.errors.StripeCardError) {
        return { status: 'failed', paymentId: e.payment_intent?.id ?? null, reason: declineReason(e) };
      }
      if (
        e instanceof Stripe.errors.StripeConnectionError ||
        e instanceof Stripe.errors.StripeAPIError ||
        e instanceof Stripe.errors.StripeRateLimitError
      ) {
        // The outcome is unknown (the intent may exist): the same key later, or its event, tells.
        return { status: 'pending', paymentId: null };
      }
      if (e instanceof Stripe.errors.StripeInvalidRequestError) {
        return { status: 'failed', paymentId: e.payment_intent?.id ?? null, reason: e.message };
      }
      throw processorError('charge the saved card', e);
    }
  }

  parseWebhook(rawBody: Buffer, signatureHeader: string | undefined): PaymentEvent {
    if (!signatureHeader) throw new WebhookSignatureError('The Stripe-Signature header is missing.');
    let event: Stripe.Event;
    try {
      event = this.stripe.webhooks.constructEvent(rawBody, signatureHeader, this.webhookSecret, this.tolerance);
    } catch (e) {
      throw new WebhookSignatureError(e instanceof Error ? e.message : 'The signature does not match.');
    }
    return readPaymentEvent(event);
  }
}

/**
 * toPaymentEvent, for an event whose signature checked out: one whose object lacks what tollgate
 * reads, or holds it in another shape, is ignored (and logged as an error) rather than failing
 * with a 500, which Stripe would retry for days.
 */
function readPaymentEvent(event: Stripe.Event): PaymentEvent {
  const eventId = typeof event.id === 'string' ? event.id : String(event.id);
  let read: PaymentEvent | null = null;
  try {
    read = toPaymentEvent(event);
  } catch {
    // A missing object: reported below.
  }
  if (read && wellFormed(read)) return read;
  return { kind: 'ignored', eventId, type: String(event.type), malformed: true };
}

const optionalString = (v: unknown) => v === null || typeof v === 'string';
const optionalCount = (v: unknown) => v === null || (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0);

function wellFormed(e: PaymentEvent): boolean {
  if (typeof e.eventId !== 'string') return false;
  switch (e.kind) {
    case 'ignored':
      return true;
    case 'checkout_paid':
      return (
        refWellFormed(e.ref) &&
        typeof e.paymentId === 'string' &&
        optionalString(e.customerId) &&
        optionalCount(e.amountCents) &&
        optionalString(e.currency)
      );
    case 'checkout_pending':
      return refWellFormed(e.ref) && optionalString(e.customerId);
    case 'checkout_failed':
    case 'checkout_expired':
      return refWellFormed(e.ref);
    case 'payment_succeeded':
      return (
        typeof e.paymentId === 'string' &&
        optionalString(e.topUpId) &&
        optionalString(e.accountId) &&
        optionalCount(e.amountCents) &&
        optionalString(e.currency)
      );
    case 'payment_failed':
      return typeof e.paymentId === 'string' && optionalString(e.topUpId) && optionalString(e.accountId) && typeof e.reason === 'string';
    case 'payment_refunded':
      return (
        typeof e.paymentId === 'string' &&
        optionalCount(e.refundedCents) &&
        e.refundedCents !== null &&
        optionalCount(e.chargedCents) &&
        optionalString(e.currency)
      );
    case 'payment_disputed':
      return (
        typeof e.paymentId === 'string' && typeof e.disputeId === 'string' && optionalCount(e.amountCents) && optionalString(e.currency)
      );
  }
}

function refWellFormed(ref: CheckoutRef): boolean {
  return typeof ref.processorCheckoutId === 'string' && optionalString(ref.topUpId) && optionalString(ref.accountId);
}

/** Stripe's event, reduced to a PaymentEvent (exported for tests). */
export function toPaymentEvent(event: Stripe.Event): PaymentEvent {
  switch (event.type) {
    case 'checkout.session.completed':
    case 'checkout.session.async_payment_succeeded': {
      const session = event.data.object;
      const ref = checkoutRef(session);
      const customerId = idOf(session.customer);
      if (session.payment_status === 'paid') {
        return {
          kind: 'checkout_paid',
          eventId: event.id,
          ref,
          // Keyed by the payment intent, as its own payment_intent.succeeded event is: both paths
          // credit under one key.
          paymentId: idOf(session.payment_intent) ?? session.id,
          customerId,
          amountCents: session.amount_total,
          currency: session.currency,
        };
      }
      if (session.payment_status === 'unpaid') return { kind: 'checkout_pending', eventId: event.id, ref, customerId };
      return { kind: 'ignored', eventId: event.id, type: `${event.type} (payment_status ${session.payment_status})` };
    }
    case 'checkout.session.async_payment_failed':
      return {
        kind: 'checkout_failed',
        eventId: event.id,
        ref: checkoutRef(event.data.object),
        reason: 'The payment failed after the checkout was submitted.',
      };
    case 'checkout.session.expired':
      return { kind: 'checkout_expired', eventId: event.id, ref: checkoutRef(event.data.object) };
    case 'payment_intent.succeeded': {
      const intent = event.data.object;
      return {
        kind: 'payment_succeeded',
        eventId: event.id,
        topUpId: intent.metadata?.[METADATA.topUpId] ?? null,
        accountId: intent.metadata?.[METADATA.accountId] ?? null,
        paymentId: intent.id,
        amountCents: intent.amount_received ?? intent.amount,
        currency: intent.currency,
      };
    }
    case 'payment_intent.payment_failed': {
      const intent = event.data.object;
      return {
        kind: 'payment_failed',
        eventId: event.id,
        topUpId: intent.metadata?.[METADATA.topUpId] ?? null,
        accountId: intent.metadata?.[METADATA.accountId] ?? null,
        paymentId: intent.id,
        reason: intent.last_payment_error?.message ?? 'The payment failed.',
      };
    }
    case 'charge.refunded': {
      // The charge of a payment tollgate credited: found by its payment intent (the top-up's
      // payment id); a charge's own metadata is not the intent's.
      const charge = event.data.object;
      const paymentId = idOf(charge.payment_intent);
      if (!paymentId) return { kind: 'ignored', eventId: event.id, type: `${event.type} (a charge without a payment intent)` };
      return {
        kind: 'payment_refunded',
        eventId: event.id,
        paymentId,
        refundedCents: charge.amount_refunded,
        chargedCents: charge.amount ?? null,
        currency: charge.currency ?? null,
      };
    }
    case 'charge.dispute.funds_withdrawn':
    case 'charge.dispute.funds_reinstated': {
      const dispute = event.data.object;
      const paymentId = idOf(dispute.payment_intent);
      if (!paymentId) return { kind: 'ignored', eventId: event.id, type: `${event.type} (a dispute without a payment intent)` };
      return {
        kind: 'payment_disputed',
        eventId: event.id,
        paymentId,
        disputeId: dispute.id,
        funds: event.type === 'charge.dispute.funds_withdrawn' ? 'withdrawn' : 'reinstated',
        amountCents: dispute.amount ?? null,
        currency: dispute.currency ?? null,
      };
    }
    default:
      return { kind: 'ignored', eventId: event.id, type: event.type };
  }
}

function checkoutRef(session: Stripe.Checkout.Session): CheckoutRef {
  return {
    topUpId: session.metadata?.[METADATA.topUpId] ?? session.client_reference_id ?? null,
    accountId: session.metadata?.[METADATA.accountId] ?? null,
    processorCheckoutId: session.id,
  };
}

function idOf(value: string | { id: string } | null | undefined): string | null {
  if (!value) return null;
  return typeof value === 'string' ? value : value.id;
}

function declineReason(e: InstanceType<typeof Stripe.errors.StripeCardError>): string {
  const code = e.decline_code ?? e.code;
  return code ? `${e.message} (${code})` : e.message;
}

function processorError(what: string, e: unknown): ProcessorError {
  if (e instanceof ProcessorError) return e;
  const retryable =
    e instanceof Stripe.errors.StripeConnectionError ||
    e instanceof Stripe.errors.StripeAPIError ||
    e instanceof Stripe.errors.StripeRateLimitError;
  const detail = e instanceof Error ? e.message : String(e);
  return new ProcessorError(`Stripe could not ${what}: ${detail}`, retryable, { cause: e });
}
