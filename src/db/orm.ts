// Opens the database named by DATABASE_URL (SQLite through better-sqlite3, or PostgreSQL) with every
// entity registered explicitly, and brings its schema up to date with the in-code migrations.
// The server, the CLI and the tests all open the database through here.
import { accessSync, constants, existsSync, mkdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { MikroORM, type Configuration, type Options } from '@mikro-orm/core';
import { AbstractSqlDriver, BetterSqliteConnection, BetterSqlitePlatform, type Knex } from '@mikro-orm/better-sqlite';
import { Migrator } from '@mikro-orm/migrations';
import { ENTITIES } from '../entities/index.js';
import { MIGRATIONS } from './migrations/index.js';

import {
  type DatabaseKind,
  databaseKind,
  getKnex,
  registerAcquireAsIs,
  registerSqliteHandle,
  setSqliteSync,
  SQLITE_SYNC,
  type SqliteHandle,
} from './connection.js';
import { BACKSTOP_PAGES, type Checkpointer, startCheckpointer } from './sqlite-checkpointer.js';
import { refuseNulBindings, refuseNulValues } from './nul.js';
import { makeFolder } from '../make-folder.js';

export { type DatabaseKind, databaseKind, getKnex };

export interface DatabaseTarget {
  kind: DatabaseKind;
  /** The SQLite file (or `:memory:`), or the PostgreSQL URL. */
  location: string;
}

/** How long a SQLite writer waits for another connection's (or process's) write lock. */
const SQLITE_BUSY_TIMEOUT_MS = 5_000;
/**
 * The WAL file is truncated back to this after a checkpoint that emptied it: without a limit it
 * keeps the largest size it ever reached (a bulk import, a long-held reader), for good.
 */
export const SQLITE_WAL_SIZE_LIMIT_BYTES = 16 * 1024 * 1024;
/** Serialises concurrent migration runs (several server processes, or the CLI) on PostgreSQL. */
const PG_MIGRATION_LOCK_KEY = 7_461_203_318;

/**
 * Reads DATABASE_URL: `sqlite:PATH`, `sqlite::memory:`, `sqlite:///abs/path`, a bare path, or
 * `postgres://…` / `postgresql://…`.
 */
/** The URL as a message may show it: credentials (user:password@) hidden. */
export function withoutCredentials(url: string): string {
  // Up to the last @: a password with an unencoded / or # is hidden too.
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/).*@/i, '$1…@');
}

export function parseDatabaseUrl(url: string): DatabaseTarget {
  const value = url.trim();
  if (!value) throw new DatabaseLocationError('DATABASE_URL is empty: set it to sqlite:PATH or postgres://…, or leave it unset');
  if (/^postgres(ql)?:\/\//i.test(value)) {
    // Checked here, where its credentials can be left out of the message: the driver's own error
    // carried the whole URL, password included, into the log.
    if (!URL.canParse(value))
      throw new DatabaseLocationError(
        `DATABASE_URL ${withoutCredentials(value)}: not a valid URL: percent-encode the special characters of the user name and password (/ as %2F, # as %23, @ as %40, : as %3A)`,
      );
    return { kind: 'postgresql', location: value };
  }
  if (/^sqlite:/i.test(value)) {
    let file = value.slice('sqlite:'.length);
    if (file.startsWith('//')) file = file.slice(2); // sqlite:///abs/path → /abs/path
    if (!file) throw new DatabaseLocationError(`DATABASE_URL ${url}: no SQLite file after "sqlite:"`);
    return { kind: 'sqlite', location: file };
  }
  // Any other scheme (two letters or more, so C:\ stays a path) is a mistake, not a file name.
  if (/^[a-z][a-z0-9+.-]+:/i.test(value)) {
    throw new DatabaseLocationError(`DATABASE_URL ${withoutCredentials(url)}: unsupported scheme (use sqlite:PATH or postgres://…)`);
  }
  return { kind: 'sqlite', location: value };
}

