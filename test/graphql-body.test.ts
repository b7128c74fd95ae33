// What /graphql does with a request body before Yoga sees it: its size and its nesting are checked
// before authentication (anyone can send one), and what Yoga is given must not cost per byte.
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/harness.js';

let s: TestServer;
let key: string;

beforeAll(async () => {
  s = await startTestServer();
  key = (await s.account('developer')).apiKey;
});
afterAll(() => s.close());

async function post(body: string, auth: string | null = null) {
  const res = await fetch(`${s.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(auth ? { authorization: `Bearer ${auth}` } : {}) },
    body,
  });
  return { status: res.status, body: (await res.json()) as { data?: any; errors?: { message: string; extensions?: any }[] } };
}

describe('a /graphql request body', () => {
  it('nested deeper than 256 levels is refused before anything reads it, even without a key', async () => {
    const deep = `{"query":"{ __typename }","variables":{"v":${'['.repeat(300)}${']'.repeat(300)}}}`;
    const r = await post(deep);
    expect(r.status).toBe(400);
    expect(r.body.errors?.[0]?.message).toBe('The request body nests deeper than 256 levels of objects and arrays.');
    expect(r.body.errors?.[0]?.extensions?.code).toBe('invalid_request');
    // Brackets inside a string are text, not nesting.
    const text = await post(JSON.stringify({ query: `{ __typename } # ${'['.repeat(600)}` }), key);
    expect(text.status).toBe(200);
    expect(text.body.data).toEqual({ __typename: 'Query' });
  });

  it('is never given to Yoga as bytes, whose keys it would count one per byte', async () => {
    const counted: number[] = [];
    const keys = Object.keys;
    Object.keys = ((o: object) => {
      if (o instanceof Uint8Array) counted.push(o.length);
      return keys(o);
    }) as typeof Object.keys;
    try {
      const big = JSON.stringify({ query: '{ viewer { id } }', variables: { pad: 'x'.repeat(200_000) } });
      const r = await post(big, key);
      expect(r.status, JSON.stringify(r.body).slice(0, 300)).toBe(200);
      expect(r.body.data.viewer.id).toMatch(/^acct_/);
    } finally {
      Object.keys = keys;
    }
    expect(counted).toEqual([]);
  });

  it('without any body (no length, not chunked: curl -X POST) is a 400, not a 500', async () => {
    const { port } = new URL(s.url);
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(port), '127.0.0.1', () =>
        socket.write('POST /graphql HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n'),
      );
      let text = '';
      socket.on('data', (d) => (text += d.toString()));
      socket.on('end', () => resolve(text));
      socket.on('error', reject);
    });
    expect(answer).toMatch(/^HTTP\/1\.1 400 /);
    expect(answer).not.toContain('internal_error');
  });

  it('still answers what Yoga answers for broken JSON and a missing query', async () => {
    const broken = await post('{"query":');
    expect(broken.status).toBe(400);
    expect(broken.body.errors?.[0]?.message).toMatch(/JSON/);
    const empty = await post('{}', key);
    expect(empty.status).toBe(400);
    expect(empty.body.errors?.[0]?.message).toMatch(/query/i);
  });
});
