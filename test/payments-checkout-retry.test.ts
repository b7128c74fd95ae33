// Stripe checkouts as services, with one clock the tests move shared by tollgate and the fake
// Stripe API on loopback (STRIPE_API_BASE), on SQLite and PostgreSQL: the expiry Stripe is sent
// (never under its 30 minutes from its call, whatever payments.checkout_expires_after_minutes
// says), a checkout retried under its Idempotency-Key after Stripe could not open it (the same
// request again, or closed when its expiry can no longer be sent), and what a paid top-up keeps
// of an earlier failure.
import type { MikroORM } from '@mikro-orm/core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { TIER_DEFAULTS } from '../src/config.js';
import { paymentsSchema } from '../src/config-payments.js';
import { closeDatabase, openDatabase } from '../src/db/orm.js';
import { AccountsService } from '../src/domain/accounts/accounts-service.js';
import { BillingService } from '../src/domain/billing/billing-service.js';
import { DomainError } from '../src/domain/errors.js';
import { createPayments, type Payments } from '../src/domain/payments/create-payments.js';
import { createLogger } from '../src/logger.js';
import { BACKENDS, createTestDatabase, type TestDatabase } from './support/databases.js';
import { startFakeStripe, type FakeStripe } from './support/fake-stripe.js';
import { TEST_SECRET_KEY, TEST_WEBHOOK_SECRET } from './support/stripe-webhooks.js';

