// Tollgate as a child process, the way an operator starts it: spawning it with its output captured,
// and waiting for it to answer /readyz with 200.
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import path from 'node:path';
import { ADMIN_TOKEN } from './harness.js';
import { tollgateOrigins } from './tollgate-origins.js';

const ROOT = path.resolve(import.meta.dirname, '../..');

export interface TollgateProcess {
  proc: ChildProcess;
  /** Everything it wrote so far, stdout and stderr. */
  output: () => string;
  exited: Promise<number | null>;
}

/** Runs `node --import tsx …args` from the project's root (e.g. `src/main.ts`), logging at info. */
export function spawnTollgate(args: string[], env: Record<string, string>): TollgateProcess {
  // Its /v1 answers are checked against the OpenAPI document too.
  if (env.PORT) tollgateOrigins.add(`http://127.0.0.1:${env.PORT}`);
  let out = '';
  const proc = spawn(process.execPath, ['--import', 'tsx', ...args], {
    cwd: ROOT,
    env: { ...process.env, HOST: '127.0.0.1', ADMIN_TOKEN, LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  proc.stdout!.on('data', (d) => (out += d));
  proc.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  return { proc, output: () => out, exited };
}

/** Waits for a tollgate started as a child process to answer /readyz with 200. */
export async function waitReady(url: string, attempts = 600): Promise<void> {
  // Generous: on a busy 2-core machine the process compiles its sources (and may load models) first.
  for (let i = 0; i < attempts; i++) {
    const ok = await fetch(`${url}/readyz`).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ok) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('server did not become ready');
}

/** A loopback port free now (for a child process to listen on). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}
