// GraphQL fetches per item in batches: a page of 100 ledger entries resolves the top-up behind each
// credit with one query, whatever the page size, and `viewer` reuses the account that
// authentication read.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { getKnex } from '../src/db/connection.js';
import { startTestServer, type TestServer } from './support/harness.js';
import { seed } from './support/seed.js';

const PAGE = `query($first: Int) { viewer { id email wallet { transactions(first: $first, order: asc) { nodes { type topUp { id amount status } } } } } }`;

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

  /** Runs the page query and counts the SQL statements it sent, through both query paths. */
  async function pageWithQueryCount(first: number) {
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
});
