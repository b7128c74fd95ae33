// The Stripe processor through the real stripe SDK against the fake Stripe API on loopback
// (STRIPE_API_BASE): what it asks Stripe for, how it keys retries, and how it verifies and reads
// webhook events signed the way Stripe signs them.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ProcessorError, WebhookSignatureError } from '../src/domain/payments/processor.js';
import { METADATA, StripeProcessor, stripeHostOptions } from '../src/domain/payments/stripe-processor.js';
import { startFakeStripe, type FakeStripe } from './support/fake-stripe.js';
import { signedHeader, TEST_SECRET_KEY, TEST_WEBHOOK_SECRET } from './support/stripe-webhooks.js';

let fake: FakeStripe;
let stripe: StripeProcessor;

beforeAll(async () => {
  fake = await startFakeStripe();
  stripe = new StripeProcessor({ secretKey: TEST_SECRET_KEY, webhookSecret: TEST_WEBHOOK_SECRET, apiBase: fake.url, maxNetworkRetries: 2 });
});
afterAll(async () => {
  await fake.close();
});
beforeEach(() => fake.reset());

const inAnHour = () => new Date(Date.now() + 3_600_000);

async function checkout(topUpId: string, customerId: string | null) {
  return stripe.createCheckout({
    topUpId,
    accountId: 'acct_1',
    email: 'payer@example.com',
    amountCents: 12_000,
    currency: 'usd',
    description: 'Wallet top-up: 120.00 USD + 12.00 bonus',
    customerId,
    successUrl: `http://tollgate.test/checkout/${topUpId}`,
    cancelUrl: `http://tollgate.test/checkout/${topUpId}`,
    expiresAt: inAnHour(),
  });
}

