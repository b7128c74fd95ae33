// The GraphQL door: the same operations over HTTP (graphql-yoga) and the chat stream over
// graphql-ws, with errors carrying the same type, code and HTTP status as /v1.
import { readFileSync } from 'node:fs';
import { createClient } from 'graphql-ws';
import { GraphQLScalarType, parseValue, print } from 'graphql';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ChatCompletionStreamDocument,
  CreateChatCompletionDocument,
  CreateEmbeddingsDocument,
  ListModelsDocument,
  ModerateDocument,
  RerankDocument,
  ViewerDocument,
} from '../src/generated/graphql.js';
import { printedSchema } from '../src/graphql/print-schema.js';
import { schema } from '../src/graphql/schema.js';
import { ADMIN_TOKEN, catalogYaml, startTestServer, type TestServer } from './support/harness.js';
import { signedIn } from './support/seed.js';

let s: TestServer;
let key: string;
let accountId: string;

beforeAll(async () => {
  s = await startTestServer();
  const a = await s.account('startup');
  key = a.apiKey;
  accountId = a.id;
});
afterAll(() => s.close());

const input = (content: string, extra: Record<string, unknown> = {}) => ({
  input: { model: 'chat-test', messages: [{ role: 'user', content }], ...extra },
});

function subscribeAll(query: string, variables: Record<string, unknown>, authorization: string | undefined, url = s.url) {
  const client = createClient({
    url: url.replace('http', 'ws') + '/graphql',
    webSocketImpl: WebSocket,
    connectionParams: authorization ? { authorization } : {},
    retryAttempts: 0,
  });
  const events: any[] = [];
  return new Promise<{ events: any[]; error?: unknown }>((resolve) => {
    client.subscribe(
      { query, variables },
      {
        next: (v) => events.push(v),
        error: (error) => {
          void client.dispose();
          resolve({ events, error });
        },
        complete: () => {
          void client.dispose();
          resolve({ events });
        },
      },
    );
  });
}

