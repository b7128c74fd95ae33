// Server instances and the sweeper: each server registers itself and beats a heartbeat; holds of
// servers that are gone, or past their expiry, are released charging nothing (at start-up and on
// every sweep), and monthly fees due at a period start are charged.
import { usageDay } from './period.js';
import { exec } from './sql.js';
import { USAGE_EVENT_INSERT } from './billing-types.js';
import { Admission } from './admission.js';
import { findStaleHolds, type StaleHold } from './hold-store.js';
import { beatHeartbeat, forgetInstances, type InstanceRow, listInstances, registerInstance } from './instance-store.js';
import { logBackgroundFailure } from '../../db/unavailable.js';

export abstract class Sweeper extends Admission {
  private beating: Promise<void> | undefined;
  /** The other servers' heartbeats as this one has seen them change. */
  private readonly heartbeats = new HeartbeatWatch(() => this.settings.instance_timeout_seconds * 1000);

  /** Registers this server, releases holds of dead servers and expired holds, starts the sweeper. */
  async start(): Promise<void> {
    const now = this.now();
    await registerInstance(this.db, this.registration(now));
    const released = await this.releaseStaleHolds();
    if (released > 0) this.logger.info({ released }, 'released holds left open by stopped servers or past their expiry');
    await this.chargeDueFees();
    this.sweeper = setInterval(() => void this.sweep(), this.settings.sweep_interval_seconds * 1000);
    // The sweeper never keeps the process alive on its own.
    this.sweeper.unref();
  }

  private registration(now: Date) {
    return { id: this.instanceId, host: this.host, pid: process.pid, now, configPath: this.configPath, tiersDigest: this.tiersDigest };
  }

  /**
   * The running servers on this database (heartbeat within instance_timeout_seconds) whose tiers
   * differ from this process's: the operator CLI asks before it applies a tier's fee or limits.
   */
  async serversWithOtherTiers(): Promise<InstanceRow[]> {
    return (await this.otherServers()).filter((i) => i.tiersDigest !== null && i.tiersDigest !== this.tiersDigest);
  }

  /** The other servers on this database whose heartbeat is recent (within instance_timeout_seconds). */
  async otherServers(): Promise<InstanceRow[]> {
    const now = this.now().getTime();
    const recent = this.settings.instance_timeout_seconds * 1000;
    return (await listInstances(this.db)).filter((i) => i.id !== this.instanceId && now - i.heartbeatAt.getTime() < recent);
  }

  /** Stops the sweeper and unregisters; call after in-flight calls have settled. */
  async stop(): Promise<void> {
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = undefined;
    await this.beating;
    await this.sweeping;
    // Settlements still retrying (a database blip at shutdown) end before the database closes:
    // charged, or given up after SETTLE_RETRY_MS as they would be anyway.
    while (this.settlingNow > 0) await new Promise((r) => setTimeout(r, 20));
    await forgetInstances(this.db, [this.instanceId]).catch(() => {});
  }

  /**
   * One sweeper round: the heartbeat, and (one round at a time) release stale holds and charge
   * fees due at a period start. The heartbeat goes on its own: a release or a fee waiting on a locked row must not stop it, or the
   * other servers would take this one for dead and release the holds of calls it is still serving.
   */
  sweep(): Promise<void> {
    const beat = this.beat();
    this.sweeping ??= (async () => {
      try {
        await beat;
        await this.releaseStaleHolds();
        await this.chargeDueFees();
      } catch (err) {
        logBackgroundFailure(this.logger, err, 'billing sweep failed');
      } finally {
        this.sweeping = undefined;
      }
    })();
    return Promise.all([beat, this.sweeping]).then(() => {});
  }

  /** The heartbeat, one at a time; taken for dead by another server (a long pause), this one registers again. */
  private beat(): Promise<void> {
    this.beating ??= (async () => {
      try {
        const now = this.now();
        if (!(await beatHeartbeat(this.db, this.instanceId, now))) {
          // Our holds were released: come back.
          await registerInstance(this.db, this.registration(now));
        }
      } catch (err) {
        logBackgroundFailure(this.logger, err, 'billing heartbeat failed');
      } finally {
        this.beating = undefined;
      }
    })();
    return this.beating;
  }

  /**
   * Releases, charging nothing, the holds past their expiry and those of servers that are gone:
   * a heartbeat that has not moved for instance_timeout_seconds (HeartbeatWatch), or on this host
   * a process that no longer runs (or whose pid is now ours: our own previous life, restarted).
   * Returns how many.
   */
  async releaseStaleHolds(): Promise<number> {
    const now = this.now();
    const instances = await listInstances(this.db);
    const dead = instances.filter(
      (i) =>
        i.id !== this.instanceId &&
        (this.heartbeats.stopped(i, now.getTime()) || (i.host === this.host && (i.pid === process.pid || !processRuns(i.pid)))),
    );
    const live = instances.filter((i) => !dead.includes(i)).map((i) => i.id);
    this.heartbeats.keepOnly(live);
    const servers = { dead: dead.map((d) => d.id), self: this.instanceId };
    let released = 0;
    for (;;) {
      const stale = await findStaleHolds(this.db, now, servers, 500);
      for (const h of stale) {
        if (await this.releaseHold(h, now)) released++;
      }
      if (stale.length < 500) break;
    }
    await forgetInstances(
      this.db,
      dead.map((d) => d.id),
    );
    return released;
  }

  protected async releaseHold(h: StaleHold, now: Date): Promise<boolean> {
    return this.db.transaction(async (trx) => {
      // The hold row, then the wallet row (consumeHold: the one lock order); charging nothing.
      if (!(await this.wallets.consumeHold(trx, h, { charge: 0n, allocationUsed: 0 }, now))) return false; // settled meanwhile
      await exec(trx, USAGE_EVENT_INSERT, [
        h.id,
        h.accountId,
        h.keyId,
        h.model,
        h.requestId,
        'abandoned',
        0,
        0,
        0,
        0,
        0n,
        'hold_released',
        usageDay(h.period, now),
        now,
        h.endUser,
      ]);
      return true;
    });
  }
}

/**
 * A server is gone when its heartbeat has not moved for instance_timeout_seconds, as this server's
 * own clock measures the wait: the times written are the other server's clock, which may run ahead
 * or behind this one's (a server whose clock runs ahead must not take the others for dead). Only a
 * heartbeat older than an hour by this clock is taken as gone at first sight (a server stopped long
 * ago, found at start-up); clocks an hour apart are a fault of their own.
 */
export class HeartbeatWatch {
  private readonly seen = new Map<string, { beat: number; since: number }>();

  constructor(private readonly timeoutMs: () => number) {}

  stopped(i: InstanceRow, nowMs: number): boolean {
    const beat = i.heartbeatAt.getTime();
    const last = this.seen.get(i.id);
    if (!last || last.beat !== beat) {
      this.seen.set(i.id, { beat, since: nowMs });
      return nowMs - beat > Math.max(this.timeoutMs(), LONG_GONE_MS);
    }
    return nowMs - last.since >= this.timeoutMs();
  }

  /** Servers no longer listed are forgotten. */
  keepOnly(ids: readonly string[]): void {
    const keep = new Set(ids);
    for (const id of this.seen.keys()) if (!keep.has(id)) this.seen.delete(id);
  }
}

const LONG_GONE_MS = 60 * 60 * 1000;

/** Whether a process with this pid runs on this host (EPERM: it runs, as another user). */
function processRuns(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}
