import { benchConfig, createAccount, startFakeUpstream, startReporting, ADMIN_TOKEN } from './lib.js';
import { openLoop, openPool } from './openloop.js';
import { mkdtempSync } from 'node:fs'; import { tmpdir } from 'node:os'; import path from 'node:path';
const HIGH = `tiers:\n  enterprise: { rpm: 100000000, tpm: 100000000000 }\n`;
const upstream = await startFakeUpstream();
const { child, line } = await startReporting('bench/ratelimit-main.ts', [], { NODE_OPTIONS: '--import ' + (process.env.PRELOAD ?? '/tmp/prof/cpuprof2.mjs') + '', RL_BENCH_CONFIGS: JSON.stringify(['none', 'memory'].map((b) => benchConfig(upstream.url, `${HIGH}rate_limits: { backend: ${b} }\n`))), RL_BENCH_DIR: mkdtempSync(path.join(tmpdir(), 'p2-')), ADMIN_TOKEN });
const loads = [];
for (const url of (line as any).urls) { const { apiKey } = await createAccount(url, 'enterprise'); loads.push({ url: `${url}/v1/chat/completions`, body: { model: 'chat-bench', max_tokens: 16, messages: [{ role: 'user', content: 'Say something short. #tokens=16' }] }, headers: { authorization: `Bearer ${apiKey}` }, pool: openPool(url) }); }
for (const l of loads) await openLoop({ ...l, seconds: 3, rate: 0, concurrency: 32 });
for (const i of [0, 1, 0, 1]) {
  child.proc.kill('SIGUSR2');
  const r = await openLoop({ ...loads[i]!, seconds: 5, rate: 0, concurrency: 32 });
  child.proc.kill('SIGUSR2');
  console.log(i, Math.round(r.rps), r.ok);
  await new Promise((res) => setTimeout(res, 500));
}
await child.stop(); await upstream.stop();
