// Folders the server and the CLI make (the SQLite file's, MAIL_DIR, models, fixtures).
import { existsSync, mkdirSync, statSync } from 'node:fs';
import path from 'node:path';

/**
 * Makes a folder and its missing parents one at a time: a parent that is a file is said as such
 * (ENOTDIR naming it; a recursive mkdir says EEXIST), and a path under /proc, where Node's
 * recursive mkdir never returns, fails at once.
 */
export function makeFolder(dir: string): void {
  const missing: string[] = [];
  let at = dir;
  while (!existsSync(at)) {
    missing.unshift(at);
    const up = path.dirname(at);
    if (up === at) break;
    at = up;
  }
  if (existsSync(at) && !statSync(at).isDirectory()) throw Object.assign(new Error(`${at} is not a folder`), { code: 'ENOTDIR', path: at });
  for (const folder of missing) {
    try {
      mkdirSync(folder);
    } catch (e) {
      // Made meanwhile by another process (two servers, or the CLI, on a new data folder).
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST' || !statSync(folder).isDirectory()) throw e;
    }
  }
}
