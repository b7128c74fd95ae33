// Random and malformed bodies thrown at every endpoint: never a 5xx, never a crash, and always the
// specified error body on refusals.
import fc from 'fast-check';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/harness.js';

let s: TestServer;
let key: string;

beforeAll(async () => {
  s = await startTestServer();
  key = (await s.account('developer')).apiKey;
});
afterAll(() => s.close());

const ENDPOINTS = ['/chat/completions', '/embeddings', '/rerank', '/moderate', '/moderations'];

async function send(path: string, body: string, contentType = 'application/json') {
  const res = await fetch(`${s.v1}${path}`, {
    method: 'POST',
    headers: { 'content-type': contentType, authorization: `Bearer ${key}` },
    body,
  });
  const text = await res.text();
  return { status: res.status, text, type: res.headers.get('content-type') ?? '' };
}

function checkAnswer(r: { status: number; text: string; type: string }) {
  expect(r.status).toBeLessThan(500);
  if (r.status >= 400) {
    const body = JSON.parse(r.text);
    expect(typeof body.error.message).toBe('string');
    expect(typeof body.error.type).toBe('string');
  }
}

// Values near the shapes the endpoints expect, so the fuzzer reaches past the first check.
const field = fc.oneof(
  fc.string(),
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.constantFrom('chat-test', 'embed-test', 'rerank-test', 'guard-test', 'nope', ''),
  fc.array(fc.string(), { maxLength: 5 }),
  fc.array(
    fc.record({
      role: fc.constantFrom('user', 'system', 'assistant', 'tool', 7),
      content: fc.oneof(fc.string(), fc.integer(), fc.constant(null)),
    }),
    { maxLength: 3 },
  ),
  fc.jsonValue({ maxDepth: 3 }),
);
const nearBody = fc.dictionary(
  fc.constantFrom(
    'model',
    'messages',
    'input',
    'query',
    'documents',
    'stream',
    'max_tokens',
    'temperature',
    'top_p',
    'stop',
    'top_n',
    'n',
    'encoding_format',
    'return_documents',
    'tools',
    'stream_options',
    'presence_penalty',
  ),
  field,
);

describe('fuzzing the /v1 endpoints', () => {
  it('answers random JSON values with a 2xx or a 4xx error body', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...ENDPOINTS), fc.jsonValue({ maxDepth: 4 }), async (path, value) => {
        checkAnswer(await send(path, JSON.stringify(value)));
      }),
      { numRuns: 150 },
    );
  });

  it('answers bodies shaped like requests with a 2xx or a 4xx error body', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...ENDPOINTS), nearBody, async (path, body) => {
        checkAnswer(await send(path, JSON.stringify(body)));
      }),
      { numRuns: 400 },
    );
  });

  it('answers broken bytes, odd content types and deep nesting with a 4xx', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...ENDPOINTS),
        fc.oneof(
          fc.string(),
          fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.from(b).toString('latin1')),
          fc.constant('['.repeat(5000)),
        ),
        fc.constantFrom('application/json', 'text/plain', 'application/json; charset=utf-16', 'application/x-www-form-urlencoded'),
        async (path, body, type) => {
          checkAnswer(await send(path, body, type));
        },
      ),
      { numRuns: 150 },
    );
  });

  it('still serves after the fuzzing', async () => {
    expect((await fetch(`${s.url}/healthz`)).status).toBe(200);
    const r = await send('/chat/completions', JSON.stringify({ model: 'chat-test', messages: [{ role: 'user', content: 'hi' }] }));
    expect(r.status).toBe(200);
  });
});

