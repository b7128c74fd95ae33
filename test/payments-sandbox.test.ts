// Top-ups with the sandbox (the embedded default processor), end to end through the running
// server, on SQLite and (with TEST_DATABASE_URL) PostgreSQL: POST /v1/wallet/top-up → the checkout
// page → Pay → the balance and the transactions; the same through GraphQL; cancel, twice-paying,
// the amount rules and the Idempotency-Key. Every test ends with `ledger verify` passing.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { BACKENDS, createTestDatabase, type TestDatabase } from './support/databases.js';
import { startTestServer, type TestServer } from './support/harness.js';
import { client, seed } from './support/seed.js';

describe.each(BACKENDS)('sandbox top-ups on %s', (backend) => {
  let db: TestDatabase;
  let s: TestServer;

  beforeAll(async () => {
    db = await createTestDatabase(backend);
    s = await startTestServer({ databaseUrl: db.url });
  });
  afterAll(async () => {
    await s?.close();
    await db?.drop();
  });
  afterEach(async () => {
    expect(await s.services.billing.verifyLedger()).toEqual([]);
  });

  const transactions = async (accountId: string) => (await s.services.billing.listTransactions(accountId, { limit: 1000 })).transactions;
  const topUp = (apiKey: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${s.v1}/wallet/top-up`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    }).then(async (res) => ({ status: res.status, body: (await res.json()) as any }));
  const post = (url: string, accept = 'application/json') => fetch(url, { method: 'POST', headers: { accept }, redirect: 'manual' });

  it('pays a top-up end to end over HTTP: checkout URL, the test page, Pay, then the balance and two transactions', async () => {
    const a = await seed(s).account();
    const c = client(s, a.apiKey);

    const created = await topUp(a.apiKey, { amount: 120 });
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({ amount: 120, currency: 'USD', bonus: 12, credits: 132, status: 'open' });
    const url: string = created.body.checkout_url;
    expect(url).toBe(`${s.url}/checkout/sandbox/${created.body.id}`);

    const page = await fetch(url);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    const html = await page.text();
    expect(html).toContain('TEST PROCESSOR — NO REAL MONEY');
    expect(html).toMatch(/data-field="amount">120\.00 USD/);
    expect(html).toMatch(/data-field="bonus">\+12\.00 USD \(10%\)/);
    expect(html).toMatch(/data-field="credits">132\.00 USD/);
    expect(html).toContain(`action="${created.body.id}/complete"`);
    expect(html).toContain(`action="${created.body.id}/cancel"`);
    expect(await c.balance()).toBe('0');

    const paid = await post(`${url}/complete`);
    expect(paid.status).toBe(200);
    expect(await paid.json()).toMatchObject({ id: created.body.id, status: 'paid', credits: 132 });

    expect(await c.balance()).toBe('132');
    const list = await c.get('/wallet/transactions');
    expect(list.body.transactions.map((t: any) => [t.type, t.amount, t.balance_after])).toEqual([
      ['topup', 120, 120],
      ['bonus', 12, 132],
    ]);
    expect(list.body.transactions[0].description).toContain('sandbox');
    expect(list.body.transactions[1].description).toContain('10%');
  });

  it('pays through GraphQL: topUpQuote and topUp show the bonus first, viewer.topUps the state, the browser form lands on the status page', async () => {
    const a = await seed(s).account();
    const c = client(s, a.apiKey);

    const quote = await c.graphql('{ topUpQuote(amount: "250") { amount bonus bonusPercent credits currency } }');
    expect(quote.body.data.topUpQuote).toEqual({ amount: '250', bonus: '37.5', bonusPercent: 15, credits: '287.5', currency: 'USD' });

    const started = await c.graphql(
      'mutation($a: Decimal!) { topUp(amount: $a) { id status amount bonus bonusPercent credits checkoutUrl source processor } }',
      { a: '50' },
    );
    const t = started.body.data.topUp;
    expect(t).toMatchObject({
      status: 'open',
      amount: '50',
      bonus: '2.5',
      bonusPercent: 5,
      credits: '52.5',
      source: 'checkout',
      processor: 'sandbox',
    });

    const listed = await c.graphql('{ viewer { topUps { nodes { id status } } } }');
    expect(listed.body.data.viewer.topUps.nodes).toEqual([{ id: t.id, status: 'open' }]);

    // A browser's form post: 303 to the status page, which then shows the top-up paid.
    const form = await post(`${t.checkoutUrl}/complete`, 'text/html,application/xhtml+xml');
    expect(form.status).toBe(303);
    const landing = form.headers.get('location')!;
    expect(landing).toBe(`${s.url}/checkout/${t.id}`);
    const status = await fetch(landing, { headers: { accept: 'text/html' } });
    const html = await status.text();
    expect(html).toMatch(/data-status="paid"/);
    // After paying, the page says what was paid and credited, the new balance, when, and links back.
    expect(html).not.toContain('Amount to pay');
    expect(html).toMatch(/<th>Paid<\/th><td data-field="amount">50\.00 USD/);
    expect(html).toMatch(/<th>Credited to your wallet<\/th><td data-field="credits">52\.50 USD/);
    expect(html).toMatch(/data-field="balance">52\.50 USD/);
    expect(html).toMatch(/Paid on <time datetime="[^"]+">\d{1,2} [A-Z][a-z]+ \d{4} at \d{2}:\d{2} UTC<\/time>/);
    // Back to the result page of this very top-up (not of the account's latest, which may be another).
    expect(html).toContain(`<a class="back" href="${s.url}/dashboard/top-up/return?top_up=${t.id}">`);

    expect(await c.balance()).toBe('52.5');
    // Opened again later (from history, or Stripe's records): no balance on a page anyone with the link can read.
    const paidAt = new Date(Date.now() - 16 * 60_000);
    await s.services.billing.db.run('update top_ups set settled_at = ? where id = ?', [paidAt, t.id]);
    const reopened = await (await fetch(landing, { headers: { accept: 'text/html' } })).text();
    expect(reopened).toMatch(/data-status="paid"/);
    expect(reopened).toMatch(/data-field="credits">52\.50 USD/);
    expect(reopened).not.toContain('data-field="balance"');
    const after = await c.graphql(
      '{ viewer { topUps { nodes { id status settledAt } } wallet { transactions { nodes { type amount } } } } }',
    );
    expect(after.body.data.viewer.topUps.nodes[0]).toMatchObject({ id: t.id, status: 'paid' });
    expect(after.body.data.viewer.wallet.transactions.nodes).toEqual([
      { type: 'topup', amount: '50' },
      { type: 'bonus', amount: '2.5' },
    ]);
    const later = (await topUp(a.apiKey, { amount: 70 })).body;
    const byId = await c.graphql('query($id: ID!) { viewer { topUp(id: $id) { id status amount } } }', { id: t.id });
    expect(byId.body.data.viewer.topUp).toEqual({ id: t.id, status: 'paid', amount: '50' });
    const latest = await c.graphql('{ viewer { topUps(first: 1) { nodes { id } } } }');
    expect(latest.body.data.viewer.topUps.nodes[0].id).toBe(later.id);
    const strangers = await client(s, (await seed(s).account()).apiKey).graphql('query($id: ID!) { viewer { topUp(id: $id) { id } } }', {
      id: t.id,
    });
    expect(strangers.body.data.viewer.topUp).toBeNull();
  });

  it('credits once when Pay is pressed twice, and ten times at once', async () => {
    const a = await seed(s).account();
    const first = await topUp(a.apiKey, { amount: 10 });
    const second = await topUp(a.apiKey, { amount: 25 });
    expect((await post(`${first.body.checkout_url}/complete`)).status).toBe(200);
    expect((await post(`${first.body.checkout_url}/complete`)).status).toBe(200);
    const results = await Promise.all(Array.from({ length: 10 }, () => post(`${second.body.checkout_url}/complete`)));
    expect(results.map((r) => r.status)).toEqual(Array(10).fill(200));
    expect(await client(s, a.apiKey).balance()).toBe('35');
    expect((await transactions(a.id)).map((t) => t.type)).toEqual(['topup', 'topup']);
  });

  it('cancels a checkout: nothing is credited, and it can no longer be paid (409 checkout_not_open)', async () => {
    const a = await seed(s).account();
    const created = await topUp(a.apiKey, { amount: 100 });
    const canceled = await post(`${created.body.checkout_url}/cancel`);
    expect(canceled.status).toBe(200);
    expect(await canceled.json()).toMatchObject({ status: 'canceled' });
    const late = await post(`${created.body.checkout_url}/complete`);
    expect(late.status).toBe(409);
    expect(await late.json()).toMatchObject({ error: { code: 'checkout_not_open', type: 'invalid_request_error' } });
    const page = await (await fetch(created.body.checkout_url)).text();
    expect(page).toMatch(/data-status="canceled"/);
    expect(page).not.toContain('/complete"');
    expect(await client(s, a.apiKey).balance()).toBe('0');
    expect(await transactions(a.id)).toEqual([]);
  });

  it('refuses amounts outside the rules with their codes, before creating anything', async () => {
    const a = await seed(s).account();
    const cases: [unknown, number, string][] = [
      [{ amount: 9.99 }, 400, 'amount_too_small'],
      [{ amount: 500 }, 400, 'amount_requires_sales'],
      [{ amount: 2500 }, 400, 'amount_requires_sales'],
      // Past what a Decimal holds: the same rule, not the GraphQL scalar's words.
      [{ amount: 9999999999.99 }, 400, 'amount_requires_sales'],
      [{ amount: 10_000_000_000_000 }, 400, 'amount_requires_sales'],
      [{ amount: -10_000_000_000_000 }, 400, 'invalid_amount'],
      [{ amount: 10.001 }, 400, 'invalid_amount'],
      [{ amount: -20 }, 400, 'invalid_amount'],
      [{ amount: '25' }, 400, 'invalid_type'],
      [{}, 400, 'missing_required_parameter'],
      // Only the wallet's currency: never a USD checkout for someone who asked to pay in euros.
      [{ amount: 20, currency: 'eur' }, 400, 'invalid_value'],
      [{ amount: 20, currency: 7 }, 400, 'invalid_type'],
    ];
    for (const [body, status, code] of cases) {
      const r = await topUp(a.apiKey, body);
      expect([r.status, r.body.error?.code], JSON.stringify(body)).toEqual([status, code]);
      expect(r.body.error.type).toBe('invalid_request_error');
      expect(r.body.error.message).not.toMatch(/Variable|Decimal/);
    }
    expect((await topUp(a.apiKey, { amount: 20, currency: 'eur' })).body.error).toMatchObject({
      param: 'currency',
      message: expect.stringMatching(/paid in USD.*got 'eur'/),
    });
    const sales = await topUp(a.apiKey, { amount: 500 });
    expect(sales.body.error.message).toMatch(/arranged with our sales team.*contact the operator/i);
    expect(sales.body.error.param).toBe('amount');
    const noKey = await fetch(`${s.v1}/wallet/top-up`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"amount":20}',
    });
    expect(noKey.status).toBe(401);
    const eur = await client(s, a.apiKey).graphql('mutation { topUp(amount: "20", currency: "eur") { id } }');
    expect(eur.body.errors[0].extensions).toMatchObject({ code: 'invalid_value', param: 'currency', status: 400 });
    const gql = await client(s, a.apiKey).graphql('mutation { topUp(amount: "600") { id } }');
    expect(gql.body.errors[0].extensions).toMatchObject({ code: 'amount_requires_sales', status: 400 });
    expect((await client(s, a.apiKey).graphql('{ viewer { topUps { nodes { id } } } }')).body.data.viewer.topUps.nodes).toEqual([]);
  });

  it("takes the wallet's own currency when a top-up names it, in any case", async () => {
    const a = await seed(s).account();
    const r = await topUp(a.apiKey, { amount: 20, currency: 'usd' });
    expect([r.status, r.body.currency]).toEqual([200, 'USD']);
    const g = await client(s, a.apiKey).graphql('mutation { topUp(amount: "20", currency: "USD") { currency } }');
    expect(g.body.data.topUp.currency).toBe('USD');
  });

  it('answers the same Idempotency-Key and amount with the same checkout, and another amount with 422', async () => {
    const a = await seed(s).account();
    const key = `key-${Math.random().toString(36).slice(2)}`;
    const first = await topUp(a.apiKey, { amount: 40 }, { 'idempotency-key': key });
    const again = await topUp(a.apiKey, { amount: 40.0 }, { 'idempotency-key': key });
    expect(again.status).toBe(200);
    expect(again.body.checkout_url).toBe(first.body.checkout_url);
    const other = await topUp(a.apiKey, { amount: 41 }, { 'idempotency-key': key });
    expect(other.status).toBe(422);
    expect(other.body.error).toMatchObject({ code: 'idempotency_key_reused', type: 'invalid_request_error' });
    // Ten at once with a new key: one checkout.
    const racing = await Promise.all(
      Array.from({ length: 10 }, () => topUp(a.apiKey, { amount: 60 }, { 'idempotency-key': `${key}-race` })),
    );
    expect(new Set(racing.map((r) => r.body.checkout_url)).size).toBe(1);
    // Another account may use the same key for its own top-up.
    const b = await seed(s).account();
    const theirs = await topUp(b.apiKey, { amount: 41 }, { 'idempotency-key': key });
    expect(theirs.status).toBe(200);
    expect(theirs.body.checkout_url).not.toBe(first.body.checkout_url);
    const mine = await client(s, a.apiKey).graphql('{ viewer { topUps { nodes { amount } } } }');
    expect(mine.body.data.viewer.topUps.nodes.map((t: any) => t.amount).sort()).toEqual(['40', '60']);
  });

  it("shows an open checkout's expiry in words, and pages viewer.topUps as a connection, newest first", async () => {
    const a = await seed(s).account();
    const c = client(s, a.apiKey);
    const ids: string[] = [];
    for (const amount of [10, 20, 30]) ids.push((await topUp(a.apiKey, { amount })).body.id);
    const page = await (await fetch(`${s.url}/checkout/sandbox/${ids[0]}`)).text();
    expect(page).toMatch(/can be paid until <time datetime="[^"]+">\d{1,2} [A-Z][a-z]+ \d{4} at \d{2}:\d{2} UTC<\/time>/);
    expect(page).not.toMatch(/\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z</);
    const q =
      'query($after: String) { viewer { topUps(first: 2, after: $after) { edges { cursor node { id amount } } nodes { id } pageInfo { hasNextPage hasPreviousPage endCursor } } } }';
    const first = (await c.graphql(q)).body.data.viewer.topUps;
    expect(first.nodes.map((n: any) => n.id)).toEqual([ids[2], ids[1]]);
    expect(first.edges[0]).toEqual({ cursor: ids[2], node: { id: ids[2], amount: '30' } });
    expect(first.pageInfo).toEqual({ hasNextPage: true, hasPreviousPage: false, endCursor: ids[1] });
    const second = (await c.graphql(q, { after: first.pageInfo.endCursor })).body.data.viewer.topUps;
    expect(second.nodes.map((n: any) => n.id)).toEqual([ids[0]]);
    expect(second.pageInfo).toEqual({ hasNextPage: false, hasPreviousPage: true, endCursor: ids[0] });
  });

  it('shows another account nothing of a checkout but its public page, and 404 for unknown ids', async () => {
    const a = await seed(s).account();
    const b = await seed(s).account();
    await topUp(a.apiKey, { amount: 30 });
    const theirs = await client(s, b.apiKey).graphql(`{ viewer { topUps { nodes { id } } } }`);
    expect(theirs.body.data.viewer.topUps.nodes).toEqual([]);
    expect((await fetch(`${s.url}/checkout/sandbox/chk_doesnotexist`)).status).toBe(404);
    expect((await post(`${s.url}/checkout/sandbox/chk_doesnotexist/complete`)).status).toBe(404);
    // In a browser: a styled page that says what is wrong and links back, not a bare "Error 404".
    const missing = await fetch(`${s.url}/checkout/chk_doesnotexist`, { headers: { accept: 'text/html' } });
    expect(missing.status).toBe(404);
    const page = await missing.text();
    expect(page).toContain('<title>Checkout not found</title>');
    expect(page).toContain('<style>');
    expect(page).toContain('There is no checkout at this address');
    expect(page).toContain(`href="${s.url}/dashboard/top-up/return"`);
    expect((await fetch(`${s.url}/webhooks/stripe`, { method: 'POST', body: '{}' })).status).toBe(404);
  });
});
