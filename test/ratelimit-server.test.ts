// Rate limits through the running server, the way clients meet them: /v1 (fetch and the openai
// SDK) and GraphQL over HTTP, on the in-memory store and on Redis (TEST_REDIS_URL); two server
// processes sharing one Redis; Redis going away mid-test (a private redis-server child).
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeUpstream, type FakeUpstream } from './support/fake-upstream.js';
import { ADMIN_TOKEN, catalogYaml, startTestServer, type TestServer } from './support/harness.js';
import { freePort } from './support/ready.js';
import { findExecutable, missing } from './support/requirements.js';

const REDIS = process.env.TEST_REDIS_URL;
const RUN = randomBytes(4).toString('hex');
const ROOT = path.resolve(import.meta.dirname, '..');

const HEADERS = [
  'x-ratelimit-limit-rpm',
  'x-ratelimit-limit-tpm',
  'x-ratelimit-remaining-rpm',
  'x-ratelimit-remaining-tpm',
  'x-ratelimit-reset-rpm',
  'x-ratelimit-reset-tpm',
];

/** The rate-limit headers of a response, as numbers (absent ones missing). */
function limitsOf(headers: Headers): Record<string, number> {
  const out: Record<string, number> = {};
  for (const h of HEADERS) {
    const v = headers.get(h);
    if (v !== null) out[h.replace('x-ratelimit-', '')] = Number(v);
  }
  return out;
}

/** Limits small enough to reach in a test, on every tier a test uses. */
function limitsYaml(opts: { rpm: number; tpm: number; backend?: string; extra?: string }) {
  const tier = `{ rpm: ${opts.rpm}, tpm: ${opts.tpm} }`;
  return `tiers:
  developer: ${tier}
  enterprise: ${tier}
rate_limits:
  backend: ${opts.backend ?? 'memory'}
  key_prefix: "tollgate-test:${RUN}:"
  alert_threshold: 3
${opts.extra ?? ''}`;
}

const chat = (content: string, extra: Record<string, unknown> = {}) => ({
  model: 'chat-test',
  messages: [{ role: 'user', content }],
  ...extra,
});

