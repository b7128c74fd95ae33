// Billing under concurrency and process death: 200 simultaneous calls against a wallet that pays
// for exactly N of them (one server, then two server processes on one PostgreSQL database), a
// mixed load of every way a call ends with credits landing meanwhile, and a server killed with
// holds open whose holds are released when it starts again. Each ends by verifying the ledger.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { MikroORM } from '@mikro-orm/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TIER_DEFAULTS } from '../src/config.js';
import { closeDatabase, openDatabase } from '../src/db/orm.js';
import { BillingService } from '../src/domain/billing/billing-service.js';
import { formatDecimal, parseDecimal } from '../src/domain/billing/money.js';
import { createLogger } from '../src/logger.js';
import { BACKENDS, createTestDatabase, HAS_POSTGRES, type BackendName, type TestDatabase } from './support/databases.js';
import { startFakeUpstream, type FakeUpstream } from './support/fake-upstream.js';
import { ADMIN_TOKEN, catalogYaml, chatModelYaml, startTestServer } from './support/harness.js';
import { client, credit, seed } from './support/seed.js';

const ROOT = path.resolve(import.meta.dirname, '..');

// chat-conc bills only output ($2 per million = 2,000 nanos a token), so every call of 10 output
// tokens costs exactly 20,000 nanos whatever the prompt: the held worst case and the real usage
// are the same, and a wallet of N × 20,000 nanos pays for exactly N calls in any order.
const yaml = (upstreamUrl: string) =>
  catalogYaml(
    upstreamUrl,
    `${chatModelYaml(upstreamUrl, { id: 'chat-conc', inputPrice: '0', outputPrice: '2.0', maxOutputTokens: 256, timeoutMs: 10000 })}tiers:
  startup: { monthly_tokens: 0 }
`,
  );
const CALL_COST = 20_000n;
const CALLS = 200;
const PAYABLE = 37;

const callBody = JSON.stringify({ model: 'chat-conc', messages: [{ role: 'user', content: 'go #tokens=10' }], max_tokens: 10 });

