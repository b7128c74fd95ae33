// GraphQL fetches per item in batches: a page of 100 ledger entries resolves the top-up behind each
// credit with one query, whatever the page size; a list of accounts reads their wallets, their
// keys, their feeds and their unread counts with one query each, however many accounts, and so
// their settings (with automatic top-up), allocations, alert settings and usage reports; and `viewer` reuses the account
// that authentication read.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { getKnex } from '../src/db/connection.js';
import { startTestServer, type TestServer } from './support/harness.js';
import { client, seed } from './support/seed.js';
import { ADMIN_TOKEN } from './support/harness.js';
import { enqueueNotification } from '../src/domain/notifications/outbox.js';

const PAGE = `query($first: Int) { viewer { id email wallet { transactions(first: $first, order: asc) { nodes { type topUp { id amount status } } } } } }`;

/**
 * An operator's `query` with `{ first }`, its accounts and how many SQL statements it took: the
 * fewest of three runs.
 */
async function fewestStatements<A = any>(s: TestServer, query: string, first: number): Promise<{ accounts: A[]; queries: number }> {
  const once = async () => {
    const db = s.services.billing.db;
    const rows = vi.spyOn(db, 'rows');
    const run = vi.spyOn(db, 'run');
    const knex = getKnex(s.services.orm);
    let viaKnex = 0;
    const listener = () => viaKnex++;
    knex.on('query', listener);
    try {
      const r = await s.graphql(query, { first }, ADMIN_TOKEN);
      expect(r.body.errors).toBeUndefined();
      return { accounts: r.body.data.accounts as A[], queries: rows.mock.calls.length + run.mock.calls.length + viaKnex };
    } finally {
      knex.removeListener('query', listener);
      rows.mockRestore();
      run.mockRestore();
    }
  };
  const runs = [await once(), await once(), await once()];
  return runs.reduce((a, b) => (b.queries < a.queries ? b : a));
}

