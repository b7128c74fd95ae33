// A non-streamed answer that can no longer reach its client is charged nothing, however long its
// settlement waited: on PostgreSQL an account's settlements wait behind one another (one
// statement at a time), here behind a wallet row another connection holds locked, and a client
// that gives up meanwhile (its HTTP timeout) leaves an answer nobody receives. The settlement asks
// as its statement is sent; a SQLite settlement asks inside its transaction (billing-domain.test.ts).
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeDatabase, getKnex, openDatabase } from '../src/db/orm.js';
import { createTestDatabase, HAS_POSTGRES, type TestDatabase } from './support/databases.js';
import { catalogYaml, forwardedChatModelYaml, startTestServer, type TestServer } from './support/harness.js';
import { seed } from './support/seed.js';
import { until } from './support/wait.js';

/** An upstream that holds each chat request until the test releases it by its prompt. */
async function gatedUpstream() {
  const waiting = new Map<string, () => void>();
  const srv = createServer((req: IncomingMessage, res: ServerResponse) => {
    let text = '';
    req.on('data', (c) => {
      text += c;
    });
    req.on('end', () => {
      const body = JSON.parse(text) as { messages: { content: string }[] };
      const prompt = body.messages.at(-1)!.content;
      waiting.set(prompt, () => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            id: 'c',
            object: 'chat.completion',
            created: 1,
            model: 'upstream-chat',
            choices: [{ index: 0, message: { role: 'assistant', content: `answer to ${prompt}` }, finish_reason: 'stop' }],
            usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
          }),
        );
      });
    });
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(srv.address() as { port: number }).port}/v1`,
    arrived: (prompt: string) => waiting.has(prompt),
    release: (prompt: string) => waiting.get(prompt)!(),
    close: () =>
      new Promise<void>((r) => {
        srv.closeAllConnections();
        srv.close(() => r());
      }),
  };
}

/** A server on a database of its own whose chat-gated model is the gated upstream (`extra`: more config). */
async function gatedServer(extra = '') {
  const db = await createTestDatabase('PostgreSQL');
  const up = await gatedUpstream();
  const s = await startTestServer({
    databaseUrl: db.url,
    yaml: (fake) =>
      catalogYaml(
        fake,
        `${forwardedChatModelYaml('chat-gated', `base_url: "${up.url}", timeout_ms: 30000`)}tiers:\n  developer: { monthly_tokens: 0 }\n${extra}`,
      ),
  });
  return { db, up, s };
}

/** A chat call to chat-gated whose prompt the gated upstream knows it by. */
const gatedCall = (s: TestServer, apiKey: string, prompt: string, signal?: AbortSignal) =>
  fetch(`${s.v1}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'chat-gated', messages: [{ role: 'user', content: prompt }], max_tokens: 5 }),
    signal,
  });

/**
 * Another connection holds the account's wallet row; then `release` lets the first answer go, and its
 * settlement's statement is seen waiting on the lock. `unlock` commits.
 */
async function lockWalletBehind(knex: ReturnType<typeof getKnex>, accountId: string, release: () => void) {
  const locker = await knex.transaction();
  await locker.raw('select * from wallets where account_id = ? for update', [accountId]);
  const waitingOnLock = async () =>
    Number(
      (await knex.raw("select count(*) as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'")).rows[0]
        .n,
    );
  release();
  await until(async () => (await waitingOnLock()) === 1);
  return { unlock: () => locker.commit() };
}

