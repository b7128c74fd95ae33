// Benchmark plumbing: child processes for the fake upstream and tollgate (the load generator is
// ./openloop.ts).
import { randomUUID } from 'node:crypto';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { buildServer } from '../src/build.js';

export const ROOT = path.resolve(import.meta.dirname, '..');
export const ADMIN_TOKEN = 'bench-admin-token-0123456789abcdef';

export interface Child {
  proc: ChildProcess;
  stop(): Promise<void>;
}

export function track(proc: ChildProcess): Child {
  return {
    proc,
    stop: () =>
      new Promise<void>((resolve) => {
        if (proc.exitCode !== null) return resolve();
        proc.once('exit', () => resolve());
        proc.kill('SIGTERM');
        setTimeout(() => proc.kill('SIGKILL'), 5000).unref();
      }),
  };
}

export async function startFakeUpstream(): Promise<Child & { url: string }> {
  const { child, line } = await startReporting('test/support/fake-upstream-main.ts', ['--port', '0']);
  return { ...child, url: (line as { url: string }).url };
}

let built: Promise<{ outdir: string }> | undefined;

/**
 * The compiled form of a TypeScript file of the project (`src/main.ts` → .bench/build/<hash>/src/main.js).
 * The bench's processes run compiled, as `npm start` runs the server (src/build.ts), not through
 * tsx: src, compat, bench and test/support, compiled once per bench run.
 */
export async function compiled(file: string): Promise<string> {
  built ??= buildServer(path.join(ROOT, '.bench', 'build'), ['src', 'compat', 'bench', 'test/support']);
  return path.join((await built).outdir, file.replace(/\.ts$/, '.js'));
}

/** Starts a TypeScript entry point that prints one JSON line when it is ready; returns it parsed. */
export async function startReporting(
  entry: string,
  args: string[] = [],
  env: Record<string, string> = {},
  opts: SpawnOptions = {},
): Promise<{ child: Child; line: unknown }> {
  const proc = spawn(process.execPath, [...(opts.execArgv ?? []), await compiled(entry), ...args], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit', ...(opts.ipc ? (['ipc'] as const) : [])],
    env: { ...process.env, ...env },
  });
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: proc.stdout! }).once('line', resolve);
    proc.once('exit', (code) => reject(new Error(`${entry} exited with ${code}`)));
  });
  return { child: track(proc), line: JSON.parse(line) };
}

/** More for a child process: node options before the entry point, and an IPC channel. */
export interface SpawnOptions {
  execArgv?: string[];
  ipc?: boolean;
}

/** A chat model of the bench catalogs, forwarded to `upstreamUrl`; `extra` adds keys (indented 4). */
export function benchChatModel(id: string, upstreamUrl: string, extra = ''): string {
  return `  - id: ${id}
    category: chat
    owned_by: bench
    created: 1735689600
    version: "2025-01-01"
    status: active
    capabilities: { chat_completion: true, streaming: true, function_calling: false }
    pricing: { input_price_per_million: 1.0, output_price_per_million: 2.0, currency: usd }
    specifications: { context_window: 8192, max_output_tokens: 512, training_cutoff: "2024-10" }
    engine: { type: openai, base_url: "${upstreamUrl}", model: upstream-chat }
${extra}`;
}

export function benchConfig(upstreamUrl: string, extra = ''): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'tollgate-bench-'));
  const file = path.join(dir, 'config.yaml');
  writeFileSync(file, `models:\n${benchChatModel('chat-bench', upstreamUrl)}${extra}`);
  return file;
}

/**
 * Starts tollgate (`src/main.ts`) as a child process and waits until /readyz answers. The port is
 * picked at random; one that turns out to be taken (by another program or one of this machine's
 * outgoing connections) is tried again with another.
 */
export async function startTollgate(
  env: Record<string, string>,
  entry = 'src/main.ts',
  opts: SpawnOptions = {},
): Promise<Child & { url: string }> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startTollgateOnce(env, entry, opts);
    } catch (err) {
      if (attempt >= 3) throw err;
    }
  }
}

async function startTollgateOnce(env: Record<string, string>, entry: string, opts: SpawnOptions): Promise<Child & { url: string }> {
  const port = 20000 + Math.floor(Math.random() * 12000);
  const dir = mkdtempSync(path.join(tmpdir(), 'tollgate-bench-db-'));
  // As `npm start` runs it.
  const proc = spawn(process.execPath, ['--enable-source-maps', ...(opts.execArgv ?? []), await compiled(entry)], {
    cwd: ROOT,
    stdio: ['ignore', 'ignore', 'inherit', ...(opts.ipc ? (['ipc'] as const) : [])],
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: process.env.LOG_LEVEL ?? 'info',
      ADMIN_TOKEN,
      DATABASE_URL: `sqlite:${path.join(dir, 'bench.db')}`,
      ...env,
    },
  });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 200; i++) {
    if (proc.exitCode !== null) throw new Error(`tollgate exited with ${proc.exitCode}`);
    const ok = await fetch(`${url}/readyz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return { ...track(proc), url };
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('tollgate did not become ready');
}

export async function admin<T>(url: string, query: string, variables: Record<string, unknown> = {}): Promise<T> {
  const res = await fetch(`${url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN_TOKEN}` },
    body: JSON.stringify({ query, variables }),
  });
  const body = (await res.json()) as { data?: T; errors?: unknown };
  if (!body.data) throw new Error(`admin operation failed: ${JSON.stringify(body.errors)}`);
  return body.data;
}

/** Creates an account of `tier`, crediting its wallet with `credit` (currency units) when given. */
export async function createAccount(url: string, tier = 'enterprise', credit?: string): Promise<{ id: string; apiKey: string }> {
  const data = await admin<{ createAccount: { account: { id: string }; apiKey: string } }>(
    url,
    // One account per e-mail address: each benchmark account gets its own.
    `mutation { createAccount(email: "bench-${randomUUID()}@example.com", tier: ${tier}) { account { id } apiKey } }`,
  );
  const id = data.createAccount.account.id;
  if (credit) {
    await admin(url, 'mutation($input: CreditWalletInput!) { creditWallet(input: $input) { id } }', {
      input: { accountId: id, amount: credit, description: 'benchmark credit', type: 'bonus' },
    });
  }
  return { id, apiKey: data.createAccount.apiKey };
}

export const fmt = (n: number, digits = 2) => (Number.isFinite(n) ? n.toFixed(digits) : String(n));
