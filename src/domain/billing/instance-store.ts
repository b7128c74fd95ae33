// The billing_instances table: the servers that are running, each with its heartbeat. Holds carry
// their server's id as owner, so the holds of a server that stopped beating can be released.
import { date, exec, int, rows, run, type Db } from './sql.js';

export interface InstanceRow {
  id: string;
  host: string;
  pid: number;
  heartbeatAt: Date;
}

export async function registerInstance(db: Db, i: { id: string; host: string; pid: number; now: Date }): Promise<void> {
  await exec(db, 'insert into billing_instances (id, host, pid, started_at, heartbeat_at) values (?, ?, ?, ?, ?)', [
    i.id,
    i.host,
    i.pid,
    i.now,
    i.now,
  ]);
}

/** Beats the heartbeat; false when the row is gone (another server took this one for dead). */
export async function beatHeartbeat(db: Db, id: string, now: Date): Promise<boolean> {
  return (await run(db, 'update billing_instances set heartbeat_at = ? where id = ?', [now, id])) > 0;
}

export async function listInstances(db: Db): Promise<InstanceRow[]> {
  const found = await rows<{ id: string; host: string; pid: unknown; heartbeat_at: unknown }>(
    db,
    'select id, host, pid, heartbeat_at from billing_instances',
  );
  return found.map((r) => ({ id: r.id, host: r.host, pid: int(r.pid), heartbeatAt: date(r.heartbeat_at) }));
}

export async function forgetInstances(db: Db, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return;
  await exec(db, `delete from billing_instances where id in (${ids.map(() => '?').join(', ')})`, [...ids]);
}
