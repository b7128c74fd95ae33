// The SQL the billing hot path speaks, to SQLite and PostgreSQL alike, through the connection
// behind MikroORM (src/db/orm.ts): rows and affected counts of raw statements, transactions,
// BigInt money read exactly, dates read back from either driver.
//
// On SQLite a transaction takes the pool's one connection (so no knex or MikroORM transaction
// can run meanwhile), runs BEGIN IMMEDIATE and then every statement synchronously through
// better-sqlite3 prepared statements, cached per connection. Knex's own transactions cost an
// event-loop turn per statement while holding that one connection, which made billing's two
// short transactions per call the server's bottleneck. On PostgreSQL, where every statement is
// a network round trip anyway, transactions are knex's, on a pooled connection.
import type { MikroORM } from '@mikro-orm/core';
import type { Knex } from '@mikro-orm/knex';
import {
  type DatabaseKind,
  databaseKind,
  getKnex,
  idleSqliteHandle,
  knexKind,
  acquireAsIs,
  setSqliteSync,
  SQLITE_LAZY_SYNC,
  SQLITE_SYNC,
  type SqliteHandle,
  sqliteStatement,
} from '../../db/connection.js';
import { nulRefused } from '../../db/nul.js';

export type Binding = string | number | bigint | boolean | Date | null;

export interface TransactionOptions {
  snapshot?: boolean;
  lazySync?: boolean;
}

/** A connection, or a transaction on one: what every billing query runs on. */
export interface Queryable {
  readonly kind: DatabaseKind;
  /** Rows of a SELECT, or of a statement with RETURNING. */
  rows<T>(sql: string, bindings?: readonly Binding[]): Promise<T[]>;
  /** The number of rows a statement without RETURNING changed. */
  run(sql: string, bindings?: readonly Binding[]): Promise<number>;
}

/** Where a query runs: a Queryable, or a knex connection or transaction (other modules' own). */
export type Db = Queryable | Knex | Knex.Transaction;

export interface BillingDatabase extends Queryable {
  /** ' for update' on PostgreSQL; SQLite's writers are serialised by BEGIN IMMEDIATE instead. */
  readonly forUpdate: string;
  /**
   * Runs `fn` in one transaction: committed when it resolves, rolled back when it throws.
   * `snapshot`: one consistent view for a read-only check (repeatable read on PostgreSQL).
   * `lazySync`: the billing hot path's holds and usage charges. On SQLite such a commit does not
   * wait for the disk (`synchronous = NORMAL` for it; every other commit is FULL): a power loss or
   * an OS crash, not a process crash, may lose the lazily synced commits since the WAL was last
   * synced (at most about CHECKPOINT_INTERVAL_MS of src/db/sqlite-checkpointer.ts, or the next
   * FULL commit, whichever comes first), always a suffix of the log, never a commit made before a
   * FULL one. What that can lose is the charges of the calls of that instant (the operator's, never
   * money a customer paid in: credits and top-ups are FULL). PostgreSQL ignores it: every commit
   * waits for the disk.
   */
  transaction<T>(fn: (tx: Queryable) => Promise<T>, opts?: TransactionOptions): Promise<T>;
}

export function billingDatabase(orm: MikroORM): BillingDatabase {
  const knex = getKnex(orm);
  return databaseKind(orm) === 'sqlite' ? new SqliteDatabase(knex) : new KnexDatabase(knex);
}

/** The knex connection and dialect, for modules that run their own knex transactions. */
export interface SqlContext {
  knex: Knex;
  kind: DatabaseKind;
  forUpdate: string;
}

export function sqlContext(orm: MikroORM): SqlContext {
  const kind = databaseKind(orm);
  return { knex: getKnex(orm), kind, forUpdate: kind === 'postgresql' ? ' for update' : '' };
}

const queryable = (db: Db): Queryable => ('rows' in db && typeof db.rows === 'function' ? (db as Queryable) : new KnexDb(db as Knex));

export const rows = <T>(db: Db, sql: string, bindings: readonly Binding[] = []): Promise<T[]> => queryable(db).rows<T>(sql, bindings);
export const run = (db: Db, sql: string, bindings: readonly Binding[] = []): Promise<number> => queryable(db).run(sql, bindings);
/** Runs a statement whose result does not matter. */
export const exec = async (db: Db, sql: string, bindings: readonly Binding[] = []): Promise<void> => {
  await queryable(db).run(sql, bindings);
};