describe('GraphQL over HTTP', () => {
  it('the committed SDL matches the schema the code builds', () => {
    const committed = readFileSync(new URL('../schema/schema.graphql', import.meta.url), 'utf8');
    expect(committed).toBe(printedSchema());
  });

  it('lists models by category without a key', async () => {
    const r = await s.graphql(print(ListModelsDocument), { category: 'embedding' });
    expect(r.status).toBe(200);
    expect(r.body.data.models.map((m: any) => m.id)).toEqual(['embed-test']);
    expect(r.body.data.models[0].specifications).toMatchObject({ maxTokens: 512, outputDimensions: 768, contextWindow: null });
  });

  it('tells the operator token apart from a wrong API key where an account is needed', async () => {
    const r = await s.graphql('{ viewer { id } }', {}, ADMIN_TOKEN);
    expect(r.body.errors[0].extensions).toMatchObject({ code: 'invalid_api_key', status: 401 });
    expect(r.body.errors[0].message).toMatch(/^This is the operator token \(ADMIN_TOKEN\): it belongs to no account/);
    // It still does what it is for.
    expect((await s.graphql('{ accounts(first: 1) { id } }', {}, ADMIN_TOKEN)).body.errors).toBeUndefined();
  });

  it('returns the viewer of the key', async () => {
    const r = await s.graphql(print(ViewerDocument), {}, key);
    expect(r.body.data.viewer).toMatchObject({ id: accountId, tier: 'startup' });
    expect(r.body.data.viewer.apiKeys[0].display).toMatch(/^ask_.+….{4}$/);
    expect(JSON.stringify(r.body)).not.toContain(key);
  });

  it('creates a chat completion', async () => {
    const r = await s.graphql(print(CreateChatCompletionDocument), input('hi #tokens=4', { maxTokens: 10, temperature: 0.5 }), key);
    const c = r.body.data.createChatCompletion;
    expect(c.choices[0]).toMatchObject({ index: 0, finishReason: 'stop', message: { role: 'assistant', content: 'w0 w1 w2 w3' } });
    expect(c.usage.completionTokens).toBe(4);
    expect(c.usage.totalTokens).toBe(c.usage.promptTokens + 4);
  });

  it('creates embeddings, reranks and moderates', async () => {
    const e = await s.graphql(print(CreateEmbeddingsDocument), { input: { model: 'embed-test', input: ['a', 'b'] } }, key);
    expect(e.body.data.createEmbeddings.data).toHaveLength(2);
    expect(e.body.data.createEmbeddings.data[1].embedding).toHaveLength(768);
    for (const d of e.body.data.createEmbeddings.data) for (const x of d.embedding) expect(typeof x).toBe('number');
    const r = await s.graphql(
      print(RerankDocument),
      { input: { model: 'rerank-test', query: 'green tea', documents: ['coffee', 'green tea leaves'], topN: 1 } },
      key,
    );
    expect(r.body.data.rerank.results).toEqual([{ index: 1, relevanceScore: expect.any(Number), document: { text: 'green tea leaves' } }]);
    const m = await s.graphql(print(ModerateDocument), { input: { model: 'guard-test', input: ['hello there'] } }, key);
    expect(m.body.data.moderate.results[0].flagged).toBe(false);
    expect(m.body.data.moderate.results[0].categories.map((c: any) => c.name)).toEqual(
      expect.arrayContaining(['hate', 'harassment', 'self-harm', 'sexual', 'violence']),
    );
  });

  it('the EmbeddingVector scalar passes a list of finite numbers through as it is and refuses anything else', () => {
    const scalar = schema.getType('EmbeddingVector');
    expect(scalar).toBeInstanceOf(GraphQLScalarType);
    const vector = scalar as GraphQLScalarType;
    const v = [0.25, -1, 3e-8, 0];
    expect(vector.serialize(v)).toEqual(v);
    expect(JSON.parse(JSON.stringify(vector.serialize(v)))).toEqual(v);
    expect(vector.parseValue(v)).toEqual(v);
    expect(vector.parseLiteral(parseValue('[0.25, -1, 3e-8, 0]'))).toEqual(v);
    for (const bad of [[1, Number.NaN], [1, Number.POSITIVE_INFINITY], [1, '2'], 'x', 1, null, { 0: 1 }]) {
      expect(() => vector.serialize(bad)).toThrow(/EmbeddingVector/);
      expect(() => vector.parseValue(bad)).toThrow(/EmbeddingVector/);
    }
    for (const bad of ['1.5', '"1"', '[1, "2"]', '[[1]]', '{a: 1}'])
      expect(() => vector.parseLiteral(parseValue(bad))).toThrow(/EmbeddingVector/);
  });

  it('carries type, code and HTTP status of domain errors in extensions', async () => {
    const r = await s.graphql(print(CreateChatCompletionDocument), input('hi', { temperature: 3 }), key);
    expect(r.status).toBe(400);
    expect(r.body.errors[0].extensions).toMatchObject({
      code: 'invalid_value',
      type: 'invalid_request_error',
      status: 400,
      param: 'temperature',
    });
    const unknown = await s.graphql(
      print(CreateChatCompletionDocument),
      { input: { model: 'nope', messages: [{ role: 'user', content: 'x' }] } },
      key,
    );
    expect(unknown.body.errors[0].extensions).toMatchObject({ code: 'invalid_model', status: 400 });
    const noKey = await s.graphql(print(ViewerDocument), {});
    expect(noKey.status).toBe(401);
    expect(noKey.body.errors[0].extensions).toMatchObject({ code: 'invalid_api_key', type: 'authentication_error', status: 401 });
  });

  it('keeps admin mutations for the operator token', async () => {
    const r = await s.graphql('mutation { createAccount(email: "x@example.com", tier: free) { apiKey } }', {}, key);
    expect(r.body.errors[0].extensions).toMatchObject({ code: 'admin_required', status: 403 });
    const ok = await s.graphql(`mutation { createApiKey(accountId: "${accountId}", name: "ci") { id apiKey } }`, {}, ADMIN_TOKEN);
    expect(ok.body.data.createApiKey.apiKey).toMatch(/^ask_/);
    const revoked = await s.graphql(`mutation { revokeApiKey(id: "${ok.body.data.createApiKey.id}") }`, {}, ADMIN_TOKEN);
    expect(revoked.body.data.revokeApiKey).toBe(true);
    const refused = await s.graphql(print(ViewerDocument), {}, ok.body.data.createApiKey.apiKey);
    expect(refused.body.errors[0].extensions.code).toBe('invalid_api_key');
  });

  it('refuses queries past the depth, alias and token limits', async () => {
    const aliases = Array.from({ length: 40 }, (_, i) => `a${i}: models { id }`).join(' ');
    const r = await s.graphql(`{ ${aliases} }`);
    expect(r.status).toBe(400);
    expect(JSON.stringify(r.body.errors)).toMatch(/alias/i);
    const shallow = await startTestServer({ yaml: (u) => catalogYaml(u, 'graphql: { max_depth: 2 }') });
    try {
      const deep = await shallow.graphql('{ models { pricing { currency } } }');
      expect(deep.status).toBe(400);
      expect(JSON.stringify(deep.body.errors)).toMatch(/depth/i);
      expect((await shallow.graphql('{ models { id } }')).status).toBe(200);
    } finally {
      await shallow.close();
    }
  });

  it('turns introspection off when the config says so', async () => {
    expect((await s.graphql('{ __schema { queryType { name } } }')).body.data.__schema.queryType.name).toBe('Query');
    const closed = await startTestServer({ yaml: (u) => catalogYaml(u, 'graphql: { introspection: false }') });
    try {
      const r = await closed.graphql('{ __schema { queryType { name } } }');
      expect(r.body.data).toBeUndefined();
      expect(r.body.errors[0].message).toMatch(/introspection/i);
      // Over WebSocket too, for __schema and __type; __typename stays.
      for (const query of ['{ __schema { queryType { name } } }', '{ __type(name: "Query") { name } }']) {
        const ws = await subscribeAll(query, {}, undefined, closed.url);
        expect(ws.events[0]?.data, query).toBeUndefined();
        const errors = (ws.error ?? ws.events[0]?.errors) as any[];
        expect(errors[0].message, query).toMatch(/introspection/i);
        expect(errors[0].extensions).toMatchObject({ code: 'invalid_request', status: 400 });
      }
      expect((await subscribeAll('{ __typename }', {}, undefined, closed.url)).events[0].data).toEqual({ __typename: 'Query' });
      // Nor do suggestions tell the schema's names: fields, enum values in a document or a variable, over HTTP and WebSocket.
      const misspelt: [string, Record<string, unknown>][] = [
        ['{ modelz { id } }', {}],
        ['{ models(category: chatt) { id } }', {}],
        ['query($c: ModelCategory) { models(category: $c) { id } }', { c: 'chatt' }],
      ];
      for (const [query, variables] of misspelt) {
        const http = await closed.graphql(query, variables);
        const ws = await subscribeAll(query, variables, undefined, closed.url);
        for (const errors of [http.body.errors, (ws.error ?? ws.events[0]?.errors) as any[]]) {
          expect(errors[0].message, query).not.toMatch(/Did you mean|"chat"|"models"/);
          expect(errors[0].message, query).toMatch(/\[Suggestion hidden\]/);
        }
      }
      // With introspection on, they stay.
      expect((await s.graphql('{ models(category: chatt) { id } }')).body.errors[0].message).toMatch(
        /Did you mean the enum value "chat"\?/,
      );
    } finally {
      await closed.close();
    }
  });

  it('says a query over the cost limit is too large, with what to change', async () => {
    const tight = await startTestServer({ yaml: (u) => catalogYaml(u, 'graphql: { max_cost: 500 }') });
    try {
      const r = await tight.graphql('{ viewer { wallet { transactions(first: 50) { edges { node { id amount } } } } } }', {}, key);
      expect(r.status).toBe(400);
      expect(r.body.errors[0].message).toMatch(
        /^The query is too large: query cost limit of 500 exceeded, found [\d.]+\. Ask for fewer items/,
      );
      expect(r.body.errors[0].extensions).toMatchObject({ code: 'invalid_request', status: 400 });
    } finally {
      await tight.close();
    }
    // The default admits the largest page of the largest list.
    const page = await s.graphql(
      '{ viewer { wallet { transactions(first: 1000) { edges { cursor node { id type amount balanceAfter description createdAt } } pageInfo { hasNextPage endCursor } } } } }',
      {},
      key,
    );
    expect(page.body.errors).toBeUndefined();
  });

  it('says a query past the depth limit is too deep, and to nest less (splitting it would not help)', async () => {
    const tight = await startTestServer({ yaml: (u) => catalogYaml(u, 'graphql: { max_depth: 3 }') });
    try {
      const r = await tight.graphql('{ viewer { wallet { transactions(first: 1) { nodes { id } } } } }', {}, key);
      expect(r.status).toBe(400);
      expect(r.body.errors[0].message).toBe(
        'The query is too large: query depth limit of 3 exceeded, found 5. Nest fewer levels: ask for what lies deeper in a query of its own (by the id the first one returns); the limit is `graphql.max_depth`.',
      );
      expect(r.body.errors[0].extensions).toMatchObject({ code: 'invalid_request', status: 400 });
    } finally {
      await tight.close();
    }
  });

  it('says a query with too many repeated fields to check is too large, with what to change, over HTTP and WebSocket', async () => {
    const query = `{ plans { ${'tier '.repeat(1000)} } }`;
    const http = await s.graphql(query, {}, key);
    const ws = await subscribeAll(query, {}, key);
    for (const errors of [http.body.errors, (ws.error ?? ws.events[0]?.errors) as any[]]) {
      expect(errors[0].message).toBe(
        'The query is too large: it repeats or overlaps too many fields to check that they agree. Select each field once, or split the query.',
      );
      expect(errors[0].extensions).toMatchObject({ code: 'invalid_request', status: 400 });
    }
    expect(http.status).toBe(400);
  });

  it('costs a page size given as a variable by its value, as a literal one, over HTTP and WebSocket (each request by its own variables)', async () => {
    const pages = Array.from({ length: 15 }, (_, i) => `t${i}: transactions(first: $f) { edges { node { id amount } } }`).join(' ');
    const query = `query($f: Int) { viewer { wallet { ${pages} } } }`;
    const literal = await s.graphql(query.replace('query($f: Int)', '').replaceAll('$f', '1000'), {}, key);
    expect(literal.body.errors[0].message).toMatch(/^The query is too large: query cost limit of 100000 exceeded/);
    for (const [f, refused] of [
      [1000, true],
      [10, false],
      [1000, true],
    ] as const) {
      const http = await s.graphql(query, { f }, key);
      const ws = await subscribeAll(query, { f }, `Bearer ${key}`);
      for (const r of [http.body, ws.error ? { errors: ws.error } : ws.events[0]]) {
        if (refused) {
          expect(r.errors?.[0].message, `first: ${f}`).toMatch(/^The query is too large: query cost limit of 100000 exceeded/);
          expect(r.errors?.[0].extensions).toMatchObject({ code: 'invalid_request', status: 400 });
        } else expect(r.errors, `first: ${f}`).toBeUndefined();
      }
      expect(http.status).toBe(refused ? 400 : 200);
    }
  });

  it("costs a page size left to its variable's default by that default, over HTTP and WebSocket", async () => {
    const pages = Array.from({ length: 15 }, (_, i) => `t${i}: transactions(first: $n) { nodes { id } }`).join(' ');
    for (const [query, variables, refused] of [
      [`query($n: Int = 1000) { viewer { wallet { ${pages} } } }`, undefined, true],
      [`query($n: Int = 1000) { viewer { wallet { ${pages} } } }`, {}, true],
      // The variable sent wins over its default.
      [`query($n: Int = 1000) { viewer { wallet { ${pages} } } }`, { n: 10 }, false],
      // Several operations: the defaults of the one that runs.
      [
        `query Big($n: Int = 1000) { viewer { wallet { ${pages} } } } query Small($n: Int = 10) { viewer { wallet { ${pages} } } }`,
        {},
        true,
      ],
      [
        `query Small($n: Int = 10) { viewer { wallet { ${pages} } } } query Big($n: Int = 1000) { viewer { wallet { ${pages} } } }`,
        {},
        false,
      ],
    ] as const) {
      // Each document of several operations runs its first one.
      const operationName = /^query (\w+)/.exec(query)?.[1];
      const res = await fetch(`${s.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
        body: JSON.stringify({ query, variables, operationName }),
      });
      const http = (await res.json()) as { errors?: { message: string; extensions: unknown }[] };
      // (subscribeAll sends no operationName: the socket is asked the one-operation documents.)
      const ws = operationName ? null : await subscribeAll(query, variables ?? {}, `Bearer ${key}`);
      const what = `${operationName ?? ''} ${JSON.stringify(variables)}`;
      for (const r of [http, ...(ws ? [ws.error ? { errors: ws.error as any[] } : ws.events[0]] : [])]) {
        if (refused) {
          expect(r.errors?.[0].message, what).toMatch(/^The query is too large: query cost limit of 100000 exceeded/);
          expect(r.errors?.[0].extensions, what).toMatchObject({ code: 'invalid_request', status: 400 });
        } else expect(r.errors, what).toBeUndefined();
      }
      expect(res.status, what).toBe(refused ? 400 : 200);
    }
  });

  it('names a refused argument as GraphQL does (first, accountId), where /v1 names it as /v1 does (limit)', async () => {
    const page = await s.graphql('{ viewer { wallet { transactions(first: 0) { edges { node { id } } } } } }', {}, key);
    expect(page.body.errors[0].extensions).toMatchObject({ code: 'invalid_value', param: 'first' });
    expect(page.body.errors[0].message).toBe("'first' must be an integer from 1 to 1000; got 0.");
    const credit = await s.graphql(
      'mutation($i: CreditWalletInput!) { creditWallet(input: $i) { id } }',
      { i: { accountId: 'acct_nope', amount: '1', type: 'bonus', description: 'x' } },
      ADMIN_TOKEN,
    );
    expect(credit.body.errors[0].extensions).toMatchObject({ code: 'not_found', param: 'accountId' });
    // A variable keeps the name the client gave it.
    const USES = 'query($my_first: Int!) { viewer { notifications(first: $my_first) { unreadCount } } }';
    const variable = await s.graphql(USES, { my_first: 'x' }, key);
    expect(variable.body.errors[0].extensions.param).toBe('my_first');
    for (const [query, variables] of [
      [USES, {}],
      [USES, { my_first: null }],
    ] as const) {
      const missing = await s.graphql(query, variables, key);
      expect(missing.body.errors[0].extensions, JSON.stringify(variables)).toMatchObject({ code: 'invalid_value', param: 'my_first' });
    }
    // A document's own mistakes about its variables are the document's: invalid_request, no param.
    for (const query of ['query($x: Int) { models { id } }', '{ model(id: $y) { id } }', 'query($x: Int) { model(id: $x) { id } }']) {
      const wrong = await s.graphql(query, {}, key);
      expect(wrong.body.errors[0].extensions, query).toMatchObject({ code: 'invalid_request', param: null, status: 400 });
    }
    const v1 = await fetch(`${s.url}/v1/wallet/transactions?limit=0`, { headers: { authorization: `Bearer ${key}` } });
    expect(((await v1.json()) as any).error).toMatchObject({ code: 'invalid_value', param: 'limit' });
  });

  it('says which operations a document has when the request does not name one of them', async () => {
    const post = async (body: Record<string, unknown>) => {
      const res = await fetch(`${s.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      const json = (await res.json()) as { errors: { message: string; extensions: unknown }[] };
      expect(res.status).toBe(400);
      expect(json.errors[0].extensions).toEqual({ code: 'invalid_request', type: 'invalid_request_error', status: 400, param: null });
      return json.errors[0].message;
    };
    const TWO = 'query A { models { id } } query B { models { id } }';
    expect(await post({ query: TWO })).toBe("The document has 2 operations, named 'A', 'B': operationName must name the one to run.");
    expect(await post({ query: TWO, operationName: 'C' })).toBe(
      "The document has no operation named 'C': its operations are named 'A', 'B'. operationName must name one of them.",
    );
    expect(await post({ query: 'query A { models { id } }', operationName: 'B' })).toBe(
      "The document has no operation named 'B': its operation is named 'A'. operationName must name one of them.",
    );
    expect(await post({ query: '{ models { id } }', operationName: 'B' })).toBe(
      "The document has no operation named 'B': its operation has no name. Leave operationName out, or give the operation that name.",
    );
    expect(await post({ query: 'query A { models { id } } { plans { tier } }' })).toBe(
      "The document has 2 operations, named 'A' (and 1 without a name): operationName must name the one to run.",
    );
    // A right operationName runs that operation.
    const res = await fetch(`${s.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: TWO, operationName: 'B' }),
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { data: { models: unknown[] } }).data.models.length).toBeGreaterThan(0);
  });

  it("answers Yoga's own refusals with this project's codes: invalid_request, 400 or 405 with Allow", async () => {
    const post = (body: string) => fetch(`${s.url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    const cases: [string, Promise<Response>, number, string | null][] = [
      ['no query', post('{}'), 400, null],
      ['invalid JSON', post('{"query":'), 400, null],
      ['batching', post('[{"query":"{ models { id } }"}]'), 400, null],
      ['unknown operationName', post('{"query":"query A { models { id } }","operationName":"B"}'), 400, null],
      ['two operations, no operationName', post('{"query":"query A { models { id } } query B { models { id } }"}'), 400, null],
      ['syntax error', post('{"query":"{ models { id "}'), 400, null],
      [
        'a mutation over GET',
        fetch(`${s.url}/graphql?query=${encodeURIComponent('mutation { signOut }')}`, {
          headers: { accept: 'application/json', 'x-graphql-yoga-csrf': '1' },
        }),
        405,
        'POST',
      ],
      ...(['application/json', 'application/graphql-response+json', 'multipart/mixed'] as const).map(
        (accept): [string, Promise<Response>, number, string | null] => [
          `a subscription asked for as ${accept}`,
          fetch(`${s.url}/graphql`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', accept },
            body: JSON.stringify({ query: 'subscription { walletUpdated { balance } }' }),
          }),
          406,
          null,
        ],
      ),
      [
        'a method other than GET and POST',
        fetch(`${s.url}/graphql`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: '{"query":"{ __typename }"}' }),
        405,
        'GET, POST',
      ],
    ];
    for (const [what, pending, status, allow] of cases) {
      const res = await pending;
      const body = await res.json();
      expect({ what, status: res.status }).toEqual({ what, status });
      if (allow) expect(res.headers.get('allow'), what).toBe(allow);
      expect(body.errors, what).toHaveLength(1);
      expect(body.errors[0].extensions, what).toEqual({ code: 'invalid_request', type: 'invalid_request_error', status, param: null });
      if (status === 406) expect(body.errors[0].message, what).toMatch(/Accept: text\/event-stream .* WebSocket/);
    }
  });

  it('refuses a document of several mutations before any runs (400), and keeps a single one as it was', async () => {
    const a = await s.account('developer');
    const owner = await signedIn(s, a.id);
    const balance = async () =>
      (await s.graphql('{ viewer { wallet { balance transactions(first: 50) { nodes { id } } } } }', {}, a.apiKey)).body.data.viewer.wallet;
    const keys = async () => (await owner.graphql('{ viewer { apiKeys { id } } }')).body.data.viewer.apiKeys.length as number;
    const [walletBefore, keysBefore] = [await balance(), await keys()];
    const CHATS = `mutation {
      a: createChatCompletion(input: { model: "chat-test", messages: [{ role: "user", content: "hi" }] }) { choices { message { content } } }
      b: createChatCompletion(input: { model: "nope", messages: [{ role: "user", content: "hi" }] }) { id }
    }`;
    const KEYS = 'mutation { k: createMyApiKey(name: "lost") { id apiKey } r: revokeMyApiKey(id: "key_nope") { id } }';
    const FRAGMENT =
      'mutation { ...Both } fragment Both on Mutation { k: createMyApiKey(name: "lost") { id } ... on Mutation { signOut } }';
    for (const [what, r] of [
      ['two chats', await s.graphql(CHATS, {}, a.apiKey)],
      ['a key and a revocation', await owner.graphql(KEYS)],
      ['through fragments', await owner.graphql(FRAGMENT)],
    ] as const) {
      expect({ what, status: r.status }).toEqual({ what, status: 400 });
      expect(r.body.data, what).toBeUndefined();
      expect(r.body.errors, what).toHaveLength(1);
      expect(r.body.errors[0].extensions, what).toEqual({
        code: 'invalid_request',
        type: 'invalid_request_error',
        status: 400,
        param: null,
      });
      expect(r.body.errors[0].message, what).toMatch(
        /^This mutation selects (2|3) fields \(.+\); a document may run one mutation\. Send each in a request of its own/,
      );
    }
    // Over WebSocket too.
    const ws = await subscribeAll(CHATS, {}, `Bearer ${a.apiKey}`);
    expect((ws.error as any[])?.[0]?.message ?? ws.events[0]?.errors?.[0]?.message).toMatch(/a document may run one mutation/);
    // Nothing ran: nothing charged, no key made.
    expect(await balance()).toEqual(walletBefore);
    expect(await keys()).toBe(keysBefore);
    // One mutation per document is as before: a failing one answers its own status with data null.
    const failing = await owner.graphql('mutation { revokeMyApiKey(id: "key_nope") { id } }');
    expect(failing.status).toBe(404);
    expect(failing.body.data).toBeNull();
    expect(failing.body.errors[0].extensions).toMatchObject({ code: 'not_found', status: 404 });
    const made = await owner.graphql('mutation Make { createMyApiKey(name: "kept") { id apiKey } }');
    expect(made.status).toBe(200);
    expect(made.body.data.createMyApiKey.apiKey).toMatch(/^ask_/);
    // The same field twice with the same alias and arguments is one field (GraphQL merges them).
    const merged = await s.graphql(
      'mutation { moderate(input: { input: "hi" }) { id } moderate(input: { input: "hi" }) { id } }',
      {},
      a.apiKey,
    );
    expect(merged.body.errors).toBeUndefined();
    // __typename beside the mutation runs nothing: still one mutation.
    const typed = await s.graphql('mutation { moderate(input: { input: "hi" }) { id } __typename }', {}, a.apiKey);
    expect(typed.body.errors).toBeUndefined();
    expect(typed.body.data.__typename).toBe('Mutation');
  });

  it('refuses a browser form post without a preflight header (CSRF)', async () => {
    const res = await fetch(`${s.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'query=%7Bmodels%7Bid%7D%7D',
    });
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
  });

  it('masks unexpected errors', async () => {
    const original = s.services.catalog.list;
    s.services.catalog.list = () => {
      throw new Error('secret internal detail at /srv/db');
    };
    try {
      const r = await s.graphql('{ models { id } }');
      expect(r.body.errors[0].message).not.toContain('secret');
      expect(r.body.errors[0].extensions).toMatchObject({ code: 'internal_error', status: 500 });
    } finally {
      s.services.catalog.list = original;
    }
  });
});

describe('GraphQL subscriptions over graphql-ws', () => {
  it('streams a chat completion as chunks, ending with the finish reason and the usage', async () => {
    const { events, error } = await subscribeAll(print(ChatCompletionStreamDocument), input('hi #tokens=3'), `Bearer ${key}`);
    expect(error).toBeUndefined();
    const chunks = events.map((e) => e.data.chatCompletionStream);
    expect(new Set(chunks.map((c) => c.id)).size).toBe(1);
    expect(chunks[0].choices[0].delta.role).toBe('assistant');
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe('w0 w1 w2');
    const finish = chunks.at(-2);
    expect(finish.choices[0].finishReason).toBe('stop');
    const usage = chunks.at(-1);
    expect(usage.choices).toEqual([]);
    expect(usage.usage.completionTokens).toBe(3);
  });

  it('ends the operation with a GraphQL error for a bad key, keeping the socket usable', async () => {
    const { events } = await subscribeAll(print(ChatCompletionStreamDocument), input('hi'), 'Bearer ask_wrong');
    expect(events).toHaveLength(1);
    expect(events[0].errors[0].extensions).toMatchObject({ code: 'invalid_api_key', status: 401 });
    // The extensions an HTTP body lists, nothing of Yoga's own (`http`).
    expect(Object.keys(events[0].errors[0].extensions).sort()).toEqual(['code', 'param', 'status', 'type']);
  });

  it('takes the key from connectionParams in any case, at the top or under headers', async () => {
    for (const connectionParams of [{ Authorization: `Bearer ${key}` }, { headers: { Authorization: `Bearer ${key}` } }]) {
      const client = createClient({
        url: `${s.url.replace('http', 'ws')}/graphql`,
        webSocketImpl: WebSocket,
        connectionParams,
        retryAttempts: 0,
      });
      try {
        const result = await new Promise<any>((resolve) => {
          client.subscribe({ query: '{ viewer { id } }' }, { next: resolve, error: (e) => resolve({ errors: e }), complete: () => {} });
        });
        expect(result.data, JSON.stringify(connectionParams)).toEqual({ viewer: { id: accountId } });
      } finally {
        await client.dispose();
      }
    }
  });

  it('ends with an error event when the upstream fails mid-stream', async () => {
    const { events } = await subscribeAll(print(ChatCompletionStreamDocument), input('x #tokens=10 #fail=midstream'), `Bearer ${key}`);
    const last = events.at(-1);
    expect(last.errors[0].extensions).toMatchObject({ code: 'upstream_error', status: 502 });
    expect(events.slice(0, -1).every((e) => e.data?.chatCompletionStream)).toBe(true);
  });
});
