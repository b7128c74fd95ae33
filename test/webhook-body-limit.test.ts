// The body limit on the Stripe webhook, the one door that reads its body itself (raw, for the
// signature): a body over server.body_limit gets the 413 request_too_large every door gives.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeStripe, type FakeStripe } from './support/fake-stripe.js';
import { catalogYaml, startTestServer, type TestServer } from './support/harness.js';
import { TEST_SECRET_KEY, TEST_WEBHOOK_SECRET } from './support/stripe-webhooks.js';

describe('POST /webhooks/stripe over the body limit', () => {
  let stripe: FakeStripe;
  let s: TestServer;
  beforeAll(async () => {
    stripe = await startFakeStripe();
    s = await startTestServer({
      yaml: (u) => catalogYaml(u, 'payments:\n  processor: stripe\n'),
      env: { STRIPE_SECRET_KEY: TEST_SECRET_KEY, STRIPE_WEBHOOK_SECRET: TEST_WEBHOOK_SECRET, STRIPE_API_BASE: stripe.url },
    });
  });
  afterAll(async () => {
    await s?.close();
    await stripe?.close();
  });

  const twoMegabytes = () => JSON.stringify({ id: 'evt_big', type: 'checkout.session.completed', pad: 'x'.repeat(2_000_000) });

  it('answers a body declared larger than the limit with 413 request_too_large, and closes the connection', async () => {
    const res = await fetch(`${s.url}/webhooks/stripe`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'stripe-signature': 't=1,v1=00' },
      body: twoMegabytes(),
    });
    expect(res.status).toBe(413);
    expect(res.headers.get('connection')).toBe('close');
    expect((await res.json()).error).toMatchObject({ code: 'request_too_large', type: 'invalid_request_error' });
  });
});
