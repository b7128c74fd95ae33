// The dashboard built once per test run from the current sources, for the browser tests. Several
// test files run at once (vitest's forks), and a build empties dist/dashboard before writing it:
// one file's build deleted the assets another file's server was serving. Builds take a lock (a
// directory, made atomically) and the first one of a run leaves a marker the others find; the
// run is the vitest process the forks share (their parent).
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const WAIT_MS = 180_000;
/** A lock older than this was left by a run that died. */
const STALE_MS = 300_000;

function sleep(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

export function buildDashboardOnce(root: string): void {
  const key = createHash('sha256').update(root).digest('hex').slice(0, 12);
  const lock = path.join(tmpdir(), `tollgate-dashboard-build-${key}.lock`);
  const marker = path.join(tmpdir(), `tollgate-dashboard-built-${key}-${process.ppid}`);
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    if (existsSync(marker)) return;
    try {
      mkdirSync(lock);
      break;
    } catch {
      try {
        if (Date.now() - statSync(lock).mtimeMs > STALE_MS) rmSync(lock, { recursive: true, force: true });
      } catch {
        // Gone meanwhile: try again.
      }
      if (Date.now() > deadline) throw new Error(`another test's dashboard build held ${lock} for ${WAIT_MS / 1000} s`);
      sleep(200);
    }
  }
  try {
    if (existsSync(marker)) return;
    execFileSync(path.join(root, 'node_modules/.bin/vite'), ['build', '--config', 'src/dashboard/vite.config.ts', '--logLevel', 'warn'], {
      cwd: root,
      stdio: 'inherit',
    });
    writeFileSync(marker, '');
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}
