// The server as a process: readiness, graceful shutdown with a stream in flight, a bad config
// refused at start-up, and a client that goes away stopping the upstream call.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countTextTokens } from '../src/domain/inference/tokenizer.js';
import { startFakeUpstream, type FakeUpstream } from './support/fake-upstream.js';
import { ADMIN_TOKEN, catalogYaml, startTestServer } from './support/harness.js';
import { freePort, spawnTollgate, waitReady } from './support/ready.js';

let upstream: FakeUpstream;
let dir: string;

beforeAll(async () => {
  upstream = await startFakeUpstream();
  dir = mkdtempSync(path.join(tmpdir(), 'tollgate-life-'));
});
afterAll(() => upstream.close());

/**
 * `npm start`'s server as a process on the test catalog (`yaml` before it), ready, with an
 * enterprise account; `stream` starts a streamed chat with that account's key.
 */
async function serverProcess(name: string, yaml = '') {
  const config = path.join(dir, `${name}.yaml`);
  writeFileSync(config, `${yaml}${catalogYaml(upstream.url)}`);
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const file = path.join(dir, `${name}.db`);
  const server = spawnTollgate(['src/main.ts'], { CONFIG: config, PORT: String(port), DATABASE_URL: `sqlite:${file}` });
  await waitReady(url);
  const created = await fetch(`${url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN_TOKEN}` },
    body: JSON.stringify({ query: `mutation { createAccount(email: "${name}@example.com", tier: enterprise) { apiKey } }` }),
  }).then((r) => r.json());
  const key: string = created.data.createAccount.apiKey;
  const stream = (content: string) =>
    fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ model: 'chat-test', stream: true, messages: [{ role: 'user', content }] }),
    });
  return { server, url, file, stream };
}