async function fireAll(urls: string[], apiKey: string, count: number): Promise<{ status: number; code?: string }[]> {
  return Promise.all(
    Array.from({ length: count }, async (_, i) => {
      const res = await fetch(`${urls[i % urls.length]}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
        body: callBody,
      });
      const body = (await res.json()) as { error?: { code: string } };
      return { status: res.status, code: body.error?.code };
    }),
  );
}

/** Opens the database the way the CLI does, to check it from outside the servers. */
async function inspect(url: string): Promise<{ orm: MikroORM; billing: BillingService }> {
  const orm = await openDatabase(url);
  const billing = new BillingService({
    orm,
    tiers: TIER_DEFAULTS,
    settings: { hold_expiry_seconds: 900, sweep_interval_seconds: 30, instance_timeout_seconds: 90 },
    logger: createLogger('silent'),
  });
  return { orm, billing };
}

describe.each(BACKENDS)('concurrent calls on %s', (backend) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase(backend);
  });
  afterAll(() => db?.drop());

  it(`lets exactly ${PAYABLE} of ${CALLS} simultaneous calls through against a wallet that pays for ${PAYABLE}; the rest get 402`, async () => {
    const s = await startTestServer({ databaseUrl: db.url, yaml });
    try {
      const a = await seed(s)
        .account({ tier: 'startup' })
        .wallet(formatDecimal(CALL_COST * BigInt(PAYABLE)));
      const results = await fireAll([s.url], a.apiKey, CALLS);
      expect(results.filter((r) => r.status === 200)).toHaveLength(PAYABLE);
      expect(results.filter((r) => r.status === 402 && r.code === 'insufficient_balance')).toHaveLength(CALLS - PAYABLE);
      expect(await client(s, a.apiKey).balance()).toBe('0');
      const { transactions } = await s.services.billing.listTransactions(a.id, { limit: 1000 });
      expect(transactions.filter((t) => t.type === 'usage').every((t) => t.amount === -CALL_COST)).toBe(true);
      expect(transactions).toHaveLength(1 + PAYABLE);
      expect(await s.services.billing.listUsageEvents(a.id)).toHaveLength(PAYABLE);
      expect(await s.services.billing.countOpenHolds()).toBe(0);
      expect(await s.services.billing.verifyLedger()).toEqual([]);
    } finally {
      await s.close();
    }
  });

  it('keeps every invariant under a mixed load: streams, failures, cut clients, split calls and credits at once', async () => {
    const s = await startTestServer({ databaseUrl: db.url, yaml: (u) => catalogYaml(u, 'tiers:\n  developer: { monthly_tokens: 400 }\n') });
    try {
      // The first account can pay for everything; the second runs dry part-way (402s among the rest).
      const accounts = await Promise.all([
        seed(s).account({ tier: 'developer' }).wallet('0.05'),
        seed(s).account({ tier: 'developer' }).wallet('0.0001'),
      ]);
      const kinds = ['plain', 'stream', 'fail', 'midstream', 'cut', 'embed'] as const;
      const jobs = Array.from({ length: 120 }, async (_, i) => {
        const a = accounts[i % 2]!;
        const kind = kinds[Math.floor(i / 2) % kinds.length]!;
        const headers = { authorization: `Bearer ${a.apiKey}`, 'content-type': 'application/json' };
        if (kind === 'embed') {
          const r = await fetch(`${s.v1}/embeddings`, {
            method: 'POST',
            headers,
            body: JSON.stringify({ model: 'embed-test', input: ['a b c', 'd'] }),
          });
          return { account: i % 2, status: r.status, body: await r.text() };
        }
        const content = {
          plain: 'x #tokens=12',
          stream: 'x #tokens=12',
          fail: 'x #fail=500',
          midstream: 'x #tokens=9 #fail=midstream',
          cut: 'x #tokens=40 #delay=15',
        }[kind];
        const controller = new AbortController();
        const res = await fetch(`${s.v1}/chat/completions`, {
          method: 'POST',
          headers,
          body: JSON.stringify({
            model: 'chat-test',
            messages: [{ role: 'user', content }],
            max_tokens: 40,
            stream: kind !== 'plain' && kind !== 'fail',
          }),
          signal: controller.signal,
        });
        if (kind === 'cut' && res.status === 200) {
          await res.body!.getReader().read();
          controller.abort();
          return { account: i % 2, status: res.status, body: '' };
        }
        return { account: i % 2, status: res.status, body: await res.text() };
      });
      const credits = Array.from({ length: 10 }, (_, i) => credit(s, accounts[i % 2]!.id, '0.00002'));
      const [responses] = await Promise.all([Promise.all(jobs), Promise.all(credits)]);
      // Cut streams settle once the engine has stopped.
      for (let i = 0; i < 100 && (await s.services.billing.countOpenHolds()) > 0; i++) await new Promise((r) => setTimeout(r, 50));
      expect(await s.services.billing.countOpenHolds()).toBe(0);
      expect(await s.services.billing.verifyLedger()).toEqual([]);
      const outcomes = new Set((await s.services.billing.listUsageEvents(accounts[0]!.id)).map((e) => e.outcome));
      expect([...outcomes].sort()).toEqual(['client_disconnected', 'completed', 'failed', 'failed_mid_stream']);
      // The poor account ran dry: some of its calls were refused for the balance, none of the rich one's.
      const refused = (account: number) =>
        responses.filter((r) => r.account === account && r.status === 402 && r.body.includes('insufficient_balance'));
      expect(refused(1).length).toBeGreaterThan(0);
      expect(refused(0)).toHaveLength(0);
      // Its balance is what it was credited less what it was charged, and never below zero.
      const poor = await s.services.billing.getWallet(accounts[1]!.id);
      const { transactions } = await s.services.billing.listTransactions(accounts[1]!.id, { limit: 1000 });
      const charged = transactions.filter((t) => t.type === 'usage').reduce((sum, t) => sum - t.amount, 0n);
      expect(charged).toBeGreaterThan(0n);
      // Credited: 0.0001 at the start and five credits of 0.00002 during the load.
      expect(poor.balance).toBe(parseDecimal('0.0002') - charged);
      expect(poor.balance >= 0n).toBe(true);
    } finally {
      await s.close();
    }
  });
});

// ---------------------------------------------------------------------------------------------
// Server processes.

interface ServerProcess {
  proc: ChildProcess;
  url: string;
  exited: Promise<number | null>;
  output: () => string;
}

async function startServerProcess(env: Record<string, string>): Promise<ServerProcess> {
  let out = '';
  const proc = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: ROOT,
    env: { ...process.env, HOST: '127.0.0.1', PORT: '0', ADMIN_TOKEN, LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${out}`)), 30_000);
    const onData = (d: Buffer) => {
      out += d;
      const line = out.split('\n').find((l) => l.includes('tollgate is serving'));
      if (line) {
        clearTimeout(timer);
        resolve((JSON.parse(line) as { url: string }).url);
      }
    };
    proc.stdout!.on('data', onData);
    proc.stderr!.on('data', (d) => (out += d));
    void exited.then((code) => reject(new Error(`server exited with ${code}:\n${out}`)));
  });
  return { proc, url, exited, output: () => out };
}

async function stop(server: ServerProcess, signal: NodeJS.Signals = 'SIGTERM') {
  if (server.proc.exitCode === null && server.proc.signalCode === null) server.proc.kill(signal);
  await server.exited;
}

async function adminGraphql(url: string, query: string, variables: Record<string, unknown>) {
  const r = await fetch(`${url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN_TOKEN}` },
    body: JSON.stringify({ query, variables }),
  });
  const body = (await r.json()) as { data?: any; errors?: unknown };
  if (!body.data) throw new Error(JSON.stringify(body));
  return body.data;
}

async function createFundedAccount(url: string, amount: string): Promise<{ id: string; apiKey: string }> {
  const created = await adminGraphql(
    url,
    'mutation { createAccount(email: "p@example.com", tier: startup) { account { id } apiKey } }',
    {},
  );
  const id = created.createAccount.account.id as string;
  await adminGraphql(url, 'mutation($i: CreditWalletInput!) { creditWallet(input: $i) { id } }', {
    i: { accountId: id, amount, type: 'bonus', description: 'funds' },
  });
  return { id, apiKey: created.createAccount.apiKey };
}

