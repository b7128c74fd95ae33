// The Redis rate-limit store (TEST_REDIS_URL; skipped when unset): the shared behaviour
// (test/support/ratelimit-store-suite.ts), atomicity under concurrent admissions from several
// connections, and keys that expire on their own. Each run uses its own key prefix and deletes
// its keys afterwards.
import { randomBytes } from 'node:crypto';
import { connect, createServer as createNetServer, type Socket } from 'node:net';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { RedisRateLimitStore } from '../src/domain/ratelimit/redis-store.js';
import { describeRateLimitStore } from './support/ratelimit-store-suite.js';
import { missing } from './support/requirements.js';

const url = process.env.TEST_REDIS_URL;
const prefix = `tollgate-test:${randomBytes(6).toString('hex')}:`;

async function store(opts: { now?: () => number; correctionDelayMs?: number } = {}) {
  const s = new RedisRateLimitStore(url!, { prefix, now: opts.now, correctionDelayMs: opts.correctionDelayMs ?? 0 });
  if (!(await s.connect())) throw new Error(`cannot connect to TEST_REDIS_URL ${url}`);
  return s;
}

describe.skipIf(missing('Redis (set TEST_REDIS_URL)', Boolean(url)))('Redis rate-limit store', () => {
  afterAll(async () => {
    const admin = new Redis(url!);
    const keys = await admin.keys(`${prefix}*`);
    if (keys.length) await admin.del(...keys);
    await admin.quit();
  });

  describeRateLimitStore('Redis', (clock) => store({ now: clock.now }));

  it('admits exactly the limit when 200 admissions race from four connections', async () => {
    const stores = await Promise.all([store(), store(), store(), store()]);
    const limits = { rpm: 50, tpm: 1_000_000 };
    const results = await Promise.all(Array.from({ length: 200 }, (_, i) => stores[i % 4]!.admit('acct_race', limits, 7, 1_000_000)));
    expect(results.filter((r) => r.admitted)).toHaveLength(50);
    const refused = results.filter((r) => !r.admitted);
    expect(refused).toHaveLength(150);
    for (const r of refused) expect(r.state.rpm.remaining).toBe(0);
    // The tokens of exactly the 50 admitted calls were counted.
    const last = await stores[0]!.admit('acct_race', limits, 7, 1_000_000);
    expect(last.state.tpm.remaining).toBe(1_000_000 - 50 * 7);
    await Promise.all(stores.map((s) => s.close()));
  });

  it('answers the admissions queued behind a call Redis left unanswered at once, not one timeout each', async () => {
    // A proxy to Redis that stops passing anything on when told (a Redis that stalls), counting the scripts sent.
    let stalled = false;
    let scripts = 0;
    const conns = new Set<Socket>();
    const target = new URL(url!);
    const proxy = createNetServer((client) => {
      const upstream = connect(Number(target.port || 6379), target.hostname);
      conns.add(client).add(upstream);
      client.on('data', (d) => {
        if (stalled) scripts += (String(d).match(/EVALSHA|EVAL\r/gi) ?? []).length;
        else upstream.write(d);
      });
      upstream.on('data', (d) => {
        if (!stalled) client.write(d);
      });
      for (const s of [client, upstream]) s.on('error', () => {});
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
    const s = new RedisRateLimitStore(`redis://127.0.0.1:${(proxy.address() as { port: number }).port}`, { prefix, correctionDelayMs: 0 });
    try {
      expect(await s.connect()).toBe(true);
      const limits = { rpm: 1000, tpm: 1_000_000 };
      expect((await s.admit('acct_stall', limits, 1, 1_000_000)).admitted).toBe(true);
      stalled = true;
      // 150 admissions: one call goes out, the rest (over two batches of 64) wait behind it.
      const results = await Promise.allSettled(Array.from({ length: 150 }, () => s.admit('acct_stall', limits, 1, 1_000_000)));
      expect(results.every((r) => r.status === 'rejected')).toBe(true);
      expect(scripts).toBe(1);
    } finally {
      stalled = false;
      await s.close().catch(() => {});
      for (const c of conns) c.destroy();
      await new Promise((r) => proxy.close(r));
    }
  }, 30_000);

  it('admits exactly the TPM limit when large estimates race', async () => {
    const [a, b] = await Promise.all([store(), store()]);
    const limits = { rpm: 10_000, tpm: 100_000 };
    const results = await Promise.all(
      Array.from({ length: 100 }, (_, i) => (i % 2 ? a! : b!).admit('acct_race_tpm', limits, 3_000, 1_000_000)),
    );
    // 33 × 3000 = 99 000 fit; the 34th would make 102 000.
    expect(results.filter((r) => r.admitted)).toHaveLength(33);
    await Promise.all([a!.close(), b!.close()]);
  });

  it("sends a deferred correction with the account's next admission, before deciding it", async () => {
    const s = await store({ correctionDelayMs: 60_000 });
    const limits = { rpm: 100, tpm: 10_000 };
    const first = await s.admit('acct_deferred', limits, 8_000, 100);
    expect(first.admitted).toBe(true);
    if (!first.admitted) return;
    expect(await s.correct(first.ref, limits, -6_000)).toBeNull();
    // Without the correction 8 000 + 7 000 would not fit in 10 000.
    const second = await s.admit('acct_deferred', limits, 7_000, 100);
    expect(second.admitted).toBe(true);
    expect(second.state.tpm.remaining).toBe(1_000);
    await s.close();
  });

  it('flushes deferred corrections on their own when no admission comes', async () => {
    const s = await store({ correctionDelayMs: 60_000 });
    const other = await store();
    const limits = { rpm: 100, tpm: 10_000 };
    const first = await s.admit('acct_flushed', limits, 9_000, 100);
    if (!first.admitted) throw new Error('expected an admission');
    await s.correct(first.ref, limits, -9_000);
    // Another instance does not see it yet…
    expect((await other.admit('acct_flushed', limits, 5_000, 100)).admitted).toBe(false);
    await s.flush();
    // …and does once it is flushed.
    expect((await other.admit('acct_flushed', limits, 5_000, 100)).admitted).toBe(true);
    await Promise.all([s.close(), other.close()]);
  });

  it('decides admissions that waited for the same call one by one, in arrival order, each with its own state', async () => {
    // The first call goes alone; the five that arrive while it is out go together in the next.
    const s = await store({ now: () => 1_800_000_000_500, correctionDelayMs: 60_000 });
    const limits = { rpm: 4, tpm: 10_000 };
    const first = s.admit('acct_batch', limits, 1_000, 2);
    const rest = [
      s.admit('acct_batch', limits, 9_500, 2),
      s.admit('acct_batch', limits, 2_000, 2),
      s.admit('acct_batch', limits, 3_000, 2),
      s.admit('acct_batch', limits, 1, 2),
      s.admit('acct_batch', limits, 1, 2),
    ];
    const [a, b, c, d, e, f] = await Promise.all([first, ...rest]);
    expect([a, b, c, d, e, f].map((r) => r!.admitted)).toEqual([true, false, true, true, true, false]);
    // Each state is the one right after its own decision.
    expect(a!.state.tpm.remaining).toBe(9_000);
    expect(b!.state.tpm.remaining).toBe(9_000);
    expect(c!.state.tpm.remaining).toBe(7_000);
    expect(d!.state.tpm.remaining).toBe(4_000);
    expect([a, c, d, e].map((r) => r!.state.rpm.remaining)).toEqual([3, 2, 1, 0]);
    if (b!.admitted || f!.admitted) throw new Error('expected refusals');
    expect(b!.exceeded).toEqual(['tpm']);
    expect(f!.exceeded).toEqual(['rpm']);
    expect(f!.retryAfter).toBe(61);
    expect(f!.state.rpm.remaining).toBe(0);
    expect(f!.state.tpm.remaining).toBe(10_000 - 1_000 - 2_000 - 3_000 - 1);
    // Hits are counted one by one too; the alert (more than 2) is not reached with 2.
    expect([b!.recentHits, f!.recentHits]).toEqual([1, 2]);
    expect([b!.alert, f!.alert]).toEqual([false, false]);
    // A correction queued meanwhile rides with the next batch and is applied before it.
    if (!c!.admitted) throw new Error('expected an admission');
    await s.correct(c!.ref, limits, -2_000);
    const [g, h, i] = await Promise.all([
      s.admit('acct_batch', limits, 1, 2),
      s.admit('acct_batch', limits, 1, 2),
      s.admit('acct_batch', limits, 1, 2),
    ]);
    expect([g, h, i].map((r) => r!.admitted)).toEqual([false, false, false]);
    expect(g!.state.tpm.remaining).toBe(10_000 - 1_000 - 3_000 - 1);
    // The third and fourth hits: the alert fires once, on the one that crossed the threshold.
    if (g!.admitted || h!.admitted || i!.admitted) throw new Error('expected refusals');
    expect([g!.recentHits, h!.recentHits, i!.recentHits]).toEqual([3, 4, 5]);
    expect([g!.alert, h!.alert, i!.alert]).toEqual([true, false, false]);
    await s.close();
  });

  it('sends a waiting correction on its own once its delay is over, and not when an admission took it first', async () => {
    const s = await store({ correctionDelayMs: 30 });
    const other = await store();
    // The store's one way of sending corrections without an admission.
    const sentAlone = vi.spyOn(
      s as unknown as { sendCorrections: (key: string, limits: unknown, corrections: number[]) => Promise<unknown> },
      'sendCorrections',
    );
    const limits = { rpm: 100, tpm: 10_000 };
    // Taken by the next admission: never sent on its own.
    const a = await s.admit('acct_timer', limits, 4_000, 100);
    if (!a.admitted) throw new Error('expected an admission');
    await s.correct(a.ref, limits, -4_000);
    const b = await s.admit('acct_timer', limits, 9_000, 100);
    expect(b.admitted).toBe(true);
    if (!b.admitted) return;
    // Left waiting: the timer sends it, and another instance sees 9 000 tokens given back.
    await s.correct(b.ref, limits, -9_000);
    await vi.waitFor(async () => expect((await other.admit('acct_timer', limits, 1, 100)).state.tpm.remaining).toBeGreaterThan(9_000), {
      timeout: 5_000,
      interval: 20,
    });
    expect(sentAlone).toHaveBeenCalledTimes(1);
    expect(sentAlone.mock.calls[0]![2]).toEqual([b.ref.slot, -9_000]);
    await Promise.all([s.close(), other.close()]);
  });

  it('does not send a correction on its own while the account keeps admitting within the delay', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    try {
      const s = await store({ correctionDelayMs: 30 });
      const sentAlone = vi.spyOn(
        s as unknown as { sendCorrections: (key: string, limits: unknown, corrections: number[]) => Promise<unknown> },
        'sendCorrections',
      );
      const limits = { rpm: 100, tpm: 10_000 };
      const admitted = async () => {
        const r = await s.admit('acct_busy', limits, 1_000, 100);
        if (!r.admitted) throw new Error('expected an admission');
        return r;
      };
      const a = await admitted();
      await s.correct(a.ref, limits, -500); // waits from 0 ms: the timer is set for 30 ms
      const b = await admitted(); // takes it
      await vi.advanceTimersByTimeAsync(25);
      await s.correct(b.ref, limits, -500); // waits from 25 ms
      await vi.advanceTimersByTimeAsync(10); // 35 ms: the timer finds nothing that has waited 30 ms
      const c = await admitted(); // takes it
      await vi.advanceTimersByTimeAsync(100);
      expect(sentAlone).not.toHaveBeenCalled();
      // Both corrections reached Redis with the admissions: 3 000 counted, 1 000 given back.
      expect(c.state.tpm.remaining).toBe(10_000 - 3_000 + 1_000);
      await s.close();
    } finally {
      vi.useRealTimers();
    }
  });

  it('gives every key it writes a time to live of about a minute, and the alert marker about an hour', async () => {
    const s = await store();
    const limits = { rpm: 1, tpm: 1_000 };
    await s.admit('acct_ttl', limits, 1, 0);
    await s.admit('acct_ttl', limits, 1, 0);
    const admin = new Redis(url!);
    const keys = (await admin.keys(`${prefix}rl:{acct_ttl}*`)).sort();
    expect(keys).toEqual([`${prefix}rl:{acct_ttl}:a`, `${prefix}rl:{acct_ttl}:h`, `${prefix}rl:{acct_ttl}:w`]);
    const [alert, hits, window] = await Promise.all(keys.map((k) => admin.pttl(k)));
    expect(window).toBeGreaterThan(0);
    expect(window).toBeLessThanOrEqual(62_000);
    expect(hits).toBeGreaterThan(0);
    expect(hits).toBeLessThanOrEqual(720_000);
    expect(alert).toBeGreaterThan(0);
    expect(alert).toBeLessThanOrEqual(3_600_000);
    await admin.quit();
    await s.close();
  });

  it('fails its calls at once, without queueing, while Redis cannot be reached', async () => {
    const s = new RedisRateLimitStore('redis://127.0.0.1:1', { prefix });
    expect(await s.connect()).toBe(false);
    await expect(s.admit('acct_down', { rpm: 1, tpm: 1 }, 1, 1)).rejects.toThrow();
    await s.close();
  });
});
