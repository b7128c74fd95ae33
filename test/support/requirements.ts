// External programs and services some tests need (redis-server, Chromium, PostgreSQL, Redis).
// Missing on a developer's machine, the tests that need them are skipped with the reason; under
// CI=true a missing requirement fails instead, so a CI run never passes by quietly skipping.
import { accessSync, constants } from 'node:fs';
import path from 'node:path';
import { it } from 'vitest';

/** The absolute path of `name` on PATH (or `name` itself when it is a path that exists), or null. */
export function findExecutable(name: string, env: NodeJS.ProcessEnv = process.env): string | null {
  const candidates = name.includes('/')
    ? [name]
    : (env.PATH ?? '')
        .split(path.delimiter)
        .filter(Boolean)
        .map((dir) => path.join(dir, name));
  for (const file of candidates) {
    try {
      accessSync(file, constants.X_OK);
      return file;
    } catch {
      // not there: try the next
    }
  }
  return null;
}

/** True when the requirement is missing and the caller should skip; under CI=true, a failing test says what is missing. */
export function missing(what: string, available: boolean, env: NodeJS.ProcessEnv = process.env): boolean {
  if (available) return false;
  if (env.CI === 'true' || env.CI === '1') {
    it(`needs ${what} (CI=true: a missing requirement fails rather than skips)`, () => {
      throw new Error(`${what} is missing on this CI machine; install it (see .ci/run) or unset CI to skip these tests`);
    });
  } else {
    console.warn(`skipped: ${what} is missing`);
  }
  return true;
}
