// The built-in test processor, the embedded default: its checkout is tollgate's own page
// ({PUBLIC_URL}/checkout/sandbox/{id}) whose Pay and Cancel buttons stand in for a card payment,
// and its off-session charges succeed at once. No money moves; start-up says so in the log, and
// production refuses it unless `payments.allow_sandbox` is set.
import type { CheckoutRequest, CreatedCheckout, OffSessionCharge, OffSessionResult, PaymentProcessor } from './processor.js';

export class SandboxProcessor implements PaymentProcessor {
  readonly name = 'sandbox' as const;
  readonly simulated = true;
  readonly offSessionRetryWindowMs = null;
  readonly checkoutMinimumLeadMs = 0;

  /** `publicUrl` is read on each call: the address clients reach, known once the server listens. */
  constructor(private readonly publicUrl: () => string) {}

  async createCheckout(req: CheckoutRequest): Promise<CreatedCheckout> {
    return {
      processorCheckoutId: req.topUpId,
      url: sandboxCheckoutUrl(this.publicUrl(), req.topUpId),
      customerId: null,
      expiresAt: req.expiresAt,
    };
  }

  async ensureCustomer(): Promise<string | null> {
    return null;
  }

  async chargeOffSession(charge: OffSessionCharge): Promise<OffSessionResult> {
    return { status: 'succeeded', paymentId: sandboxPaymentId(charge.topUpId) };
  }

  async canChargeOffSession(): Promise<boolean> {
    return true;
  }
}

export function sandboxCheckoutUrl(publicUrl: string, topUpId: string): string {
  return `${publicUrl.replace(/\/+$/, '')}/checkout/sandbox/${encodeURIComponent(topUpId)}`;
}

/** The sandbox's "payment id" of a top-up: one payment per top-up, so crediting is keyed by it. */
export function sandboxPaymentId(topUpId: string): string {
  return `sandbox_${topUpId}`;
}