describe('the Stripe processor', () => {
  it('reads STRIPE_API_BASE as the host, port and protocol the SDK takes, and refuses a path', () => {
    expect(stripeHostOptions('http://127.0.0.1:12111')).toEqual({ host: '127.0.0.1', port: 12111, protocol: 'http' });
    expect(stripeHostOptions('https://stripe-proxy.internal')).toEqual({ host: 'stripe-proxy.internal', port: 443, protocol: 'https' });
    expect(() => stripeHostOptions('http://127.0.0.1:1/v1')).toThrow(/without a path/);
    expect(() => stripeHostOptions('ftp://x')).toThrow(/http/);
  });

  it('creates one customer per account, even when asked twice', async () => {
    const first = await stripe.ensureCustomer('acct_same', 'a@example.com');
    const second = await stripe.ensureCustomer('acct_same', 'a@example.com');
    expect(second).toBe(first);
    expect(fake.customers.get(first)?.metadata[METADATA.accountId]).toBe('acct_same');
    expect(fake.requests.filter((r) => r.path === '/v1/customers').map((r) => r.idempotencyKey)).toEqual([
      'tollgate-customer-acct_same',
      'tollgate-customer-acct_same',
    ]);
  });

  it('opens a payment-mode Checkout Session with our ids, the return URLs and the card saved for off-session use', async () => {
    const customer = await stripe.ensureCustomer('acct_1', 'payer@example.com');
    const created = await checkout('chk_abc', customer);
    expect(created.processorCheckoutId).toMatch(/^cs_test_/);
    expect(created.url).toContain(fake.url);
    expect(created.customerId).toBe(customer);
    const req = fake.requests.find((r) => r.path === '/v1/checkout/sessions')!;
    expect(req.idempotencyKey).toBe('tollgate-checkout-chk_abc');
    expect(req.body).toMatchObject({
      mode: 'payment',
      client_reference_id: 'chk_abc',
      customer,
      metadata: { [METADATA.topUpId]: 'chk_abc', [METADATA.accountId]: 'acct_1' },
      payment_intent_data: { setup_future_usage: 'off_session', metadata: { [METADATA.topUpId]: 'chk_abc' } },
      success_url: 'http://tollgate.test/checkout/chk_abc',
      cancel_url: 'http://tollgate.test/checkout/chk_abc',
      line_items: [{ quantity: '1', price_data: { currency: 'usd', unit_amount: '12000' } }],
    });
  });

  it('gets the same session back when the create call is retried with the same top-up', async () => {
    const customer = await stripe.ensureCustomer('acct_1', 'payer@example.com');
    const a = await checkout('chk_retry', customer);
    const b = await checkout('chk_retry', customer);
    expect(b.processorCheckoutId).toBe(a.processorCheckoutId);
    expect([...fake.sessions.values()].filter((s) => s.client_reference_id === 'chk_retry')).toHaveLength(1);
  });

  it('reports an unreachable Stripe as a retryable processor error', async () => {
    fake.script('POST /v1/checkout/sessions', [503, 503, 503]);
    const error = await checkout('chk_down', null).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProcessorError);
    expect((error as ProcessorError).retryable).toBe(true);
  });

  it('charges the saved card off-session, keyed by the top-up, and says a declined card failed', async () => {
    const customer = await stripe.ensureCustomer('acct_card', 'c@example.com');
    const session = await checkout('chk_card', customer);
    fake.pay(session.processorCheckoutId);

    const ok = await stripe.chargeOffSession({
      topUpId: 'atu_1',
      accountId: 'acct_card',
      customerId: customer,
      amountCents: 2000,
      currency: 'usd',
      description: 'auto',
    });
    expect(ok.status).toBe('succeeded');
    const intent = fake.requests.find((r) => r.path === '/v1/payment_intents')!;
    expect(intent.idempotencyKey).toBe('tollgate-auto-atu_1');
    expect(intent.body).toMatchObject({
      amount: '2000',
      currency: 'usd',
      customer,
      off_session: 'true',
      confirm: 'true',
      metadata: { [METADATA.topUpId]: 'atu_1' },
    });

    fake.setCardBehaviour('decline', 1);
    const declined = await stripe.chargeOffSession({
      topUpId: 'atu_2',
      accountId: 'acct_card',
      customerId: customer,
      amountCents: 2000,
      currency: 'usd',
      description: 'auto',
    });
    expect(declined).toMatchObject({ status: 'failed', reason: expect.stringContaining('insufficient_funds') });
    expect(declined.status === 'failed' && declined.paymentId).toMatch(/^pi_/);

    fake.setCardBehaviour('processing', 1);
    expect(
      (
        await stripe.chargeOffSession({
          topUpId: 'atu_3',
          accountId: 'acct_card',
          customerId: customer,
          amountCents: 2000,
          currency: 'usd',
          description: 'auto',
        })
      ).status,
    ).toBe('pending');
  });

  it('never charges twice when the answer to a charge is lost and the SDK retries it', async () => {
    const customer = await stripe.ensureCustomer('acct_lost', 'l@example.com');
    fake.pay((await checkout('chk_lost', customer)).processorCheckoutId);
    fake.script('POST /v1/payment_intents', ['lose']);
    const result = await stripe.chargeOffSession({
      topUpId: 'atu_lost',
      accountId: 'acct_lost',
      customerId: customer,
      amountCents: 2500,
      currency: 'usd',
      description: 'auto',
    });
    expect(result.status).toBe('succeeded');
    expect(fake.count('POST /v1/payment_intents')).toBe(2);
    expect([...fake.paymentIntents.values()].filter((i) => i.metadata[METADATA.topUpId] === 'atu_lost')).toHaveLength(1);
  });

  it('fails an off-session charge without a saved card before asking Stripe to charge', async () => {
    const customer = await stripe.ensureCustomer('acct_nocard', 'n@example.com');
    const result = await stripe.chargeOffSession({
      topUpId: 'atu_nocard',
      accountId: 'acct_nocard',
      customerId: customer,
      amountCents: 2000,
      currency: 'usd',
      description: 'auto',
    });
    expect(result).toMatchObject({ status: 'failed', reason: expect.stringMatching(/no card is saved/i) });
    expect(fake.count('POST /v1/payment_intents')).toBe(0);
  });
});

