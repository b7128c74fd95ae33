// Random and malformed bodies thrown at every endpoint: never a 5xx, never a crash, and always the
// specified error body on refusals.
import fc from 'fast-check';
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
  const res = await fetch(`${s.v1}${path}`, { method: 'POST', headers: { 'content-type': contentType, authorization: `Bearer ${key}` }, body });
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
  fc.array(fc.record({ role: fc.constantFrom('user', 'system', 'assistant', 'tool', 7), content: fc.oneof(fc.string(), fc.integer(), fc.constant(null)) }), { maxLength: 3 }),
  fc.jsonValue({ maxDepth: 3 }),
);
const nearBody = fc.dictionary(
  fc.constantFrom('model', 'messages', 'input', 'query', 'documents', 'stream', 'max_tokens', 'temperature', 'top_p', 'stop', 'top_n', 'n', 'encoding_format', 'return_documents', 'tools', 'stream_options', 'presence_penalty'),
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
        fc.oneof(fc.string(), fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.from(b).toString('latin1')), fc.constant('['.repeat(5000))),
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