async function post(base: string, route: string, key: string, body: unknown) {
  const res = await fetch(`${base}${route}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as any };
}

async function cleanRedis(url: string) {
  const admin = new Redis(url);
  const keys = await admin.keys(`tollgate-test:${RUN}:*`);
  if (keys.length) await admin.del(...keys);
  await admin.quit();
}

const backends: { name: string; backend: 'memory' | 'redis'; env: Record<string, string> }[] = [
  { name: 'in memory', backend: 'memory', env: {} },
];
if (REDIS) backends.push({ name: 'on Redis', backend: 'redis', env: { REDIS_URL: REDIS } });

describe.each(backends)('rate limits $name', ({ backend, env }) => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({ env, yaml: (u) => catalogYaml(u, limitsYaml({ rpm: 5, tpm: 2_000, backend })) });
  });
  afterAll(async () => {
    await s.close();
    if (REDIS) await cleanRedis(REDIS);
  });

  it('admits exactly the RPM limit, then answers 429 with the headers, Retry-After and a message naming RPM', async () => {
    const { apiKey } = await s.account('enterprise');
    const before = Math.floor(Date.now() / 1000);
    for (let i = 0; i < 5; i++) {
      const r = await post(s.v1, '/chat/completions', apiKey, chat('Hi #tokens=2', { max_tokens: 10 }));
      expect(r.status).toBe(200);
      const h = limitsOf(r.headers);
      expect(h['limit-rpm']).toBe(5);
      expect(h['limit-tpm']).toBe(2_000);
      expect(h['remaining-rpm']).toBe(4 - i);
      expect(h['reset-rpm']).toBeGreaterThanOrEqual(before + 60);
      expect(h['reset-rpm']).toBeLessThanOrEqual(Math.floor(Date.now() / 1000) + 61);
    }
    const refused = await post(s.v1, '/chat/completions', apiKey, chat('Hi', { max_tokens: 10 }));
    expect(refused.status).toBe(429);
    expect(refused.body.error).toMatchObject({ type: 'rate_limit_error', code: 'rate_limit_exceeded' });
    expect(refused.body.error.message).toContain('(RPM)');
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(61);
    expect(limitsOf(refused.headers)).toMatchObject({ 'limit-rpm': 5, 'remaining-rpm': 0, 'limit-tpm': 2_000 });
    // Other endpoints count against the same limit: every metered call is one request.
    const embed = await post(s.v1, '/embeddings', apiKey, { model: 'embed-test', input: 'hello' });
    expect(embed.status).toBe(429);
  });

  it('counts large max_tokens at admission: calls in flight together get exactly the TPM limit, the next is refused naming TPM and never billed', async () => {
    const { id, apiKey } = await s.account('developer');
    const messages = [{ role: 'user' as const, content: 'A long answer, slowly. #tokens=250 #delay=300' }];
    const estimate = (await s.services.engines.get('chat-test').countChatTokens(messages)) + 250;
    // Room for three estimates but not four; RPM out of the way.
    await s.services.rateLimitOverrides.set(id, { rpm: 100, tpm: 4 * estimate - 1 });
    const results = await Promise.all(
      Array.from({ length: 4 }, () => post(s.v1, '/chat/completions', apiKey, { model: 'chat-test', messages, max_tokens: 250 })),
    );
    expect(results.map((r) => r.status).sort()).toEqual([200, 200, 200, 429]);
    const refused = results.find((r) => r.status === 429)!;
    expect(refused.body.error.code).toBe('rate_limit_exceeded');
    expect(refused.body.error.message).toContain('(TPM)');
    expect(refused.body.error.message).not.toContain('(RPM)');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(limitsOf(refused.headers)).toMatchObject({ 'limit-tpm': 4 * estimate - 1, 'remaining-tpm': estimate - 1 });
    // Billed: the three admitted calls; the refused one left no usage event and no hold.
    expect(await s.services.billing.listUsageEvents(id)).toHaveLength(3);
    expect(await s.services.billing.countOpenHolds(id)).toBe(0);
  });

  it('corrects the count to the real usage when a call used fewer tokens than its max_tokens', async () => {
    const { apiKey } = await s.account('enterprise');
    const first = await post(s.v1, '/chat/completions', apiKey, chat('Hello there #tokens=3', { max_tokens: 250 }));
    expect(first.status).toBe(200);
    // The response's headers already show the corrected count: real usage, not prompt + 250.
    expect(limitsOf(first.headers)['remaining-tpm']).toBe(2_000 - first.body.usage.total_tokens);
    const second = await post(s.v1, '/chat/completions', apiKey, chat('Hi #tokens=1', { max_tokens: 1 }));
    expect(limitsOf(second.headers)['remaining-tpm']).toBe(2_000 - first.body.usage.total_tokens - second.body.usage.total_tokens);
  });

  it('sets the headers on a stream before its first byte, through the openai SDK', async () => {
    const { apiKey } = await s.account('enterprise');
    const client = new OpenAI({ apiKey, baseURL: s.v1, maxRetries: 0 });
    const { data: stream, response } = await client.chat.completions
      .create({ model: 'chat-test', stream: true, max_tokens: 50, messages: [{ role: 'user', content: 'Stream #tokens=4' }] })
      .withResponse();
    const h = limitsOf(response.headers);
    expect(h['remaining-rpm']).toBe(4);
    // Counted at its estimate while it runs: the prompt plus max_tokens.
    expect(h['remaining-tpm']).toBeLessThanOrEqual(2_000 - 50);
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text.length).toBeGreaterThan(0);
  });

  it('sets the headers on GraphQL over HTTP, and a GraphQL 429 carries them with Retry-After', async () => {
    const { apiKey } = await s.account('enterprise');
    const query = 'mutation($i: ChatCompletionInput!) { createChatCompletion(input: $i) { usage { totalTokens } } }';
    const variables = { i: { model: 'chat-test', messages: [{ role: 'user', content: 'Hi #tokens=2' }], maxTokens: 20 } };
    for (let i = 0; i < 5; i++) {
      const r = await s.graphql(query, variables, apiKey);
      expect(r.status).toBe(200);
      expect(limitsOf(r.headers)['remaining-rpm']).toBe(4 - i);
    }
    const refused = await s.graphql(query, variables, apiKey);
    expect(refused.status).toBe(429);
    expect(refused.body.errors[0].extensions).toMatchObject({ code: 'rate_limit_exceeded', type: 'rate_limit_error', status: 429 });
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(limitsOf(refused.headers)).toMatchObject({ 'limit-rpm': 5, 'remaining-rpm': 0 });
  });

  it("applies an operator's per-account override instead of the tier's limits", async () => {
    const { id, apiKey } = await s.account('enterprise');
    await s.services.rateLimitOverrides.set(id, { rpm: 2, tpm: null });
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) statuses.push((await post(s.v1, '/embeddings', apiKey, { model: 'embed-test', input: 'hello' })).status);
    expect(statuses).toEqual([200, 200, 429]);
    const r = await post(s.v1, '/embeddings', apiKey, { model: 'embed-test', input: 'hello' });
    expect(limitsOf(r.headers)).toMatchObject({ 'limit-rpm': 2, 'limit-tpm': 2_000 });
  });

  it('writes one "frequent rate-limit hits" notification to the outbox when 429s pass the threshold', async () => {
    const { id, apiKey } = await s.account('enterprise');
    for (let i = 0; i < 5; i++) await post(s.v1, '/moderations', apiKey, { model: 'guard-test', input: 'x' });
    for (let i = 0; i < 6; i++) expect((await post(s.v1, '/moderations', apiKey, { model: 'guard-test', input: 'x' })).status).toBe(429);
    // Queued without holding up the 429: give it a moment to land.
    let kinds: string[] = [];
    for (let i = 0; i < 50 && kinds.length === 0; i++) {
      kinds = (await s.services.billing.listNotifications(id)).map((n) => n.kind).filter((k) => k === 'rate_limit_hits');
      if (kinds.length === 0) await new Promise((r) => setTimeout(r, 20));
    }
    expect(kinds).toEqual(['rate_limit_hits']);
    expect(await s.services.rateLimiter!.recentHits(id)).toBe(6);
  });
});

async function waitFor(check: () => Promise<boolean>, what: string, tries = 200) {
  for (let i = 0; i < tries; i++) {
    if (await check().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** A tollgate process (`node --import tsx src/main.ts`), ready to serve. */
async function startProcess(env: Record<string, string>): Promise<{ url: string; proc: ChildProcess; stop(): Promise<void> }> {
  const port = await freePort();
  const proc = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: ROOT,
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'error', ADMIN_TOKEN, ...env },
  });
  const url = `http://127.0.0.1:${port}`;
  await waitFor(async () => {
    if (proc.exitCode !== null) throw new Error(`tollgate exited with ${proc.exitCode}`);
    return (await fetch(`${url}/readyz`)).ok;
  }, 'tollgate to be ready');
  return {
    url,
    proc,
    stop: () =>
      new Promise<void>((resolve) => {
        if (proc.exitCode !== null) return resolve();
        proc.once('exit', () => resolve());
        proc.kill('SIGTERM');
      }),
  };
}

describe.skipIf(missing('Redis (set TEST_REDIS_URL)', Boolean(REDIS)))('rate limits across server processes', () => {
  let upstream: FakeUpstream;
  let dir: string;
  const servers: Awaited<ReturnType<typeof startProcess>>[] = [];

  beforeAll(async () => {
    upstream = await startFakeUpstream();
    dir = mkdtempSync(path.join(tmpdir(), 'tollgate-rl-'));
    const config = path.join(dir, 'config.yaml');
    writeFileSync(config, catalogYaml(upstream.url, limitsYaml({ rpm: 10, tpm: 1_000_000, backend: 'redis' })));
    const env = { CONFIG: config, DATABASE_URL: `sqlite:${path.join(dir, 'shared.db')}`, REDIS_URL: REDIS! };
    // One after the other: the first applies the migrations to the shared database.
    servers.push(await startProcess(env));
    servers.push(await startProcess(env));
  }, 60_000);
  afterAll(async () => {
    await Promise.all(servers.map((p) => p.stop()));
    await upstream?.close();
    rmSync(dir, { recursive: true, force: true });
    await cleanRedis(REDIS!);
  });

  it('two processes on one Redis admit exactly the limit together', async () => {
    const created = await post(servers[0]!.url, '/graphql', ADMIN_TOKEN, {
      query: 'mutation { createAccount(email: "two@example.com", tier: enterprise) { apiKey } }',
    });
    const apiKey = created.body.data.createAccount.apiKey as string;
    const results = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        post(`${servers[i % 2]!.url}/v1`, '/embeddings', apiKey, { model: 'embed-test', input: `text ${i}` }),
      ),
    );
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((x) => x === 200)).toHaveLength(10);
    expect(statuses.filter((x) => x === 429)).toHaveLength(20);
    // Both processes answered some of each: the limit was shared, not enforced per process.
    const byServer = [0, 1].map((n) => results.filter((_, i) => i % 2 === n).map((r) => r.status));
    for (const answered of byServer) expect(answered).toContain(429);
  });
});

