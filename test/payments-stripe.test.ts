// Top-ups through Stripe, against the fake Stripe API on loopback (the stripe SDK pointed at it
// with STRIPE_API_BASE) and webhooks signed the way Stripe signs them, on SQLite and (with
// TEST_DATABASE_URL) PostgreSQL. Each case ends with the exact balance and `ledger verify` passing.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { BACKENDS, createTestDatabase, type TestDatabase } from './support/databases.js';
import { startFakeStripe, type FakeStripe } from './support/fake-stripe.js';
import { catalogYaml, startTestServer, type TestServer } from './support/harness.js';
import { client, seed } from './support/seed.js';
import { deliverStripeEvent, TEST_SECRET_KEY, TEST_WEBHOOK_SECRET } from './support/stripe-webhooks.js';

export const STRIPE_YAML = 'payments:\n  processor: stripe\n';

describe.each(BACKENDS)('Stripe top-ups on %s', (backend) => {
  let db: TestDatabase;
  let s: TestServer;
  let stripe: FakeStripe;

  beforeAll(async () => {
    db = await createTestDatabase(backend);
    stripe = await startFakeStripe();
    s = await startTestServer({
      databaseUrl: db.url,
      yaml: (u) => catalogYaml(u, STRIPE_YAML),
      env: { STRIPE_SECRET_KEY: TEST_SECRET_KEY, STRIPE_WEBHOOK_SECRET: TEST_WEBHOOK_SECRET, STRIPE_API_BASE: stripe.url },
    });
  });
  afterAll(async () => {
    await s?.close();
    await stripe?.close();
    await db?.drop();
  });
  beforeEach(() => {
    stripe.reset();
    stripe.setBeforeSessionResponse(undefined);
  });
  afterEach(async () => {
    expect(await s.services.billing.verifyLedger()).toEqual([]);
  });

  const deliver = (event: Parameters<typeof deliverStripeEvent>[1], opts?: Parameters<typeof deliverStripeEvent>[2]) =>
    deliverStripeEvent(s.url, event, opts);
  const types = async (accountId: string) =>
    (await s.services.billing.listTransactions(accountId, { limit: 1000 })).transactions.map((t) => [t.type, t.amount]);
  const topUpOf = async (id: string) => s.services.payments.getTopUp(id);
  const sessionOf = (topUpId: string) => [...stripe.sessions.values()].find((x) => x.client_reference_id === topUpId)!;

  async function start(apiKey: string, amount: number) {
    const r = await fetch(`${s.v1}/wallet/top-up`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ amount }),
    });
    const body = (await r.json()) as any;
    expect(r.status, JSON.stringify(body)).toBe(200);
    return { id: body.id as string, url: body.checkout_url as string, session: sessionOf(body.id) };
  }

  it('opens a Checkout Session for the amount with our ids and a saved card, then credits once on checkout.session.completed', async () => {
    const a = await seed(s).account();
    const { id, url, session } = await start(a.apiKey, 100);
    expect(url).toBe(session.url);
    expect(session).toMatchObject({
      mode: 'payment',
      amount_total: 10_000,
      currency: 'usd',
      client_reference_id: id,
      metadata: { tollgate_top_up_id: id, tollgate_account_id: a.id },
    });
    expect(session.payment_intent_data).toMatchObject({ setup_future_usage: 'off_session' });
    expect(session.success_url).toBe(`${s.url}/checkout/${id}`);
    expect(session.customer).toMatch(/^cus_/);

    stripe.pay(session.id);
    const r = await deliver(stripe.events.completed(session.id));
    expect(r).toEqual({ status: 200, body: { received: true, outcome: 'credited' } });
    expect(await client(s, a.apiKey).balance()).toBe('110');
    expect(await types(a.id)).toEqual([
      ['topup', 100_000_000_000n],
      ['bonus', 10_000_000_000n],
    ]);
    const t = await topUpOf(id);
    expect(t.status).toBe('paid');
    const [topup] = (await s.services.billing.listTransactions(a.id)).transactions;
    expect(topup!.reference).toBe(session.payment_intent);

    // The intent's own event, and the session event again: nothing more.
    expect((await deliver(stripe.events.paymentIntentSucceeded(session.payment_intent!))).body).toMatchObject({ outcome: 'already_paid' });
    expect((await deliver(stripe.events.completed(session.id))).body).toMatchObject({ outcome: 'already_paid' });
    expect(await client(s, a.apiKey).balance()).toBe('110');

    // The next checkout reuses the customer.
    const next = await start(a.apiKey, 10);
    expect(next.session.customer).toBe(session.customer);
    expect(stripe.count('POST /v1/customers')).toBe(1);
  });

  it('waits for an async payment: completed unpaid changes nothing, async_payment_succeeded credits', async () => {
    const a = await seed(s).account();
    const { id, session } = await start(a.apiKey, 50);
    stripe.pay(session.id, { async: true });
    expect((await deliver(stripe.events.completed(session.id))).body).toMatchObject({ outcome: 'pending' });
    expect((await topUpOf(id)).status).toBe('open');
    expect(await client(s, a.apiKey).balance()).toBe('0');
    expect((await deliver(stripe.events.asyncSucceeded(session.id))).body).toMatchObject({ outcome: 'credited' });
    expect((await topUpOf(id)).status).toBe('paid');
    expect(await client(s, a.apiKey).balance()).toBe('52.5');
  });

  it('marks an async payment that failed as failed, crediting nothing; a late expiry changes nothing', async () => {
    const a = await seed(s).account();
    const { id, session } = await start(a.apiKey, 30);
    stripe.pay(session.id, { async: true });
    await deliver(stripe.events.completed(session.id));
    expect((await deliver(stripe.events.asyncFailed(session.id))).body).toMatchObject({ outcome: 'failed' });
    const t = await topUpOf(id);
    expect(t.status).toBe('failed');
    expect(t.failureReason).toMatch(/failed/);
    expect((await deliver(stripe.events.expired(session.id))).body).toMatchObject({ outcome: 'unchanged' });
    expect(await client(s, a.apiKey).balance()).toBe('0');
    expect(await types(a.id)).toEqual([]);
  });

  it('expires an unpaid checkout on checkout.session.expired', async () => {
    const a = await seed(s).account();
    const { id, session } = await start(a.apiKey, 20);
    expect((await deliver(stripe.events.expired(session.id))).body).toMatchObject({ outcome: 'expired' });
    expect((await topUpOf(id)).status).toBe('expired');
    expect(await client(s, a.apiKey).balance()).toBe('0');
  });

  it('refuses a forged signature, a tampered body, a missing signature and a stale timestamp with 400, changing nothing', async () => {
    const a = await seed(s).account();
    const { id, session } = await start(a.apiKey, 100);
    stripe.pay(session.id);
    const event = stripe.events.completed(session.id);
    const forged = await deliver(event, { secret: 'whsec_attacker' });
    expect(forged.status).toBe(400);
    expect(forged.body).toMatchObject({ error: { code: 'invalid_signature', type: 'invalid_request_error' } });
    expect((await deliver(event, { tamper: (body) => body.replace('"paid"', '"paid" ') })).status).toBe(400);
    expect((await deliver(event, { unsigned: true })).status).toBe(400);
    const stale = await deliver(event, { timestamp: Math.floor(Date.now() / 1000) - 600 });
    expect(stale.status).toBe(400);
    expect(JSON.stringify(stale.body)).toMatch(/tolerance/i);
    expect((await topUpOf(id)).status).toBe('open');
    expect(await client(s, a.apiKey).balance()).toBe('0');
    // The genuine delivery still works afterwards.
    expect((await deliver(event)).body).toMatchObject({ outcome: 'credited' });
    expect(await client(s, a.apiKey).balance()).toBe('110');
  });

  it('credits once when the same event is delivered 5 times at once', async () => {
    const a = await seed(s).account();
    const { session } = await start(a.apiKey, 250);
    stripe.pay(session.id);
    const event = stripe.events.completed(session.id);
    const results = await Promise.all(Array.from({ length: 5 }, () => deliver(event)));
    expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    expect(results.map((r) => (r.body as any).outcome).sort()).toEqual([
      'already_paid',
      'already_paid',
      'already_paid',
      'already_paid',
      'credited',
    ]);
    expect(await client(s, a.apiKey).balance()).toBe('287.5');
    expect(await types(a.id)).toEqual([
      ['topup', 250_000_000_000n],
      ['bonus', 37_500_000_000n],
    ]);
  });

  it('credits a checkout whose completed event arrives before Stripe has answered our create call', async () => {
    const a = await seed(s).account();
    const outcomes: unknown[] = [];
    // The customer pays, and Stripe's event is delivered, while our request for the session waits.
    stripe.setBeforeSessionResponse(async (session) => {
      stripe.pay(session.id);
      outcomes.push((await deliver(stripe.events.completed(session.id))).body);
    });
    const { id, url } = await start(a.apiKey, 100);
    expect(outcomes).toEqual([{ received: true, outcome: 'credited' }]);
    expect(url).toMatch(/\/pay\//);
    const t = await topUpOf(id);
    expect(t.status).toBe('paid');
    expect(t.checkoutUrl).toBe(url);
    expect(await client(s, a.apiKey).balance()).toBe('110');
  });

  it('credits nothing for a payment short of the top-up or in another currency: the top-up fails with the reason; more than it (tax) credits the quote', async () => {
    const a = await seed(s).account();
    // A promotion code at the checkout: Stripe collected 0.01 of 100 USD.
    const short = await start(a.apiKey, 100);
    short.session.amount_total = 1;
    stripe.pay(short.session.id);
    expect(await deliver(stripe.events.completed(short.session.id))).toEqual({
      status: 200,
      body: { received: true, outcome: 'amount_mismatch' },
    });
    // The payment intent's own event (the same 0.01) credits nothing either.
    expect((await deliver(stripe.events.paymentIntentSucceeded(short.session.payment_intent!))).body).toMatchObject({
      outcome: 'amount_mismatch',
    });
    const failed = await topUpOf(short.id);
    expect(failed.status).toBe('failed');
    expect(failed.failureReason).toBe(
      "The payment received (0.01 USD) is not the top-up's 100.00 USD; nothing was credited. Please contact support.",
    );

    // Paid in yen.
    const yen = await start(a.apiKey, 20);
    yen.session.currency = 'jpy';
    stripe.pay(yen.session.id);
    expect((await deliver(stripe.events.completed(yen.session.id))).body).toMatchObject({ outcome: 'amount_mismatch' });
    expect((await topUpOf(yen.id)).failureReason).toMatch(
      /^The payment received \(2000 in the smallest unit of JPY\) is not the top-up's 20.00 USD/,
    );
    expect(await client(s, a.apiKey).balance()).toBe('0');
    expect(await types(a.id)).toEqual([]);

    // Tax added on top: the quote is credited (10 + no bonus).
    const taxed = await start(a.apiKey, 10);
    taxed.session.amount_total = 1_080;
    stripe.pay(taxed.session.id);
    expect((await deliver(stripe.events.completed(taxed.session.id))).body).toMatchObject({ outcome: 'credited' });
    expect(await client(s, a.apiKey).balance()).toBe('10');
  });

  it('acknowledges an event for an unknown session (200) and changes nothing', async () => {
    const a = await seed(s).account();
    await start(a.apiKey, 10);
    const unknown = stripe.events.custom('checkout.session.completed', {
      id: 'cs_test_not_ours',
      object: 'checkout.session',
      payment_status: 'paid',
      payment_intent: 'pi_not_ours',
      amount_total: 1000,
      currency: 'usd',
      client_reference_id: null,
      metadata: {},
      customer: null,
    });
    expect(await deliver(unknown)).toEqual({ status: 200, body: { received: true, outcome: 'unknown_checkout' } });
    const stranger = stripe.events.custom('payment_intent.succeeded', {
      id: 'pi_stranger',
      object: 'payment_intent',
      amount: 500,
      amount_received: 500,
      currency: 'usd',
      metadata: {},
    });
    expect((await deliver(stranger)).body).toMatchObject({ outcome: 'unknown_checkout' });
    expect((await deliver(stripe.events.custom('invoice.paid', { id: 'in_1', object: 'invoice' }))).body).toMatchObject({
      outcome: 'ignored',
    });
    expect(await client(s, a.apiKey).balance()).toBe('0');
  });

  it('acknowledges a signed event whose object is not what Stripe sends as ignored (200), changing nothing', async () => {
    const a = await seed(s).account();
    const { id, session } = await start(a.apiKey, 20);
    stripe.pay(session.id);
    const completed = stripe.events.completed(session.id);
    const malformed = [
      { ...completed, data: {} },
      { ...completed, data: { object: { ...completed.data.object, client_reference_id: { id }, metadata: null } } },
      { ...completed, data: { object: { ...completed.data.object, amount_total: '2000' } } },
      stripe.events.custom('payment_intent.succeeded', { id: 7, metadata: { tollgate_top_up_id: id } }),
    ];
    for (const event of malformed) {
      expect(await deliver(event as typeof completed)).toEqual({ status: 200, body: { received: true, outcome: 'ignored' } });
    }
    expect((await topUpOf(id)).status).toBe('open');
    expect(await client(s, a.apiKey).balance()).toBe('0');
    // The well-formed event still credits.
    expect((await deliver(completed)).body).toMatchObject({ outcome: 'credited' });
  });

  it('tells the client to retry when Stripe cannot be reached, and the same Idempotency-Key then opens the same checkout', async () => {
    const a = await seed(s).account();
    stripe.script('POST /v1/checkout/sessions', [503, 503, 503]);
    const headers = { authorization: `Bearer ${a.apiKey}`, 'content-type': 'application/json', 'idempotency-key': 'retry-me' };
    const failed = await fetch(`${s.v1}/wallet/top-up`, { method: 'POST', headers, body: '{"amount":15}' });
    expect(failed.status).toBe(502);
    expect(((await failed.json()) as any).error.code).toBe('payment_processor_error');
    stripe.reset();
    const retried = await fetch(`${s.v1}/wallet/top-up`, { method: 'POST', headers, body: '{"amount":15}' });
    expect(retried.status).toBe(200);
    const body = (await retried.json()) as any;
    expect(body.checkout_url).toBe(sessionOf(body.id).url);
    const mine = await client(s, a.apiKey).graphql('{ viewer { topUps { nodes { id status } } } }');
    expect(mine.body.data.viewer.topUps.nodes).toEqual([{ id: body.id, status: 'open' }]);
  });
});