describe.each(BACKENDS)('Stripe checkouts as services on %s', (backend) => {
  let db: TestDatabase;
  let orm: MikroORM;
  let billing: BillingService;
  let accounts: AccountsService;
  let stripe: FakeStripe;
  let clock = new Date('2026-11-26T10:00:00Z');
  /** Each read of tollgate's clock moves it on by `tick` ms: time passes between two statements, as it does. */
  let tick = 0;
  const tollgateClock = () => {
    clock = new Date(clock.getTime() + tick);
    return clock;
  };
  const paymentsFor = new Map<number, Payments>();
  /** The payments services of a server whose checkouts last `minutes` (payments.checkout_expires_after_minutes). */
  const payments = (minutes: number): Payments => {
    let p = paymentsFor.get(minutes);
    if (!p) {
      p = createPayments({
        billing,
        settings: paymentsSchema.parse({ processor: 'stripe', checkout_expires_after_minutes: minutes }),
        stripe: { secretKey: TEST_SECRET_KEY, webhookSecret: TEST_WEBHOOK_SECRET, apiBase: stripe.url },
        publicUrl: () => 'http://tollgate.test',
        logger: createLogger('silent'),
        now: tollgateClock,
      });
      paymentsFor.set(minutes, p);
    }
    return p;
  };

  beforeAll(async () => {
    db = await createTestDatabase(backend);
    orm = await openDatabase(db.url);
    stripe = await startFakeStripe({ clock: () => clock });
    billing = new BillingService({
      orm,
      tiers: TIER_DEFAULTS,
      settings: { hold_expiry_seconds: 900, sweep_interval_seconds: 3600, instance_timeout_seconds: 90 },
      logger: createLogger('silent'),
      now: () => clock,
    });
    accounts = new AccountsService(orm);
  });
  afterAll(async () => {
    for (const p of paymentsFor.values()) await p.autoTopups.idle();
    await stripe?.close();
    await closeDatabase(orm);
    await db?.drop();
  });
  beforeEach(() => {
    stripe.reset();
    tick = 0;
  });

  let made = 0;
  const newAccount = async () => (await accounts.createAccount({ email: `retry${++made}@example.com`, tier: 'developer' })).account;
  const sessionCreates = () => stripe.requests.filter((r) => r.method === 'POST' && r.path === '/v1/checkout/sessions');
  const failure = (e: unknown) => {
    expect(e).toBeInstanceOf(DomainError);
    return { code: (e as DomainError).code, message: (e as DomainError).message };
  };

  it('sends Stripe an expiry at least 30 minutes from its call with checkout_expires_after_minutes: 30, though time passes before the call', async () => {
    const p = payments(30);
    const a = await newAccount();
    // Ten seconds pass at every read of the clock: the session is asked for well after the row is stored.
    tick = 10_000;
    const t = await p.payments.startCheckout({ accountId: a.id, email: a.email, amount: 20, idempotencyKey: 'k-thirty' });
    expect(t.checkoutUrl).toMatch(/\/pay\/cs_test_/);
    const [create] = sessionCreates();
    const sentAt = Math.floor(create!.at.getTime() / 1000);
    const expiresAt = Number(create!.body.expires_at);
    expect(expiresAt - sentAt).toBeGreaterThanOrEqual(30 * 60);
    expect(expiresAt - sentAt).toBeLessThanOrEqual(24 * 3600);
    expect(t.expiresAt?.getTime()).toBe(expiresAt * 1000);
  });

  it('never sends Stripe more than 24 hours with the longest setting', async () => {
    const p = payments(1440);
    const a = await newAccount();
    tick = 1_000;
    const t = await p.payments.startCheckout({ accountId: a.id, email: a.email, amount: 20 });
    expect(t.status).toBe('open');
    const [create] = sessionCreates();
    expect(Number(create!.body.expires_at) - Math.floor(create!.at.getTime() / 1000)).toBeLessThanOrEqual(24 * 3600);
  });

  it('retries a checkout Stripe could not open with the very same request (key and expiry), and Stripe answers its first session', async () => {
    const p = payments(1440);
    const a = await newAccount();
    // Stripe creates the session but the answer is lost, and the SDK's two retries meet errors.
    stripe.script('POST /v1/checkout/sessions', ['lose', 503, 503]);
    const first = await p.payments
      .startCheckout({ accountId: a.id, email: a.email, amount: 20, idempotencyKey: 'k-lost' })
      .catch((e: unknown) => e);
    expect(failure(first)).toMatchObject({ code: 'payment_processor_error' });
    clock = new Date(clock.getTime() + 3 * 3600_000);
    const again = await p.payments.startCheckout({ accountId: a.id, email: a.email, amount: 20, idempotencyKey: 'k-lost' });
    expect(again.status).toBe('open');
    expect(again.checkoutUrl).toMatch(/\/pay\/cs_test_/);
    const creates = sessionCreates();
    expect(new Set(creates.map((r) => r.idempotencyKey))).toEqual(new Set([`tollgate-checkout-${again.id}`]));
    expect(new Set(creates.map((r) => r.body.expires_at))).toHaveProperty('size', 1);
    expect([...stripe.sessions.values()].filter((x) => x.client_reference_id === again.id)).toHaveLength(1);
  });

  it('closes a checkout Stripe never opened once its expiry is too near to send, and says to use a new Idempotency-Key', async () => {
    const p = payments(1440);
    const a = await newAccount();
    stripe.script('POST /v1/checkout/sessions', [503, 503, 503]);
    const first = await p.payments
      .startCheckout({ accountId: a.id, email: a.email, amount: 20, idempotencyKey: 'k-late' })
      .catch((e: unknown) => e);
    expect(failure(first)).toMatchObject({ code: 'payment_processor_error' });
    const [stored] = await p.payments.listTopUps(a.id);
    // 23.6 hours later: under 30 minutes of the expiry it was first sent with remain.
    clock = new Date(clock.getTime() + 23.6 * 3600_000);
    const asks = sessionCreates().length;
    for (let i = 0; i < 2; i++) {
      const late = await p.payments
        .startCheckout({ accountId: a.id, email: a.email, amount: 20, idempotencyKey: 'k-late' })
        .catch((e: unknown) => e);
      expect(failure(late)).toEqual({
        code: 'idempotency_key_reused',
        message:
          'The checkout of this Idempotency-Key expired before the payment processor could open it; nothing was charged. Start a new top-up with a new Idempotency-Key.',
      });
    }
    // Not asked again: Stripe would refuse that expiry.
    expect(sessionCreates()).toHaveLength(asks);
    const closed = await p.payments.getTopUp(stored!.id);
    expect(closed).toMatchObject({ status: 'expired', checkoutUrl: null });
    expect(closed.failureReason).toMatch(/could not open this checkout before it expired; nothing was charged/);
    // A new key opens a new one.
    const fresh = await p.payments.startCheckout({ accountId: a.id, email: a.email, amount: 20, idempotencyKey: 'k-late-2' });
    expect(fresh.checkoutUrl).toMatch(/\/pay\/cs_test_/);
    expect(await billing.verifyLedger()).toEqual([]);
  });

  it('shows no failure reason on a top-up paid after a short payment had failed it', async () => {
    const p = payments(1440);
    const a = await newAccount();
    const t = await p.payments.startCheckout({ accountId: a.id, email: a.email, amount: 100 });
    const ref = { topUpId: t.id, accountId: a.id, processorCheckoutId: 'cs_short' };
    const paid = (paymentId: string, amountCents: number) =>
      p.payments.applyEvent({
        kind: 'checkout_paid',
        eventId: `evt_${paymentId}`,
        ref,
        paymentId,
        customerId: null,
        amountCents,
        currency: 'usd',
      });
    expect(await paid('pi_short', 1)).toBe('amount_mismatch');
    expect((await p.payments.getTopUp(t.id)).failureReason).toMatch(/^The payment received \(0\.01 USD\)/);
    expect(
      await p.payments.applyEvent({
        kind: 'payment_succeeded',
        eventId: 'evt_full',
        topUpId: t.id,
        accountId: a.id,
        paymentId: 'pi_full',
        amountCents: 10_000,
        currency: 'usd',
      }),
    ).toBe('credited');
    const after = await p.payments.getTopUp(t.id);
    expect(after).toMatchObject({ status: 'paid', failureReason: null });
    expect((await billing.getWallet(a.id)).balance).toBe(110_000_000_000n);
    expect(await billing.verifyLedger()).toEqual([]);
  });

  it('does not credit a completed checkout in another currency that carries no amount', async () => {
    const p = payments(1440);
    const a = await newAccount();
    const t = await p.payments.startCheckout({ accountId: a.id, email: a.email, amount: 100 });
    const ref = { topUpId: t.id, accountId: a.id, processorCheckoutId: 'cs_eur' };
    const outcome = await p.payments.applyEvent({
      kind: 'checkout_paid',
      eventId: 'evt_eur',
      ref,
      paymentId: 'pi_eur',
      customerId: null,
      amountCents: null,
      currency: 'eur',
    });
    expect(outcome).toBe('amount_mismatch');
    const failed = await p.payments.getTopUp(t.id);
    expect(failed.status).toBe('failed');
    expect(failed.failureReason).toBe(
      "The payment received (an amount in EUR) is not the top-up's 100.00 USD; nothing was credited. Please contact support.",
    );
    expect((await billing.getWallet(a.id)).balance).toBe(0n);
    expect(await billing.verifyLedger()).toEqual([]);
  });

  it('records why an expired checkout did not credit a short payment that came afterwards', async () => {
    const p = payments(1440);
    const a = await newAccount();
    const t = await p.payments.startCheckout({ accountId: a.id, email: a.email, amount: 100 });
    const ref = { topUpId: t.id, accountId: a.id, processorCheckoutId: 'cs_exp' };
    expect(await p.payments.applyEvent({ kind: 'checkout_expired', eventId: 'evt_exp', ref })).toBe('expired');
    const outcome = await p.payments.applyEvent({
      kind: 'checkout_paid',
      eventId: 'evt_exp_short',
      ref,
      paymentId: 'pi_exp_short',
      customerId: null,
      amountCents: 5_000,
      currency: 'usd',
    });
    expect(outcome).toBe('amount_mismatch');
    const after = await p.payments.getTopUp(t.id);
    expect(after.status).toBe('expired');
    expect(after.failureReason).toBe(
      "The payment received (50.00 USD) is not the top-up's 100.00 USD; nothing was credited. Please contact support.",
    );
    expect((await billing.getWallet(a.id)).balance).toBe(0n);
  });
});
