// What the rate limiter costs: saturation throughput of non-streamed chat through tollgate with
// the limiter off, on the in-memory store and on Redis, with limits so high that nothing is refused,
// printed as ratios to the run without it (budget: Redis costs at most 10% of throughput).
// The three settings are three servers in one process (`ratelimit-main.ts`), each built as
// `src/main.ts` builds it, so they share the JIT, the heap and the process's luck on this VM (two
// processes of the same code differ here by up to 10 %, more than the effect measured). The
// machine's noise comes in bursts of seconds, so the settings take turns in short slices
// (BENCH_RL_SLICES rounds, default 16, of BENCH_RL_SLICE_SECONDS, default 1 s; the order rotating)
// and a slice's ratio compares settings measured seconds apart; the process is started afresh
// BENCH_RL_GROUPS times (default 3). The figure is the median over all slices' ratios, with the
// quartiles beside it. REDIS_URL names the Redis (default 127.0.0.1:6379).
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { ADMIN_TOKEN, benchConfig, createAccount, fmt, startFakeUpstream, startReporting, type Child } from './lib.js';
import { openLoop, type OpenLoopResult, openPool } from './openloop.js';

const GROUPS = Number(process.env.BENCH_RL_GROUPS ?? 3);
const SLICES = Number(process.env.BENCH_RL_SLICES ?? 16);
const SLICE_SECONDS = Number(process.env.BENCH_RL_SLICE_SECONDS ?? 1);
const CONNECTIONS = 32;
/** BENCH_RL_VERBOSE=1 prints every slice. */
const VERBOSE = process.env.BENCH_RL_VERBOSE === '1';
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

// High enough that a 2-core machine never reaches them in a minute.
const HIGH_LIMITS = `tiers:
  enterprise: { rpm: 100000000, tpm: 100000000000 }
`;

async function redisReachable(url: string): Promise<boolean> {
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.ping();
    return true;
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}

function row(name: string, r: OpenLoopResult) {
  return `${name.padEnd(24)} ${fmt(r.rps, 0).padStart(7)} req/s  p50 ${fmt(r.p50).padStart(6)} ms  p99 ${fmt(r.p99).padStart(6)} ms  failed ${r.failed}`;
}

/** The q-quantile (0–1) of `xs`, interpolated between neighbours. */
function quantile(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  const at = (s.length - 1) * q;
  const lo = Math.floor(at);
  return s[lo]! + (s[Math.min(lo + 1, s.length - 1)]! - s[lo]!) * (at - lo);
}
const median = (xs: number[]) => quantile(xs, 0.5);

/** CPU milliseconds a process has used (Linux /proc; NaN elsewhere). Less noisy than throughput. */
function cpuMs(pid: number | undefined): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10; // utime + stime, in 100 Hz ticks
  } catch {
    return NaN;
  }
}

/** CPU milliseconds Redis has used (all its clients, so other work on it counts too). */
async function redisCpuMs(client: Redis | undefined): Promise<number> {
  if (!client) return NaN;
  const info = await client.info('cpu');
  const value = (name: string) => Number(new RegExp(`${name}:([\\d.]+)`).exec(info)?.[1] ?? NaN);
  return (value('used_cpu_user') + value('used_cpu_sys')) * 1000;
}