// ---------------------------------------------------------------------------------------------
// PostgreSQL (and any other knex dialect): knex raw statements and transactions.

class KnexDb implements Queryable {
  readonly kind: DatabaseKind;
  constructor(protected readonly knex: Knex | Knex.Transaction) {
    this.kind = knexKind(knex);
  }

  async rows<T>(sql: string, bindings: readonly Binding[] = []): Promise<T[]> {
    const result: unknown = await this.knex.raw(sql, bindings as never);
    if (Array.isArray(result)) return result as T[];
    return ((result as { rows?: T[] }).rows ?? []) as T[];
  }

  async run(sql: string, bindings: readonly Binding[] = []): Promise<number> {
    const result = (await this.knex.raw(sql, bindings as never)) as { changes?: number; rowCount?: number | null };
    return Number(result.changes ?? result.rowCount ?? 0);
  }
}

/**
 * PostgreSQL. Statements outside a transaction (billing's hot ones: an account's batched holds and
 * settlements) skip knex: each runs on a pooled connection as a named prepared statement, so the
 * server parses and plans it once per connection rather than on every call (planning the
 * settlement statement took about as long as running it for a batch of ten), and Node skips
 * knex's query builder and runner. Transactions stay knex's.
 */
class KnexDatabase extends KnexDb implements BillingDatabase {
  readonly forUpdate = ' for update';
  constructor(private readonly root: Knex) {
    super(root);
  }

  override async rows<T>(sql: string, bindings: readonly Binding[] = []): Promise<T[]> {
    return (await this.prepared(sql, bindings)).rows as T[];
  }

  override async run(sql: string, bindings: readonly Binding[] = []): Promise<number> {
    return Number((await this.prepared(sql, bindings)).rowCount ?? 0);
  }

  private async prepared(sql: string, bindings: readonly Binding[]): Promise<PgResult> {
    // Listeners of knex's 'query' event (tracing, tests counting queries) hear it as they would from knex.
    if (this.root.listenerCount('query') > 0) this.root.emit('query', { sql, bindings, method: 'raw' });
    const client = (this.root as unknown as { client: PoolClient<PgConnection> }).client;
    const conn = await client.acquireConnection();
    try {
      return await conn.query({ ...preparedStatement(sql), values: bindings as unknown[] });
    } finally {
      await client.releaseConnection(conn);
    }
  }

  transaction<T>(fn: (tx: Queryable) => Promise<T>, opts: TransactionOptions = {}): Promise<T> {
    return this.root.transaction((trx) => fn(new KnexDb(trx)), opts.snapshot ? { isolationLevel: 'repeatable read' } : undefined);
  }
}

interface PgResult {
  rows: unknown[];
  rowCount: number | null;
}

interface PgConnection {
  query(config: { name?: string; text: string; values: unknown[] }): Promise<PgResult>;
}

/**
 * One name per statement text, for every connection of the process (pg refuses a name it
 * prepared for another text). Texts built with variable parts are few; past the bound a
 * statement runs unnamed.
 */
const statementNames = new Map<string, { name: string; text: string }>();
const MAX_PREPARED = 200;

function preparedStatement(sql: string): { name?: string; text: string } {
  let statement = statementNames.get(sql);
  if (!statement) {
    // knex's placeholders: ? becomes $1, $2…; \? stays a literal ?.
    let n = 0;
    const text = sql.replace(/(\\*)(\?)/g, (_match, escapes: string) => (escapes.length % 2 ? '?' : `$${++n}`));
    if (statementNames.size >= MAX_PREPARED) return { text };
    statement = { name: `billing_${statementNames.size + 1}`, text };
    statementNames.set(sql, statement);
  }
  return statement;
}

// ---------------------------------------------------------------------------------------------
// SQLite: better-sqlite3, synchronously, on the connection taken from knex's pool.

interface PoolClient<C = SqliteHandle> {
  acquireConnection(): Promise<C>;
  releaseConnection(connection: C): Promise<unknown>;
}

/** As knex binds for SQLite: dates as epoch milliseconds, booleans as 0/1. */
function sqliteBinding(value: Binding | undefined): unknown {
  // SQLite would store it; PostgreSQL refuses it: refused on both (src/db/nul.ts).
  if (typeof value === 'string' && value.includes('\0')) throw nulRefused();
  if (value instanceof Date) return value.getTime();
  if (typeof value === 'boolean') return value ? 1 : 0;
  return value ?? null;
}