describe('server processes', () => {
  let upstream: FakeUpstream;
  let dir: string;
  let config: string;
  beforeAll(async () => {
    upstream = await startFakeUpstream({ record: false });
    dir = mkdtempSync(path.join(tmpdir(), 'tollgate-procs-'));
    config = path.join(dir, 'config.yaml');
    writeFileSync(config, yaml(upstream.url));
  });
  afterAll(async () => {
    await upstream.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it.runIf(HAS_POSTGRES)(
    `two server processes on one PostgreSQL database let exactly ${PAYABLE} of ${CALLS} simultaneous calls through`,
    async () => {
      const db = await createTestDatabase('PostgreSQL');
      const servers: ServerProcess[] = [];
      try {
        servers.push(
          ...(await Promise.all([
            startServerProcess({ CONFIG: config, DATABASE_URL: db.url }),
            startServerProcess({ CONFIG: config, DATABASE_URL: db.url }),
          ])),
        );
        const account = await createFundedAccount(servers[0]!.url, formatDecimal(CALL_COST * BigInt(PAYABLE)));
        // One paid call through each process first (which of them wins the race below is up to the
        // scheduler), then the rest all at once, spread over both.
        for (const s of servers) expect((await fireAll([s.url], account.apiKey, 1))[0]!.status).toBe(200);
        const results = await fireAll(
          servers.map((s) => s.url),
          account.apiKey,
          CALLS - 2,
        );
        expect(results.filter((r) => r.status === 200)).toHaveLength(PAYABLE - 2);
        expect(results.filter((r) => r.status === 402 && r.code === 'insufficient_balance')).toHaveLength(CALLS - PAYABLE);
        for (const s of servers) await stop(s);
        const { orm, billing } = await inspect(db.url);
        try {
          expect((await billing.getWallet(account.id)).balance).toBe(0n);
          expect(await billing.countOpenHolds()).toBe(0);
          expect(await billing.verifyLedger()).toEqual([]);
        } finally {
          await closeDatabase(orm);
        }
      } finally {
        for (const s of servers) await stop(s, 'SIGKILL');
        await db.drop();
      }
    },
  );

  it.each(BACKENDS)('a server killed with holds open is restarted and releases them at start-up (%s)', async (backend: BackendName) => {
    const db = await createTestDatabase(backend);
    let first: ServerProcess | undefined;
    let second: ServerProcess | undefined;
    try {
      first = await startServerProcess({ CONFIG: config, DATABASE_URL: db.url });
      const account = await createFundedAccount(first.url, '1');
      // Three slow streams: each holds 100 output tokens (200,000 nanos) while it runs.
      const controllers = [0, 1, 2].map(() => new AbortController());
      const streams = controllers.map((c) =>
        fetch(`${first!.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${account.apiKey}`, 'content-type': 'application/json' },
          body: JSON.stringify({
            model: 'chat-conc',
            messages: [{ role: 'user', content: 'slow #tokens=100 #delay=200' }],
            max_tokens: 100,
            stream: true,
          }),
          signal: c.signal,
        })
          .then((r) => r.text())
          .catch(() => 'cut'),
      );
      const { orm, billing } = await inspect(db.url);
      try {
        for (let i = 0; i < 200 && (await billing.countOpenHolds(account.id)) < 3; i++) await new Promise((r) => setTimeout(r, 25));
        expect(await billing.countOpenHolds(account.id)).toBe(3);

        await stop(first, 'SIGKILL');
        await Promise.all(streams);
        // Dead, its holds still block 600,000 nanos of the wallet.
        expect(await billing.getWallet(account.id)).toMatchObject({ balance: 1_000_000_000n, held: 600_000n });

        second = await startServerProcess({ CONFIG: config, DATABASE_URL: db.url });
        // Released at start-up (the sweeper's first round is 30 s away), charging nothing.
        expect(await billing.countOpenHolds(account.id)).toBe(0);
        expect(await billing.getWallet(account.id)).toMatchObject({ balance: 1_000_000_000n, held: 0n });
        expect((await billing.listUsageEvents(account.id)).map((e) => [e.outcome, e.walletNanos])).toEqual([
          ['abandoned', 0n],
          ['abandoned', 0n],
          ['abandoned', 0n],
        ]);
        expect(await billing.verifyLedger()).toEqual([]);
        expect(second.output()).toContain('released holds left open by stopped servers');
        // The account is not blocked: the whole balance is spendable again.
        const r = await fetch(`${second.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${account.apiKey}`, 'content-type': 'application/json' },
          body: callBody,
        });
        expect(r.status).toBe(200);
        expect((await billing.getWallet(account.id)).balance).toBe(1_000_000_000n - CALL_COST);
        expect(await billing.verifyLedger()).toEqual([]);
      } finally {
        await closeDatabase(orm);
      }
    } finally {
      if (first) await stop(first, 'SIGKILL');
      if (second) await stop(second);
      await db.drop();
    }
  });
});
