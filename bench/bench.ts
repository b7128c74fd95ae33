// `npm run bench`: what tollgate costs, measured in one run on this machine. Prints figures and
// ratios; no pass/fail (the machine is shared and noisy). Sections:
// 1. foundation: non-streamed chat through tollgate (/v1, key auth, GraphQL execution, upstream
//    forwarding; an enterprise account, so usage is recorded but nothing is billed) against the same
//    requests sent straight to the fake upstream, at a fixed offered load and at saturation;
// 2. billing: the same load billed (developer tier from its allocation; a tier paid from the wallet)
//    against the same server without metering, on SQLite and on PostgreSQL;
// then the sections other modules add (rate limits, in-process llama.cpp).
// 3. hostile input: /healthz latency while one key sends oversize requests, against idle.
// 4. content filter: a streamed answer with and without a chat model's input and output filter.
// 5. prototypes: express 5's per-request prototype change, and tollgate's server classes (./express-prototypes.ts).
// 6. gateways: tollgate beside a bare forwarder and the Portkey gateway, interleaved (./gateways.ts).
// BENCH_ONLY picks sections (comma-separated: foundation, billing, hostile, contentfilter, prototypes, gateways,
// llamacpp, ratelimit, dashboard).
// BENCH_SECONDS (default 10) sets the length of each run, BILLING_SLICES (default 5) the billing slices, BENCH_RATE (default 500) the fixed load,
// BENCH_DATABASE_URL (default TEST_DATABASE_URL, else the local PostgreSQL) the PostgreSQL server.
import { benchConfig, createAccount, fmt, startFakeUpstream, startTollgate } from './lib.js';
import { openLoop, openPool, percentile, type OpenLoopResult } from './openloop.js';
import { benchLlamaCpp } from './llamacpp.js';
import { benchRateLimit } from './ratelimit.js';
import { benchHostile } from './hostile.js';
import { benchDashboard } from './dashboard.js';
import { benchContentFilter } from './content-filter.js';
import { benchGateways } from './gateways.js';
import { benchPrototypes } from './express-prototypes.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const RATE = Number(process.env.BENCH_RATE ?? 500);
const CONNECTIONS = 32; // in flight at saturation
const BILLING_SLICES = Number(process.env.BILLING_SLICES ?? 5);

const chatBody = (model: string) => ({ model, max_tokens: 16, messages: [{ role: 'user', content: 'Say something short. #tokens=16' }] });

function row(name: string, r: OpenLoopResult) {
  return `${name.padEnd(40)} ${fmt(r.rps, 0).padStart(7)} req/s  p50 ${fmt(r.p50).padStart(6)} ms  p90 ${fmt(r.p90).padStart(6)} ms  p99 ${fmt(r.p99).padStart(6)} ms  failed ${r.failed}`;
}

async function foundation(upstreamUrl: string) {
  // The server as shipped (in-memory rate limiter), with limits this machine never reaches.
  const tollgate = await startTollgate({
    CONFIG: benchConfig(upstreamUrl, 'tiers:\n  enterprise: { rpm: 100000000, tpm: 100000000000 }\n'),
  });
  try {
    const { apiKey } = await createAccount(tollgate.url, 'enterprise');
    const direct = { url: `${upstreamUrl}/chat/completions`, body: chatBody('upstream-chat') };
    const through = {
      url: `${tollgate.url}/v1/chat/completions`,
      body: chatBody('chat-bench'),
      headers: { authorization: `Bearer ${apiKey}` },
    };
    await openLoop({ ...through, seconds: 2, rate: 300 }); // warm-up: JIT, pools, SQLite pages
    await openLoop({ ...direct, seconds: 1, rate: 300 });

    const fixedDirect = await openLoop({ ...direct, seconds: SECONDS, rate: RATE });
    const fixedThrough = await openLoop({ ...through, seconds: SECONDS, rate: RATE });
    const satDirect = await openLoop({ ...direct, seconds: SECONDS, rate: 0, concurrency: CONNECTIONS });
    const satThrough = await openLoop({ ...through, seconds: SECONDS, rate: 0, concurrency: CONNECTIONS });

    console.log(`\n== foundation: non-streamed chat, fixed offered load ${RATE} req/s`);
    console.log(row('  straight to the upstream', fixedDirect));
    console.log(row('  through tollgate /v1', fixedThrough));
    const addedP50 = fixedThrough.p50 - fixedDirect.p50;
    const addedP99 = fixedThrough.p99 - fixedDirect.p99;
    console.log(
      `  added latency: p50 +${fmt(addedP50)} ms (budget 2 ms), p99 +${fmt(addedP99)} ms (budget 10 ms): ${addedP50 <= 2 && addedP99 <= 10 ? 'within' : 'OVER'}`,
    );
    console.log(`== foundation: saturation, ${CONNECTIONS} requests in flight`);
    console.log(row('  straight to the upstream', satDirect));
    console.log(row('  through tollgate /v1', satThrough));
    console.log(`  throughput ratio tollgate/upstream: ${fmt(satThrough.rps / satDirect.rps, 3)}`);
  } finally {
    await tollgate.stop();
  }
}

// Billing alone: rate limits off (their cost is measured in their own section); the startup tier
// without an allocation is paid wholly from the wallet.
const BILLING_ONLY = `tiers:
  startup: { monthly_tokens: 0, overage: true }
rate_limits: { backend: none }
`;

