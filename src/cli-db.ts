// The operator CLI's database commands: `tollgate db backup --out FILE`, a consistent copy of the
// SQLite database through SQLite's online backup API, safe while the server serves (it copies
// pages in steps and starts over from a page another connection changed); `tollgate db restore
// --from FILE`, the copy put back in place of the database with the old WAL and shared-memory
// files removed (SQLite would replay a crashed server's WAL onto the restored file and break it).
// PostgreSQL has its own tools for both: the commands say which.
import { existsSync, renameSync, rmSync } from 'node:fs';
import { mkdir, stat } from 'node:fs/promises';
import path from 'node:path';
import Database from 'better-sqlite3';
import type { CommandGroup } from './cli.js';
import { DEFAULT_DATABASE_URL, migrationsUnknownHere, parseDatabaseUrl } from './db/orm.js';
import { processHost } from './domain/billing/billing-core.js';
import { DomainError } from './domain/errors.js';

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
        await copyWhole(ctx, 'backup', source, opts.out, {
          progress: ({ totalPages, remainingPages }) => {
            const percent = totalPages === 0 ? 100 : Math.floor((100 * (totalPages - remainingPages)) / totalPages);
            if (!opts.json && percent >= shown + 10) {
              shown = percent;
              ctx.stderr(`backup: ${percent}% of ${totalPages} pages\n`);
            }
            return 200; // pages per step: the server's writers get the database between steps
          },
          beforeRename: forgetServers,
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
          `db restore restores SQLite databases; for PostgreSQL stop every server, empty the schema (psql "$DATABASE_URL" -c 'drop schema public cascade; create schema public') and run pg_restore --no-owner --dbname="$DATABASE_URL" ${opts.from} (pg_restore --clean alone leaves a newer version's tables behind; README, "Backups")`,
        );
      if (target.location === ':memory:')
        throw new DomainError('invalid_request', 'DATABASE_URL names an in-memory database: there is nothing to restore into');
      if (!existsSync(opts.from)) throw new DomainError('invalid_request', `no backup at ${opts.from}`);
      const source = openSound(opts.from);
      try {
        refuseForeign(opts.from, source);
        refuseWhileServed(target.location, opts.force === true);
        const started = Date.now();
        await mkdir(path.dirname(path.resolve(target.location)), { recursive: true });
        // What is replaced is kept beside it, with its WAL (SQLite finds it by the new name), never dropped.
        const kept = existsSync(target.location)
          ? `${target.location}.before-restore-${new Date().toISOString().replace(/[:.]/g, '-')}`
          : null;
        await copyWhole(ctx, 'restore', source, target.location, {
          // The database's old WAL and shared-memory files move (or go) just before the copy
          // takes its place: SQLite would replay them onto the copy.
          beforeRename: () => {
            if (kept) {
              renameSync(target.location, kept);
              if (existsSync(`${target.location}-wal`)) renameSync(`${target.location}-wal`, `${kept}-wal`);
            }
            for (const file of [`${target.location}-wal`, `${target.location}-shm`]) rmSync(file, { force: true });
          },
        });
        const result = {
          from: opts.from,
          database: target.location,
          bytes: (await stat(target.location)).size,
          ms: Date.now() - started,
          kept,
        };
        if (opts.json) ctx.printJson(result);
        else
          ctx.print(
            `restored ${opts.from} to ${target.location} (${result.bytes} bytes, ${result.ms} ms)${kept ? `; the database it replaced is kept as ${kept}` : ''}; check it with: npx tollgate ledger verify`,
          );
      } finally {
        source.close();
      }
    });
};

/**
 * Copies `source` to `dest` through SQLite's backup API, beside it first (`dest.partial-PID`),
 * renamed into place only when whole: a copy cut short (Ctrl-C, a kill, a full disk) never sits
 * at `dest`, where it would open as an empty database, and what was there stays as it was.
 */
async function copyWhole(
  ctx: { stderr(text: string): void },
  what: 'backup' | 'restore',
  source: Database.Database,
  dest: string,
  opts: { progress?: (info: { totalPages: number; remainingPages: number }) => number; beforeRename?: (partial: string) => void },
): Promise<void> {
  const partial = `${dest}.partial-${process.pid}`;
  const removePartial = () => {
    for (const file of [partial, `${partial}-journal`]) rmSync(file, { force: true });
  };
  const interrupted = () => {
    removePartial();
    ctx.stderr(what === 'backup' ? `backup interrupted: nothing was written to ${dest}\n` : `restore interrupted: ${dest} is as it was\n`);
    process.exit(130);
  };
  process.once('SIGINT', interrupted);
  process.once('SIGTERM', interrupted);
  try {
    await source.backup(partial, opts.progress ? { progress: opts.progress } : undefined);
    opts.beforeRename?.(partial);
    renameSync(partial, dest);
  } catch (e) {
    removePartial();
    throw e;
  } finally {
    process.off('SIGINT', interrupted);
    process.off('SIGTERM', interrupted);
  }
}

