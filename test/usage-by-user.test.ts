// Usage by end user (issue 16): the `user` of chat and embeddings requests is stored with each
// usage event, on both engines (the fake upstream behind `openai`, the GGUF fixtures in-process),
// over /v1 (streamed and not) and GraphQL (mutation and subscription); GET /v1/usage and
// GraphQL's usage report sum the events per model, end user or API key, exactly; an operator finds
// a customer's heaviest end user. On SQLite and (with TEST_DATABASE_URL) PostgreSQL, whose
// settlement writes the event in one statement of its own.
import { print } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChatCompletionStreamDocument, CreateChatCompletionDocument, CreateEmbeddingsDocument } from '../src/generated/graphql.js';
import { BACKENDS, createTestDatabase, type TestDatabase } from './support/databases.js';
import { ADMIN_TOKEN, catalogYaml, startTestServer, type TestServer } from './support/harness.js';
import { makeFixtureDir, tinyModelsYaml } from './support/llamacpp.js';
import { client, seed } from './support/seed.js';
import { subscribeAll } from './support/ws.js';

const fixtures = makeFixtureDir();
afterAll(() => fixtures.remove());

// startup: no allocation, so every call is paid from the wallet (settlement's full path).
const yaml = (url: string) => catalogYaml(url, `${tinyModelsYaml(fixtures)}tiers:\n  startup: { monthly_tokens: 0 }\n`);

const chatBody = (model: string, user?: string, extra: Record<string, unknown> = {}) => ({
  model,
  messages: [{ role: 'user', content: 'hello there #tokens=4' }],
  max_tokens: 4,
  ...(user === undefined ? {} : { user }),
  ...extra,
});

