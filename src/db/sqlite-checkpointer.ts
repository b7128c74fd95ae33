// SQLite WAL checkpoints on a worker thread, off the event loop.
//
// In WAL mode every commit appends pages to the -wal file, and by default the connection that
// commits past 1000 pages copies them back into the database file itself (an automatic
// checkpoint), synchronously: on the server that is the event loop, in the middle of a billing
// commit. Measured on the billing hot path it was about a fifth of the SQL time of a billed call.
// Here a worker thread holds a second connection and runs a PASSIVE checkpoint every
// CHECKPOINT_INTERVAL_MS: PASSIVE takes no lock a writer or reader needs and never waits, so the
// server's connection keeps committing meanwhile. The server's connection keeps an automatic
// checkpoint only as a backstop (BACKSTOP_PAGES), for a worker that died or fell far behind.
//
// Several processes on one file each run their own worker; a checkpoint that finds another one
// running returns at once. A checkpoint only moves committed pages into the database file, after
// syncing the WAL: so it also bounds what billing's lazily synced commits (lazySync in
// src/domain/billing/sql.ts; every other commit syncs the WAL itself) may lose to a power loss.
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type { SqliteHandle } from './connection.js';

export const CHECKPOINT_INTERVAL_MS = 200;
/** The server connection's own automatic checkpoint, as a backstop: about 40 MB of WAL. */
export const BACKSTOP_PAGES = 10_000;
/** SQLite's default, restored on the server's connection if the worker fails. */
const DEFAULT_AUTOCHECKPOINT_PAGES = 1_000;

// Plain CommonJS evaluated in the worker: no TypeScript loader is needed there.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.file, { fileMustExist: true });
let reported = false;
const timer = setInterval(() => {
  try {
    db.pragma('wal_checkpoint(PASSIVE)');
    reported = false;
  } catch (e) {
    // Tried again at the next interval; the server hears of it once per spell of failures.
    if (!reported) parentPort.postMessage({ error: String((e && e.message) || e) });
    reported = true;
  }
}, workerData.intervalMs);
parentPort.on('message', () => {
  clearInterval(timer);
  db.close();
  parentPort.close();
});
`;

export interface Checkpointer {
  /** Stops the worker and closes its connection. */
  stop(): Promise<void>;
}

/**
 * Starts checkpointing `conn`'s file on a worker thread and lowers `conn`'s own automatic
 * checkpoint to the backstop; null for an in-memory database. If the worker fails, `conn`
 * checkpoints itself again as SQLite does by default.
 */
export function startCheckpointer(conn: SqliteHandle): Checkpointer | null {
  if (conn.memory || conn.name === ':memory:' || conn.name === '') return null;
  const driver = createRequire(import.meta.url).resolve('better-sqlite3');
  const worker = new Worker(WORKER_SOURCE, {
    eval: true,
    workerData: { file: conn.name, driver, intervalMs: CHECKPOINT_INTERVAL_MS },
  });
  worker.unref(); // never what keeps a process alive
  conn.pragma(`wal_autocheckpoint = ${BACKSTOP_PAGES}`);
  let stopped = false;
  worker.on('message', (m: { error?: string }) => {
    if (m?.error)
      process.emitWarning(`SQLite checkpoint of ${conn.name} failed (tried again every ${CHECKPOINT_INTERVAL_MS} ms): ${m.error}`);
  });
  worker.on('error', (err) => {
    if (stopped) return;
    process.emitWarning(
      `SQLite checkpoint worker for ${conn.name} stopped (${err.message}); the server's connection checkpoints itself again`,
    );
    try {
      conn.pragma(`wal_autocheckpoint = ${DEFAULT_AUTOCHECKPOINT_PAGES}`);
    } catch {
      // The connection is closing: nothing to checkpoint.
    }
  });
  const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
  return {
    async stop() {
      if (stopped) return;
      stopped = true;
      worker.postMessage('stop');
      await exited;
    },
  };
}