describe('the server process', () => {
  it.each(['SIGTERM', 'SIGHUP'] as const)(
    'finishes a stream in flight on %s, then exits 0 and accepts no more connections',
    async (signal) => {
      // SIGHUP: the terminal that ran `npm start` closed; by default it would kill the server mid-call, unbilled.
      const { server, url, stream } = await serverProcess(`life-${signal}`);
      expect(await (await fetch(`${url}/healthz`)).json()).toEqual({ status: 'ok' });

      const res = await stream('slow #tokens=8 #delay=80');
      expect(res.status).toBe(200);
      const body = res.text();
      await new Promise((r) => setTimeout(r, 150));
      server.proc.kill(signal);
      const text = await body;
      expect(text.trim().endsWith('data: [DONE]')).toBe(true);
      expect(text.match(/"content":" ?w\d"/g)).toHaveLength(8);
      expect(await server.exited).toBe(0);
      expect(server.output()).toContain('shutting down');
      expect(server.output()).toContain(`"signal":"${signal}"`);
      await expect(fetch(`${url}/healthz`)).rejects.toThrow();
    },
  );

  it('ends a stream still running when the shutdown time is up with an error event, billed for what it delivered', async () => {
    const { server, file, stream } = await serverProcess('short', 'server: { shutdown_timeout_ms: 400 }\n');
    const res = await stream('long #tokens=200 #delay=50');
    expect(res.status).toBe(200);
    const body = res.text();
    await new Promise((r) => setTimeout(r, 300));
    server.proc.kill('SIGTERM');
    const text = await body;
    const events = text.trim().split('\n\n');
    expect(events.at(-1)).not.toBe('data: [DONE]');
    expect(JSON.parse(events.at(-1)!.slice('data: '.length)).error).toMatchObject({ code: 'shutting_down', type: 'server_error' });
    const delivered = text.match(/"content":" ?w\d+"/g)?.length ?? 0;
    expect(delivered).toBeGreaterThan(0);
    expect(delivered).toBeLessThan(200);
    expect(await server.exited).toBe(0);
    const db = new Database(file, { readonly: true });
    try {
      const rows = db.prepare('select outcome, completion_tokens from usage_events').all() as {
        outcome: string;
        completion_tokens: number;
      }[];
      // Not 'client_disconnected': the server ended it. Billed for the text delivered, counted.
      const content = events
        .filter((e) => e.startsWith('data: {') && !e.includes('"error"'))
        .map((e) => JSON.parse(e.slice('data: '.length)).choices[0]?.delta?.content ?? '')
        .join('');
      expect(rows).toEqual([{ outcome: 'failed_mid_stream', completion_tokens: countTextTokens(content) }]);
    } finally {
      db.close();
    }
  });

  it('refuses a bad config at start-up with a message naming the model and the key', async () => {
    const config = path.join(dir, 'bad.yaml');
    writeFileSync(
      config,
      catalogYaml(upstream.url).replace(
        'owned_by: tests\n    created: 1735689600\n    version: "2025-01-01"\n    status: beta',
        'owned_by: tests\n    created: 1735689600\n    version: "2025-01-01"\n    status: beta\n    speed: fast',
      ),
    );
    const server = spawnTollgate(['src/main.ts'], { CONFIG: config, PORT: '0', DATABASE_URL: `sqlite:${path.join(dir, 'bad.db')}` });
    expect(await server.exited).toBe(1);
    expect(server.output()).toContain('model "rerank-test"');
    expect(server.output()).toContain('"speed"');
  });

  it.each([
    [{ LOG_LEVEL: 'verbose' }, 'tollgate: LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent; got "verbose"'],
    [{ LOG_FORMAT: 'yaml' }, 'tollgate: LOG_FORMAT must be one of json, pretty; got "yaml"'],
    [
      { DATABASE_URL: 'mysql://db/tollgate' },
      'tollgate: DATABASE_URL mysql://db/tollgate: unsupported scheme (use sqlite:PATH or postgres://…)',
    ],
    // Its password is not printed.
    [
      { DATABASE_URL: 'postgress://app:s3cret@db/tollgate' },
      'tollgate: DATABASE_URL postgress://…@db/tollgate: unsupported scheme (use sqlite:PATH or postgres://…)',
    ],
    // A password with a / or # left unencoded: not a URL, and still not printed.
    [
      { DATABASE_URL: 'postgres://app:s3/cr#et@127.0.0.1:5432/tollgate' },
      'tollgate: DATABASE_URL postgres://…@127.0.0.1:5432/tollgate: not a valid URL: percent-encode the special characters of the user name and password (/ as %2F, # as %23, @ as %40, : as %3A)',
    ],
  ])('refuses a wrong environment variable at start-up with one line naming it (%o)', async (env, line) => {
    const config = path.join(dir, 'env.yaml');
    writeFileSync(config, catalogYaml(upstream.url));
    const server = spawnTollgate(['src/main.ts'], {
      CONFIG: config,
      PORT: '0',
      DATABASE_URL: `sqlite:${path.join(dir, 'env.db')}`,
      ...env,
    });
    expect(await server.exited).toBe(1);
    expect(server.output().trim().split('\n')).toEqual([line]);
  });
});

describe('a client that goes away', () => {
  it('stops the upstream stream at once', async () => {
    const s = await startTestServer();
    try {
      const { apiKey } = await s.account('enterprise');
      const controller = new AbortController();
      const res = await fetch(`${s.v1}/chat/completions`, {
        method: 'POST',
        signal: controller.signal,
        headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` },
        body: JSON.stringify({ model: 'chat-test', stream: true, messages: [{ role: 'user', content: 'long #tokens=200 #delay=20' }] }),
      });
      const reader = res.body!.getReader();
      await reader.read();
      await reader.read();
      const before = s.upstream.aborted;
      controller.abort();
      for (let i = 0; i < 50 && s.upstream.aborted === before; i++) await new Promise((r) => setTimeout(r, 20));
      expect(s.upstream.aborted).toBe(before + 1);
    } finally {
      await s.close();
    }
  });
});