class SqliteTx implements Queryable {
  readonly kind: DatabaseKind = 'sqlite';
  /**
   * `autocommit`: statements outside a transaction, each its own commit; one that writes (RETURNING
   * included) is synced (FULL), whatever level the last batch left the connection at. Inside a
   * batch, flush() has set the level.
   */
  constructor(
    private readonly conn: SqliteHandle,
    private readonly autocommit = false,
  ) {}

  rowsSync<T>(sql: string, bindings: readonly Binding[]): T[] {
    const statement = sqliteStatement(this.conn, sql);
    const params = bindings.map(sqliteBinding);
    if (this.autocommit && !statement.readonly) setSqliteSync(this.conn, SQLITE_SYNC);
    if (statement.reader) return statement.all(...params) as T[];
    statement.run(...params);
    return [];
  }

  runSync(sql: string, bindings: readonly Binding[]): number {
    const statement = sqliteStatement(this.conn, sql);
    const params = bindings.map(sqliteBinding);
    if (this.autocommit && !statement.readonly) setSqliteSync(this.conn, SQLITE_SYNC);
    if (statement.reader) return statement.all(...params).length;
    return statement.run(...params).changes;
  }

  async rows<T>(sql: string, bindings: readonly Binding[] = []): Promise<T[]> {
    return this.rowsSync<T>(sql, bindings);
  }

  async run(sql: string, bindings: readonly Binding[] = []): Promise<number> {
    return this.runSync(sql, bindings);
  }
}

interface QueuedTransaction {
  fn: (tx: Queryable) => Promise<unknown>;
  lazySync: boolean;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

/**
 * SQLite transactions with group commit: the transactions started in the same turn of the event
 * loop run one after the other inside one BEGIN IMMEDIATE … COMMIT, each in its own savepoint
 * (so each is still all-or-nothing: a failing one is rolled back alone). A commit costs far
 * more than the few statements of a hold or a settlement; sharing it is what lets billing keep
 * up with the server. Each caller's promise settles only after the shared COMMIT. The commit
 * is synced to disk (FULL) unless every transaction of the batch asked for `lazySync`.
 *
 * A transaction's function must only use the Queryable it is given, and await nothing but its
 * statements: the pool's one connection is taken for the whole batch, so calling this
 * database (or knex) again from inside would wait forever, and awaiting a network call would
 * stall every other transaction meanwhile.
 */
class SqliteDatabase implements BillingDatabase {
  readonly kind: DatabaseKind = 'sqlite';
  readonly forUpdate = '';
  private queue: QueuedTransaction[] = [];
  private scheduled = false;

  constructor(private readonly knex: Knex) {}

  private async withConnection<T>(autocommit: boolean, fn: (tx: SqliteTx, conn: SqliteHandle) => Promise<T>): Promise<T> {
    const client = (this.knex as unknown as { client: PoolClient }).client;
    // As it is: a batch sets its own level, and an autocommit write sets FULL.
    const conn = await acquireAsIs(this.knex);
    try {
      return await fn(new SqliteTx(conn, autocommit), conn);
    } finally {
      await client.releaseConnection(conn);
    }
  }

  // One statement is synchronous from start to end: on the idle connection it needs no pool.
  async rows<T>(sql: string, bindings: readonly Binding[] = []): Promise<T[]> {
    const idle = idleSqliteHandle(this.knex);
    if (idle) return new SqliteTx(idle, true).rowsSync<T>(sql, bindings);
    return this.withConnection(true, async (tx) => tx.rowsSync<T>(sql, bindings));
  }

  async run(sql: string, bindings: readonly Binding[] = []): Promise<number> {
    const idle = idleSqliteHandle(this.knex);
    if (idle) return new SqliteTx(idle, true).runSync(sql, bindings);
    return this.withConnection(true, async (tx) => tx.runSync(sql, bindings));
  }

