// A paid Stripe top-up whose money goes back to the payer: refunds (charge.refunded, cumulative)
// and disputes (charge.dispute.funds_withdrawn / funds_reinstated) take the credits it bought back
// from the wallet, never below zero and never twice, and a dispute won gives them back. Against
// the fake Stripe API on loopback with webhooks signed as Stripe signs them, on SQLite and (with
// TEST_DATABASE_URL) PostgreSQL; each case ends with `ledger verify` passing.
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { getKnex } from '../src/db/orm.js';
import { BACKENDS, createTestDatabase, type TestDatabase } from './support/databases.js';
import { startFakeStripe, type FakeStripe } from './support/fake-stripe.js';
import { catalogYaml, startTestServer, type TestServer } from './support/harness.js';
import { client, seed, signedIn } from './support/seed.js';
import { deliverStripeEvent, TEST_SECRET_KEY, TEST_WEBHOOK_SECRET } from './support/stripe-webhooks.js';

// A startup tier with a fee: the way these tests spend part of a wallet.
const YAML = 'payments:\n  processor: stripe\ntiers:\n  startup:\n    monthly_fee: 80\n';

const SET_AUTO = 'mutation($i: AutoTopupInput!) { updateAutoTopup(input: $i) { enabled disabledReason } }';

describe.each(BACKENDS)('refunds and disputes of Stripe top-ups on %s', (backend) => {
  let db: TestDatabase;
  let s: TestServer;
  let stripe: FakeStripe;
  /** The server's log lines at level error and above. */
  const errors: { msg: string }[] = [];
  const logStream = new Writable({
    write(chunk, _enc, done) {
      for (const line of String(chunk).split('\n')) if (line && JSON.parse(line).level >= 50) errors.push(JSON.parse(line));
      done();
    },
  });

  beforeAll(async () => {
    db = await createTestDatabase(backend);
    stripe = await startFakeStripe();
    s = await startTestServer({
      databaseUrl: db.url,
      logger: pino({ level: 'info' }, logStream),
      yaml: (u) => catalogYaml(u, YAML),
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
    expect(await s.services.billing.verifyLedger()).toEqual([]);
  });

  const deliver = async (event: Parameters<typeof deliverStripeEvent>[1]) => {
    const r = await deliverStripeEvent(s.url, event);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return (r.body as { outcome: string }).outcome;
  };
  const ledger = async (accountId: string) =>
    (await s.services.billing.listTransactions(accountId, { limit: 1000 })).transactions.map((t) => [t.type, t.amount]);
  const notices = async (accountId: string) =>
    (await s.services.billing.listNotifications(accountId)).filter((n) => n.kind === 'topup_reversed').map((n) => n.payload);

  /** A paid checkout top-up of `amount` USD; returns its payment intent. */
  async function paidTopUp(apiKey: string, amount: number): Promise<string> {
    const r = await client(s, apiKey).post('/wallet/top-up', { amount });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const session = [...stripe.sessions.values()].find((x) => x.client_reference_id === r.body.id)!;
    stripe.pay(session.id);
    expect(await deliver(stripe.events.completed(session.id))).toBe('credited');
    return session.payment_intent!;
  }

  /** A paid 100.00 top-up (110 credits) with 80 spent on the startup tier's fee, then half of it refunded: 55 due, the 30 left taken. */
  async function halfRefundedWith30Left() {
    const a = await seed(s).account();
    const c = client(s, a.apiKey);
    const pi = await paidTopUp(a.apiKey, 100);
    await s.services.billing.setTier(a.id, 'startup');
    expect(await deliver(stripe.events.refunded(pi, 5_000))).toBe('reversed');
    expect(await c.balance()).toBe('0');
    return { a, c, pi };
  }

  it('takes back the credits of a refunded payment, bonus included, in the refunded share; repeated and late events take nothing twice', async () => {
    const a = await seed(s).account();
    const pi = await paidTopUp(a.apiKey, 100); // 100 + 10 bonus
    const c = client(s, a.apiKey);
    expect(await c.balance()).toBe('110');

    // 40.00 of the 100.00 refunded: 40% of the 110 credits.
    const partial = stripe.events.refunded(pi, 4_000);
    expect(await deliver(partial)).toBe('reversed');
    expect(await c.balance()).toBe('66');
    // The same event again, and an older total after it: nothing more.
    expect(await deliver(partial)).toBe('unchanged');
    expect(await deliver(stripe.events.refunded(pi, 2_000))).toBe('unchanged');
    expect(await c.balance()).toBe('66');
    // The rest refunded (the charge's total is cumulative): the other 60%.
    expect(await deliver(stripe.events.refunded(pi, 10_000))).toBe('reversed');
    expect(await c.balance()).toBe('0');
    expect(await ledger(a.id)).toEqual([
      ['topup', 100_000_000_000n],
      ['bonus', 10_000_000_000n],
      ['topup', -44_000_000_000n],
      ['topup', -66_000_000_000n],
    ]);
    const rows = (await s.services.billing.listTransactions(a.id)).transactions;
    expect(rows[2]!.reference).toBe(pi);
    expect(rows[2]!.description).toMatch(/refunded \(40\.00 USD of payment pi_\w+\): 44 USD in credits taken back$/);
    const shown = await c.graphql('{ viewer { topUps(first: 1) { nodes { status amount refunded dispute } } } }');
    expect(shown.body.data.viewer.topUps.nodes[0]).toEqual({ status: 'paid', amount: '100', refunded: '100', dispute: null });
    const sent = await notices(a.id);
    expect(sent).toHaveLength(2);
    expect(sent).toContainEqual(
      expect.objectContaining({
        cause: 'refund',
        payment_id: pi,
        payment_amount: '40',
        credits_due: '44',
        credits_taken: '44',
        balance: '66',
      }),
    );
  });

  it('takes back no more than the wallet has available (never below zero), says so, and collects nothing later', async () => {
    const a = await seed(s).account();
    const pi = await paidTopUp(a.apiKey, 100);
    // 80 of the 110 credits spent on the startup tier's fee.
    await s.services.billing.setTier(a.id, 'startup');
    const c = client(s, a.apiKey);
    expect(await c.balance()).toBe('30');
    expect(await deliver(stripe.events.refunded(pi, 10_000))).toBe('reversed');
    expect(await c.balance()).toBe('0');
    const last = (await s.services.billing.listTransactions(a.id, { order: 'desc', limit: 1 })).transactions[0]!;
    expect([last.type, last.amount, last.balanceAfter]).toEqual(['topup', -30_000_000_000n, 0n]);
    expect(last.description).toMatch(/30 USD in credits taken back of 110 due \(the rest was already spent\)$/);
    expect(await notices(a.id)).toEqual([
      expect.objectContaining({ cause: 'refund', credits_due: '110', credits_taken: '30', balance: '0' }),
    ]);
    // The customer's feed (and e-mail) words it.
    const feed = await c.graphql('{ viewer { notifications(first: 10) { nodes { kind subject text } } } }');
    const notice = feed.body.data.viewer.notifications.nodes.find((n: { kind: string }) => n.kind === 'topup_reversed');
    expect(notice.subject).toBe('Top-up refunded: 30.00 USD in credits taken back');
    expect(notice.text).toMatch(/Only 30\.00 USD of it could be taken back: the rest had already been spent/);

    // A later top-up is not used to collect what was spent: the refund was accounted for.
    const second = await paidTopUp(a.apiKey, 20);
    expect(await c.balance()).toBe('20');
    expect(await deliver(stripe.events.refunded(pi, 10_000))).toBe('unchanged');
    expect(await c.balance()).toBe('20');
    expect(second).not.toBe(pi);
  });

  it('does not charge the saved card again after a refund takes the balance below the automatic top-up threshold', async () => {
    const a = await seed(s).account();
    const pi = await paidTopUp(a.apiKey, 100);
    const owner = await signedIn(s, a.id);
    const on = await owner.graphql(SET_AUTO, { i: { enabled: true, threshold: '10', amount: '20' } });
    expect(on.body.data.updateAutoTopup.enabled).toBe(true);
    expect(await deliver(stripe.events.refunded(pi, 10_000))).toBe('reversed');
    expect(await client(s, a.apiKey).balance()).toBe('0');
    await new Promise((r) => setTimeout(r, 200));
    await s.services.autoTopups.idle();
    expect(stripe.count('POST /v1/payment_intents')).toBe(0);
    expect((await s.services.autoTopups.getSettings(a.id)).enabled).toBe(true);
  });

  it('takes the credits back when a dispute withdraws the funds, turns automatic top-up off, and gives exactly that back when the funds are reinstated', async () => {
    const a = await seed(s).account();
    const pi = await paidTopUp(a.apiKey, 100);
    const owner = await signedIn(s, a.id);
    await owner.graphql(SET_AUTO, { i: { enabled: true, threshold: '5', amount: '20' } });
    await s.services.billing.setTier(a.id, 'startup'); // 80 spent: 30 left
    const c = client(s, a.apiKey);

    const withdrawn = stripe.events.disputeFunds(pi, 'withdrawn');
    expect(await deliver(withdrawn)).toBe('reversed');
    expect(await deliver(withdrawn)).toBe('unchanged');
    expect(await c.balance()).toBe('0');
    const auto = (await c.graphql('{ viewer { settings { autoTopup { enabled } } } }')).body.data.viewer.settings.autoTopup;
    expect(auto.enabled).toBe(false);
    expect((await s.services.autoTopups.getSettings(a.id)).disabledReason).toBe(`Turned off: payment ${pi} is disputed.`);
    await s.services.autoTopups.idle();
    expect(stripe.count('POST /v1/payment_intents')).toBe(0);

    // Money comes in meanwhile; the dispute is won: the 30 taken come back, not the 110 due.
    await paidTopUp(a.apiKey, 20);
    expect(await c.balance()).toBe('20');
    const reinstated = stripe.events.disputeFunds(pi, 'reinstated');
    errors.length = 0;
    expect(await deliver(reinstated)).toBe('reinstated');
    // Giving credits back owes nothing: no "credits were already spent" error for the operator.
    expect(errors.map((e) => e.msg)).toEqual([]);
    expect(await deliver(reinstated)).toBe('unchanged');
    expect(await deliver(withdrawn)).toBe('unchanged');
    expect(await c.balance()).toBe('50');
    const shown = await c.graphql('{ viewer { topUps(first: 5) { nodes { amount dispute } } } }');
    expect(shown.body.data.viewer.topUps.nodes).toContainEqual({ amount: '100', dispute: 'reinstated' });
    const kinds = (await ledger(a.id)).map(([type, amount]) => `${type} ${String(amount)}`);
    expect(kinds).toContain('topup -30000000000');
    expect(kinds).toContain('topup 30000000000');
    const sent = await notices(a.id);
    expect(sent).toContainEqual(
      expect.objectContaining({ cause: 'dispute', credits_due: '110', credits_taken: '30', auto_topup_disabled: true }),
    );
    expect(sent).toContainEqual(expect.objectContaining({ cause: 'reinstated', credits_given: '30', balance: '50' }));
  });

  it('takes nothing when the funds are reinstated before their withdrawal is delivered', async () => {
    const a = await seed(s).account();
    const pi = await paidTopUp(a.apiKey, 50); // 50 + 2.5 bonus
    const withdrawn = stripe.events.disputeFunds(pi, 'withdrawn');
    expect(await deliver(stripe.events.disputeFunds(pi, 'reinstated'))).toBe('reinstated');
    expect(await deliver(withdrawn)).toBe('unchanged');
    expect(await client(s, a.apiKey).balance()).toBe('52.5');
    expect(await notices(a.id)).toEqual([]);
  });

  it('takes back only what a refund left when the rest is disputed, and runs concurrent deliveries once', async () => {
    const a = await seed(s).account();
    const pi = await paidTopUp(a.apiKey, 100);
    const refund = stripe.events.refunded(pi, 5_000);
    const outcomes = await Promise.all([deliver(refund), deliver(refund), deliver(refund)]);
    expect(outcomes.sort()).toEqual(['reversed', 'unchanged', 'unchanged']);
    expect(await client(s, a.apiKey).balance()).toBe('55');
    // The other half disputed.
    expect(await deliver(stripe.events.disputeFunds(pi, 'withdrawn', 5_000))).toBe('reversed');
    expect(await client(s, a.apiKey).balance()).toBe('0');
  });

  it('takes nothing back twice when a refund comes between a dispute withdrawn and its funds reinstated (all the money back: no credits left)', async () => {
    const a = await seed(s).account();
    const pi = await paidTopUp(a.apiKey, 100); // 110 credits
    const c = client(s, a.apiKey);
    expect(await deliver(stripe.events.disputeFunds(pi, 'withdrawn'))).toBe('reversed');
    expect(await c.balance()).toBe('0');
    // The dispute is won, then the operator refunds it all; the refund is delivered first.
    const reinstated = stripe.events.disputeFunds(pi, 'reinstated');
    expect(await deliver(stripe.events.refunded(pi, 10_000))).toBe('unchanged'); // its credits are already taken
    expect(await deliver(reinstated)).toBe('reinstated');
    // The payer has all the money back: none of its credits are given back.
    expect(await c.balance()).toBe('0');
    // A second dispute won with nothing refunded gives back what was taken.
    const b = await seed(s).account();
    const other = await paidTopUp(b.apiKey, 50); // 52.5 credits
    expect(await deliver(stripe.events.disputeFunds(other, 'withdrawn'))).toBe('reversed');
    expect(await deliver(stripe.events.refunded(other, 2_000))).toBe('unchanged'); // 20.00 refunded after the dispute was won
    expect(await deliver(stripe.events.disputeFunds(other, 'reinstated'))).toBe('reinstated');
    expect(await client(s, b.apiKey).balance()).toBe('31.5'); // 52.5 less the refunded 40%
  });

  it('keeps a refund or dispute delivered before the event that credits its payment, and applies it when the top-up is credited', async () => {
    const a = await seed(s).account();
    const c = client(s, a.apiKey);
    const start = async (amount: number) => {
      const r = await c.post('/wallet/top-up', { amount });
      const session = [...stripe.sessions.values()].find((x) => x.client_reference_id === r.body.id)!;
      stripe.pay(session.id);
      // The completion's first delivery failed: Stripe sends it again later.
      return { completed: stripe.events.completed(session.id), pi: session.payment_intent! };
    };
    const refunded = await start(100);
    expect(await deliver(stripe.events.refunded(refunded.pi, 10_000))).toBe('unknown_checkout');
    expect(await deliver(refunded.completed)).toBe('credited');
    expect(await c.balance()).toBe('0');
    const disputed = await start(50);
    expect(await deliver(stripe.events.disputeFunds(disputed.pi, 'withdrawn'))).toBe('unknown_checkout');
    expect(await deliver(disputed.completed)).toBe('credited');
    expect(await c.balance()).toBe('0');
    // Each credit and its reversal in the ledger, and the customer told.
    expect((await ledger(a.id)).map(([, amount]) => amount)).toEqual([
      100_000_000_000n,
      10_000_000_000n,
      -110_000_000_000n,
      50_000_000_000n,
      2_500_000_000n,
      -52_500_000_000n,
    ]);
    expect((await notices(a.id)).map((n) => n.cause).sort()).toEqual(['dispute', 'refund']);
  });

  it('measures refunds and disputes alike against what was charged, tax included', async () => {
    const taxed = async (apiKey: string) => {
      const r = await client(s, apiKey).post('/wallet/top-up', { amount: 100 });
      const session = [...stripe.sessions.values()].find((x) => x.client_reference_id === r.body.id)!;
      session.amount_total = 10_800; // 8.00 of tax added by Stripe
      stripe.pay(session.id);
      expect(await deliver(stripe.events.completed(session.id))).toBe('credited');
      return session.payment_intent!;
    };
    const a = await seed(s).account();
    const pi = await taxed(a.apiKey);
    const c = client(s, a.apiKey);
    expect(await deliver(stripe.events.refunded(pi, 5_400))).toBe('reversed'); // half the charge
    expect(await c.balance()).toBe('55');
    expect(await deliver(stripe.events.disputeFunds(pi, 'withdrawn', 5_400))).toBe('reversed'); // the other half
    expect(await c.balance()).toBe('0');
    // Half the charge disputed takes what half refunded takes.
    const b = await seed(s).account();
    expect(await deliver(stripe.events.disputeFunds(await taxed(b.apiKey), 'withdrawn', 5_400))).toBe('reversed');
    expect(await client(s, b.apiKey).balance()).toBe('55');
  });

  it('never collects a shortfall later: a reinstatement gives back what its dispute took, whatever a refund could not take before', async () => {
    const { a, c, pi } = await halfRefundedWith30Left();
    await paidTopUp(a.apiKey, 100);
    expect(await c.balance()).toBe('110');
    expect(await deliver(stripe.events.disputeFunds(pi, 'withdrawn', 5_000))).toBe('reversed'); // the other half: 55
    expect(await c.balance()).toBe('55');
    expect(await deliver(stripe.events.disputeFunds(pi, 'reinstated', 5_000))).toBe('reinstated');
    expect(await c.balance()).toBe('110');
  });

  it('gives back, when a dispute is won, only what the dispute took: never what a refund took before or after it', async () => {
    // A refund, then a dispute of the rest that finds the wallet empty: winning it gives nothing back.
    const { a, c, pi } = await halfRefundedWith30Left();
    expect(await deliver(stripe.events.disputeFunds(pi, 'withdrawn', 5_000))).toBe('reversed'); // 55 due, none left to take
    expect(await c.balance()).toBe('0');
    expect(await deliver(stripe.events.disputeFunds(pi, 'reinstated', 5_000))).toBe('reinstated');
    expect(await c.balance()).toBe('0');
    expect((await ledger(a.id)).filter(([, amount]) => BigInt(amount) > 0n).length).toBe(2); // the top-up and its bonus: nothing given back
    // A dispute of it all that takes the 30 left, a refund of half, then the dispute won: the
    // refund's share (55) covers what was taken, so nothing comes back, as with the refund alone.
    const b = await seed(s).account();
    const other = await paidTopUp(b.apiKey, 100);
    await s.services.billing.setTier(b.id, 'startup');
    expect(await deliver(stripe.events.disputeFunds(other, 'withdrawn'))).toBe('reversed'); // 110 due, 30 taken
    expect(await deliver(stripe.events.refunded(other, 5_000))).toBe('unchanged');
    expect(await deliver(stripe.events.disputeFunds(other, 'reinstated'))).toBe('reinstated');
    expect(await client(s, b.apiKey).balance()).toBe('0');
    // A dispute of half that takes its 55 in full, a refund of the other half that finds 27.5: the
    // dispute won gives back its 55; the refund keeps its 27.5 (its 27.5 short stays forgiven).
    const d = await seed(s).account();
    const dc = client(s, d.apiKey);
    const third = await paidTopUp(d.apiKey, 100); // 110 credits
    await s.services.billing.setTier(d.id, 'startup'); // 30 left
    await paidTopUp(d.apiKey, 50); // 82.5
    expect(await deliver(stripe.events.disputeFunds(third, 'withdrawn', 5_000))).toBe('reversed');
    expect(await dc.balance()).toBe('27.5');
    expect(await deliver(stripe.events.refunded(third, 5_000))).toBe('reversed');
    expect(await dc.balance()).toBe('0');
    expect(await deliver(stripe.events.disputeFunds(third, 'reinstated', 5_000))).toBe('reinstated');
    expect(await dc.balance()).toBe('55');
  });

  it('counts only what was taken when a dispute is said again with another amount (no ledger row replayed as taken)', async () => {
    const a = await seed(s).account();
    const c = client(s, a.apiKey);
    const pi = await paidTopUp(a.apiKey, 100); // 110 credits
    expect(await deliver(stripe.events.disputeFunds(pi, 'withdrawn', 3_000))).toBe('reversed');
    expect(await c.balance()).toBe('77');
    expect(await deliver(stripe.events.disputeFunds(pi, 'withdrawn', 5_000))).toBe('reversed');
    expect(await c.balance()).toBe('55');
    expect(await deliver(stripe.events.disputeFunds(pi, 'withdrawn', 3_000))).toBe('reinstated'); // lowered again: 22 back
    expect(await c.balance()).toBe('77');
    expect(await deliver(stripe.events.disputeFunds(pi, 'reinstated', 3_000))).toBe('reinstated');
    // Never more than the top-up bought.
    expect(await c.balance()).toBe('110');
  });

  it("carries reversals made before migration 0015 over: what they called for, what they took, a dispute's amount", async () => {
    const a = await seed(s).account();
    const c = client(s, a.apiKey);
    const refunded = await paidTopUp(a.apiKey, 100); // 110 credits
    await s.services.billing.setTier(a.id, 'startup'); // the 80.00 fee: 30 left
    expect(await deliver(stripe.events.refunded(refunded, 5_000))).toBe('reversed'); // 55 due, 30 taken
    const disputed = await paidTopUp(a.apiKey, 100); // 110 more
    expect(await deliver(stripe.events.disputeFunds(disputed, 'withdrawn', 3_000))).toBe('reversed'); // 33 taken
    expect(await c.balance()).toBe('77');
    // As migration 0014's code left them: its ledger keys, the dispute's credits in dispute_nanos.
    const knex = getKnex(s.services.orm);
    const migrator = s.services.orm.getMigrator();
    await migrator.down({ to: '0015-payment-reversals' }); // 0015 and every one after it
    expect(await knex.schema.hasTable('payment_reversals')).toBe(false);
    for (const [pi, legacy] of [
      [refunded, 'topup-refund:stripe:'],
      [disputed, 'topup-dispute:stripe:'],
    ] as const)
      await knex('wallet_transactions')
        .where({ reference: pi })
        .andWhere('amount', '<', 0)
        .update({ idempotency_key: `${legacy}${pi}` });
    await knex('top_ups').where({ payment_id: disputed }).update({ dispute_nanos: '33000000000' });
    await migrator.up();
    const state = async (pi: string) => {
      const t = await knex('top_ups').where({ payment_id: pi }).first();
      const r = await knex('payment_reversals').where({ payment_id: pi }).first();
      return { reversed: String(t.reversed_nanos), taken: String(t.taken_back_nanos), disputeCents: r?.dispute_cents ?? null };
    };
    expect(await state(refunded)).toEqual({ reversed: '55000000000', taken: '30000000000', disputeCents: null });
    expect(await state(disputed)).toEqual({ reversed: '33000000000', taken: '33000000000', disputeCents: 3_000 });
    // Later events build on them: 10.00 more refunded takes its 11 (the old shortfall stays forgiven);
    // 10.00 refunded of the disputed payment takes its own 11, not all that is left.
    expect(await deliver(stripe.events.refunded(refunded, 6_000))).toBe('reversed');
    expect(await c.balance()).toBe('66');
    expect(await deliver(stripe.events.refunded(disputed, 1_000))).toBe('reversed');
    expect(await c.balance()).toBe('55');
  });

  it("carries refunds' shortfalls made before migration 0017 over, so that a dispute won still gives back only what it took", async () => {
    const { a, c, pi } = await halfRefundedWith30Left();
    const migrator = s.services.orm.getMigrator();
    await migrator.down({ to: '0017-refund-forgiven' });
    const knex = getKnex(s.services.orm);
    expect(await knex.schema.hasColumn('top_ups', 'refund_forgiven_nanos')).toBe(false);
    await migrator.up();
    expect(String((await knex('top_ups').where({ payment_id: pi }).first()).refund_forgiven_nanos)).toBe('25000000000');
    await paidTopUp(a.apiKey, 100); // 110
    expect(await deliver(stripe.events.disputeFunds(pi, 'withdrawn', 5_000))).toBe('reversed'); // 55 taken
    expect(await c.balance()).toBe('55');
    expect(await deliver(stripe.events.disputeFunds(pi, 'reinstated', 5_000))).toBe('reinstated');
    expect(await c.balance()).toBe('110');
  });

  it('acknowledges a refund of a payment it does not know, and a charge without a payment intent, changing nothing', async () => {
    const a = await seed(s).account();
    await paidTopUp(a.apiKey, 10);
    const unknown = stripe.events.custom('charge.refunded', {
      id: 'ch_unknown',
      object: 'charge',
      amount: 1_000,
      amount_refunded: 1_000,
      currency: 'usd',
      payment_intent: 'pi_not_ours',
      metadata: {},
    });
    expect(await deliver(unknown)).toBe('unknown_checkout');
    const bare = stripe.events.custom('charge.refunded', {
      id: 'ch_bare',
      object: 'charge',
      amount: 1_000,
      amount_refunded: 1_000,
      currency: 'usd',
      payment_intent: null,
      metadata: {},
    });
    expect(await deliver(bare)).toBe('ignored');
    const malformed = stripe.events.custom('charge.refunded', {
      id: 'ch_x',
      object: 'charge',
      payment_intent: 'pi_x',
      amount_refunded: 'all',
    });
    expect(await deliver(malformed)).toBe('ignored');
    expect(await client(s, a.apiKey).balance()).toBe('10');
  });
});