describe('batched loading in GraphQL', () => {
  let s: TestServer;
  let apiKey: string;

  beforeAll(async () => {
    s = await startTestServer();
    const a = await seed(s).account();
    apiKey = a.apiKey;
    // 50 paid top-ups of 120 (each credits its amount and a 10% bonus): 100 ledger entries.
    for (let i = 0; i < 50; i++) {
      const created = await fetch(`${s.v1}/wallet/top-up`, {
        method: 'POST',
        headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ amount: 120 }),
      }).then((r) => r.json() as Promise<{ checkout_url: string }>);
      const paid = await fetch(`${created.checkout_url}/complete`, {
        method: 'POST',
        headers: { accept: 'application/json' },
        redirect: 'manual',
      });
      expect(paid.status).toBe(200);
    }
  }, 120_000);
  afterAll(async () => {
    await s?.close();
  });

  /**
   * Runs the page query and counts the SQL statements sent meanwhile, through both query paths.
   * The server's background work (the mail worker's poll, heartbeats) may add statements of its
   * own to one run on a busy machine, never take any away: the fewest of three runs is the query's.
   */
  async function pageWithQueryCount(first: number) {
    const runs = [await pageOnce(first), await pageOnce(first), await pageOnce(first)];
    return runs.reduce((a, b) => (b.queries < a.queries ? b : a));
  }

  async function pageOnce(first: number) {
    const db = s.services.billing.db;
    const rows = vi.spyOn(db, 'rows');
    const run = vi.spyOn(db, 'run');
    const batches = vi.spyOn(s.services.payments, 'topUpsByPaymentIds');
    const knex = getKnex(s.services.orm);
    let viaKnex = 0;
    const listener = () => viaKnex++;
    knex.on('query', listener);
    try {
      const r = await s.graphql(PAGE, { first }, apiKey);
      expect(r.body.errors).toBeUndefined();
      return {
        nodes: r.body.data.viewer.wallet.transactions.nodes as { type: string; topUp: { id: string } | null }[],
        queries: rows.mock.calls.length + run.mock.calls.length + viaKnex,
        batches: batches.mock.calls.length,
      };
    } finally {
      knex.removeListener('query', listener);
      rows.mockRestore();
      run.mockRestore();
      batches.mockRestore();
    }
  }

  it('loads the top-ups behind a page of 100 transactions in one query', async () => {
    const page = await pageWithQueryCount(100);
    expect(page.nodes).toHaveLength(100);
    expect(page.nodes.every((n) => n.topUp !== null)).toBe(true);
    // Each top-up is behind two entries: its amount and its bonus.
    expect(new Set(page.nodes.map((n) => n.topUp!.id)).size).toBe(50);
    expect(page.batches).toBe(1);
    // The same for 2 entries or 100.
    const small = await pageWithQueryCount(2);
    expect(small.queries).toBe(page.queries);
    // Four: authentication, the wallet and the page of the ledger, the top-ups. `viewer` reads no
    // account again (it is the one authentication read).
    expect(page.queries).toBe(4);
  });

  it("loads a list of accounts' keys, notification feeds and unread counts with one query each, whatever the length", async () => {
    // 30 accounts, each with a second key and notifications of its own (3 unread, 1 read).
    const made: { id: string; keys: string[] }[] = [];
    for (let i = 0; i < 30; i++) {
      const a = await seed(s).account();
      const second = await s.graphql('mutation($id: ID!) { createApiKey(accountId: $id) { id } }', { id: a.id }, ADMIN_TOKEN);
      made.push({ id: a.id, keys: [a.keyId, second.body.data.createApiKey.id] });
      for (let n = 0; n < 4; n++) {
        await enqueueNotification(s.services.billing.db, {
          accountId: a.id,
          kind: 'low_balance',
          dedupeKey: `dl:${a.id}:${n}`,
          payload: { balance: '0.1', threshold: '1', currency: 'USD' },
          now: new Date(Date.UTC(2030, 0, 1, 0, 0, n)),
        });
      }
      await s.services.billing.db.run('update notifications set read_at = created_at where dedupe_key = ?', [`dl:${a.id}:0`]);
    }
    const LIST =
      'query($first: Int) { accounts(first: $first) { id wallet { balance held } apiKeys { id } notifications(first: 2) { unreadCount pageInfo { hasNextPage } nodes { id } } } }';
    // The fewest statements of three runs (background work, such as the mail worker sending
    // these accounts' notifications, may add its own to any one run).
    const listWithQueryCount = (first: number) =>
      fewestStatements<{
        id: string;
        apiKeys: { id: string }[];
        wallet: { balance: string; held: string };
        notifications: { unreadCount: number; pageInfo: { hasNextPage: boolean }; nodes: { id: string }[] };
      }>(s, LIST, first);
    const many = await listWithQueryCount(30);
    expect(many.accounts.map((a) => a.id).sort()).toEqual(made.map((m) => m.id).sort());
    for (const a of many.accounts) {
      expect(a.apiKeys.map((k) => k.id)).toEqual(made.find((m) => m.id === a.id)!.keys);
      expect(a.notifications.unreadCount).toBe(3);
      expect(a.wallet).toEqual({ balance: '0', held: '0' });
      expect(a.notifications.nodes).toHaveLength(2);
      expect(a.notifications.pageInfo.hasNextPage).toBe(true);
    }
    // Every account's notifications are its own.
    const ids = many.accounts.flatMap((a) => a.notifications.nodes.map((n) => n.id));
    expect(new Set(ids).size).toBe(60);
    const few = await listWithQueryCount(2);
    expect(few.accounts).toHaveLength(2);
    expect(few.queries).toBe(many.queries);
    // The account search (ids, then the accounts), the wallets, the keys, the feeds, the unread counts.
    expect(many.queries).toBe(6);
  });

  it("loads a list of accounts' settings, allocations, alert settings and usage with one query each, whatever the length", async () => {
    // The newest accounts come first: these two are in both lists below, with settings and usage of their own.
    const quiet = await seed(s).account();
    const busy = await seed(s).account({ tier: 'startup' });
    await s.services.billing.setLowBalanceAlert(busy.id, 2_500_000_000n);
    await s.services.billing.updateSpendingLimit(busy.id, { enabled: true, monthlyLimit: 7_000_000_000n, action: 'alert' });
    await s.services.alerts.notifications.updateSettings(busy.id, {
      enabled: { low_balance: false },
      extraRecipients: ['ops@example.com'],
    });
    for (const user of ['u1', 'u1', 'u2']) {
      const r = await client(s, busy.apiKey).post('/chat/completions', {
        model: 'chat-test',
        messages: [{ role: 'user', content: 'hi' }],
        max_tokens: 8,
        user,
      });
      expect(r.status).toBe(200);
    }
    const LIST = `query($first: Int) { accounts(first: $first) {
      id
      settings { lowBalanceAlert monthlySpend spendingLimit { enabled monthlyLimit action } }
      allocation { tier used remaining }
      alertSettings { lowBalance receipt extraRecipients }
      usage(groupBy: user) { groupBy allocation { tier used } data { user requests } }
      byModel: usage { data { model requests } }
    } }`;
    // The fewest statements of three runs (background work, such as the mail worker sending
    // these accounts' notifications, may add its own to any one run).
    const listWithQueryCount = (first: number) => fewestStatements(s, LIST, first);
    const many = await listWithQueryCount(30);
    expect(many.accounts).toHaveLength(30);
    const [first, second] = many.accounts;
    expect(first.id).toBe(busy.id);
    expect(first.settings).toEqual({
      lowBalanceAlert: '2.5',
      monthlySpend: '0',
      spendingLimit: { enabled: true, monthlyLimit: '7', action: 'alert' },
    });
    expect(first.allocation.tier).toBe('startup');
    expect(first.allocation.used).toBeGreaterThan(0);
    expect(first.alertSettings).toEqual({ lowBalance: false, receipt: true, extraRecipients: ['ops@example.com'] });
    expect(first.usage.groupBy).toBe('user');
    expect(first.usage.allocation).toEqual({ tier: 'startup', used: first.allocation.used });
    expect(first.usage.data.map((d: { user: string; requests: number }) => [d.user, d.requests])).toEqual([
      ['u1', 2],
      ['u2', 1],
    ]);
    expect(first.byModel.data).toEqual([{ model: 'chat-test', requests: 3 }]);
    expect(second.id).toBe(quiet.id);
    expect(second.settings).toEqual({
      lowBalanceAlert: null,
      monthlySpend: '0',
      spendingLimit: { enabled: false, monthlyLimit: null, action: 'block' },
    });
    expect(second.allocation).toEqual({ tier: 'developer', used: 0, remaining: second.allocation.remaining });
    expect(second.alertSettings).toEqual({ lowBalance: true, receipt: true, extraRecipients: [] });
    expect(second.usage.data).toEqual([]);
    expect(second.byModel.data).toEqual([]);
    const few = await listWithQueryCount(2);
    expect(few.accounts.map((a) => a.id)).toEqual([busy.id, quiet.id]);
    expect(few.accounts).toEqual(many.accounts.slice(0, 2));
    expect(few.queries).toBe(many.queries);
    // The account search (ids, then the accounts), the wallets (settings), the allocations, the
    // alert settings, and each of the two usage reports (by model, by user): its allocations, its sums.
    expect(many.queries).toBe(9);
  });

  it("loads a list of accounts' automatic top-up settings with one query, whatever the length", async () => {
    // At least 30 accounts, whatever the other tests made; the two newest first.
    for (let i = 0; i < 28; i++) await seed(s).account();
    const quiet = await seed(s).account();
    const topped = await seed(s).account();
    await s.services.autoTopups.updateSettings(topped.id, { enabled: true, threshold: 5_000_000_000n, amount: 20_000_000_000n });
    const LIST = 'query($first: Int) { accounts(first: $first) { id settings { autoTopup { enabled threshold amount inFlight } } } }';
    // The fewest statements of three runs (background work, such as the mail worker sending
    // these accounts' notifications, may add its own to any one run).
    const listWithQueryCount = (first: number) => fewestStatements(s, LIST, first);
    const many = await listWithQueryCount(30);
    expect(many.accounts).toHaveLength(30);
    expect(many.accounts.slice(0, 2)).toEqual([
      { id: topped.id, settings: { autoTopup: { enabled: true, threshold: '5', amount: '20', inFlight: false } } },
      { id: quiet.id, settings: { autoTopup: { enabled: false, threshold: null, amount: null, inFlight: false } } },
    ]);
    const few = await listWithQueryCount(2);
    expect(few.accounts).toEqual(many.accounts.slice(0, 2));
    expect(few.queries).toBe(many.queries);
    // The account search (ids, then the accounts), the wallets (settings), the automatic top-ups.
    expect(many.queries).toBe(4);
  });
});
