// Payments' settings: the config's `payments:` section (src/config-payments.ts reads it) and the
// Stripe environment, plus the check of STRIPE_API_BASE shared by the config and the Stripe processor
// (here, so that reading the config does not load the Stripe SDK).

export interface PaymentsSettings {
  /** sandbox: the built-in test processor (no real money); stripe: Stripe Checkout. */
  processor: 'sandbox' | 'stripe';
  allow_sandbox: boolean;
  success_url: string | null;
  cancel_url: string | null;
  return_url: string | null;
  checkout_expires_after_minutes: number;
  /** Bonus credits by amount, highest threshold reached wins. */
  bonus_table: { min_amount: number; percent: number }[];
  auto_topup: { max_monthly: number | null; max_consecutive_failures: number; retry_after_seconds: number };
  /** Where customers arrange top-ups of 500 and more: a mailto: or https: URL (an e-mail address is read as mailto:), or null. */
  sales_contact: string | null;
}

/** STRIPE_SECRET_KEY, STRIPE_WEBHOOK_SECRET and STRIPE_API_BASE, when the processor is stripe. */
export interface StripeEnv {
  secretKey: string;
  webhookSecret: string;
  apiBase: string | null;
}

/** STRIPE_API_BASE as the Stripe SDK's host options; throws naming the variable when it is not an origin. */
export function stripeHostOptions(apiBase: string): { host: string; port: number; protocol: 'http' | 'https' } {
  let url: URL;
  try {
    url = new URL(apiBase);
  } catch {
    throw new Error(`STRIPE_API_BASE: not a URL: ${apiBase}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new Error(`STRIPE_API_BASE: must be http:// or https://, got ${url.protocol}`);
  // The SDK appends /v1/… to the host itself; it has no base path.
  if (url.pathname !== '/' && url.pathname !== '')
    throw new Error(`STRIPE_API_BASE: give the origin only (scheme, host, port), without a path: ${apiBase}`);
  const protocol = url.protocol === 'http:' ? 'http' : 'https';
  return { host: url.hostname.replace(/^\[|\]$/g, ''), port: url.port ? Number(url.port) : protocol === 'http' ? 80 : 443, protocol };
}
