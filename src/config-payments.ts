// The `payments:` section of config.yaml and the STRIPE_* environment, parsed once at start-up
// with the rest of the configuration (src/config.ts). A bad value stops start-up naming its key.
import { z } from 'zod';
import { BonusTable, DEFAULT_BONUS_TABLE } from './domain/payments/amounts.js';
import { refineAmount } from './domain/billing/money.js';
import { stripeHostOptions, type PaymentsSettings, type StripeEnv } from './domain/payments/settings.js';

const url = z
  .string()
  .url()
  .refine((u) => /^https?:\/\//.test(u), 'an http(s) URL');

/** An e-mail address (read as mailto:), a mailto: URL or an http(s) URL. */
const contact = z
  .string()
  .trim()
  .transform((v) => (/^[^\s@:/]+@[^\s@/]+\.[^\s@/]+$/.test(v) ? `mailto:${v}` : v))
  .refine((v) => /^mailto:[^\s@]+@[^\s@]+$/.test(v) || /^https?:\/\/[^\s]+$/.test(v), 'an e-mail address, a mailto: URL or an http(s) URL');

const bonusRow = z.strictObject({
  /** From this amount on (currency units)… */
  min_amount: z.number().positive(),
  /** …this much more is credited, in percent (at most 2 decimals). */
  percent: z.number().min(0).max(100),
});

const autoTopupSchema = z.strictObject({
  /** Most that automatic top-ups may add per calendar month (UTC), per account; null: no cap. */
  max_monthly: z.number().positive().superRefine(refineAmount).nullable().default(null),
  /** Failed automatic top-ups in a row that turn it off. */
  max_consecutive_failures: z.number().int().positive().default(3),
  /** An automatic top-up still undecided after this long is asked again (same key, so never charged twice). */
  retry_after_seconds: z.number().nonnegative().default(300),
});

export const paymentsSchema = z
  .strictObject({
    /** sandbox: the built-in test processor (no real money); stripe: Stripe Checkout (STRIPE_* variables). */
    processor: z.enum(['sandbox', 'stripe']).default('sandbox'),
    /** NODE_ENV=production refuses the sandbox unless this is true. */
    allow_sandbox: z.boolean().default(false),
    /** Where the processor sends the customer after paying; `{CHECKOUT_ID}` is replaced. Default: tollgate's status page. */
    success_url: url.nullable().default(null),
    /** Where the processor sends the customer after canceling; `{CHECKOUT_ID}` is replaced. Default: tollgate's status page. */
    cancel_url: url.nullable().default(null),
    /**
     * The link back from tollgate's checkout status page (your app's account page); `{CHECKOUT_ID}` is
     * replaced. Default: the dashboard's top-up result page, `{PUBLIC_URL}/dashboard/top-up/return?top_up={id}`.
     */
    return_url: url.nullable().default(null),
    /** How long a checkout can be paid (Stripe accepts 30 minutes to 24 hours). */
    checkout_expires_after_minutes: z.number().int().min(30).max(1440).default(1440),
    /** Bonus credits by amount (the specification's section 8), highest threshold reached wins. */
    bonus_table: z
      .array(bonusRow)
      .default(() => DEFAULT_BONUS_TABLE.map((r) => ({ ...r })))
      .superRefine((rows, ctx) => {
        try {
          new BonusTable(rows);
        } catch (e) {
          ctx.addIssue({ code: 'custom', message: (e as Error).message.replace(/^bonus_table/, '') });
        }
      }),
    auto_topup: autoTopupSchema.prefault({}),
    /** Where customers arrange top-ups of 500 and more (shown by the dashboard and in the 400's message). */
    sales_contact: contact.nullable().default(null),
  })
  // prefault: a section left out is parsed as {}, so each default is written once, on its key.
  .prefault({});

// The domain's type (src/domain/payments/settings.ts) is what the section is read onto.
export type { PaymentsSettings, StripeEnv };
const paymentsAgree: (parsed: z.infer<typeof paymentsSchema>) => PaymentsSettings = (parsed) => parsed;
void paymentsAgree;

/**
 * The environment payments need, checked against the section: Stripe's secrets when the
 * processor is stripe; with NODE_ENV=production, the sandbox only when explicitly allowed.
 * Throws an Error whose message names the variable or key (config.ts makes it a ConfigError).
 */
export function readPaymentsEnv(env: NodeJS.ProcessEnv, payments: PaymentsSettings): StripeEnv | null {
  if (payments.processor === 'sandbox') {
    if ((env.NODE_ENV ?? '') === 'production' && !payments.allow_sandbox) {
      throw new Error(
        'payments.processor: the sandbox (a test processor: top-ups add credits without charging anyone) is refused with NODE_ENV=production; ' +
          'configure payments.processor: stripe, or set payments.allow_sandbox: true to run it anyway',
      );
    }
    return null;
  }
  const secretKey = env.STRIPE_SECRET_KEY?.trim();
  const webhookSecret = env.STRIPE_WEBHOOK_SECRET?.trim();
  if (!secretKey) throw new Error('STRIPE_SECRET_KEY: required with payments.processor: stripe (sk_live_… or sk_test_…)');
  if (!webhookSecret)
    throw new Error(
      'STRIPE_WEBHOOK_SECRET: required with payments.processor: stripe (whsec_…, from the webhook endpoint or `stripe listen`)',
    );
  // Swapped or mistyped, Stripe would refuse every call or no webhook would verify, found only at the first top-up.
  if (!/^(sk|rk)_(live|test)_/.test(secretKey))
    throw new Error(
      `STRIPE_SECRET_KEY: a Stripe secret key starts sk_live_, sk_test_ (or rk_… for a restricted key); got ${secretKey.slice(0, 6)}…${secretKey.startsWith('whsec_') ? ' (the webhook signing secret: the two are swapped?)' : ''}`,
    );
  if (!webhookSecret.startsWith('whsec_'))
    throw new Error(
      `STRIPE_WEBHOOK_SECRET: a webhook signing secret starts whsec_; got ${webhookSecret.slice(0, 6)}…${/^(sk|rk)_/.test(webhookSecret) ? ' (a secret API key: the two are swapped?)' : ''}`,
    );
  const apiBase = env.STRIPE_API_BASE?.trim() || null;
  if (apiBase) stripeHostOptions(apiBase);
  return { secretKey, webhookSecret, apiBase };
}