/** Where the database is when DATABASE_URL is not set (relative to the working directory). */
export const DEFAULT_DATABASE_URL = 'sqlite:./data/tollgate.db';

/** A DATABASE_URL that names no database, or a SQLite file this process cannot create, read or write: the message says what to do. */
export class DatabaseLocationError extends Error {}

/** Creates the SQLite file's directory and checks that this user may write there (and the file). */
function checkSqliteLocation(url: string, location: string): void {
  const file = path.resolve(location);
  const dir = path.dirname(file);
  if (existsSync(file) && statSync(file).isDirectory())
    throw new DatabaseLocationError(
      `DATABASE_URL=${url}: ${file} is a directory: name the database file (e.g. DATABASE_URL=sqlite:${path.join(location, 'tollgate.db')})`,
    );
  try {
    makeFolder(dir);
    accessSync(dir, constants.W_OK);
    if (existsSync(file)) accessSync(file, constants.R_OK | constants.W_OK);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code ?? 'error';
    if (code === 'ENOTDIR')
      throw new DatabaseLocationError(
        `cannot open the SQLite database ${file} (DATABASE_URL=${url}): ${(e as NodeJS.ErrnoException).path} is a file, not a folder: set DATABASE_URL to a file in a folder (e.g. DATABASE_URL=sqlite:./data/tollgate.db)`,
      );
    throw new DatabaseLocationError(
      `cannot open the SQLite database ${file} (DATABASE_URL=${url}): ${code === 'EACCES' || code === 'EPERM' ? 'permission denied' : code}: make ${dir} writable by this user, or set DATABASE_URL to another file (e.g. DATABASE_URL=sqlite:./data/tollgate.db)`,
    );
  }
}

/** What openDatabase reports of the migrations it applies (none: nothing said). */
export interface MigrationReport {
  /** A SQLite file that was not there and is being created (the CLI says so: a mistyped path). */
  creating?(file: string): void;
  /** The migrations about to run, and how many had run before (0: a new database). */
  starting?(pending: string[], applied: number): void;
  done?(pending: string[], ms: number): void;
}

export async function openDatabase(url: string, opts: { debug?: boolean; migrations?: MigrationReport } = {}): Promise<MikroORM> {
  const target = parseDatabaseUrl(url);
  const common: Options = {
    entities: ENTITIES,
    discovery: { requireEntitiesArray: true, disableDynamicFileAccess: true, warnWhenNoEntities: true },
    metadataCache: { enabled: false },
    extensions: [Migrator],
    migrations: {
      migrationsList: MIGRATIONS,
      snapshot: false,
      silent: true, // the CLI's stdout carries JSON
      transactional: true,
      allOrNothing: true,
    },
    // Every unit of work forks its own EntityManager; the global one is for tooling only.
    allowGlobalContext: false,
    // A value with a NUL is refused before it is written into a statement (src/db/nul.ts).
    onQuery: refuseNulValues,
    debug: opts.debug ?? false,
  };

  let orm: MikroORM;
  if (target.kind === 'sqlite') {
    const onDisk = target.location !== ':memory:';
    if (onDisk) checkSqliteLocation(url, target.location);
    if (onDisk && !existsSync(target.location)) opts.migrations?.creating?.(path.resolve(target.location));
    orm = await MikroORM.init({ ...common, driver: SqliteDriver, dbName: target.location }).catch((e: unknown) => {
      throw sqliteProblem(url, target.location, e);
    });
  } else {
    // Loaded only when used: the CLI on SQLite does not pay for pg.
    const { PostgreSqlDriver } = await import('@mikro-orm/postgresql');
    // Never created here: a mistyped database name would otherwise be served, empty, without a word.
    orm = await MikroORM.init({
      ...common,
      driver: PostgreSqlDriver,
      clientUrl: target.location,
      ensureDatabase: false,
      // A host that takes the connection and never answers as PostgreSQL (another service's port,
      // a firewall dropping packets) fails in this long, not after knex's minute of silence.
      driverOptions: { connection: { connectionTimeoutMillis: POSTGRES_CONNECT_TIMEOUT_MS } },
    }).catch((e: unknown) => {
      throw postgresProblem(url, e);
    });
  }

  try {
    await migrate(orm, target.kind, opts.migrations, url);
  } catch (e) {
    await orm.close(true);
    throw target.kind === 'postgresql' ? postgresProblem(url, e) : sqliteProblem(url, target.location, e);
  }
  // knex's own statements (the stores' SQL) with a NUL among their values are refused the same way.
  getKnex(orm).on('query', refuseNulBindings);
  return orm;
}

