// Automatic top-up (section 2.12) through the running server, on SQLite and (with
// TEST_DATABASE_URL) PostgreSQL: when charges leave the balance below the threshold one top-up
// starts, whatever the concurrency; a card failing three times turns it off with three
// notifications; the monthly cap; a retried charge is never charged twice. Stripe is the fake
// Stripe API on loopback.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { BACKENDS, createTestDatabase, type TestDatabase } from './support/databases.js';
import { startFakeStripe, type FakeStripe } from './support/fake-stripe.js';
import { catalogYaml, chatModelYaml, startTestServer, type TestServer } from './support/harness.js';
import { newId } from '../src/domain/ids.js';
import { claimInFlight, insertTopUp, stalledAutoTopUps } from '../src/domain/payments/top-up-store.js';
import { client, seed, signedIn } from './support/seed.js';
import { until } from './support/wait.js';
import { deliverStripeEvent, TEST_SECRET_KEY, TEST_WEBHOOK_SECRET } from './support/stripe-webhooks.js';

// chat-auto bills only output, $25,000 per million tokens: a call of 10 tokens costs exactly 0.25.
// Startup accounts have no monthly allocation here, so every call is paid from the wallet.
const MODEL = (
  upstreamUrl: string,
) => `${chatModelYaml(upstreamUrl, { id: 'chat-auto', inputPrice: '0', outputPrice: '25000', maxOutputTokens: 64, timeoutMs: 10000 })}tiers:
  startup: { monthly_tokens: 0 }
`;

const callBody = JSON.stringify({ model: 'chat-auto', messages: [{ role: 'user', content: 'go #tokens=10' }], max_tokens: 10 });