describe.each(BACKENDS)('usage by end user on %s', (backend) => {
  let db: TestDatabase;
  let s: TestServer;

  beforeAll(async () => {
    db = await createTestDatabase(backend);
    s = await startTestServer({ databaseUrl: db.url, yaml });
    await s.services.engines.startLoading();
  });
  afterAll(async () => {
    await s?.close();
    await db?.drop();
  });

  it('stores the user of every call on both engines, over /v1 and GraphQL, and sums usage by user, key and model exactly', async () => {
    const a = await seed(s).account({ tier: 'startup' }).wallet('10.00');
    const c = client(s, a.apiKey);
    const second = await s.graphql(
      'mutation($id: ID!) { createApiKey(accountId: $id, name: "second") { id apiKey } }',
      { id: a.id },
      ADMIN_TOKEN,
    );
    const other = client(s, second.body.data.createApiKey.apiKey);
    const otherKeyId: string = second.body.data.createApiKey.id;

    // The openai engine: /v1 plain and streamed; then the same for llama.cpp; then embeddings.
    expect((await c.post('/chat/completions', chatBody('chat-test', 'alice'))).status).toBe(200);
    expect((await c.post('/chat/completions', chatBody('chat-test', 'alice', { stream: true }))).status).toBe(200);
    expect((await c.post('/chat/completions', chatBody('tiny-chat', 'bob'))).status).toBe(200);
    expect((await c.post('/chat/completions', chatBody('tiny-chat', 'bob', { stream: true }))).status).toBe(200);
    expect((await c.post('/embeddings', { model: 'embed-test', input: ['one', 'two'], user: 'carol' })).status).toBe(200);
    expect((await other.post('/embeddings', { model: 'tiny-embed', input: 'three', user: 'carol' })).status).toBe(200);
    // GraphQL: a mutation and a subscription on each engine, and embeddings.
    const gql = await c.graphql(print(CreateChatCompletionDocument), {
      input: { model: 'tiny-chat', messages: [{ role: 'user', content: 'hi' }], maxTokens: 3, user: 'dave' },
    });
    expect(gql.body.errors).toBeUndefined();
    const sub = await subscribeAll(
      s.url,
      print(ChatCompletionStreamDocument),
      { input: { model: 'chat-test', messages: [{ role: 'user', content: 'hi #tokens=2' }], user: 'dave' } },
      a.apiKey,
    );
    expect(sub.error).toBeUndefined();
    const emb = await c.graphql(print(CreateEmbeddingsDocument), { input: { model: 'tiny-embed', input: ['x'], user: 'dave' } });
    expect(emb.body.errors).toBeUndefined();
    // No user: stored as null.
    expect((await other.post('/chat/completions', chatBody('chat-test'))).status).toBe(200);

    const events = await s.services.billing.listUsageEvents(a.id);
    expect(events.map((e) => [e.model, e.endUser, e.outcome])).toEqual([
      ['chat-test', 'alice', 'completed'],
      ['chat-test', 'alice', 'completed'],
      ['tiny-chat', 'bob', 'completed'],
      ['tiny-chat', 'bob', 'completed'],
      ['embed-test', 'carol', 'completed'],
      ['tiny-embed', 'carol', 'completed'],
      ['tiny-chat', 'dave', 'completed'],
      ['chat-test', 'dave', 'completed'],
      ['tiny-embed', 'dave', 'completed'],
      ['chat-test', null, 'completed'],
    ]);
    expect(events.every((e) => e.walletNanos > 0n)).toBe(true);

    // The expected sums, from the events themselves.
    const sums = (key: (e: (typeof events)[number]) => string | null) => {
      const out = new Map<string | null, { requests: number; total_tokens: number; nanos: bigint }>();
      for (const e of events) {
        const k = key(e);
        const row = out.get(k) ?? { requests: 0, total_tokens: 0, nanos: 0n };
        row.requests++;
        row.total_tokens += e.totalTokens;
        row.nanos += e.walletNanos;
        out.set(k, row);
      }
      return out;
    };
    const nanos = (cost: number) => BigInt(Math.round(cost * 1e9));

    const byUser = await c.get('/usage?group_by=user');
    expect(byUser.status).toBe(200);
    expect(byUser.body.group_by).toBe('user');
    const userRows = byUser.body.data as any[];
    expect(userRows.map((r) => r.user)).toEqual(['alice', 'bob', 'carol', 'dave', null]);
    for (const r of userRows) {
      expect(r).not.toHaveProperty('model');
      const want = sums((e) => e.endUser).get(r.user)!;
      expect({ requests: r.requests, total_tokens: r.total_tokens, nanos: nanos(r.cost) }).toEqual(want);
    }

    const byKey = await c.get('/usage?group_by=key');
    expect(byKey.status).toBe(200);
    const keyRows = byKey.body.data as any[];
    expect(keyRows.map((r) => r.key_id).sort()).toEqual([a.keyId, otherKeyId].sort());
    for (const r of keyRows) expect(r.requests).toBe(sums((e) => e.keyId).get(r.key_id)!.requests);

    const byModel = await c.get('/usage?group_by=model');
    expect(byModel.body.data).toEqual((await c.get('/usage')).body.data);
    expect(byModel.body.data.map((r: any) => r.model)).toEqual(['chat-test', 'embed-test', 'tiny-chat', 'tiny-embed']);
    for (const r of byModel.body.data) expect(r).not.toHaveProperty('user');

    // GraphQL: the key holder's viewer, and the operator reading the account found by e-mail search.
    const g = await c.graphql('{ viewer { usage(groupBy: user) { groupBy data { date model user keyId requests totalTokens cost } } } }');
    expect(g.body.errors).toBeUndefined();
    expect(g.body.data.viewer.usage.groupBy).toBe('user');
    expect(g.body.data.viewer.usage.data.map((r: any) => [r.user, r.requests, r.model, r.keyId])).toEqual(
      userRows.map((r) => [r.user, r.requests, null, null]),
    );
    const email = (await c.graphql('{ viewer { email } }')).body.data.viewer.email;
    const found = await s.graphql(
      'query($email: String!) { accounts(search: $email, first: 1) { id usage(groupBy: user) { data { user requests totalTokens cost } } } }',
      { email },
      ADMIN_TOKEN,
    );
    expect(found.body.errors).toBeUndefined();
    const mine = found.body.data.accounts.find((x: any) => x.id === a.id);
    expect(mine.usage.data.map((r: any) => [r.user, r.requests])).toEqual(userRows.map((r) => [r.user, r.requests]));
    expect(await s.services.billing.verifyLedger()).toEqual([]);
  });

  it('refuses an unknown group_by with 400 naming it, on /v1 and GraphQL', async () => {
    const a = await seed(s).account({ tier: 'startup' }).wallet('1.00');
    const c = client(s, a.apiKey);
    for (const query of ['group_by=users', 'group_by=user&group_by=key']) {
      const r = await c.get(`/usage?${query}`);
      expect(r.status).toBe(400);
      expect(r.body.error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_value', param: 'group_by' });
    }
    const g = await c.graphql('{ viewer { usage(groupBy: users) { groupBy } } }');
    expect(g.body.errors?.[0]?.message).toContain('UsageGroupBy');
  });

  it('refuses a user longer than 256 characters with 400 naming it, and bills nothing', async () => {
    const a = await seed(s).account({ tier: 'startup' }).wallet('1.00');
    const c = client(s, a.apiKey);
    const long = 'u'.repeat(257);
    for (const [route, body] of [
      ['/chat/completions', chatBody('chat-test', long)],
      ['/chat/completions', chatBody('tiny-chat', long, { stream: true })],
      ['/chat/completions', chatBody('chat-test', undefined, { safety_identifier: long })],
      ['/embeddings', { model: 'embed-test', input: 'x', user: long }],
    ] as const) {
      const r = await c.post(route, body);
      expect(r.status).toBe(400);
      expect(r.body.error).toMatchObject({ code: 'invalid_value', param: 'user' });
    }
    // Not text a database stores: a lone surrogate, a NUL.
    for (const user of ['x\ud800', 'x\udc00y', 'a\u0000b']) {
      const r = await c.post('/chat/completions', chatBody('chat-test', user));
      expect(r.status).toBe(400);
      expect(r.body.error).toMatchObject({ code: 'invalid_value', param: 'user' });
    }
    expect(await s.services.billing.listUsageEvents(a.id)).toEqual([]);
    // 256 is fine, and stored whole; so is a paired surrogate (an emoji).
    expect((await c.post('/chat/completions', chatBody('chat-test', 'u'.repeat(256)))).status).toBe(200);
    expect((await c.post('/chat/completions', chatBody('chat-test', 'ann \u{1F600}'))).status).toBe(200);
    expect((await s.services.billing.listUsageEvents(a.id)).map((e) => e.endUser)).toEqual(['u'.repeat(256), 'ann \u{1F600}']);
  });
});

describe("OpenAI's safety_identifier", () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  });
  afterAll(async () => s?.close());

  it('is read as the end user, and refused when it names another one than user', async () => {
    const a = await seed(s).account({ tier: 'startup' }).wallet('1.00');
    const c = client(s, a.apiKey);
    expect((await c.post('/chat/completions', chatBody('chat-test', undefined, { safety_identifier: 'hashed-42' }))).status).toBe(200);
    expect((await c.post('/chat/completions', chatBody('chat-test', 'same', { safety_identifier: 'same' }))).status).toBe(200);
    const both = await c.post('/chat/completions', chatBody('chat-test', 'ann', { safety_identifier: 'bob' }));
    expect(both.status).toBe(400);
    expect(both.body.error).toMatchObject({ code: 'invalid_value', param: 'safety_identifier' });
    expect((await s.services.billing.listUsageEvents(a.id)).map((e) => e.endUser).sort()).toEqual(['hashed-42', 'same']);
  });
});
