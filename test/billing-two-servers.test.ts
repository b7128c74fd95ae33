// Two servers on one database. Whose clocks differ by a minute across a month's end: the wallet is
// moved into the new month by the server ahead and never rolled back by the one behind (which
// zeroed the new month's counters, and the next call on the server ahead zeroed them again:
// allocation given away, a block spending limit passed, held tokens gone negative). And a
// spending limit set again through one server re-arms its alert for the refusals the other
// serves. On SQLite and (with TEST_DATABASE_URL) PostgreSQL.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { BACKENDS, createTestDatabase, type TestDatabase } from './support/databases.js';
import { catalogYaml, clockFrom, startTestServer, type TestServer } from './support/harness.js';
import { client, seed } from './support/seed.js';
import { until } from './support/wait.js';

const TIERS = `
tiers:
  developer: { monthly_tokens: 1000 }
  startup: { monthly_tokens: 0 }
`;

describe.each(BACKENDS)('servers whose clocks differ across a month end, on %s', (backend) => {
  let db: TestDatabase;
  let ahead: TestServer;
  let behind: TestServer;

  beforeAll(async () => {
    db = await createTestDatabase(backend);
    // One server already in June, the other still a minute before it.
    ahead = await startTestServer({ databaseUrl: db.url, yaml: (u) => catalogYaml(u, TIERS), now: clockFrom('2031-06-01T00:00:30.000Z') });
    behind = await startTestServer({ databaseUrl: db.url, yaml: (u) => catalogYaml(u, TIERS), now: clockFrom('2031-05-31T23:59:30.000Z') });
  });
  afterAll(async () => {
    await behind?.close();
    await ahead?.close();
    await db?.drop();
  });
  afterEach(async () => {
    expect(await ahead.services.billing.verifyLedger()).toEqual([]);
    expect(await behind.services.billing.verifyLedger()).toEqual([]);
  });

  it('keeps the wallet in the later month and counts every call after the move into it', async () => {
    const a = await seed(behind).account({ tier: 'developer' }).wallet('1.00');
    const wallet = () => ahead.services.billing.wallets.read(ahead.services.billing.db, a.id);
    const via = async (s: TestServer) => {
      // 6 prompt + 5 completion tokens from the allocation.
      const r = await client(s, a.apiKey).chat('hello #tokens=5', { max_tokens: 5 });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      return (await wallet())!;
    };

    expect((await via(behind)).period).toBe('2031-05');
    expect((await via(behind)).periodUsed).toBe(22);
    // The server ahead moves the wallet into June; from then on every call counts in June.
    const moved = await via(ahead);
    expect([moved.period, moved.periodUsed]).toEqual(['2031-06', 11]);
    const seen = [];
    for (const s of [ahead, behind, ahead, behind]) {
      const w = await via(s);
      seen.push(`${w.period} ${w.periodUsed}`);
    }
    expect(seen).toEqual(['2031-06 22', '2031-06 33', '2031-06 44', '2031-06 55']);
    const after = (await wallet())!;
    expect([after.periodHeld, after.periodSpent]).toEqual([0, 0n]);

    // Both servers show the June allocation (the one behind does not show May's, emptied).
    const allocation = '{ viewer { allocation { period used remaining } } }';
    for (const s of [ahead, behind]) {
      const r = await s.graphql(allocation, {}, a.apiKey);
      expect(r.body.data.viewer.allocation).toEqual({ period: '2031-06', used: 55, remaining: 945 });
    }
  });

  it('holds a block spending limit across the move: the server behind does not zero the new month spend', async () => {
    // No allocation: every call is paid from the wallet, 6 × 1,000 + 5 × 2,000 = 16,000 nanos.
    const a = await seed(ahead).account({ tier: 'startup' }).wallet('10.00');
    const { billing } = ahead.services;
    // Room for two calls in June; a third would not fit (not even with one output token).
    await billing.updateSpendingLimit(a.id, { enabled: true, monthlyLimit: 39_000n, action: 'block' });
    const chat = (s: TestServer) => client(s, a.apiKey).chat('hello #tokens=5', { max_tokens: 5 });
    expect((await chat(ahead)).status).toBe(200);
    expect((await chat(ahead)).status).toBe(200);
    const refused = await chat(behind);
    expect(refused.status).toBe(402);
    expect(refused.body.error.code).toBe('spending_limit_reached');
    expect((await chat(ahead)).status).toBe(402);
    const w = (await billing.wallets.read(billing.db, a.id))!;
    expect([w.period, w.periodSpent]).toEqual(['2031-06', 32_000n]);
  });
});

describe.each(BACKENDS)('a spending limit set through one server, calls served by another, on %s', (backend) => {
  let db: TestDatabase;
  let dashboard: TestServer;
  let api: TestServer;

  beforeAll(async () => {
    db = await createTestDatabase(backend);
    const now = clockFrom('2031-05-14T12:00:00.000Z');
    dashboard = await startTestServer({ databaseUrl: db.url, yaml: (u) => catalogYaml(u, TIERS), now });
    api = await startTestServer({ databaseUrl: db.url, yaml: (u) => catalogYaml(u, TIERS), now });
  });
  afterAll(async () => {
    await api?.close();
    await dashboard?.close();
    await db?.drop();
  });
  afterEach(async () => {
    expect(await api.services.billing.verifyLedger()).toEqual([]);
  });

  it("writes the new limit's alert at its first refusal on the other server", async () => {
    // No allocation: 16,000 nanos a call from the wallet.
    const a = await seed(dashboard).account({ tier: 'startup' }).wallet('1.00');
    const call = () => client(api, a.apiKey).chat('hello #tokens=5', { max_tokens: 5 });
    const alerts = async () =>
      (await api.services.billing.listNotifications(a.id)).filter((n) => n.kind === 'spending_limit').map((n) => n.payload.limit);
    const setLimit = (limit: bigint) =>
      dashboard.services.billing.updateSpendingLimit(a.id, { enabled: true, monthlyLimit: limit, action: 'block' });

    await setLimit(10_000n);
    for (let i = 0; i < 3; i++) expect((await call()).status).toBe(402);
    expect(await until(async () => (await alerts()).length === 1 && alerts())).toEqual(['0.00001']);
    // The limit raised, but still below a call: the next refusal (on the api server, which
    // remembered the first alert) is the new limit's occasion.
    await setLimit(12_000n);
    for (let i = 0; i < 3; i++) expect((await call()).status).toBe(402);
    expect(await until(async () => (await alerts()).length === 2 && alerts())).toEqual(['0.00001', '0.000012']);
    await new Promise((r) => setTimeout(r, 100));
    expect(await alerts()).toHaveLength(2);
  });
});
