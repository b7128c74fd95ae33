// `npm run bench`: what tollgate costs on top of the engine, measured in one run on this machine.
// Non-streamed chat through tollgate (/v1, key auth, GraphQL execution, upstream forwarding) against
// the same requests sent straight to the same fake upstream, at a fixed offered load and at
// saturation. Prints figures and ratios; no pass/fail, the machine is shared and noisy.
// BENCH_SECONDS (default 10) sets the length of each run.
import { benchConfig, createAccount, fmt, startFakeUpstream, startTollgate } from './lib.js';
import { openLoop, type OpenLoopResult } from './openloop.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const RATE = Number(process.env.BENCH_RATE ?? 500);
const CONNECTIONS = 32; // in flight at saturation

const chatBody = (model: string) => ({ model, max_tokens: 16, messages: [{ role: 'user', content: 'Say something short. #tokens=16' }] });

function row(name: string, r: OpenLoopResult) {
  return `${name.padEnd(34)} ${fmt(r.rps, 0).padStart(7)} req/s  p50 ${fmt(r.p50).padStart(6)} ms  p90 ${fmt(r.p90).padStart(6)} ms  p99 ${fmt(r.p99).padStart(6)} ms  failed ${r.failed}`;
}

async function main() {
  const upstream = await startFakeUpstream();
  const config = benchConfig(upstream.url);
  const tollgate = await startTollgate({ CONFIG: config });
  try {
    // Enterprise: unlimited, so this measures the unbilled path.
    const { apiKey } = await createAccount(tollgate.url, 'enterprise');
    const direct = { url: `${upstream.url}/chat/completions`, body: chatBody('upstream-chat') };
    const through = { url: `${tollgate.url}/v1/chat/completions`, body: chatBody('chat-bench'), headers: { authorization: `Bearer ${apiKey}` } };

    console.log(`tollgate benchmark: non-streamed chat, ${SECONDS}s per run, node ${process.version}`);
    await openLoop({ ...through, seconds: 2, rate: 300 }); // warm-up: JIT, pools, SQLite pages
    await openLoop({ ...direct, seconds: 1, rate: 300 });

    const fixedDirect = await openLoop({ ...direct, seconds: SECONDS, rate: RATE });
    const fixedThrough = await openLoop({ ...through, seconds: SECONDS, rate: RATE });
    const satDirect = await openLoop({ ...direct, seconds: SECONDS, rate: 0, concurrency: CONNECTIONS });
    const satThrough = await openLoop({ ...through, seconds: SECONDS, rate: 0, concurrency: CONNECTIONS });

    console.log(`\nfixed offered load: ${RATE} req/s`);
    console.log(row('  straight to the upstream', fixedDirect));
    console.log(row('  through tollgate /v1', fixedThrough));
    console.log(
      `  added latency: p50 +${fmt(fixedThrough.p50 - fixedDirect.p50)} ms (budget 2 ms), p99 +${fmt(fixedThrough.p99 - fixedDirect.p99)} ms (budget 10 ms)`,
    );
    console.log(`\nsaturation: ${CONNECTIONS} requests in flight`);
    console.log(row('  straight to the upstream', satDirect));
    console.log(row('  through tollgate /v1', satThrough));
    console.log(`  throughput ratio tollgate/upstream: ${fmt(satThrough.rps / satDirect.rps, 3)}`);
    const within = fixedThrough.p50 - fixedDirect.p50 <= 2 && fixedThrough.p99 - fixedDirect.p99 <= 10;
    console.log(`\nfoundation budget at ${RATE} req/s: ${within ? 'within' : 'OVER'} (p50 ≤ +2 ms, p99 ≤ +10 ms)`);
  } finally {
    await tollgate.stop();
    await upstream.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
