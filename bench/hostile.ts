// `npm run bench` section "hostile input": /healthz latency while one key sends oversize chat
// requests (900 KB of random words, under the body limit, far over the context window), against
// the same server idle, in one run. Two attackers: a free-tier key (20 RPM, no balance: after its
// first refusals it is refused before any work) and an enterprise key with limits it never reaches
// (every request is counted, up to the context window, and refused). Goal: p99 within 20 ms of idle.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { benchConfig, createAccount, fmt, ROOT, startTollgate } from './lib.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
/** Requests in flight from the attacking key. */
const ATTACKERS = 4;
const PROBE_EVERY_MS = 20;

function percentile(sorted: number[], p: number) {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]! : Number.NaN;
}

/** GET /healthz every PROBE_EVERY_MS for `seconds`; latencies in ms. */
async function probe(url: string, seconds: number) {
  const latencies: number[] = [];
  const end = performance.now() + seconds * 1000;
  while (performance.now() < end) {
    const started = performance.now();
    const res = await fetch(`${url}/healthz`);
    await res.arrayBuffer();
    latencies.push(performance.now() - started);
    const wait = PROBE_EVERY_MS - (performance.now() - started);
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  }
  latencies.sort((a, b) => a - b);
  return {
    n: latencies.length,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    max: latencies[latencies.length - 1] ?? Number.NaN,
  };
}

/** Runs the attacker (./hostile-attacker.ts) from `apiKey` until `stop` resolves; its answers by status. */
async function attack(url: string, apiKey: string, stop: Promise<void>): Promise<Map<number, number>> {
  const proc = spawn(process.execPath, ['--import', 'tsx', 'bench/hostile-attacker.ts', url, apiKey, String(ATTACKERS)], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  proc.stdout!.on('data', (d) => (out += d));
  await stop;
  proc.kill('SIGTERM');
  await once(proc, 'exit');
  return new Map(Object.entries(JSON.parse(out || '{}') as Record<string, number>).map(([k, v]) => [Number(k), v]));
}

export async function benchHostile(upstreamUrl: string) {
  const tollgate = await startTollgate({
    CONFIG: benchConfig(upstreamUrl, 'tiers:\n  enterprise: { rpm: 100000000, tpm: 100000000000 }\n'),
    LOG_LEVEL: 'warn',
  });
  try {
    const free = await createAccount(tollgate.url, 'free');
    const enterprise = await createAccount(tollgate.url, 'enterprise');
    await probe(tollgate.url, 1); // warm-up
    const runs: [string, string | null][] = [
      ['idle', null],
      ['free key (20 RPM) sending 900 KB', free.apiKey],
      ['idle again', null],
      ['enterprise key sending 900 KB', enterprise.apiKey],
    ];
    console.log(
      `\n== hostile input: /healthz every ${PROBE_EVERY_MS} ms while ${ATTACKERS} oversize chat requests are in flight from one key (900 KB each)`,
    );
    const results: { name: string; attacked: boolean; r: Awaited<ReturnType<typeof probe>>; answered: string }[] = [];
    for (const [name, key] of runs) {
      let stop!: () => void;
      const stopped = new Promise<void>((r) => (stop = r));
      const attacking = key ? attack(tollgate.url, key, stopped) : Promise.resolve(new Map<number, number>());
      if (key) await new Promise((r) => setTimeout(r, 1000)); // the attacker's start-up
      const r = await probe(tollgate.url, SECONDS);
      stop();
      const statuses = await attacking;
      results.push({ name, attacked: Boolean(key), r, answered: [...statuses].map(([st, n]) => `${n}× ${st}`).join(', ') });
    }
    // Against the quieter of the two idle runs: the machine's own noise is not the attacker's doing.
    const baseline = Math.min(...results.filter((x) => !x.attacked).map((x) => x.r.p99));
    for (const { name, attacked, r, answered } of results) {
      const over = r.p99 - baseline;
      const verdict = attacked
        ? `  p99 vs idle ${over >= 0 ? '+' : '−'}${fmt(Math.abs(over))} ms (goal ≤ 20 ms): ${over <= 20 ? 'within' : 'OVER'}`
        : '';
      console.log(
        `  ${name.padEnd(36)} healthz p50 ${fmt(r.p50).padStart(6)} ms  p99 ${fmt(r.p99).padStart(6)} ms  max ${fmt(r.max).padStart(7)} ms  (${r.n} probes)${answered ? `  attacker got ${answered}` : ''}${verdict}`,
      );
    }
  } finally {
    await tollgate.stop();
  }
}
