// What tollgate needs from a payment processor, whichever it is: open a hosted checkout for a
// top-up, charge a saved card off-session for an automatic top-up, and (for processors that call
// back) turn a verified callback into one of the few payment events below. The sandbox and Stripe
// implement it; PaymentsService holds the rules (states, crediting once) and never sees a
// processor's own types.

export type ProcessorName = 'sandbox' | 'stripe';

export interface CheckoutRequest {
  /** Our top-up id: the processor keeps it (metadata, client_reference_id) and sends it back. */
  topUpId: string;
  accountId: string;
  email: string;
  /** In the currency's minor unit (cents). */
  amountCents: number;
  /** Lower-case ISO code, e.g. 'usd'. */
  currency: string;
  /** The line shown at the checkout, e.g. "Wallet top-up: 100.00 USD (+10.00 bonus credits)". */
  description: string;
  /** The processor's customer for this account, when one was created before. */
  customerId: string | null;
  successUrl: string;
  cancelUrl: string;
  expiresAt: Date;
}

export interface CreatedCheckout {
  /** The processor's id of the checkout (Stripe: cs_…; sandbox: ours). */
  processorCheckoutId: string;
  url: string;
  /** The processor's customer, to reuse for the next checkout and for off-session charges. */
  customerId: string | null;
  expiresAt: Date;
}

export interface OffSessionCharge {
  topUpId: string;
  accountId: string;
  customerId: string | null;
  amountCents: number;
  currency: string;
  description: string;
}

/**
 * The outcome of an off-session charge as far as the processor knows it now. `pending`: the
 * processor has not decided (an async method, or we could not tell: a timeout); its event will.
 */
export type OffSessionResult =
  | { status: 'succeeded'; paymentId: string }
  | { status: 'pending'; paymentId: string | null }
  | { status: 'failed'; paymentId: string | null; reason: string };

/** A processor's callback, verified and reduced to what the payment rules act on. */
export type PaymentEvent =
  /** A checkout's payment is received (Stripe: completed with payment_status paid, or async success). */
  | {
      kind: 'checkout_paid';
      eventId: string;
      ref: CheckoutRef;
      paymentId: string;
      customerId: string | null;
      amountCents: number | null;
      currency: string | null;
    }
  /** A checkout was submitted, but its payment is still on its way (async methods). */
  | { kind: 'checkout_pending'; eventId: string; ref: CheckoutRef; customerId: string | null }
  | { kind: 'checkout_failed'; eventId: string; ref: CheckoutRef; reason: string }
  | { kind: 'checkout_expired'; eventId: string; ref: CheckoutRef }
  /** A payment (an off-session charge, or a checkout's own payment intent) succeeded. */
  | {
      kind: 'payment_succeeded';
      eventId: string;
      topUpId: string | null;
      accountId: string | null;
      paymentId: string;
      amountCents: number | null;
      currency: string | null;
    }
  /** A payment attempt failed; only automatic top-ups fail on it (a checkout lets the customer retry). */
  | { kind: 'payment_failed'; eventId: string; topUpId: string | null; accountId: string | null; paymentId: string; reason: string }
  /**
   * Money of a paid payment went back to the payer by a refund (Stripe: charge.refunded, made in
   * Stripe's dashboard or API). `refundedCents` is the payment's refunded total so far, not this
   * refund's part, so a repeated or late event is harmless.
   */
  | {
      kind: 'payment_refunded';
      eventId: string;
      paymentId: string;
      refundedCents: number;
      /** What the payment charged in all (tax included), the refunds' measure; null: unknown. */
      chargedCents: number | null;
      currency: string | null;
    }
  /**
   * A dispute (chargeback) on a paid payment: its funds withdrawn from the operator, or reinstated
   * when the dispute is won (Stripe: charge.dispute.funds_withdrawn / funds_reinstated).
   */
  | {
      kind: 'payment_disputed';
      eventId: string;
      paymentId: string;
      disputeId: string;
      funds: 'withdrawn' | 'reinstated';
      amountCents: number | null;
      currency: string | null;
    }
  /** Verified, but nothing tollgate acts on. */
  | { kind: 'ignored'; eventId: string; type: string; malformed?: boolean };

/** How an event names its checkout: our id (metadata / client_reference_id), the processor's id. */
export interface CheckoutRef {
  topUpId: string | null;
  accountId: string | null;
  processorCheckoutId: string;
}

export interface PaymentProcessor {
  readonly name: ProcessorName;
  /** True for the sandbox: payments are simulated, no money moves. */
  readonly simulated: boolean;
  /**
   * Opens a hosted checkout. Idempotent per `topUpId`: asked twice (a retried request), the
   * processor returns the same checkout, never a second one.
   */
  createCheckout(req: CheckoutRequest): Promise<CreatedCheckout>;
  /** Creates (idempotently per account) the processor's customer, when it keeps customers. */
  ensureCustomer(accountId: string, email: string): Promise<string | null>;
  /**
   * Charges the customer's saved payment method, off-session. Idempotent per `topUpId`: a retry
   * after a timeout returns the first attempt's outcome and never charges twice.
   */
  chargeOffSession(charge: OffSessionCharge): Promise<OffSessionResult>;
  /** Whether an off-session charge can be tried at all: this customer has a saved card. */
  canChargeOffSession(customerId: string | null): Promise<boolean>;
  /**
   * How long after its first try an off-session charge may still be asked again under the same
   * key and be sure of meeting the first attempt (Stripe forgets idempotency keys after 24 hours);
   * null: for ever.
   */
  readonly offSessionRetryWindowMs: number | null;
  /**
   * How far in the future a checkout's expiry must lie when it is sent (Stripe refuses one less
   * than 30 minutes from its own clock); 0: any time still to come.
   */
  readonly checkoutMinimumLeadMs: number;
}

/** A processor that calls back over HTTP: it verifies the raw body and signature, then parses. */
export interface WebhookVerifier {
  /** Throws WebhookSignatureError when the signature is wrong, missing or too old. */
  parseWebhook(rawBody: Buffer, signatureHeader: string | undefined): PaymentEvent;
}

export class WebhookSignatureError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WebhookSignatureError';
  }
}

/** The processor could not be reached, or refused the request (not a card decline). */
export class ProcessorError extends Error {
  constructor(
    message: string,
    readonly retryable: boolean,
    opts: { cause?: unknown } = {},
  ) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'ProcessorError';
  }
}