const REDIS_SERVER = findExecutable('redis-server');

describe.skipIf(missing('the redis-server program (Debian: apt-get install redis-server)', REDIS_SERVER !== null))(
  'rate limits when Redis goes away',
  () => {
    let redis: ChildProcess;
    let redisUrl: string;
    let s: TestServer;
    let closed: TestServer;

    beforeAll(async () => {
      const port = await freePort();
      redisUrl = `redis://127.0.0.1:${port}`;
      redis = spawn(REDIS_SERVER!, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
        stdio: 'ignore',
      });
      await waitFor(async () => {
        const c = new Redis(redisUrl, { lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0 });
        c.on('error', () => {});
        try {
          await c.connect();
          return (await c.ping()) === 'PONG';
        } finally {
          c.disconnect();
        }
      }, 'the private redis-server');
      const yaml = (fail: boolean) => (u: string) =>
        catalogYaml(u, limitsYaml({ rpm: 100, tpm: 1_000_000, backend: 'redis', extra: `  fail_closed: ${fail}\n` }));
      s = await startTestServer({ env: { REDIS_URL: redisUrl }, yaml: yaml(false) });
      closed = await startTestServer({ env: { REDIS_URL: redisUrl }, yaml: yaml(true) });
    }, 60_000);
    afterAll(async () => {
      redis?.kill('SIGKILL');
      await s?.close();
      await closed?.close();
    });

    it('keeps answering without limits (fail-open) and counts it; with fail_closed it answers 503', async () => {
      const open = await s.account('enterprise');
      const strict = await closed.account('enterprise');
      const before = await post(s.v1, '/embeddings', open.apiKey, { model: 'embed-test', input: 'hello' });
      expect(before.status).toBe(200);
      expect(limitsOf(before.headers)['remaining-rpm']).toBe(99);
      const ready = async (server: TestServer) => {
        const r = await fetch(`${server.url}/readyz`);
        return { status: r.status, body: (await r.json()) as { status: string; rate_limits: unknown } };
      };
      expect(await ready(s)).toMatchObject({ status: 200, body: { status: 'ready', rate_limits: { backend: 'redis', reachable: true } } });
      expect((await post(closed.v1, '/embeddings', strict.apiKey, { model: 'embed-test', input: 'hello' })).status).toBe(200);

      redis.kill('SIGKILL');
      await new Promise<void>((resolve) => (redis.exitCode !== null ? resolve() : redis.once('exit', () => resolve())));

      for (let i = 0; i < 3; i++) {
        const r = await post(s.v1, '/chat/completions', open.apiKey, chat('Still there? #tokens=2', { max_tokens: 5 }));
        expect(r.status).toBe(200);
        // Nothing is known about the limits while Redis is away: no headers rather than wrong ones.
        expect(limitsOf(r.headers)).toEqual({});
      }
      expect(s.services.rateLimiter!.stats.failOpen).toBeGreaterThanOrEqual(3);

      const refused = await post(closed.v1, '/embeddings', strict.apiKey, { model: 'embed-test', input: 'hello' });
      expect(refused.status).toBe(503);
      expect(refused.body.error.code).toBe('rate_limiter_unavailable');
      expect(refused.headers.get('retry-after')).toBe('1');

      // /readyz says so: fail-open still ready (the body tells why calls go unlimited); fail_closed
      // not ready, since it refuses every metered call.
      expect(await ready(s)).toEqual({
        status: 200,
        body: expect.objectContaining({
          status: 'ready',
          rate_limits: { backend: 'redis', reachable: false, calls: 'served without rate limits (fail-open)' },
        }),
      });
      expect(await ready(closed)).toEqual({
        status: 503,
        body: expect.objectContaining({
          status: 'rate_limiter_unavailable',
          rate_limits: { backend: 'redis', reachable: false, calls: 'refused (fail_closed)' },
        }),
      });
    });
  },
);