describe.runIf(HAS_POSTGRES)('a non-streamed answer whose client left while it was being charged (PostgreSQL)', () => {
  let db: TestDatabase;
  let up: Awaited<ReturnType<typeof gatedUpstream>>;
  let s: TestServer;

  beforeAll(async () => {
    ({ db, up, s } = await gatedServer());
  });
  afterAll(async () => {
    await s?.close();
    await up?.close();
    await db?.drop();
  });

  it('is charged nothing and recorded as client_disconnected; the answer delivered before it is charged', async () => {
    const a = await seed(s).account({ tier: 'developer' }).wallet('1.00');
    const first = gatedCall(s, a.apiKey, 'first');
    const leaving = new AbortController();
    const second = gatedCall(s, a.apiKey, 'second', leaving.signal).catch((e: unknown) => e);
    await until(() => up.arrived('first') && up.arrived('second'));

    // Another connection holds the wallet row: the first settlement's statement waits on it.
    const orm = await openDatabase(db.url);
    const lock = await lockWalletBehind(getKnex(orm), a.id, () => up.release('first'));
    // The second answer arrives and waits behind the first settlement; its client gives up.
    up.release('second');
    await new Promise((r) => setTimeout(r, 200));
    leaving.abort();
    expect(await second).toBeInstanceOf(Error);
    await new Promise((r) => setTimeout(r, 200));
    await lock.unlock();
    await closeDatabase(orm);

    const answered = await first;
    expect(answered.status).toBe(200);
    expect((await answered.json()).choices[0].message.content).toBe('answer to first');
    await until(async () => (await s.services.billing.listUsageEvents(a.id)).length === 2);
    const events = await s.services.billing.listUsageEvents(a.id);
    const byOutcome = Object.fromEntries(events.map((e) => [e.outcome, e]));
    const { promptTokens } = byOutcome.completed!;
    // The prompt as tollgate counted it (the upstream's 10 is clamped to it) · 1,000 + 5 · 2,000 nanos.
    const cost = BigInt(promptTokens) * 1_000n + 10_000n;
    expect(byOutcome.completed).toMatchObject({ completionTokens: 5, walletNanos: cost });
    expect(promptTokens).toBeGreaterThan(0);
    expect(byOutcome.client_disconnected).toMatchObject({ promptTokens: 0, completionTokens: 0, walletNanos: 0n });
    expect(await s.services.billing.getWallet(a.id)).toMatchObject({ balance: 1_000_000_000n - cost, held: 0n });
    expect(await s.services.billing.verifyLedger()).toEqual([]);
  });
});

describe.runIf(HAS_POSTGRES)('a non-streamed answer whose server began shutting down while it was being charged (PostgreSQL)', () => {
  let db: TestDatabase;
  let up: Awaited<ReturnType<typeof gatedUpstream>>;
  let s: TestServer;

  beforeAll(async () => {
    ({ db, up, s } = await gatedServer('server: { shutdown_timeout_ms: 300 }\n'));
  });
  afterAll(async () => {
    await up?.close();
    await db?.drop();
  });

  it('is answered, its connection still open, and charged as answered: never sent for free', async () => {
    const a = await seed(s).account({ tier: 'developer' }).wallet('1.00');
    const first = gatedCall(s, a.apiKey, 'first');
    const second = gatedCall(s, a.apiKey, 'second');
    await until(() => up.arrived('first') && up.arrived('second'));
    const orm = await openDatabase(db.url);
    const knex = getKnex(orm);
    try {
      const lock = await lockWalletBehind(knex, a.id, () => up.release('first'));
      up.release('second');
      await new Promise((r) => setTimeout(r, 200));
      // Shutting down: after 300 ms the calls still in flight are ended (shutting_down), their
      // connections kept a second more; the settlements are still waiting on the lock.
      const closing = s.close();
      await new Promise((r) => setTimeout(r, 450));
      await lock.unlock();
      const answers = await Promise.all([first, second]);
      for (const [i, r] of answers.entries()) {
        expect(r.status).toBe(200);
        expect((await r.json()).choices[0].message.content).toBe(i === 0 ? 'answer to first' : 'answer to second');
      }
      await closing;
      const events = await knex('usage_events').select('outcome', 'completion_tokens', 'wallet_nanos');
      expect(events.map((e) => [e.outcome, Number(e.completion_tokens)])).toEqual([
        ['completed', 5],
        ['completed', 5],
      ]);
      expect(events.every((e) => BigInt(e.wallet_nanos) > 0n)).toBe(true);
      expect((await knex('wallet_transactions').where({ type: 'usage' })).length).toBe(2);
    } finally {
      await closeDatabase(orm);
    }
  });
});