async function billing(upstreamUrl: string, backend: 'SQLite' | 'PostgreSQL') {
  // Imported here: it reads TEST_DATABASE_URL when it loads, which main() sets first.
  const { createTestDatabase } = await import('../test/support/databases.js');
  const config = benchConfig(upstreamUrl, BILLING_ONLY);
  const variants = [
    { name: 'without metering (baseline)', entry: 'bench/unmetered-main.ts', tier: 'developer' },
    { name: 'billed, developer allocation', entry: 'src/main.ts', tier: 'developer' },
    { name: 'billed, paid from the wallet', entry: 'src/main.ts', tier: 'startup', credit: '100000' },
  ];
  // The three servers run side by side, each on a database of its own, and take turns in short
  // slices (BILLING_SLICES of BENCH_SECONDS ÷ BILLING_SLICES each, in rotating order), so a slow
  // spell of this shared machine falls on all of them alike instead of on one whole run.
  const servers: { name: string; through: Parameters<typeof openLoop>[0]; slices: OpenLoopResult[]; stop(): Promise<void> }[] = [];
  try {
    for (const v of variants) {
      const db = await createTestDatabase(backend);
      const tollgate = await startTollgate({ CONFIG: config, DATABASE_URL: db.url }, v.entry).catch(async (err) => {
        await db.drop();
        throw err;
      });
      const pool = openPool(tollgate.url);
      const stop = async () => {
        await pool.close();
        await tollgate.stop();
        await db.drop();
      };
      servers.push({ name: v.name, through: { url: '', body: null, seconds: 0, rate: 0 }, slices: [], stop });
      const { apiKey } = await createAccount(tollgate.url, v.tier, v.credit);
      servers.at(-1)!.through = {
        url: `${tollgate.url}/v1/chat/completions`,
        body: chatBody('chat-bench'),
        headers: { authorization: `Bearer ${apiKey}` },
        seconds: SECONDS / BILLING_SLICES,
        rate: 0,
        concurrency: CONNECTIONS,
        pool, // kept open across the slices
      };
    }
    for (const s of servers) await openLoop({ ...s.through, seconds: 2, rate: 300 }); // warm-up
    for (let slice = 0; slice < BILLING_SLICES; slice++) {
      for (let i = 0; i < servers.length; i++) {
        const s = servers[(slice + i) % servers.length]!;
        s.slices.push(await openLoop(s.through));
      }
    }
  } finally {
    for (const s of servers) await s.stop();
  }
  const [unbilled, allocation, wallet] = servers.map((s) => combine(s.slices)) as [OpenLoopResult, OpenLoopResult, OpenLoopResult];
  console.log(
    `\n== billing on ${backend}: saturation, ${CONNECTIONS} requests in flight, ${BILLING_SLICES} slices of ${fmt(SECONDS / BILLING_SLICES, 1)} s each, taking turns`,
  );
  for (const [i, s] of servers.entries()) {
    console.log(`${row(`  ${s.name}`, [unbilled, allocation, wallet][i]!)}  (slices: ${s.slices.map((r) => fmt(r.rps, 0)).join(', ')})`);
  }
  const worst = Math.min(allocation.rps, wallet.rps) / unbilled.rps;
  console.log(
    `  ratio to baseline: allocation ${fmt(allocation.rps / unbilled.rps, 3)}, wallet ${fmt(wallet.rps / unbilled.rps, 3)}` +
      (backend === 'SQLite'
        ? ` (goal ≥ 0.90: ${worst >= 0.9 ? 'met' : 'NOT met'})`
        : ` (goal ≥ 0.80: ${worst >= 0.8 ? 'met' : 'NOT met'})`),
  );
}

/** One server's slices as one run: the requests of all, over their time together. */
function combine(slices: OpenLoopResult[]): OpenLoopResult {
  const latencies = slices.flatMap((r) => r.latencies).sort((a, b) => a - b);
  const seconds = slices.reduce((t, r) => t + (r.ok > 0 ? r.ok / r.rps : 0), 0);
  const ok = slices.reduce((t, r) => t + r.ok, 0);
  return {
    sent: slices.reduce((t, r) => t + r.sent, 0),
    ok,
    failed: slices.reduce((t, r) => t + r.failed, 0),
    rps: seconds > 0 ? ok / seconds : 0,
    p50: percentile(latencies, 50),
    p90: percentile(latencies, 90),
    p99: percentile(latencies, 99),
    max: latencies.at(-1) ?? Number.NaN,
    latencies,
  };
}

async function main() {
  process.env.TEST_DATABASE_URL ??= process.env.BENCH_DATABASE_URL ?? 'postgres://root@127.0.0.1:5432/test';
  console.log(`tollgate benchmark: ${SECONDS}s per run, node ${process.version}`);
  // BENCH_ONLY=foundation,billing,llamacpp,ratelimit runs some sections only (default: all).
  const only = new Set(
    (process.env.BENCH_ONLY ?? 'foundation,billing,hostile,contentfilter,prototypes,gateways,llamacpp,ratelimit,dashboard')
      .split(',')
      .map((x) => x.trim()),
  );
  const upstream = await startFakeUpstream();
  try {
    if (only.has('foundation')) await foundation(upstream.url);
    if (only.has('billing')) {
      await billing(upstream.url, 'SQLite');
      await billing(upstream.url, 'PostgreSQL').catch((err) =>
        console.log(`\n== billing on PostgreSQL: skipped (${(err as Error).message})`),
      );
    }
    if (only.has('hostile')) await benchHostile(upstream.url);
    if (only.has('contentfilter')) await benchContentFilter(upstream.url);
  } finally {
    await upstream.stop();
  }
  if (only.has('prototypes')) benchPrototypes();
  if (only.has('gateways')) await benchGateways();
  if (only.has('llamacpp')) await benchLlamaCpp();
  if (only.has('ratelimit')) await benchRateLimit();
  if (only.has('dashboard')) await benchDashboard();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
