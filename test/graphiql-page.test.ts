// GraphiQL's page at GET /graphql (every asset inline, about 9 MB): sent compressed to a browser
// that takes gzip, with an ETag that a repeat visit revalidates with 304, and nothing else of
// GET /graphql taken over (a query over GET with Accept: application/json is still a query).
import { gunzipSync } from 'node:zlib';
import { request } from 'node:http';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/harness.js';

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(async () => s?.close());

/** GET /graphql with these headers, the body as sent (fetch would decompress it). */
function get(headers: Record<string, string>, query = ''): Promise<{ status: number; headers: Record<string, unknown>; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const url = new URL(`${s.url}/graphql${query}`);
    const req = request(url, { headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end();
  });
}

it('sends GraphiQL gzipped to a browser that takes it, and 304 to a repeat visit', async () => {
  const zipped = await get({ accept: 'text/html', 'accept-encoding': 'gzip, deflate, br' });
  expect(zipped.status).toBe(200);
  expect(zipped.headers['content-encoding']).toBe('gzip');
  expect(zipped.headers['content-type']).toMatch(/^text\/html/);
  const page = gunzipSync(zipped.body).toString('utf8');
  expect(page).toContain('<title>tollgate GraphiQL</title>');
  expect(zipped.body.length).toBeLessThan(page.length / 2);
  const etag = String(zipped.headers.etag);
  expect(etag).toMatch(/^"[\w-]+"$/);
  const again = await get({ accept: 'text/html', 'accept-encoding': 'gzip', 'if-none-match': etag });
  expect([again.status, again.body.length]).toEqual([304, 0]);
  // A client that takes no gzip gets the same page as it is.
  const plain = await get({ accept: 'text/html' });
  expect(plain.headers['content-encoding']).toBeUndefined();
  expect(plain.body.toString('utf8')).toBe(page);
});

it('leaves a query over GET to GraphQL', async () => {
  const r = await get({ accept: 'application/json', 'x-graphql-yoga-csrf': '1' }, `?query=${encodeURIComponent('{ __typename }')}`);
  expect(r.status).toBe(200);
  expect(JSON.parse(r.body.toString('utf8'))).toEqual({ data: { __typename: 'Query' } });
});

it('sends GraphiQL and the /v1 reference with headers that keep other sites from framing them', async () => {
  const graphiql = await get({ accept: 'text/html' });
  const docs = await fetch(`${s.url}/docs`);
  expect(docs.status).toBe(200);
  for (const headers of [graphiql.headers, Object.fromEntries(docs.headers)]) {
    expect(headers['x-frame-options']).toBe('DENY');
    expect(String(headers['content-security-policy'])).toContain("frame-ancestors 'none'");
    expect(headers['x-content-type-options']).toBe('nosniff');
  }
});

it("connects the dashboard's page only to its own server: no WebSocket to any other host", async () => {
  const page = await fetch(`${s.url}/dashboard/login`);
  const csp = page.headers.get('content-security-policy') ?? '';
  const connect = csp
    .split(';')
    .map((d) => d.trim())
    .find((d) => d.startsWith('connect-src'));
  const host = new URL(s.url).host;
  expect(connect).toBe(`connect-src 'self' ws://${host} wss://${host}`);
  // A Host header that is more than a host and port adds nothing.
  const odd = await new Promise<string>((resolve, reject) => {
    const req = request(`${s.url}/dashboard/login`, { headers: { host: 'a.example wss://evil.example' } }, (res) => {
      res.resume();
      resolve(String(res.headers['content-security-policy']));
    });
    req.on('error', reject);
    req.end();
  });
  expect(odd).not.toContain('evil.example');
});
