// A NUL character (U+0000) in what a client sends is text neither database takes: PostgreSQL
// refuses it bound and drops a statement it is written into (which read as the database being
// away: a 503 to retry), SQLite's statement ends at it. Sent in an id, a cursor, a search, a
// description, on either door, it is refused 400 invalid_value, never a 500 or a 503, the same on
// both databases, nothing is written, and the server logs no unexpected error.
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BACKENDS, createTestDatabase, type TestDatabase } from './support/databases.js';
import { ADMIN_TOKEN, startTestServer, type TestServer } from './support/harness.js';
import { client, seed, signedIn } from './support/seed.js';

const NUL = 'x\u0000y';

describe.each(BACKENDS)('text with a NUL on %s', (backend) => {
  let db: TestDatabase;
  let s: TestServer;
  const logged: { level: number; msg: string }[] = [];
  beforeAll(async () => {
    db = await createTestDatabase(backend);
    const stream = new Writable({
      write(chunk, _enc, done) {
        for (const line of String(chunk).split('\n')) if (line) logged.push(JSON.parse(line));
        done();
      },
    });
    s = await startTestServer({ databaseUrl: db.url, logger: pino({ level: 'warn' }, stream) });
  });
  afterAll(async () => {
    await s?.close();
    await db?.drop();
  });

  it('is refused 400 invalid_value wherever it would reach the database, and changes nothing', async () => {
    const a = await seed(s).account({ tier: 'developer' }).wallet('10');
    const session = await signedIn(s, a.id);
    const balance = await client(s, a.apiKey).balance();
    const keysBefore = (await session.graphql('{ viewer { apiKeys { id } } }')).body.data.viewer.apiKeys.length;
    const answers: Record<string, [number, string]> = {};
    const ask = async (label: string, query: string, variables: Record<string, unknown>, auth: 'key' | 'admin' | 'session' = 'key') => {
      const r =
        auth === 'session'
          ? await session.graphql(query, variables)
          : await s.graphql(query, variables, auth === 'admin' ? ADMIN_TOKEN : a.apiKey);
      answers[label] = [r.status, r.body.errors?.[0]?.extensions?.code ?? 'ok'];
    };
    await ask('revokeApiKey', 'mutation($i: ID!) { revokeApiKey(id: $i) }', { i: NUL }, 'admin');
    await ask('createApiKey', 'mutation($i: ID!) { createApiKey(accountId: $i) { apiKey } }', { i: NUL }, 'admin');
    await ask('setAccountTier', 'mutation($i: ID!) { setAccountTier(accountId: $i, tier: free) { id } }', { i: NUL }, 'admin');
    await ask(
      'creditWallet description',
      'mutation($i: CreditWalletInput!) { creditWallet(input: $i) { id } }',
      { i: { accountId: a.id, amount: '1', type: 'bonus', description: NUL } },
      'admin',
    );
    await ask('accounts search', 'query($q: String) { accounts(search: $q) { id } }', { q: NUL }, 'admin');
    await ask('topUp', 'query($i: ID!) { viewer { topUp(id: $i) { id } } }', { i: NUL });
    await ask('transactions after', 'query($c: String) { viewer { wallet { transactions(first: 2, after: $c) { nodes { id } } } } }', {
      c: NUL,
    });
    await ask('notifications after', 'query($c: String) { viewer { notifications(first: 2, after: $c) { nodes { id } } } }', { c: NUL });
    await ask('markNotificationsRead', 'mutation($q: [ID!]!) { markNotificationsRead(ids: $q) { id } }', { q: [NUL] });
    await ask('markAllNotificationsRead', 'mutation($q: ID) { markAllNotificationsRead(upTo: $q) }', { q: NUL });
    await ask('revokeSession', 'mutation($i: ID!) { revokeSession(id: $i) }', { i: NUL }, 'session');
    await ask('createMyApiKey name', 'mutation($n: String) { createMyApiKey(name: $n) { id } }', { n: NUL }, 'session');
    for (const [label, answer] of Object.entries(answers)) expect(answer, label).toEqual([400, 'invalid_value']);
    const v1 = await fetch(`${s.v1}/wallet/transactions?after=${encodeURIComponent(NUL)}`, {
      headers: { authorization: `Bearer ${a.apiKey}` },
    });
    expect(v1.status).toBe(400);
    expect(((await v1.json()) as { error: { code: string; message: string } }).error).toMatchObject({
      code: 'invalid_value',
      message: 'Text sent may not contain the NUL character (U+0000).',
    });
    // Nothing was written, and the server was not left broken: the next statements run.
    expect(await client(s, a.apiKey).balance()).toBe(balance);
    expect((await session.graphql('{ viewer { apiKeys { id } } }')).body.data.viewer.apiKeys).toHaveLength(keysBefore);
    expect(await s.services.billing.verifyLedger()).toEqual([]);
    expect(logged.filter((l) => l.level >= 50).map((l) => l.msg)).toEqual([]);
  });
});
