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
// 5. gateways: tollgate beside a bare forwarder and the Portkey gateway, interleaved (./gateways.ts).
// BENCH_ONLY picks sections (comma-separated: foundation, billing, hostile, contentfilter, gateways,
// llamacpp, ratelimit, dashboard).
// BENCH_SECONDS (default 10) sets the length of each run, BILLING_ROUNDS (default 3) the billing rounds, BENCH_RATE (default 500) the fixed load,
// BENCH_DATABASE_URL (default TEST_DATABASE_URL, else the local PostgreSQL) the PostgreSQL server.
import { benchConfig, createAccount, fmt, startFakeUpstream, startTollgate } from './lib.js';
import { openLoop, type OpenLoopResult } from './openloop.js';
import { benchLlamaCpp } from './llamacpp.js';
import { benchRateLimit } from './ratelimit.js';
import { benchHostile } from './hostile.js';
import { benchDashboard } from './dashboard.js';
import { benchContentFilter } from './content-filter.js';
import { benchGateways } from './gateways.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const RATE = Number(process.env.BENCH_RATE ?? 500);
const CONNECTIONS = 32; // in flight at saturation
const BILLING_ROUNDS = Number(process.env.BILLING_ROUNDS ?? 3);

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
  const db = await createTestDatabase(backend);
  const env = { CONFIG: benchConfig(upstreamUrl, BILLING_ONLY), DATABASE_URL: db.url };
  const measure = async (entry: string, tier: string, credit?: string) => {
    const tollgate = await startTollgate(env, entry);
    try {
      const { apiKey } = await createAccount(tollgate.url, tier, credit);
      const through = {
        url: `${tollgate.url}/v1/chat/completions`,
        body: chatBody('chat-bench'),
        headers: { authorization: `Bearer ${apiKey}` },
      };
      await openLoop({ ...through, seconds: 2, rate: 300 });
      return await openLoop({ ...through, seconds: SECONDS, rate: 0, concurrency: CONNECTIONS });
    } finally {
      await tollgate.stop();
    }
  };
  // The three servers take turns, BILLING_ROUNDS times (default 3), so a slow spell of this shared
  // machine falls on all of them; each line is the round with the median throughput.
  const runs = { unbilled: [] as OpenLoopResult[], allocation: [] as OpenLoopResult[], wallet: [] as OpenLoopResult[] };
  try {
    for (let round = 0; round < BILLING_ROUNDS; round++) {
      runs.unbilled.push(await measure('bench/unmetered-main.ts', 'developer'));
      runs.allocation.push(await measure('src/main.ts', 'developer'));
      runs.wallet.push(await measure('src/main.ts', 'startup', '100000'));
    }
  } finally {
    await db.drop();
  }
  const unbilled = median(runs.unbilled);
  const allocation = median(runs.allocation);
  const wallet = median(runs.wallet);
  const each = (rs: OpenLoopResult[]) => rs.map((r) => fmt(r.rps, 0)).join(', ');
  console.log(`\n== billing on ${backend}: saturation, ${CONNECTIONS} requests in flight, median of ${BILLING_ROUNDS} rounds`);
  console.log(`${row('  without metering (baseline)', unbilled)}  (rounds: ${each(runs.unbilled)})`);
  console.log(`${row('  billed, developer allocation', allocation)}  (rounds: ${each(runs.allocation)})`);
  console.log(`${row('  billed, paid from the wallet', wallet)}  (rounds: ${each(runs.wallet)})`);
  const worst = Math.min(allocation.rps, wallet.rps) / unbilled.rps;
  console.log(
    `  ratio to baseline: allocation ${fmt(allocation.rps / unbilled.rps, 3)}, wallet ${fmt(wallet.rps / unbilled.rps, 3)}` +
      (backend === 'SQLite'
        ? ` (goal ≥ 0.90: ${worst >= 0.9 ? 'met' : 'NOT met'})`
        : ` (goal ≥ 0.80: ${worst >= 0.8 ? 'met' : 'NOT met'})`),
  );
}

/** The run with the median throughput. */
function median(results: OpenLoopResult[]): OpenLoopResult {
  return [...results].sort((a, b) => a.rps - b.rps)[Math.floor(results.length / 2)]!;
}

async function main() {
  process.env.TEST_DATABASE_URL ??= process.env.BENCH_DATABASE_URL ?? 'postgres://root@127.0.0.1:5432/test';
  console.log(`tollgate benchmark: ${SECONDS}s per run, node ${process.version}`);
  // BENCH_ONLY=foundation,billing,llamacpp,ratelimit runs some sections only (default: all).
  const only = new Set(
    (process.env.BENCH_ONLY ?? 'foundation,billing,hostile,contentfilter,gateways,llamacpp,ratelimit,dashboard')
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
  if (only.has('gateways')) await benchGateways();
  if (only.has('llamacpp')) await benchLlamaCpp();
  if (only.has('ratelimit')) await benchRateLimit();
  if (only.has('dashboard')) await benchDashboard();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
