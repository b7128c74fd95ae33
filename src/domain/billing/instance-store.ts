// The billing_instances table: the servers that are running, each with its heartbeat. Holds carry
// their server's id as owner, so the holds of a server that stopped beating can be released.
import { createHash } from 'node:crypto';
import { date, exec, int, rows, run, type Db } from './sql.js';

export interface InstanceRow {
  id: string;
  host: string;
  pid: number;
  heartbeatAt: Date;
  /** The config file the server read; null for a server older than migration 0016. */
  configPath: string | null;
  /** tiersDigest of the server's tiers; null for a server older than migration 0016. */
  tiersDigest: string | null;
}

export interface InstanceRegistration {
  id: string;
  host: string;
  pid: number;
  now: Date;
  configPath?: string | null;
  tiersDigest?: string | null;
}

export async function registerInstance(db: Db, i: InstanceRegistration): Promise<void> {
  await exec(
    db,
    'insert into billing_instances (id, host, pid, started_at, heartbeat_at, config_path, tiers_digest) values (?, ?, ?, ?, ?, ?, ?)',
    [i.id, i.host, i.pid, i.now, i.now, i.configPath ?? null, i.tiersDigest ?? null],
  );
}

/**
 * A digest of tiers (every field of every tier, in a fixed order): two processes with the same
 * digest charge the same fees and allocations and enforce the same rate limits.
 */
export function tiersDigest(tiers: Readonly<Record<string, object>>): string {
  const canonical = (v: unknown): unknown =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(
          Object.keys(v)
            .sort()
            .map((k) => [k, canonical((v as Record<string, unknown>)[k])]),
        )
      : v;
  return createHash('sha256')
    .update(JSON.stringify(canonical(tiers)))
    .digest('hex');
}

/** Beats the heartbeat; false when the row is gone (another server took this one for dead). */
export async function beatHeartbeat(db: Db, id: string, now: Date): Promise<boolean> {
  return (await run(db, 'update billing_instances set heartbeat_at = ? where id = ?', [now, id])) > 0;
}

export async function listInstances(db: Db): Promise<InstanceRow[]> {
  const found = await rows<{
    id: string;
    host: string;
    pid: unknown;
    heartbeat_at: unknown;
    config_path: string | null;
    tiers_digest: string | null;
  }>(db, 'select id, host, pid, heartbeat_at, config_path, tiers_digest from billing_instances');
  return found.map((r) => ({
    id: r.id,
    host: r.host,
    pid: int(r.pid),
    heartbeatAt: date(r.heartbeat_at),
    configPath: r.config_path,
    tiersDigest: r.tiers_digest,
  }));
}

export async function forgetInstances(db: Db, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return;
  await exec(db, `delete from billing_instances where id in (${ids.map(() => '?').join(', ')})`, [...ids]);
}