// GraphQL documents built from pieces of real operations, garbage, aliases, fragments and deep
// nesting, with variables declared or not, of the right type or not.
const selection = fc.constantFrom(
  'viewer { id email tier wallet { balance currency transactions(first: $f, after: $s) { nodes { id amount type } pageInfo { hasNextPage } } } }',
  'models { id category pricing { currency } }',
  'model(id: $s) { id }',
  'createChatCompletion(input: $input) { id choices { message { content } } usage { totalTokens } }',
  'createEmbeddings(input: $input) { data { index } }',
  'rerank(input: $input) { results { index relevanceScore } }',
  'moderate(input: $input) { results { flagged } }',
  'createTopUp(input: $input) { checkoutUrl }',
  'topUpQuote(amount: $d) { bonus }',
  'a1: models { id } a2: models { id } a3: models { id }',
  '...F',
  'viewer { ' + 'wallet { account { wallet { account { id } } } } '.repeat(3) + '}',
  '__typename',
  '__schema { types { name } }',
  'nope',
  '{',
  '}',
  'viewer(x: 1) { id }',
  `models { ${'id '.repeat(2100)}}`, // over graphql.max_tokens: refused while parsing
);
const varDef = fc.constantFrom(
  '$f: Int',
  '$s: String',
  '$d: Decimal',
  '$input: ChatCompletionInput!',
  '$input: EmbeddingsInput',
  '$input: RerankInput',
  '$input: ModerationInput',
  '$input: TopUpInput',
  '$f: Float',
  '$x: Nope',
  '$s: ID!',
);
const variableValue = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }),
  fc.constant(2 ** 31),
  fc.constant(-(2 ** 53)),
  fc.constant('1e400'),
  fc.record(
    {
      model: fc.constantFrom('chat-test', 'embed-test', 'nope'),
      messages: fc.array(fc.record({ role: fc.constantFrom('user', 'x'), content: fc.string() }), { maxLength: 2 }),
      input: fc.array(fc.string(), { maxLength: 2 }),
      maxTokens: fc.oneof(fc.integer(), fc.constant(2 ** 31)),
    },
    { requiredKeys: [] },
  ),
);
const document = fc
  .record({
    kind: fc.constantFrom('query', 'mutation', 'subscription', ''),
    defs: fc.uniqueArray(varDef, { maxLength: 3, selector: (d) => d.split(':')[0] }),
    fields: fc.array(selection, { minLength: 1, maxLength: 3 }),
    fragment: fc.boolean(),
  })
  .map(({ kind, defs, fields, fragment }) => {
    const head = kind ? `${kind}${defs.length ? `(${defs.join(', ')})` : ''} ` : '';
    return `${head}{ ${fields.join(' ')} }${fragment ? ' fragment F on Query { models { id } }' : ''}`;
  });
const variables = fc.dictionary(fc.constantFrom('f', 's', 'd', 'input', 'x'), variableValue, { maxKeys: 4 });

describe('fuzzing GraphQL documents and variables', () => {
  it('answers over HTTP with a 2xx or a 4xx, and never an internal error', async () => {
    await fc.assert(
      fc.asyncProperty(document, variables, async (query, vars) => {
        const res = await fetch(`${s.url}/graphql`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
          body: JSON.stringify({ query, variables: vars }),
        });
        expect(res.status).toBeLessThan(500);
        const text = await res.text();
        if (!res.headers.get('content-type')?.includes('json')) return; // a subscription's event stream
        const body = JSON.parse(text);
        for (const e of body.errors ?? []) {
          expect(typeof e.extensions?.code).toBe('string');
          expect(e.extensions.code).not.toBe('internal_error');
          expect(e.extensions.status).toBeLessThan(500);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('answers over one WebSocket with a result or an error per operation, never closing the socket', async () => {
    let closed: unknown;
    const client = createClient({
      url: s.url.replace('http', 'ws') + '/graphql',
      webSocketImpl: WebSocket,
      connectionParams: { authorization: `Bearer ${key}` },
      retryAttempts: 0,
      lazy: false, // one socket for the whole run: a close would be the server's doing
      on: { closed: (e) => (closed = e) },
    });
    try {
      await fc.assert(
        fc.asyncProperty(document, variables, async (query, vars) => {
          const outcome = await new Promise<{ errors: any[] }>((resolve) => {
            const errors: any[] = [];
            client.subscribe(
              { query, variables: vars },
              {
                next: (r) => errors.push(...(r.errors ?? [])),
                error: (e) => resolve({ errors: [...errors, ...(Array.isArray(e) ? e : [{ closedSocket: String(e) }])] }),
                complete: () => resolve({ errors }),
              },
            );
          });
          for (const e of outcome.errors) {
            expect(e.closedSocket).toBeUndefined();
            expect(e.extensions?.code).not.toBe('internal_error');
          }
          expect(closed).toBeUndefined();
        }),
        { numRuns: 150 },
      );
    } finally {
      await client.dispose();
    }
  });

  it('still serves after the GraphQL fuzzing', async () => {
    const res = await fetch(`${s.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ query: '{ viewer { id } }' }),
    });
    expect(res.status).toBe(200);
    expect((await fetch(`${s.url}/healthz`)).status).toBe(200);
  });
});
