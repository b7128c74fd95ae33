// The production topology as processes: two tollgate instances on one PostgreSQL and one Redis.
// A walletUpdated subscriber on instance A sees a credit made through instance B (the wallet
// events travel through Redis); both serve the same accounts and limits.
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, HAS_POSTGRES, type TestDatabase } from './support/databases.js';
import { ADMIN_TOKEN } from './support/harness.js';
import { freePort, spawnTollgate, waitReady, type TollgateProcess } from './support/ready.js';
import { missing } from './support/requirements.js';

const REDIS_URL = process.env.TEST_REDIS_URL;

const skip = missing('PostgreSQL (TEST_DATABASE_URL)', HAS_POSTGRES) || missing('Redis (TEST_REDIS_URL)', Boolean(REDIS_URL));

describe.skipIf(skip)('two instances on one PostgreSQL and one Redis', () => {
  let db: TestDatabase;
  const instances: { proc: TollgateProcess; url: string }[] = [];

  beforeAll(async () => {
    db = await createTestDatabase('PostgreSQL');
    for (let i = 0; i < 2; i++) {
      const port = await freePort();
      const env = { PORT: String(port), DATABASE_URL: db.url, REDIS_URL: REDIS_URL!, CONFIG: 'config/default.yaml' };
      const proc = spawnTollgate(['src/main.ts'], env);
      instances.push({ proc, url: `http://127.0.0.1:${port}` });
      // One after the other: the first migrates the database.
      await waitReady(instances[i]!.url);
    }
  }, 120_000);

  afterAll(async () => {
    for (const { proc } of instances) {
      proc.proc.kill('SIGTERM');
      await proc.exited;
    }
    await db?.drop();
  });

  const admin = async (url: string, query: string, variables: Record<string, unknown>) => {
    const res = await fetch(`${url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN_TOKEN}` },
      body: JSON.stringify({ query, variables }),
    });
    const body = await res.json();
    if (!body.data) throw new Error(JSON.stringify(body.errors));
    return body.data;
  };

  it('delivers a credit made through instance B to a walletUpdated subscriber on instance A', async () => {
    const [a, b] = instances as [(typeof instances)[0], (typeof instances)[0]];
    const created = await admin(a.url, 'mutation($e: String!) { createAccount(email: $e, tier: developer) { account { id } apiKey } }', {
      e: `multi-${Date.now()}@example.com`,
    });
    const { apiKey } = created.createAccount;
    const accountId = created.createAccount.account.id;
    const client = createClient({
      url: `${a.url.replace('http', 'ws')}/graphql`,
      webSocketImpl: WebSocket,
      connectionParams: { authorization: `Bearer ${apiKey}` },
      retryAttempts: 0,
    });
    try {
      const first = new Promise<any>((resolve, reject) => {
        client.subscribe(
          { query: 'subscription { walletUpdated { balance transaction { type amount description } } }' },
          { next: (v) => resolve(v), error: reject, complete: () => reject(new Error('completed without an event')) },
        );
      });
      // The subscription is open once A has registered it: credit through B until A hears one.
      let event: any;
      for (let i = 0; i < 50 && !event; i++) {
        await admin(
          b.url,
          'mutation($a: ID!, $k: String!) { creditWallet(input: {accountId: $a, amount: "2.50", type: bonus, description: "through B", idempotencyKey: $k}) { id } }',
          {
            a: accountId,
            k: `credit-${i}`,
          },
        );
        event = await Promise.race([first, new Promise((r) => setTimeout(r, 200))]);
      }
      expect(event?.data?.walletUpdated.transaction).toMatchObject({ type: 'bonus', description: 'through B' });
      expect(Number(event.data.walletUpdated.balance) % 2.5).toBe(0);
    } finally {
      await client.dispose();
    }
  });

  it('shows the same wallet through both instances', async () => {
    const [a, b] = instances as [(typeof instances)[0], (typeof instances)[0]];
    const created = await admin(a.url, 'mutation($e: String!) { createAccount(email: $e, tier: developer) { account { id } apiKey } }', {
      e: `same-${Date.now()}@example.com`,
    });
    const { apiKey } = created.createAccount;
    await admin(a.url, 'mutation($a: ID!) { creditWallet(input: {accountId: $a, amount: "7", type: bonus, description: "on A"}) { id } }', {
      a: created.createAccount.account.id,
    });
    const balance = async (url: string) =>
      (await (await fetch(`${url}/v1/wallet/balance`, { headers: { authorization: `Bearer ${apiKey}` } })).json()).balance;
    expect(await balance(a.url)).toBe(7);
    expect(await balance(b.url)).toBe(7);
  });
});