/** A SQLite file that cannot be used as it is (not a database, unopenable), as one line; anything else as it is. */
function sqliteProblem(url: string, location: string, e: unknown): unknown {
  const code = (e as { code?: unknown })?.code;
  if (code === 'SQLITE_NOTADB')
    return new DatabaseLocationError(`DATABASE_URL=${url}: ${path.resolve(location)} is not a SQLite database: name another file`);
  if (code === 'SQLITE_CANTOPEN')
    return new DatabaseLocationError(`DATABASE_URL=${url}: cannot open ${path.resolve(location)} as a SQLite database`);
  return e;
}

/**
 * PostgreSQL that cannot be reached or used, as one line an operator can act on (a
 * DatabaseLocationError); anything else as it is.
 */
/** How long a new PostgreSQL connection may take to be answered. */
const POSTGRES_CONNECT_TIMEOUT_MS = 10_000;

function postgresProblem(url: string, e: unknown): unknown {
  const err = e as { code?: unknown; message?: unknown };
  const code = typeof err?.code === 'string' ? err.code : '';
  const message = typeof err?.message === 'string' ? err.message : String(e);
  const at = `DATABASE_URL ${withoutCredentials(url)}`;
  const db = (() => {
    try {
      return decodeURIComponent(new URL(url).pathname.slice(1)) || 'the database';
    } catch {
      return 'the database';
    }
  })();
  if (code === '3D000')
    return new DatabaseLocationError(`${at}: the database "${db}" does not exist: create it (e.g. createdb "${db}") or correct the name`);
  if (code === '28P01' || code === '28000')
    return new DatabaseLocationError(`${at}: PostgreSQL refused the user or password (${message}): correct them in DATABASE_URL`);
  if (code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'ETIMEDOUT' || code === 'EHOSTUNREACH')
    return new DatabaseLocationError(`${at}: cannot reach PostgreSQL (${code}): is it running, and are the host and port right?`);
  if (/connection timeout|timeout expired|Timeout acquiring a connection/i.test(message))
    return new DatabaseLocationError(
      `${at}: nothing answered as PostgreSQL within ${POSTGRES_CONNECT_TIMEOUT_MS / 1000} s: is it PostgreSQL's host and port (not another service's), and does no firewall drop the packets?`,
    );
  if (/Connection terminated unexpectedly/i.test(message))
    return new DatabaseLocationError(
      `${at}: the server there closed the connection without answering as PostgreSQL: is it PostgreSQL's host and port?`,
    );
  return e;
}

/**
 * What SQLite's own check finds wrong with the database file (`pragma quick_check`: every page,
 * index entries against their rows); nothing on PostgreSQL, which checks its pages itself. For
 * `ledger verify`: a copy put in place over a stale WAL file (see README "Backups") can hold a
 * broken index while every ledger invariant still reads right.
 */
export async function storageProblems(orm: MikroORM): Promise<string[]> {
  if (databaseKind(orm) !== 'sqlite') return [];
  try {
    const result = (await getKnex(orm).raw('pragma quick_check')) as { quick_check: string }[];
    const lines = result.map((r) => r.quick_check).filter((l) => l !== 'ok');
    return lines.map((l) => `the SQLite file: ${l}`);
  } catch (e) {
    return [`the SQLite file: ${(e as Error).message}`];
  }
}

export async function closeDatabase(orm: MikroORM): Promise<void> {
  await orm.close(true);
}