describe('Stripe webhook verification', () => {
  const payloadOf = (event: unknown) => JSON.stringify(event);

  it('reads a completed, paid session as a paid checkout keyed by its payment intent', async () => {
    const customer = await stripe.ensureCustomer('acct_wh', 'w@example.com');
    const session = await checkout('chk_wh', customer);
    fake.pay(session.processorCheckoutId);
    const payload = payloadOf(fake.events.completed(session.processorCheckoutId));
    const event = stripe.parseWebhook(Buffer.from(payload), signedHeader(payload));
    expect(event).toMatchObject({
      kind: 'checkout_paid',
      ref: { topUpId: 'chk_wh', accountId: 'acct_1', processorCheckoutId: session.processorCheckoutId },
      paymentId: fake.sessions.get(session.processorCheckoutId)!.payment_intent,
      amountCents: 12_000,
      currency: 'usd',
    });
  });

  it('reads async payments, expiry and payment intents, and ignores other event types', async () => {
    const session = await checkout('chk_async', null);
    fake.pay(session.processorCheckoutId, { async: true });
    const parse = (event: unknown) => {
      const payload = payloadOf(event);
      return stripe.parseWebhook(Buffer.from(payload), signedHeader(payload));
    };
    expect(parse(fake.events.completed(session.processorCheckoutId)).kind).toBe('checkout_pending');
    expect(parse(fake.events.asyncFailed(session.processorCheckoutId)).kind).toBe('checkout_failed');
    expect(parse(fake.events.asyncSucceeded(session.processorCheckoutId)).kind).toBe('checkout_paid');
    const other = await checkout('chk_exp', null);
    expect(parse(fake.events.expired(other.processorCheckoutId))).toMatchObject({ kind: 'checkout_expired', ref: { topUpId: 'chk_exp' } });
    const intentId = fake.sessions.get(session.processorCheckoutId)!.payment_intent!;
    expect(parse(fake.events.paymentIntentSucceeded(intentId))).toMatchObject({
      kind: 'payment_succeeded',
      topUpId: 'chk_async',
      paymentId: intentId,
    });
    expect(parse(fake.events.paymentIntentFailed(intentId))).toMatchObject({ kind: 'payment_failed', topUpId: 'chk_async' });
    expect(parse(fake.events.custom('customer.created', { id: 'cus_x', object: 'customer' }))).toMatchObject({
      kind: 'ignored',
      type: 'customer.created',
    });
  });

  it('refuses a forged signature, a tampered body, a missing header and a stale timestamp', () => {
    const payload = payloadOf(
      fake.events.custom('checkout.session.completed', {
        id: 'cs_forged',
        object: 'checkout.session',
        payment_status: 'paid',
        metadata: {},
      }),
    );
    const body = Buffer.from(payload);
    expect(() => stripe.parseWebhook(body, signedHeader(payload, { secret: 'whsec_wrong' }))).toThrow(WebhookSignatureError);
    expect(() => stripe.parseWebhook(Buffer.from(payload.replace('cs_forged', 'cs_other')), signedHeader(payload))).toThrow(
      WebhookSignatureError,
    );
    expect(() => stripe.parseWebhook(body, undefined)).toThrow(WebhookSignatureError);
    const sixMinutesAgo = Math.floor(Date.now() / 1000) - 360;
    expect(() => stripe.parseWebhook(body, signedHeader(payload, { timestamp: sixMinutesAgo }))).toThrow(/tolerance/i);
    // Within the SDK's 300-second tolerance it is accepted.
    expect(stripe.parseWebhook(body, signedHeader(payload, { timestamp: Math.floor(Date.now() / 1000) - 200 })).eventId).toMatch(/^evt_/);
  });
});