  transaction<T>(fn: (tx: Queryable) => Promise<T>, opts: TransactionOptions = {}): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ fn, lazySync: opts.lazySync === true, resolve: resolve as (value: unknown) => void, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => void this.flush());
      }
    });
  }

  private async flush(): Promise<void> {
    const batch = this.queue;
    this.queue = [];
    this.scheduled = false;
    const outcomes: { ok: boolean; value: unknown }[] = [];
    try {
      await this.withConnection(false, async (tx, conn) => {
        // The safety level cannot change inside a transaction: it is set for the batch before it,
        // and left there for the next batch (setSqliteSync: whatever else comes restores FULL).
        setSqliteSync(conn, batch.every((job) => job.lazySync) ? SQLITE_LAZY_SYNC : SQLITE_SYNC);
        await this.commitBatch(tx, conn, batch, outcomes);
      });
    } catch (e) {
      for (const job of batch) job.reject(e);
      return;
    }
    for (const [i, job] of batch.entries()) {
      const outcome = outcomes[i]!;
      if (outcome.ok) job.resolve(outcome.value);
      else job.reject(outcome.value);
    }
  }

  private async commitBatch(
    tx: SqliteTx,
    conn: SqliteHandle,
    batch: QueuedTransaction[],
    outcomes: { ok: boolean; value: unknown }[],
  ): Promise<void> {
    // IMMEDIATE: take the write lock now (waiting busy_timeout for another process's), so a
    // transaction that reads and then writes cannot fail half-way with SQLITE_BUSY.
    tx.runSync('begin immediate', []);
    if (batch.length === 1) return this.commitOne(tx, conn, batch[0]!, outcomes);
    try {
      for (const job of batch) {
        tx.runSync('savepoint billing', []);
        try {
          const value = await job.fn(tx);
          tx.runSync('release billing', []);
          outcomes.push({ ok: true, value });
        } catch (e) {
          tx.runSync('rollback to billing', []);
          tx.runSync('release billing', []);
          outcomes.push({ ok: false, value: e });
        }
      }
      tx.runSync('commit', []);
    } catch (e) {
      if (conn.inTransaction) tx.runSync('rollback', []);
      throw e;
    }
  }

  /** A batch of one: its transaction is the whole of BEGIN … COMMIT, with no savepoint of its own. */
  private async commitOne(tx: SqliteTx, conn: SqliteHandle, job: QueuedTransaction, outcomes: { ok: boolean; value: unknown }[]) {
    try {
      const value = await job.fn(tx);
      tx.runSync('commit', []);
      outcomes.push({ ok: true, value });
    } catch (e) {
      if (conn.inTransaction) tx.runSync('rollback', []);
      outcomes.push({ ok: false, value: e });
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Reading values back.

/** A 64-bit column read as text (CAST(x AS TEXT)) or as the driver gives it, as a BigInt. */
export function big(value: unknown): bigint {
  if (value === null || value === undefined) return 0n;
  if (typeof value === 'bigint') return value;
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value)) throw new Error(`unsafe integer read from the database: ${value}`);
    return BigInt(value);
  }
  return BigInt(String(value));
}

export function bigOrNull(value: unknown): bigint | null {
  return value === null || value === undefined ? null : big(value);
}

/** Token counters: exact as numbers up to 2^53. */
export function int(value: unknown): number {
  return Number(value ?? 0);
}

/** SQLite gives epoch milliseconds, PostgreSQL a Date (or text). */
export function date(value: unknown): Date {
  if (value instanceof Date) return value;
  if (typeof value === 'number' || typeof value === 'bigint') return new Date(Number(value));
  const text = String(value);
  return /^\d+$/.test(text) ? new Date(Number(text)) : new Date(text);
}

export function bool(value: unknown): boolean {
  return value === true || value === 1 || value === '1' || value === 't' || value === 'true';
}

/** Unique-constraint violation, on either database. */
export function isUniqueViolation(e: unknown): boolean {
  const err = e as { code?: string; message?: string };
  return (
    err?.code === '23505' ||
    err?.code === 'SQLITE_CONSTRAINT_UNIQUE' ||
    err?.code === 'SQLITE_CONSTRAINT_PRIMARYKEY' ||
    /UNIQUE constraint failed/.test(err?.message ?? '')
  );
}

/** The list sizes an `in (…)` of ids is padded to. */
const IN_LIST_SIZES = [8, 64, 256];

/**
 * `ids` (distinct) padded to a few list sizes by repeating the first, so that lists of any length
 * share a handful of prepared statements rather than one each; with its `in (…)` list.
 */
export function inList(ids: readonly string[]): { ids: string[]; list: string } {
  const distinct = [...new Set(ids)];
  const size = IN_LIST_SIZES.find((n) => n >= distinct.length) ?? distinct.length;
  const padded = [...distinct, ...Array<string>(size - distinct.length).fill(distinct[0]!)];
  return { ids: padded, list: `(${padded.map(() => '?').join(', ')})` };
}
