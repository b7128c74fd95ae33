// The operator CLI's database commands: `tollgate db backup --out FILE`, a consistent copy of the
// SQLite database through SQLite's online backup API, safe while the server serves (it copies
// pages in steps and starts over from a page another connection changed); `tollgate db restore
// --from FILE`, the copy put back in place of the database with the old WAL and shared-memory
// files removed (SQLite would replay a crashed server's WAL onto the restored file and break it).
// PostgreSQL has its own tools for both: the commands say which.
import { existsSync, rmSync } from 'node:fs';
import { mkdir, stat } from 'node:fs/promises';
import path from 'node:path';
import Database from 'better-sqlite3';
import type { CommandGroup } from './cli.js';
import { parseDatabaseUrl } from './db/orm.js';
import { DomainError } from './domain/errors.js';

const DEFAULT_DATABASE_URL = 'sqlite:./data/tollgate.db';

export const registerDbCommands: CommandGroup = (program, ctx) => {
  const db = program.command('db').description('The database: backups and restores');
  db.command('backup')
    .description('Copy the SQLite database to FILE while the server runs (PostgreSQL: use pg_dump)')
    .requiredOption('--out <file>', 'where the copy goes (must not exist)')
    .option('--json', 'print JSON')
    .action(async (opts: { out: string; json?: boolean }) => {
      const url = ctx.env.DATABASE_URL || DEFAULT_DATABASE_URL;
      const target = parseDatabaseUrl(url);
      if (target.kind !== 'sqlite') {
        throw new DomainError(
          'invalid_request',
          `db backup copies SQLite databases; for PostgreSQL use its own tool, e.g. pg_dump --format=custom --file=${opts.out} "$DATABASE_URL" (restore with pg_restore)`,
        );
      }
      if (target.location === ':memory:')
        throw new DomainError('invalid_request', 'DATABASE_URL names an in-memory database: there is nothing on disk to back up');
      if (!existsSync(target.location)) throw new DomainError('invalid_request', `no database at ${target.location} (DATABASE_URL)`);
      if (existsSync(opts.out))
        throw new DomainError('invalid_request', `${opts.out} already exists: choose a new file (a backup never overwrites)`);
      await mkdir(path.dirname(path.resolve(opts.out)), { recursive: true });
      const source = new Database(target.location, { readonly: true, fileMustExist: true });
      const started = Date.now();
      try {
        let shown = -1;
        await source.backup(opts.out, {
          progress: ({ totalPages, remainingPages }) => {
            const percent = totalPages === 0 ? 100 : Math.floor((100 * (totalPages - remainingPages)) / totalPages);
            if (!opts.json && percent >= shown + 10) {
              shown = percent;
              ctx.stderr(`backup: ${percent}% of ${totalPages} pages\n`);
            }
            return 200; // pages per step: the server's writers get the database between steps
          },
        });
      } finally {
        source.close();
      }
      const bytes = (await stat(opts.out)).size;
      const result = { source: target.location, out: opts.out, bytes, ms: Date.now() - started };
      if (opts.json) ctx.printJson(result);
      else
        ctx.print(
          `backed up ${target.location} to ${opts.out} (${bytes} bytes, ${result.ms} ms); check it with: DATABASE_URL=sqlite:${opts.out} npx tollgate ledger verify`,
        );
    });

  db.command('restore')
    .description('Put a backup in place of the SQLite database, the server stopped (PostgreSQL: use pg_restore)')
    .requiredOption('--from <file>', 'the backup to restore (made by db backup)')
    .option('--force', 'restore although a server is still registered on the database (one that crashed)')
    .option('--json', 'print JSON')
    .action(async (opts: { from: string; force?: boolean; json?: boolean }) => {
      const url = ctx.env.DATABASE_URL || DEFAULT_DATABASE_URL;
      const target = parseDatabaseUrl(url);
      if (target.kind !== 'sqlite')
        throw new DomainError(
          'invalid_request',
          `db restore restores SQLite databases; for PostgreSQL use pg_restore --clean --dbname="$DATABASE_URL" ${opts.from}`,
        );
      if (target.location === ':memory:')
        throw new DomainError('invalid_request', 'DATABASE_URL names an in-memory database: there is nothing to restore into');
      if (!existsSync(opts.from)) throw new DomainError('invalid_request', `no backup at ${opts.from}`);
      const source = openSound(opts.from);
      try {
        if (!opts.force) refuseWhileServed(target.location);
        const started = Date.now();
        // The database's old WAL and shared-memory files go first: SQLite would replay them onto the copy.
        for (const file of [target.location, `${target.location}-wal`, `${target.location}-shm`]) rmSync(file, { force: true });
        await mkdir(path.dirname(path.resolve(target.location)), { recursive: true });
        await source.backup(target.location);
        const result = { from: opts.from, database: target.location, bytes: (await stat(target.location)).size, ms: Date.now() - started };
        if (opts.json) ctx.printJson(result);
        else
          ctx.print(
            `restored ${opts.from} to ${target.location} (${result.bytes} bytes, ${result.ms} ms); check it with: npx tollgate ledger verify`,
          );
      } finally {
        source.close();
      }
    });
};

/** The backup, opened read-only, after SQLite's own check of every page and index. */
function openSound(file: string): Database.Database {
  let source: Database.Database | undefined;
  try {
    source = new Database(file, { readonly: true, fileMustExist: true });
    const check = source.pragma('quick_check', { simple: true });
    if (check !== 'ok') throw new Error(String(check));
    return source;
  } catch (e) {
    source?.close();
    throw new DomainError('invalid_request', `${file} is not a sound SQLite database: ${(e as Error).message.slice(0, 200)}`);
  }
}

/** Refuses while a server is registered on the database: a server that stopped cleanly has left billing_instances. */
function refuseWhileServed(location: string): void {
  if (!existsSync(location)) return;
  let last: number | null = null;
  try {
    const db = new Database(location, { readonly: true, fileMustExist: true });
    try {
      const row = db.prepare('select max(heartbeat_at) as at from billing_instances').get() as { at: unknown } | undefined;
      const at = row?.at;
      last = typeof at === 'number' ? at : typeof at === 'string' ? Date.parse(at) : null;
    } finally {
      db.close();
    }
  } catch {
    return; // unreadable, or no such table: no server was registered on it
  }
  if (last === null || Number.isNaN(last)) return;
  throw new DomainError(
    'invalid_request',
    `a server is registered on ${location} (its last heartbeat ${Math.max(0, Math.round((Date.now() - last) / 1000))} s ago): stop it first; if it crashed, pass --force`,
  );
}
