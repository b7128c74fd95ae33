// What the server's log says: an upstream's failures with the catalog model that called it and
// the base URL that failed (several models may share one upstream server, and one model several
// base URLs); the database's migrations, before and after.
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/harness.js';
import { client, seed } from './support/seed.js';
import { waitUntil } from './support/wait.js';

const lines: Record<string, unknown>[] = [];
const sink = new Writable({
  write(chunk, _enc, done) {
    for (const line of String(chunk).split('\n')) if (line) lines.push(JSON.parse(line));
    done();
  },
});

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer({ logger: pino({ level: 'info' }, sink) });
});
afterAll(() => s?.close());

it('names the model and the base URL on the lines of an upstream error status and of an error inside a stream', async () => {
  const a = await seed(s).account({ tier: 'developer' }).wallet('1.00');
  const c = client(s, a.apiKey);
  const body = (stream: boolean) => ({ model: 'chat-test', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5, stream });
  s.upstream.setFault({ status: 500, body: '{"error":{"message":"boom"}}' });
  expect((await c.post('/chat/completions', body(false))).status).toBe(502);
  s.upstream.setFault({
    raw: 'data: {"choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"},"finish_reason":null}]}\n\nevent: error\ndata: {"error":{"message":"gone"}}\n\n',
    type: 'text/event-stream',
  });
  expect((await c.post('/chat/completions', body(true))).text).toContain('"error"');
  s.upstream.setFault(null);
  const of = (msg: string) => lines.find((l) => l.msg === msg);
  await waitUntil(() => !!of('upstream answered with an error status') && !!of('upstream sent an error inside the stream'));
  for (const msg of ['upstream answered with an error status', 'upstream sent an error inside the stream']) {
    expect(of(msg), msg).toMatchObject({ model: 'chat-test', upstream: expect.stringContaining(new URL(s.upstream.url).host) });
  }
});

it("says it creates the database's tables on a new database, and when it is done", () => {
  const starting = lines.find((l) => l.component === 'database' && String(l.msg).startsWith("creating the database's tables"));
  expect(starting).toMatchObject({ migrations: expect.arrayContaining(['0001-accounts-and-keys']) });
  expect(lines.find((l) => l.component === 'database' && l.msg === 'the database is up to date')).toMatchObject({
    migrations: (starting!.migrations as string[]).length,
    ms: expect.any(Number),
  });
});