/** Of the migrations a database records as run, those this code does not have (a newer tollgate's). */
export function migrationsUnknownHere(applied: readonly string[]): string[] {
  const known = new Set(MIGRATIONS.map((m) => m.name));
  return applied.map((n) => n.replace(/\.[jt]s$/, '')).filter((n) => !known.has(n));
}

/**
 * Refuses a database that a newer tollgate migrated: its migrations table names migrations this
 * code does not have (an operator who rolled back after a newer release ran). This code would
 * otherwise serve on a schema it does not know, silently.
 */
async function refuseNewerSchema(orm: MikroORM): Promise<void> {
  const unknown = migrationsUnknownHere((await orm.getMigrator().getExecutedMigrations()).map((m) => m.name));
  if (unknown.length > 0)
    throw new DatabaseLocationError(
      `the database was migrated by a newer tollgate (${unknown.slice(0, 3).join(', ')}${unknown.length > 3 ? ', …' : ''}), which this version does not know: run that version or a newer one, or restore a backup made before it`,
    );
}

async function migrate(orm: MikroORM, kind: DatabaseKind, report: MigrationReport = {}, url = ''): Promise<void> {
  const migrator = orm.getMigrator();
  // Said before and after: an upgrade over a large database can take a while, silently otherwise.
  const up = async () => {
    const pending = (await migrator.getPendingMigrations()).map((m) => m.name.replace(/\.[jt]s$/, ''));
    if (pending.length === 0) return;
    report.starting?.(pending, (await migrator.getExecutedMigrations()).length);
    const started = Date.now();
    await migrator.up();
    report.done?.(pending, Date.now() - started);
  };
  if (kind === 'sqlite') {
    // The migrator's single transaction begins IMMEDIATE (see SqliteConnection): a second process
    // waits for it, then finds the migrations recorded and has nothing to do. Only the migrator's
    // own table is created before that transaction, with a check-then-create that two processes
    // opening a new file at once would both pass; creating it IF NOT EXISTS first (the same
    // columns the migrator would create) closes that gap.
    const table = orm.config.get('migrations').tableName ?? 'mikro_orm_migrations';
    // Another program's database (a mistyped path): tollgate's tables are not added to it.
    const tables = (
      (await getKnex(orm).raw("select name from sqlite_master where type = 'table' and name not like 'sqlite_%'")) as {
        name: string;
      }[]
    ).map((t) => t.name);
    if (tables.length > 0 && !tables.includes(table))
      throw new DatabaseLocationError(
        `DATABASE_URL=${url}: the SQLite file holds another program's tables (${tables.slice(0, 3).join(', ')}${tables.length > 3 ? ', …' : ''}) and none of tollgate's: refusing to add tollgate's to it; set DATABASE_URL to a new file or a tollgate database`,
      );
    await getKnex(orm).raw(
      'create table if not exists ?? (`id` integer not null primary key autoincrement, `name` varchar(255), ' +
        '`executed_at` datetime default CURRENT_TIMESTAMP)',
      [table],
    );
    await refuseNewerSchema(orm);
    await up();
    return;
  }
  // A transaction-scoped advisory lock on a connection of its own, held while the migrator runs on
  // others: concurrent starts migrate one after the other, and the lock goes with the transaction.
  await getKnex(orm).transaction(async (trx) => {
    await trx.raw(`select pg_advisory_xact_lock(${PG_MIGRATION_LOCK_KEY})`);
    await refuseNewerSchema(orm);
    await up();
  });
}

/**
 * better-sqlite3 through MikroORM, with the two things a server needs from SQLite:
 * - write transactions begin IMMEDIATE: a deferred BEGIN that reads, then writes, fails at once
 *   with SQLITE_BUSY when another process (the CLI) holds the write lock, while BEGIN IMMEDIATE
 *   waits for it (busy_timeout). Within the process, knex's one-connection pool already
 *   serialises transactions.
 * - WAL journal (readers do not block the writer), busy_timeout and foreign keys, set on every
 *   connection the pool opens, and the WAL checkpointed on a worker thread (./sqlite-checkpointer.ts).
 * better-sqlite3 waits for a lock synchronously, blocking the event loop: open one ORM per SQLite
 * file per process, or two of them writing at once in one process wait on each other until
 * busy_timeout runs out.
 */