/**
 * Refuses a sound SQLite file that is not a tollgate database (no migrations table, no accounts or
 * ledger: any other program's file), or one a newer tollgate migrated: put in place, the server
 * would add its empty tables to it, or serve a schema it does not know.
 */
function refuseForeign(file: string, source: Database.Database): void {
  const tables = new Set(
    (source.prepare("select name from sqlite_master where type = 'table'").all() as { name: string }[]).map((t) => t.name),
  );
  const missing = ['mikro_orm_migrations', 'accounts', 'wallets', 'wallet_transactions'].filter((t) => !tables.has(t));
  if (missing.length > 0)
    throw new DomainError('invalid_request', `${file} is not a tollgate database (no ${missing.join(', ')} table): nothing was restored`);
  const unknown = migrationsUnknownHere(
    (source.prepare('select name from mikro_orm_migrations').all() as { name: string }[]).map((m) => m.name),
  );
  if (unknown.length > 0)
    throw new DomainError(
      'invalid_request',
      `${file} was migrated by a newer tollgate (${unknown.slice(0, 3).join(', ')}): restore it with that version or a newer one; nothing was restored`,
    );
}

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

/**
 * The copy names no server: the one serving the original while it was copied is not serving the
 * copy, and a restore of it must not take that server's registration for a live one.
 */
function forgetServers(file: string): void {
  const copy = new Database(file, { fileMustExist: true });
  try {
    const known = copy.prepare("select 1 from sqlite_master where type = 'table' and name = 'billing_instances'").get();
    if (known) copy.prepare('delete from billing_instances').run();
  } finally {
    copy.close();
  }
}

/**
 * A server beats its heartbeat at least every sweep interval (30 s by default); one on another
 * machine silent this long has crashed (billing's own default instance timeout). One on this
 * machine is alive while its process is.
 */
const LIVE_HEARTBEAT_MS = 90_000;

interface Registration {
  host: string;
  pid: number;
  heartbeatAt: number;
}

/** A heartbeat older than this is no live server's, even if a process has its pid now (reused). */
const STALE_HEARTBEAT_MS = 10 * 60_000;

function alive(r: Registration): boolean {
  if (r.host !== processHost()) return Date.now() - r.heartbeatAt < LIVE_HEARTBEAT_MS;
  if (Date.now() - r.heartbeatAt > STALE_HEARTBEAT_MS) return false;
  try {
    process.kill(r.pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM'; // there, but another user's
  }
}

/**
 * Refuses while a server is registered on the database (one that stopped cleanly has left
 * billing_instances); with `force`, only while that server is alive (its process runs on this
 * machine, or, on another, its heartbeat is recent): a restore under a running server loses what
 * it writes after.
 */
function refuseWhileServed(location: string, force: boolean): void {
  if (!existsSync(location)) return;
  let registered: Registration[] = [];
  try {
    const db = new Database(location, { readonly: true, fileMustExist: true });
    try {
      const rows = db.prepare('select host, pid, heartbeat_at from billing_instances order by heartbeat_at desc').all() as {
        host: unknown;
        pid: unknown;
        heartbeat_at: unknown;
      }[];
      registered = rows.map((r) => ({
        host: String(r.host),
        pid: Number(r.pid),
        heartbeatAt: typeof r.heartbeat_at === 'number' ? r.heartbeat_at : Date.parse(String(r.heartbeat_at)),
      }));
    } finally {
      db.close();
    }
  } catch {
    return; // unreadable, or no such table: no server was registered on it
  }
  if (registered.length === 0) return;
  const ago = (r: Registration) => Math.max(0, Math.round((Date.now() - r.heartbeatAt) / 1000));
  const running = registered.find(alive);
  if (running)
    throw new DomainError(
      'invalid_request',
      `a server is serving ${location} (process ${running.pid} on ${running.host.split(' ')[0]}, its last heartbeat ${ago(running)} s ago): stop it first. A restore under a running server loses everything it writes after; --force only restores over a server that crashed`,
    );
  if (!force)
    throw new DomainError(
      'invalid_request',
      `a server is registered on ${location} (its last heartbeat ${ago(registered[0]!)} s ago): stop it first; if it crashed, pass --force`,
    );
}
