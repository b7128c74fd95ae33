// What the rate limiter costs: saturation throughput of non-streamed chat through tollgate with
// the limiter off, on the in-memory store and on Redis, with limits so high that nothing is refused,
// printed as ratios to the run without it (budget: Redis costs at most 10% of throughput).
// The machine's noise comes in bursts of seconds (other work on the host), and two processes of
// the same setting can differ by 10 % (seen here), so: each setting runs in its own process, the
// processes are started afresh BENCH_RL_GROUPS times (default 6), and with each group of processes
// the settings take turns in short slices (BENCH_RL_SLICES per group, default 3, of
// BENCH_RL_SLICE_SECONDS, default 2 s; the order rotating). A slice's ratio compares settings
// measured seconds apart; the figure is the median over all slices' ratios, and the spread (the
// quartiles) is printed beside it. REDIS_URL names the Redis (default 127.0.0.1:6379).
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { benchConfig, createAccount, fmt, startFakeUpstream, startTollgate, type Child } from './lib.js';
import { openLoop, type OpenLoopResult } from './openloop.js';

const GROUPS = Number(process.env.BENCH_RL_GROUPS ?? 6);
const SLICES = Number(process.env.BENCH_RL_SLICES ?? 3);
const SLICE_SECONDS = Number(process.env.BENCH_RL_SLICE_SECONDS ?? 2);
const CONNECTIONS = 32;
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
  const settings: { name: string; yaml: string; env?: Record<string, string> }[] = [
    { name: 'limiter off', yaml: `${HIGH_LIMITS}rate_limits: { backend: none }\n` },
    { name: 'limiter in memory', yaml: `${HIGH_LIMITS}rate_limits: { backend: memory }\n` },
  ];
  if (withRedis) settings.push({ name: 'limiter on Redis', yaml: `${HIGH_LIMITS}rate_limits: { backend: redis, key_prefix: "${prefix}" }\n`, env: { REDIS_URL } });
  const start = async (i: number) => {
    const tollgate = await startTollgate({ CONFIG: benchConfig(upstream.url, settings[i]!.yaml), ...settings[i]!.env });
    const { apiKey } = await createAccount(tollgate.url, 'enterprise');
    const load = {
      url: `${tollgate.url}/v1/chat/completions`,
      body: { model: 'chat-bench', max_tokens: 16, messages: [{ role: 'user', content: 'Say something short. #tokens=16' }] },
      headers: { authorization: `Bearer ${apiKey}` },
    };
    return { ...tollgate, load };
  };
  let running: Child[] = [];
  try {
    console.log(
      `\nrate-limiter cost: saturation (${CONNECTIONS} in flight); ${GROUPS} groups of fresh processes, each with ${SLICES} rounds of ${SLICE_SECONDS}s slices per setting, taking turns`,
    );
    if (!withRedis) console.log(`  (Redis at ${REDIS_URL} is unreachable: its run is skipped)`);
    const runs: OpenLoopResult[][] = settings.map(() => []);
    // CPU per answered request: tollgate's process, and Redis's.
    const cpu: { tollgate: number; redis: number }[][] = settings.map(() => []);
    const redis = withRedis ? new Redis(REDIS_URL) : undefined;
    for (let group = 0; group < GROUPS; group++) {
      const servers = [];
      for (let i = 0; i < settings.length; i++) {
        const server = await start(i);
        running.push(server);
        servers.push(server);
      }
      for (const server of servers) await openLoop({ ...server.load, seconds: 2, rate: 300 }); // warm-up: JIT, pools, SQLite pages
      for (let round = 0; round < SLICES; round++) {
        for (let turn = 0; turn < settings.length; turn++) {
          const i = (turn + round) % settings.length;
          const server = servers[i]!;
          const [t0, r0] = [cpuMs(server.proc.pid), await redisCpuMs(redis)];
          const r = await openLoop({ ...server.load, seconds: SLICE_SECONDS, rate: 0, concurrency: CONNECTIONS });
          const [t1, r1] = [cpuMs(server.proc.pid), await redisCpuMs(redis)];
          runs[i]!.push(r);
          cpu[i]!.push({ tollgate: ((t1 - t0) * 1000) / r.ok, redis: ((r1 - r0) * 1000) / r.ok });
        }
      }
      for (const server of servers) await server.stop();
      running = [];
    }
    redis?.disconnect();
    const sliceRatios = settings.map((_, i) => runs[i]!.map((r, slice) => r.rps / runs[0]![slice]!.rps));
    const ratios = sliceRatios.map(median);
    settings.forEach((s, i) => {
      const rps = median(runs[i]!.map((r) => r.rps));
      const typical = runs[i]!.reduce((best, r) => (Math.abs(r.rps - rps) < Math.abs(best.rps - rps) ? r : best));
      const spread = i === 0 ? '' : `  ratio ${fmt(ratios[i]!, 3)} (quartiles ${fmt(quantile(sliceRatios[i]!, 0.25), 3)}–${fmt(quantile(sliceRatios[i]!, 0.75), 3)})`;
      console.log(`${row(`  ${s.name}`, typical)}${spread}`);
    });
    console.log('  (each row: the median slice; ratio: the median over slices of the ratio to the "limiter off" slice of the same round)');
    console.log('  CPU per request (median of slices):');
    settings.forEach((s, i) => {
      const own = median(cpu[i]!.map((c) => c.tollgate));
      const red = median(cpu[i]!.map((c) => c.redis));
      const extra = i === 0 ? '' : `  (+${fmt(own - median(cpu[0]!.map((c) => c.tollgate)), 0)} µs)`;
      console.log(`    ${s.name.padEnd(20)} tollgate ${fmt(own, 0).padStart(5)} µs${extra}${s.env?.REDIS_URL ? `, Redis ${fmt(red, 0)} µs` : ''}`);
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