export async function benchRateLimit(): Promise<void> {
  const upstream = await startFakeUpstream();
  const prefix = `tollgate-bench:${randomBytes(4).toString('hex')}:`;
  const withRedis = await redisReachable(REDIS_URL);
  const settings: { name: string; yaml: string; redis?: boolean }[] = [
    { name: 'limiter off', yaml: `${HIGH_LIMITS}rate_limits: { backend: none }\n` },
    { name: 'limiter in memory', yaml: `${HIGH_LIMITS}rate_limits: { backend: memory }\n` },
  ];
  if (process.env.BENCH_RL_AA === '1') settings.splice(1, 1, { ...settings[0]!, name: 'limiter off (again)' });
  if (withRedis)
    settings.push({
      name: 'limiter on Redis',
      yaml: `${HIGH_LIMITS}rate_limits: { backend: redis, key_prefix: "${prefix}" }\n`,
      redis: true,
    });
  // One process serving every setting; an account on each.
  const start = async () => {
    const { child, line } = await startReporting('bench/ratelimit-main.ts', [], {
      RL_BENCH_CONFIGS: JSON.stringify(settings.map((s) => benchConfig(upstream.url, s.yaml))),
      RL_BENCH_DIR: mkdtempSync(path.join(tmpdir(), 'tollgate-bench-db-')),
      ADMIN_TOKEN,
      ...(withRedis ? { REDIS_URL } : {}),
    });
    const urls = (line as { urls: string[] }).urls;
    const loads = [];
    for (const url of urls) {
      const { apiKey } = await createAccount(url, 'enterprise');
      loads.push({
        url: `${url}/v1/chat/completions`,
        body: { model: 'chat-bench', max_tokens: 16, messages: [{ role: 'user', content: 'Say something short. #tokens=16' }] },
        headers: { authorization: `Bearer ${apiKey}` },
        // The same connections for every slice, so slices measure requests, not connecting.
        pool: openPool(url),
      });
    }
    return { ...child, loads };
  };
  let running: Child[] = [];
  try {
    console.log(
      `\nrate-limiter cost: saturation (${CONNECTIONS} in flight); the settings as servers in one process, started ${GROUPS} times, each time taking turns in ${SLICES} rounds of ${SLICE_SECONDS}s slices`,
    );
    if (!withRedis) console.log(`  (Redis at ${REDIS_URL} is unreachable: its run is skipped)`);
    const runs: OpenLoopResult[][] = settings.map(() => []);
    // CPU per answered request: tollgate's process, and Redis's.
    const cpu: { tollgate: number; redis: number }[][] = settings.map(() => []);
    const redis = withRedis ? new Redis(REDIS_URL) : undefined;
    for (let group = 0; group < GROUPS; group++) {
      const server = await start();
      running.push(server);
      for (const load of server.loads) await openLoop({ ...load, seconds: 2, rate: 300 }); // warm-up: JIT, pools, SQLite pages
      for (let round = 0; round < SLICES; round++) {
        for (let turn = 0; turn < settings.length; turn++) {
          const i = (turn + round) % settings.length;
          const [t0, r0] = [cpuMs(server.proc.pid), await redisCpuMs(redis)];
          const r = await openLoop({ ...server.loads[i]!, seconds: SLICE_SECONDS, rate: 0, concurrency: CONNECTIONS });
          const [t1, r1] = [cpuMs(server.proc.pid), await redisCpuMs(redis)];
          runs[i]!.push(r);
          cpu[i]!.push({ tollgate: ((t1 - t0) * 1000) / r.ok, redis: ((r1 - r0) * 1000) / r.ok });
          if (VERBOSE)
            console.log(
              `    group ${group} round ${round} ${settings[i]!.name.padEnd(18)} ${fmt(r.rps, 0).padStart(6)} req/s  tollgate ${fmt(cpu[i]!.at(-1)!.tollgate, 0)} µs/req`,
            );
        }
      }
      for (const load of server.loads) await load.pool.close();
      await server.stop();
      running = [];
    }
    redis?.disconnect();
    const sliceRatios = settings.map((_, i) => runs[i]!.map((r, slice) => r.rps / runs[0]![slice]!.rps));
    const ratios = sliceRatios.map(median);
    settings.forEach((s, i) => {
      const rps = median(runs[i]!.map((r) => r.rps));
      const typical = runs[i]!.reduce((best, r) => (Math.abs(r.rps - rps) < Math.abs(best.rps - rps) ? r : best));
      const spread =
        i === 0
          ? ''
          : `  ratio ${fmt(ratios[i]!, 3)} (quartiles ${fmt(quantile(sliceRatios[i]!, 0.25), 3)}–${fmt(quantile(sliceRatios[i]!, 0.75), 3)})`;
      console.log(`${row(`  ${s.name}`, typical)}${spread}`);
    });
    console.log('  (each row: the median slice; ratio: the median over slices of the ratio to the "limiter off" slice of the same round)');
    console.log('  CPU per request (median of slices):');
    settings.forEach((s, i) => {
      const own = median(cpu[i]!.map((c) => c.tollgate));
      const red = median(cpu[i]!.map((c) => c.redis));
      const delta = own - median(cpu[0]!.map((c) => c.tollgate));
      const extra = i === 0 ? '' : `  (${delta < 0 ? '-' : '+'}${fmt(Math.abs(delta), 0)} µs)`;
      console.log(`    ${s.name.padEnd(20)} tollgate ${fmt(own, 0).padStart(5)} µs${extra}${s.redis ? `, Redis ${fmt(red, 0)} µs` : ''}`);
    });
    if (withRedis) {
      const cost = 1 - ratios[2]!;
      console.log(`  Redis limiter cost: ${fmt(cost * 100, 1)}% of throughput (budget ≤ 10%): ${cost <= 0.1 ? 'within' : 'OVER'}`);
    }
  } finally {
    for (const server of running) await server.stop();
    await upstream.stop();
    if (withRedis) {
      const client = new Redis(REDIS_URL);
      const keys = await client.keys(`${prefix}*`);
      if (keys.length) await client.del(...keys);
      client.disconnect();
    }
  }
}