class SqliteConnection extends BetterSqliteConnection {
  override createKnex(): void {
    super.createKnex();
    const dialect = (this.client as unknown as { client: KnexDialect }).client;
    const transaction = dialect.transaction;
    dialect.transaction = function (this: KnexDialect, ...args: unknown[]) {
      const trx = transaction.apply(this, args);
      // Nested transactions use savepoints; begin() is only called for the outermost one. The
      // transaction starts on a later tick, so replacing begin here is in time.
      trx.begin = (conn: unknown) => trx.query(conn, 'BEGIN IMMEDIATE;');
      return trx;
    };
    // Billing's hot batches leave the connection at NORMAL (setSqliteSync): everything that takes it
    // through knex (MikroORM, knex transactions) gets it back at FULL. Billing takes it as it is.
    const acquire = dialect.acquireConnection;
    registerAcquireAsIs(dialect, () => acquire.call(dialect));
    dialect.acquireConnection = async function (this: KnexDialect) {
      const conn = await acquire.call(this);
      setSqliteSync(conn, SQLITE_SYNC);
      return conn;
    };
  }

  /** The file's checkpoint worker, once the pool opened its connection (null: none, in memory). */
  private checkpointer: Checkpointer | null | undefined;

  override async close(force?: boolean): Promise<void> {
    // The worker's connection first: the server's, closing last, checkpoints and removes the WAL.
    await this.checkpointer?.stop();
    this.checkpointer = undefined;
    await super.close(force);
  }

  protected override getKnexOptions(type: string): Knex.Config {
    const options = super.getKnexOptions(type);
    return {
      ...options,
      pool: {
        ...options.pool,
        afterCreate: (conn: SqliteHandle, done: (err: Error | null, conn: SqliteHandle) => void) => {
          try {
            conn.pragma('journal_mode = WAL');
            conn.pragma(`busy_timeout = ${SQLITE_BUSY_TIMEOUT_MS}`);
            conn.pragma('foreign_keys = ON');
            conn.pragma(`journal_size_limit = ${SQLITE_WAL_SIZE_LIMIT_BYTES}`);
            // Every commit waits for the disk. Set here, not left to SQLite: a connection that opens
            // a file already in WAL mode would start at NORMAL (better-sqlite3's build default), so
            // the first run of a new file and every later start would differ. Billing's hot path
            // asks for NORMAL per commit batch (lazySync in src/domain/billing/sql.ts), and the
            // pool's acquire above puts it back.
            setSqliteSync(conn, SQLITE_SYNC);
            // The stores run single synchronous statements on it while the pool holds it free.
            registerSqliteHandle(this.getKnex(), conn);
            // One worker per file is enough, should the pool ever open a second connection.
            if (this.checkpointer === undefined) this.checkpointer = startCheckpointer(conn);
            else if (this.checkpointer) conn.pragma(`wal_autocheckpoint = ${BACKSTOP_PAGES}`);
            done(null, conn);
          } catch (e) {
            done(e as Error, conn);
          }
        },
      },
    };
  }
}

interface KnexDialect {
  transaction(...args: unknown[]): KnexTransactionInternals;
  acquireConnection(): Promise<SqliteHandle>;
}

interface KnexTransactionInternals {
  begin(conn: unknown): Promise<unknown>;
  query(conn: unknown, sql: string): Promise<unknown>;
}

class SqliteDriver extends AbstractSqlDriver<SqliteConnection, BetterSqlitePlatform> {
  constructor(config: Configuration) {
    super(config, new BetterSqlitePlatform(), SqliteConnection, ['knex', 'better-sqlite3']);
  }
}
