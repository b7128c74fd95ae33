// /v1 reads a plain JSON body (application/json, UTF-8, not compressed, its length declared) itself
// and any other JSON body through body-parser (compat/router.ts): both must end in the same request
// body and the same errors. Each body here is sent both ways and the answers compared.
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/harness.js';

let s: TestServer;
let key: string;

beforeAll(async () => {
  s = await startTestServer();
  key = (await s.account('developer')).apiKey;
});
afterAll(() => s.close());

/** The status and the error (or the answer's object type) of a chat request with this raw body. */
async function answer(body: string | Buffer, contentType: string, extra: Record<string, string> = {}) {
  const res = await fetch(`${s.v1}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': contentType, authorization: `Bearer ${key}`, ...extra },
    body: body as BodyInit,
  });
  const json = (await res.json()) as { error?: unknown; object?: string };
  return { status: res.status, outcome: json.error ?? json.object };
}

const chat = JSON.stringify({ model: 'chat-test', max_tokens: 8, messages: [{ role: 'user', content: 'hi #tokens=2' }] });

const bodies: [string, string][] = [
  ['a chat request', chat],
  ['a chat request after whitespace and newlines', ` \n\t\r ${chat}`],
  ['a chat request after a byte-order mark', `\uFEFF${chat}`],
  ['an empty body (read as {})', ''],
  ['only whitespace', '  \n '],
  ['a JSON string', '"hello"'],
  ['null', 'null'],
  ['a number', '42'],
  ['an array', '[1, 2]'],
  ['broken JSON', '{"model": "chat-test",'],
  ['an object that is not a chat request', '{"model": 7}'],
  ['JSON nested deeper than 256 levels', `{"model":"chat-test","extra":${'['.repeat(300)}${']'.repeat(300)}}`],
  [
    'brackets inside strings (not nesting)',
    JSON.stringify({ model: 'chat-test', max_tokens: 8, messages: [{ role: 'user', content: `${'['.repeat(600)}\\" #tokens=2` }] }),
  ],
  [
    'non-ASCII text',
    JSON.stringify({ model: 'chat-test', max_tokens: 8, messages: [{ role: 'user', content: 'héllo wörld ✓ #tokens=2' }] }),
  ],
];

describe('the plain JSON reader and body-parser agree', () => {
  for (const [name, body] of bodies) {
    it(name, async () => {
      const plain = await answer(body, 'application/json');
      const parsed = await answer(body, 'application/vnd.tollgate-test+json');
      expect(plain).toEqual(parsed);
      const charset = await answer(body, 'application/json; charset=utf-8');
      expect(charset).toEqual(parsed);
    });
  }

  it('a chat request answers 200 on both paths, and broken JSON 400 invalid_json', async () => {
    expect((await answer(chat, 'application/json')).status).toBe(200);
    expect(await answer('{broken', 'application/json')).toMatchObject({ status: 400, outcome: { code: 'invalid_json' } });
    expect(await answer('', 'application/json')).toMatchObject({ status: 400, outcome: { param: 'model' } });
  });

  it('refuses JSON nested deeper than 256 levels before parsing it, on both paths, and takes 256', async () => {
    const nested = (depth: number) =>
      JSON.stringify({ model: 'chat-test', max_tokens: 8, messages: [{ role: 'user', content: 'hi #tokens=2' }] }).replace(
        /}$/,
        `,"extra":${'['.repeat(depth - 1)}${']'.repeat(depth - 1)}}`,
      );
    for (const type of ['application/json', 'application/vnd.tollgate-test+json']) {
      const r = await answer(nested(257), type);
      expect(r.status, type).toBe(400);
      expect(r.outcome).toMatchObject({
        code: 'invalid_request',
        message: 'The request body nests deeper than 256 levels of objects and arrays.',
      });
      expect((await answer(nested(256), type)).status, type).toBe(200);
    }
  });

  it('a compressed body goes through body-parser, which inflates it', async () => {
    expect(await answer(gzipSync(chat), 'application/json', { 'content-encoding': 'gzip' })).toEqual(
      await answer(chat, 'application/json'),
    );
  });
});