async function charge(s: TestServer, apiKey: string, times: number): Promise<number[]> {
  return Promise.all(
    Array.from({ length: times }, async () => {
      const res = await fetch(`${s.v1}/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
        body: callBody,
      });
      await res.arrayBuffer();
      return res.status;
    }),
  );
}

const SET_AUTO =
  'mutation($i: AutoTopupInput!) { updateAutoTopup(input: $i) { enabled threshold amount consecutiveFailures disabledReason inFlight } }';

describe.each(BACKENDS)('automatic top-up on %s', (backend) => {
  describe('with the sandbox', () => {
    let db: TestDatabase;
    let s: TestServer;
    beforeAll(async () => {
      db = await createTestDatabase(backend);
      s = await startTestServer({ databaseUrl: db.url, yaml: (u) => catalogYaml(u, MODEL(u)) });
    });
    afterAll(async () => {
      await s?.close();
      await db?.drop();
    });
    afterEach(async () => {
      expect(await s.services.billing.verifyLedger()).toEqual([]);
    });

    it('validates its settings and shows them on viewer.settings', async () => {
      const a = await seed(s).account({ tier: 'startup' });
      const c = client(s, a.apiKey);
      expect(
        (await c.graphql('{ viewer { settings { autoTopup { enabled threshold amount } } } }')).body.data.viewer.settings.autoTopup,
      ).toEqual({ enabled: false, threshold: null, amount: null });
      const owner = await signedIn(s, a.id);
      const bad = async (i: unknown) => (await owner.graphql(SET_AUTO, { i })).body.errors?.[0]?.extensions?.code;
      expect(await bad({ enabled: true, threshold: '5', amount: '5' })).toBe('amount_too_small');
      expect(await bad({ enabled: true, threshold: '5', amount: '500' })).toBe('amount_requires_sales');
      expect(await bad({ enabled: true, threshold: '5', amount: '20.001' })).toBe('invalid_amount');
      expect(await bad({ enabled: true, threshold: '-1', amount: '20' })).toBe('invalid_value');
      // A balance never goes below 0: a threshold of 0 would be on and never start a top-up.
      const zero = await owner.graphql(SET_AUTO, { i: { enabled: true, threshold: '0', amount: '20' } });
      expect(zero.body.errors?.[0]?.extensions).toMatchObject({ code: 'invalid_value', param: 'threshold' });
      expect(zero.body.errors?.[0]?.message).toMatch(/^'threshold' must be more than 0/);
      expect(await bad({ enabled: true, amount: '20' })).toBe('missing_required_parameter');
      // A mistyped threshold far above the balance would start a top-up after every call until
      // the balance reached it: the threshold stays below the largest self-serve top-up.
      const above = await owner.graphql(SET_AUTO, { i: { enabled: true, threshold: '100000', amount: '20' } });
      expect(above.body.errors?.[0]?.extensions).toMatchObject({ code: 'invalid_value', param: 'threshold' });
      expect(above.body.errors?.[0]?.message).toBe(
        "'threshold' must be below 500.00 USD: automatic top-ups bring the balance back up to it, one after each call below it.",
      );
      expect(await bad({ enabled: true, threshold: '500', amount: '20' })).toBe('invalid_value');
      // An API key cannot turn it on (it charges the saved card): only the signed-in owner.
      const withKey = await c.graphql(SET_AUTO, { i: { enabled: true, threshold: '5', amount: '20' } });
      expect(withKey.body.errors?.[0]?.extensions?.code).toBe('session_required');
      expect(
        (await c.graphql('{ viewer { settings { autoTopup { enabled threshold amount } } } }')).body.data.viewer.settings.autoTopup,
      ).toEqual({ enabled: false, threshold: null, amount: null });
      const ok = await owner.graphql(SET_AUTO, { i: { enabled: true, threshold: '5', amount: '20' } });
      expect(ok.body.data.updateAutoTopup).toEqual({
        enabled: true,
        threshold: '5',
        amount: '20',
        consecutiveFailures: 0,
        disabledReason: null,
        inFlight: false,
      });
      // A threshold above the amount is a normal setting: each top-up starts on a charge or a
      // refusal below the threshold, so a smaller amount cannot loop.
      const usual = await owner.graphql(SET_AUTO, { i: { enabled: true, threshold: '100', amount: '50' } });
      expect(usual.body.errors).toBeUndefined();
      expect(usual.body.data.updateAutoTopup).toMatchObject({ enabled: true, threshold: '100', amount: '50' });
      await owner.graphql(SET_AUTO, { i: { enabled: true, threshold: '5', amount: '20' } });
      await s.services.autoTopups.idle();
      // Turning it off keeps the values.
      const off = await owner.graphql(SET_AUTO, { i: { enabled: false } });
      expect(off.body.data.updateAutoTopup).toMatchObject({ enabled: false, threshold: '5', amount: '20' });
      expect(
        (await c.graphql('{ viewer { settings { autoTopup { enabled threshold amount } } } }')).body.data.viewer.settings.autoTopup,
      ).toEqual({ enabled: false, threshold: '5', amount: '20' });
    });

    it('starts exactly one top-up when 50 concurrent charges cross the threshold, and credits it at once', async () => {
      const a = await seed(s).account({ tier: 'startup' }).wallet('20');
      const c = client(s, a.apiKey);
      await (await signedIn(s, a.id)).graphql(SET_AUTO, { i: { enabled: true, threshold: '10', amount: '20' } });
      const statuses = await charge(s, a.apiKey, 50);
      expect(statuses).toEqual(Array(50).fill(200));
      await s.services.autoTopups.idle();
      const autos = (await s.services.payments.listTopUps(a.id)).filter((t) => t.source === 'auto');
      expect(autos.map((t) => [t.status, t.amount])).toEqual([['paid', 20_000_000_000n]]);
      // 20 − 50 × 0.25 + 20
      expect(await c.balance()).toBe('27.5');
      const txs = (await s.services.billing.listTransactions(a.id, { limit: 1000 })).transactions;
      expect(txs.filter((t) => t.type === 'topup')).toHaveLength(1);
      expect(txs.filter((t) => t.type === 'usage')).toHaveLength(50);
    });

    it('starts a top-up when turned on with the balance already below the threshold: no call could start one', async () => {
      const a = await seed(s).account({ tier: 'startup' }).wallet('0.1');
      const c = client(s, a.apiKey);
      expect(await charge(s, a.apiKey, 1)).toEqual([402]);
      await (await signedIn(s, a.id)).graphql(SET_AUTO, { i: { enabled: true, threshold: '5', amount: '20' } });
      await s.services.autoTopups.idle();
      expect(await c.balance()).toBe('20.1');
      const autos = (await s.services.payments.listTopUps(a.id)).filter((t) => t.source === 'auto');
      expect(autos.map((t) => [t.status, t.amount])).toEqual([['paid', 20_000_000_000n]]);
      // Turned on again above the threshold: nothing more.
      await (await signedIn(s, a.id)).graphql(SET_AUTO, { i: { enabled: true, threshold: '5', amount: '25' } });
      await s.services.autoTopups.idle();
      expect(await c.balance()).toBe('20.1');
      expect(await charge(s, a.apiKey, 1)).toEqual([200]);
    });

    it('starts one top-up when 50 checks race directly on the database, bypassing the in-process coalescing', async () => {
      const a = await seed(s).account({ tier: 'startup' }).wallet('1');
      await (await signedIn(s, a.id)).graphql(SET_AUTO, { i: { enabled: true, threshold: '10', amount: '15' } });
      // Turning it on below the threshold started a check of its own: it races the 50 too.
      const outcomes = await Promise.all(Array.from({ length: 50 }, () => s.services.autoTopups.check(a.id)));
      await s.services.autoTopups.idle();
      expect(outcomes.filter((o) => o === 'credited').length).toBeLessThanOrEqual(1);
      expect(outcomes.every((o) => ['credited', 'in_flight', 'above_threshold'].includes(o))).toBe(true);
      const autos = (await s.services.payments.listTopUps(a.id)).filter((t) => t.source === 'auto');
      expect(autos.map((t) => t.status)).toEqual(['paid']);
      expect(await client(s, a.apiKey).balance()).toBe('16');
    });

    it('asks again, with no call, about an attempt a server left claimed but not credited (it stopped in between), when a server starts', async () => {
      const stalledDb = await createTestDatabase(backend);
      const s2 = await startTestServer({ databaseUrl: stalledDb.url, yaml: (u) => catalogYaml(u, MODEL(u)) });
      let restarted: TestServer | undefined;
      try {
        // Below the price of any call: no debit will come to start a check; at the threshold, no
        // refusal starts one either.
        const a = await seed(s2).account({ tier: 'startup' }).wallet('0.02');
        await (await signedIn(s2, a.id)).graphql(SET_AUTO, { i: { enabled: true, threshold: '0.02', amount: '20' } });
        expect(await charge(s2, a.apiKey, 1)).toEqual([402]);
        await s2.services.autoTopups.idle();
        // What a server's claim commits before it charges the card, left as a crash leaves it:
        // ten minutes ago, past retry_after_seconds (5 minutes by default), after which an
        // undecided attempt is asked again.
        const stall = async (accountId: string, minutesAgo: number) => {
          const at = new Date(Date.now() - minutesAgo * 60_000);
          const topUpId = newId('atu');
          await s2.services.billing.db.transaction(async (trx) => {
            await insertTopUp(trx, {
              id: topUpId,
              accountId,
              source: 'auto',
              processor: 'sandbox',
              amount: 20_000_000_000n,
              bonus: 0n,
              bonusBasisPoints: 0n,
              currency: 'USD',
              idempotencyKey: null,
              requestHash: null,
              expiresAt: null,
              now: at,
            });
            expect(await claimInFlight(trx, accountId, topUpId, at)).toBe(true);
          });
          return topUpId;
        };
        const id = await stall(a.id, 10);
        // The server restarted after the crash (another instance's next round does the same):
        // without any call, credited, the slot free.
        restarted = await startTestServer({ databaseUrl: stalledDb.url, yaml: (u) => catalogYaml(u, MODEL(u)) });
        await until(async () => (await client(s2, a.apiKey).balance()) === '20.02');
        await restarted.services.autoTopups.idle();
        const autos = (await s2.services.payments.listTopUps(a.id)).filter((t) => t.source === 'auto');
        expect(autos.map((t) => [t.id, t.status])).toEqual([[id, 'paid']]);
        const settings = await s2.services.autoTopups.getSettings(a.id);
        expect(settings.inFlight).toBe(false);
        // An account that turned automatic top-up off after its attempt was claimed: the attempt
        // is canceled, never asked again (asking is charging, and the customer has said no since),
        // its slot freed; no new one starts. The account still on is charged.
        const off = await seed(s2).account({ tier: 'startup' }).wallet('0.02');
        const on = await seed(s2).account({ tier: 'startup' }).wallet('0.02');
        for (const [who, enabled] of [
          [off, false],
          [on, true],
        ] as const) {
          await (await signedIn(s2, who.id)).graphql(SET_AUTO, { i: { enabled: true, threshold: '0.02', amount: '20' } });
          if (!enabled) await (await signedIn(s2, who.id)).graphql(SET_AUTO, { i: { enabled: false } });
        }
        const offAttempt = await stall(off.id, 60);
        const onAttempt = await stall(on.id, 10);
        const before = new Date(Date.now() - 300_000);
        expect(await stalledAutoTopUps(s2.services.billing.db, before, 5)).toEqual([off.id, on.id]);
        expect(await s2.services.autoTopups.resumeStalled()).toBe(2);
        await s2.services.autoTopups.idle();
        expect(await stalledAutoTopUps(s2.services.billing.db, before, 5)).toEqual([]);
        for (const [who, attempt, status, balance] of [
          [off, offAttempt, 'canceled', '0.02'],
          [on, onAttempt, 'paid', '20.02'],
        ] as const) {
          expect(await client(s2, who.apiKey).balance()).toBe(balance);
          const autos = (await s2.services.payments.listTopUps(who.id)).filter((t) => t.source === 'auto');
          expect(autos.map((t) => [t.id, t.status])).toEqual([[attempt, status]]);
          expect((await s2.services.autoTopups.getSettings(who.id)).inFlight).toBe(false);
        }
        expect((await s2.services.autoTopups.getSettings(off.id)).enabled).toBe(false);
        expect((await s2.services.autoTopups.getSettings(on.id)).enabled).toBe(true);
        // Turned off, a balance below the threshold starts no attempt.
        expect(await s2.services.autoTopups.check(off.id)).toBe('disabled');
        expect(await charge(s2, a.apiKey, 1)).toEqual([200]);
        expect(await s2.services.billing.verifyLedger()).toEqual([]);
      } finally {
        await restarted?.close();
        await s2.close();
        await stalledDb.drop();
      }
    });

    it('stops at the monthly cap and notifies once', async () => {
      // The cap is this server's configuration: a second server with max_monthly 30.
      const capDb = await createTestDatabase(backend);
      const capped = await startTestServer({
        databaseUrl: capDb.url,
        yaml: (u) => catalogYaml(u, `${MODEL(u)}payments:\n  auto_topup: { max_monthly: 30 }\n`),
      });
      try {
        const a = await seed(capped).account({ tier: 'startup' }).wallet('1');
        // Turned on below the threshold: the first top-up starts at once.
        await (await signedIn(capped, a.id)).graphql(SET_AUTO, { i: { enabled: true, threshold: '10', amount: '20' } });
        await capped.services.autoTopups.idle();
        expect(await client(capped, a.apiKey).balance()).toBe('21');
        // 48 calls of 0.25 take the 21 below the threshold again: a second 20 would pass the cap of 30.
        expect(await charge(capped, a.apiKey, 48)).toEqual(Array(48).fill(200));
        await capped.services.autoTopups.idle();
        expect(await capped.services.autoTopups.check(a.id)).toBe('capped');
        expect(await capped.services.autoTopups.check(a.id)).toBe('capped');
        expect(await client(capped, a.apiKey).balance()).toBe('9');
        const notes = await capped.services.billing.listNotifications(a.id);
        // The one automatic top-up that went through sent its receipt.
        expect(notes.map((n) => n.kind)).toEqual(['receipt', 'auto_topup_capped']);
        expect(await capped.services.billing.verifyLedger()).toEqual([]);
      } finally {
        await capped.close();
        await capDb.drop();
      }
    });
  });

  describe('with Stripe', () => {
    let db: TestDatabase;
    let s: TestServer;
    let stripe: FakeStripe;
    beforeAll(async () => {
      db = await createTestDatabase(backend);
      stripe = await startFakeStripe();
      s = await startTestServer({
        databaseUrl: db.url,
        yaml: (u) => catalogYaml(u, `${MODEL(u)}payments:\n  processor: stripe\n  auto_topup: { retry_after_seconds: 0 }\n`),
        env: { STRIPE_SECRET_KEY: TEST_SECRET_KEY, STRIPE_WEBHOOK_SECRET: TEST_WEBHOOK_SECRET, STRIPE_API_BASE: stripe.url },
      });
    });
    afterAll(async () => {
      await s?.close();
      await stripe?.close();
      await db?.drop();
    });
    beforeEach(() => stripe.reset());
    afterEach(async () => {
      await s.services.autoTopups.idle();
      expect(await s.services.billing.verifyLedger()).toEqual([]);
    });

    /** An account whose card was saved by a paid checkout of `amount`. */
    async function withSavedCard(amount: number, server: TestServer = s) {
      const a = await seed(server).account({ tier: 'startup' });
      const r = await client(server, a.apiKey).post('/wallet/top-up', { amount });
      const session = [...stripe.sessions.values()].find((x) => x.client_reference_id === r.body.id)!;
      stripe.pay(session.id);
      expect((await deliverStripeEvent(server.url, stripe.events.completed(session.id))).body).toMatchObject({ outcome: 'credited' });
      return a;
    }

    /**
     * An account with automatic top-up on (below 10, add 20) whose checkout payment was refunded in
     * full: its credits taken back and (by design) no top-up started by that, so every call is now
     * refused before any charge could start one. `call` makes one such call.
     */
    async function emptiedWithAutoTopup() {
      const a = await withSavedCard(20);
      const c = client(s, a.apiKey);
      await (await signedIn(s, a.id)).graphql(SET_AUTO, { i: { enabled: true, threshold: '10', amount: '20' } });
      await s.services.autoTopups.idle();
      const pi = [...stripe.paymentIntents.values()].find((i) => i.metadata.tollgate_account_id === a.id)!.id;
      expect((await deliverStripeEvent(s.url, stripe.events.refunded(pi, 2000))).body).toMatchObject({ outcome: 'reversed' });
      expect(await c.balance()).toBe('0');
      await s.services.autoTopups.idle();
      const call = async () => {
        const res = await fetch(`${s.v1}/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${a.apiKey}`, 'content-type': 'application/json' },
          body: callBody,
        });
        return { status: res.status, body: (await res.json()) as { error?: { code: string; message: string } } };
      };
      return { a, c, call };
    }

    it('refuses to turn on before a card is saved (payment_method_required), a checkout opened but not paid saving none', async () => {
      const a = await seed(s).account({ tier: 'startup' });
      const session = await signedIn(s, a.id);
      const refused = async () => {
        const r = await session.graphql(SET_AUTO, { i: { enabled: true, threshold: '5', amount: '20' } });
        expect(r.body.errors[0].extensions).toMatchObject({ code: 'payment_method_required', status: 400 });
        expect((await s.services.autoTopups.getSettings(a.id)).enabled).toBe(false);
      };
      await refused();
      // Opening a checkout makes the Stripe customer; no card is saved until one is paid.
      const open = await client(s, a.apiKey).post('/wallet/top-up', { amount: 10 });
      expect(open.status).toBe(200);
      await refused();
      const stripeSession = [...stripe.sessions.values()].find((x) => x.client_reference_id === open.body.id)!;
      stripe.pay(stripeSession.id);
      expect((await deliverStripeEvent(s.url, stripe.events.completed(stripeSession.id))).body).toMatchObject({ outcome: 'credited' });
      const on = await session.graphql(SET_AUTO, { i: { enabled: true, threshold: '5', amount: '20' } });
      expect(on.body.errors).toBeUndefined();
      expect(on.body.data.updateAutoTopup.enabled).toBe(true);
    });

    it('answers payment_processor_error, changing nothing, when Stripe cannot say whether a card is saved', async () => {
      const a = await withSavedCard(20);
      const customer = [...stripe.customers.values()].at(-1)!;
      stripe.script(`GET /v1/customers/${customer.id}/payment_methods`, [500, 500, 500, 500, 500]);
      const r = await (await signedIn(s, a.id)).graphql(SET_AUTO, { i: { enabled: true, threshold: '5', amount: '20' } });
      expect(r.body.errors[0].extensions).toMatchObject({ code: 'payment_processor_error' });
      expect((await s.services.autoTopups.getSettings(a.id)).enabled).toBe(false);
    });

    it('starts one top-up when calls are refused 402 insufficient_balance with automatic top-up on, and the 402 says so', async () => {
      const { a, c, call } = await emptiedWithAutoTopup();
      expect(stripe.count('POST /v1/payment_intents')).toBe(0);
      const said =
        /^The wallet cannot pay for this request: .* Automatic top-up is on for this account: a top-up of 20\.00 USD from the saved card is being tried \(or is already under way\); try again once it is credited\.$/;
      const first = await call();
      expect(first.status).toBe(402);
      expect(first.body.error).toMatchObject({ code: 'insufficient_balance', message: expect.stringMatching(said) });
      // Calls meanwhile are refused the same way until the top-up is credited, then served; all
      // of them together start no second one.
      const more = await Promise.all(Array.from({ length: 20 }, call));
      for (const r of more) {
        if (r.status === 402) expect(r.body.error?.message).toMatch(said);
        else expect(r.status).toBe(200);
      }
      await s.services.autoTopups.idle();
      expect(stripe.count('POST /v1/payment_intents')).toBe(1);
      const served = more.filter((r) => r.status === 200).length;
      expect(await c.balance()).toBe(String(20 - served * 0.25));
      expect(await charge(s, a.apiKey, 1)).toEqual([200]);
    });

    it('does not charge a declined card again because a client retries its 402s, and says the last charge failed', async () => {
      const { a, call } = await emptiedWithAutoTopup();
      stripe.reset();
      stripe.setCardBehaviour('decline');
      try {
        // A burst, then a client retrying one by one after the charge was declined.
        const burst = await Promise.all(Array.from({ length: 8 }, call));
        expect(burst.map((r) => r.status)).toEqual(Array(8).fill(402));
        await s.services.autoTopups.idle();
        for (let i = 0; i < 6; i++) {
          const r = await call();
          expect(r.status).toBe(402);
          expect(r.body.error?.message).toMatch(
            /Automatic top-up is on for this account, but the last charge of its saved card failed; a refused call does not try it again for 5 minutes after a failure\./,
          );
          await s.services.autoTopups.idle();
        }
        expect(stripe.count('POST /v1/payment_intents')).toBe(1);
        expect(await s.services.autoTopups.getSettings(a.id)).toMatchObject({ enabled: true, consecutiveFailures: 1 });
      } finally {
        stripe.setCardBehaviour('succeed');
      }
    });

    it('says nothing of automatic top-up in a 402 when it is off', async () => {
      const a = await seed(s).account({ tier: 'startup' });
      const res = await fetch(`${s.v1}/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${a.apiKey}`, 'content-type': 'application/json' },
        body: callBody,
      });
      expect(res.status).toBe(402);
      expect(((await res.json()) as { error: { message: string } }).error.message).not.toMatch(/Automatic top-up/);
    });

    it('charges the saved card off-session exactly once when 50 concurrent charges cross the threshold', async () => {
      const a = await withSavedCard(20);
      const c = client(s, a.apiKey);
      await (await signedIn(s, a.id)).graphql(SET_AUTO, { i: { enabled: true, threshold: '10', amount: '20' } });
      stripe.reset();
      expect(await charge(s, a.apiKey, 50)).toEqual(Array(50).fill(200));
      await s.services.autoTopups.idle();
      expect(stripe.count('POST /v1/payment_intents')).toBe(1);
      const intent = [...stripe.paymentIntents.values()].find((i) => i.off_session && i.metadata.tollgate_account_id === a.id)!;
      expect(intent).toMatchObject({ amount: 2000, currency: 'usd', status: 'succeeded', customer: expect.stringMatching(/^cus_/) });
      expect(stripe.requests.find((r) => r.path === '/v1/payment_intents')!.idempotencyKey).toBe(
        `tollgate-auto-${intent.metadata.tollgate_top_up_id}`,
      );
      expect(await c.balance()).toBe('27.5');
      // Stripe's own event for that intent later: nothing more.
      expect((await deliverStripeEvent(s.url, stripe.events.paymentIntentSucceeded(intent.id))).body).toMatchObject({
        outcome: 'already_paid',
      });
      expect(await c.balance()).toBe('27.5');
    });

    it('turns automatic top-up off after a card fails three times in a row, leaving three notifications', async () => {
      const a = await withSavedCard(10);
      const c = client(s, a.apiKey);
      await (await signedIn(s, a.id)).graphql(SET_AUTO, { i: { enabled: true, threshold: '10', amount: '25' } });
      stripe.setCardBehaviour('decline');
      for (let i = 1; i <= 4; i++) {
        expect(await charge(s, a.apiKey, 1)).toEqual([200]);
        await s.services.autoTopups.idle();
      }
      expect(stripe.count('POST /v1/payment_intents')).toBe(3);
      const settings = (await c.graphql('{ viewer { settings { autoTopup { enabled consecutiveFailures disabledReason } } } }')).body.data
        .viewer.settings.autoTopup;
      expect(settings).toMatchObject({ enabled: false, consecutiveFailures: 3 });
      expect(settings.disabledReason).toMatch(/3 failed automatic top-ups in a row.*insufficient/);
      // The checkout that saved the card sent a receipt first.
      const notes = (await s.services.billing.listNotifications(a.id)).filter((n) => n.kind !== 'receipt');
      expect(notes.map((n) => n.kind)).toEqual(['auto_topup_failed', 'auto_topup_failed', 'auto_topup_disabled']);
      expect(notes[2]!.payload).toMatchObject({ consecutive_failures: 3, amount: '25.00', currency: 'USD' });
      // Stripe's payment_failed events for those intents change nothing more.
      const customer = [...stripe.paymentIntents.values()].find((i) => i.metadata.tollgate_account_id === a.id)!.customer;
      const declined = [...stripe.paymentIntents.values()].filter((i) => i.off_session && i.customer === customer);
      expect(declined.map((i) => i.status)).toEqual(['requires_payment_method', 'requires_payment_method', 'requires_payment_method']);
      for (const intent of declined) {
        expect((await deliverStripeEvent(s.url, stripe.events.paymentIntentFailed(intent.id))).body).toMatchObject({
          outcome: 'unchanged',
        });
      }
      expect((await s.services.billing.listNotifications(a.id)).filter((n) => n.kind !== 'receipt')).toHaveLength(3);
      // 10 − 4 × 0.25, no credit.
      expect(await c.balance()).toBe('9');
      const autos = (await s.services.payments.listTopUps(a.id)).filter((t) => t.source === 'auto');
      expect(autos.map((t) => t.status)).toEqual(['failed', 'failed', 'failed']);
      // Turned back on with the card working, the balance still below the threshold: one top-up
      // starts at once, without waiting for a call.
      stripe.setCardBehaviour('succeed');
      await (await signedIn(s, a.id)).graphql(SET_AUTO, { i: { enabled: true, threshold: '10', amount: '25' } });
      await s.services.autoTopups.idle();
      expect(stripe.count('POST /v1/payment_intents')).toBe(4);
      expect(await c.balance()).toBe('34');
    });

    it('resolves a charge left undecided (processing) by its payment_intent event, charging once', async () => {
      const a = await withSavedCard(10);
      const c = client(s, a.apiKey);
      await (await signedIn(s, a.id)).graphql(SET_AUTO, { i: { enabled: true, threshold: '10', amount: '20' } });
      stripe.setCardBehaviour('processing', 1);
      expect(await charge(s, a.apiKey, 2)).toEqual([200, 200]);
      await s.services.autoTopups.idle();
      const intent = [...stripe.paymentIntents.values()].find((i) => i.off_session && i.status === 'processing')!;
      expect((await c.graphql('{ viewer { settings { autoTopup { inFlight } } } }')).body.data.viewer.settings.autoTopup.inFlight).toBe(
        true,
      );
      Object.assign(intent, { status: 'succeeded', amount_received: intent.amount });
      expect((await deliverStripeEvent(s.url, stripe.events.paymentIntentSucceeded(intent.id))).body).toMatchObject({
        outcome: 'credited',
      });
      expect(await c.balance()).toBe('29.5');
      // The second charge's check asked again (retry_after_seconds: 0) under the same key: one intent.
      const keys = stripe.requests.filter((r) => r.path === '/v1/payment_intents').map((r) => r.idempotencyKey);
      expect(new Set(keys)).toEqual(new Set([`tollgate-auto-${intent.metadata.tollgate_top_up_id}`]));
      expect(
        [...stripe.paymentIntents.values()].filter((i) => i.metadata.tollgate_top_up_id === intent.metadata.tollgate_top_up_id),
      ).toHaveLength(1);
    });

    it('asks again with the same key after a lost answer, and Stripe charges once', async () => {
      const a = await withSavedCard(10);
      const c = client(s, a.apiKey);
      await (await signedIn(s, a.id)).graphql(SET_AUTO, { i: { enabled: true, threshold: '10', amount: '20' } });
      // Stripe charges the card, but the answer is lost, and the SDK's two retries meet errors.
      stripe.script('POST /v1/payment_intents', ['lose', 503, 503]);
      expect(await charge(s, a.apiKey, 1)).toEqual([200]);
      await s.services.autoTopups.idle();
      expect(await c.balance()).toBe('9.75');
      const [pending] = (await s.services.payments.listTopUps(a.id)).filter((t) => t.source === 'auto');
      expect(pending!.status).toBe('open');
      // The next check (retry_after_seconds: 0) asks again under the same key.
      expect(await s.services.autoTopups.check(a.id)).toBe('credited');
      expect(await c.balance()).toBe('29.75');
      const keys = stripe.requests.filter((r) => r.path === '/v1/payment_intents').map((r) => r.idempotencyKey);
      expect(new Set(keys)).toEqual(new Set([`tollgate-auto-${pending!.id}`]));
      expect([...stripe.paymentIntents.values()].filter((i) => i.metadata.tollgate_account_id === a.id && i.off_session)).toHaveLength(1);
    });

    it('counts an attempt given up undecided against the monthly cap: its charge may still come', async () => {
      const capDb = await createTestDatabase(backend);
      const capped = await startTestServer({
        databaseUrl: capDb.url,
        yaml: (u) =>
          catalogYaml(u, `${MODEL(u)}payments:\n  processor: stripe\n  auto_topup: { retry_after_seconds: 0, max_monthly: 20 }\n`),
        env: { STRIPE_SECRET_KEY: TEST_SECRET_KEY, STRIPE_WEBHOOK_SECRET: TEST_WEBHOOK_SECRET, STRIPE_API_BASE: stripe.url },
      });
      try {
        const a = await withSavedCard(10, capped);
        await (await signedIn(capped, a.id)).graphql(SET_AUTO, { i: { enabled: true, threshold: '10', amount: '20' } });
        stripe.script('POST /v1/payment_intents', ['lose', 503, 503]);
        expect(await charge(capped, a.apiKey, 1)).toEqual([200]);
        await capped.services.autoTopups.idle();
        const [first] = (await capped.services.payments.listTopUps(a.id)).filter((t) => t.source === 'auto');
        const earlier = new Date(Date.now() - 23.5 * 3600_000);
        await capped.services.billing.db.run('update top_ups set created_at = ?, updated_at = ? where id = ?', [
          earlier,
          earlier,
          first!.id,
        ]);
        // Given up, but it may have charged 20 this month: a second would pass the cap of 20 (in
        // the first hours of a month the given-up one was started last month, and does not count).
        const sameMonth = earlier.getUTCMonth() === new Date().getUTCMonth();
        expect(await capped.services.autoTopups.check(a.id)).toBe(sameMonth ? 'capped' : 'credited');
        const autos = (await capped.services.payments.listTopUps(a.id)).filter((t) => t.source === 'auto');
        expect(autos.find((t) => t.id === first!.id)!.status).toBe('failed');
        expect(autos).toHaveLength(sameMonth ? 1 : 2);
      } finally {
        await capped.close();
        await capDb.drop();
      }
    });

    it("does not ask again under a key older than Stripe's 24-hour memory of it: the attempt fails, a new one starts, a late confirmation still credits", async () => {
      const a = await withSavedCard(10);
      const c = client(s, a.apiKey);
      await (await signedIn(s, a.id)).graphql(SET_AUTO, { i: { enabled: true, threshold: '10', amount: '20' } });
      // Stripe charges the card but every answer is lost, and then nothing is heard for a day.
      stripe.script('POST /v1/payment_intents', ['lose', 503, 503]);
      expect(await charge(s, a.apiKey, 1)).toEqual([200]);
      await s.services.autoTopups.idle();
      const [first] = (await s.services.payments.listTopUps(a.id)).filter((t) => t.source === 'auto');
      expect(first!.status).toBe('open');
      const dayAgo = new Date(Date.now() - 24 * 3600_000);
      await s.services.billing.db.run('update top_ups set created_at = ?, updated_at = ? where id = ?', [dayAgo, dayAgo, first!.id]);
      const asked = stripe.requests.filter((r) => r.path === '/v1/payment_intents').length;

      // Asked again now, Stripe might have forgotten the key and charge a second time for one top-up.
      expect(await s.services.autoTopups.check(a.id)).toBe('credited');
      const keys = stripe.requests
        .filter((r) => r.path === '/v1/payment_intents')
        .slice(asked)
        .map((r) => r.idempotencyKey);
      expect(keys).not.toContain(`tollgate-auto-${first!.id}`);
      const autos = (await s.services.payments.listTopUps(a.id)).filter((t) => t.source === 'auto');
      const gaveUp = autos.find((t) => t.id === first!.id)!;
      expect(gaveUp.status).toBe('failed');
      expect(gaveUp.failureReason).toMatch(/no answer about this charge within 23 hours/);
      expect(autos.filter((t) => t.status === 'paid')).toHaveLength(1);
      expect(await c.balance()).toBe('29.75');
      const notes = (await s.services.billing.listNotifications(a.id)).map((n) => n.kind);
      expect(notes).toContain('auto_topup_failed');

      // The first charge did go through: its confirmation credits it, nothing is lost.
      const intent = [...stripe.paymentIntents.values()].find((i) => i.metadata.tollgate_top_up_id === first!.id)!;
      expect((await deliverStripeEvent(s.url, stripe.events.paymentIntentSucceeded(intent.id))).body).toMatchObject({
        outcome: 'credited',
      });
      expect(await c.balance()).toBe('49.75');
    });
  });
});
