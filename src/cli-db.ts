// The operator CLI's database commands: `tollgate db backup --out FILE`, a consistent copy of the
// SQLite database through SQLite's online backup API, safe while the server serves (it copies
// pages in steps and starts over from a page another connection changed). PostgreSQL has its own
// tool for this: the command says which.
import { existsSync } from 'node:fs';
import { mkdir, stat } from 'node:fs/promises';
import path from 'node:path';
import Database from 'better-sqlite3';
import type { CommandGroup } from './cli.js';
import { parseDatabaseUrl } from './db/orm.js';
import { DomainError } from './domain/errors.js';

const DEFAULT_DATABASE_URL = 'sqlite:./data/tollgate.db';

export const registerDbCommands: CommandGroup = (program, ctx) => {
  const db = program.command('db').description('The database: backups');
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
};
