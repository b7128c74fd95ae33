// An open-loop load generator: sends requests on a fixed schedule (not waiting for answers), so
// latency includes any queueing the server causes, measured with a sub-millisecond clock.
import { Pool } from 'undici';

export interface OpenLoopResult {
  sent: number;
  ok: number;
  failed: number;
  rps: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  /** Every request's latency (ms), sorted. */
  latencies: number[];
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/**
 * POSTs and resolves the status once the whole response has arrived. Through undici's dispatcher
 * with a handler that keeps the status and hands each piece of the body to `onData` (by default
 * drops it) as it comes: the generator shares this machine's two cores with the server, so it does
 * not turn headers into strings or collect the body it never reads (as `request()` does), and what
 * it costs per response stays small and the same whatever headers the server sends.
 */
export function post(
  pool: Pool,
  path: string,
  headers: Record<string, string>,
  body: string,
  onData?: (chunk: Buffer) => void,
): Promise<number> {
  return new Promise((resolve, reject) => {
    let status = 0;
    pool.dispatch(
      { path, method: 'POST', headers, body },
      {
        onConnect() {},
        onHeaders(statusCode: number) {
          status = statusCode;
          return true;
        },
        onData(chunk: Buffer) {
          onData?.(chunk);
          return true;
        },
        onComplete() {
          resolve(status);
        },
        onError: reject,
      },
    );
  });
}

/** Keep-alive connections to the origin of `url`. */
export const openPool = (url: string) => new Pool(new URL(url).origin, { connections: 128, pipelining: 1, keepAliveTimeout: 30_000 });

/** Sends `rate` requests per second for `seconds` (or, with rate 0, keeps `concurrency` in flight). */
export async function openLoop(opts: {
  url: string;
  body: unknown;
  headers?: Record<string, string>;
  seconds: number;
  rate: number;
  concurrency?: number;
  /** Connections to reuse (kept open afterwards); by default a pool of this run's own. */
  pool?: Pool;
}): Promise<OpenLoopResult> {
  const u = new URL(opts.url);
  const pool = opts.pool ?? openPool(opts.url);
  const body = JSON.stringify(opts.body);
  const headers = { 'content-type': 'application/json', ...opts.headers };
  const latencies: number[] = [];
  let ok = 0;
  let failed = 0;
  let sent = 0;
  const one = async () => {
    sent++;
    const t0 = performance.now();
    try {
      if ((await post(pool, u.pathname, headers, body)) === 200) ok++;
      else failed++;
    } catch {
      failed++;
    }
    latencies.push(performance.now() - t0);
  };
  const start = performance.now();
  const end = start + opts.seconds * 1000;
  const inflight = new Set<Promise<void>>();
  if (opts.rate > 0) {
    const interval = 1000 / opts.rate;
    let next = start;
    while (performance.now() < end) {
      const now = performance.now();
      while (next <= now) {
        const p = one().finally(() => inflight.delete(p));
        inflight.add(p);
        next += interval;
      }
      // Sleep to the next send time (timers are ~1 ms coarse; late sends catch up above), so the
      // generator does not spin a core that the server under test needs.
      await new Promise((r) => setTimeout(r, Math.max(0, next - performance.now())));
    }
  } else {
    const worker = async () => {
      while (performance.now() < end) await one();
    };
    await Promise.all(Array.from({ length: opts.concurrency ?? 32 }, worker));
  }
  await Promise.all(inflight);
  const elapsed = (performance.now() - start) / 1000;
  if (!opts.pool) await pool.close();
  latencies.sort((a, b) => a - b);
  return {
    sent,
    ok,
    failed,
    rps: ok / elapsed,
    p50: percentile(latencies, 50),
    p90: percentile(latencies, 90),
    p99: percentile(latencies, 99),
    max: latencies.at(-1) ?? NaN,
    latencies,
  };
}
