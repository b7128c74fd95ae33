// `BENCH_ONLY=contentfilter npm run bench`: what a chat model's content filter adds to a streamed
// answer (README, "Content filtering"). The same streamed requests, one at a time, to one model
// without `safety` and to the same model with an input and output filter whose moderation model
// forwards to the fake upstream's /v1/moderations (a loopback round trip: the filter's own cost,
// not a real guard model's), at the default window (200 characters) and a small one (50). The
// fake answers 150 words (≈ 700 characters) at one word every 2 ms. Measured: time to the first
// content chunk, and to the end of the stream.
import { benchChatModel, benchConfig, createAccount, fmt, startTollgate } from './lib.js';

const REQUESTS = Number(process.env.BENCH_FILTER_REQUESTS ?? 40);

const extra = (upstreamUrl: string) =>
  benchChatModel('chat-filtered', upstreamUrl, '    safety: { moderation_model: guard-bench }\n') +
  benchChatModel('chat-filtered-50', upstreamUrl, '    safety: { moderation_model: guard-bench, window_chars: 50 }\n') +
  `  - id: guard-bench
    category: moderation
    owned_by: bench
    created: 1735689600
    version: "2025-01-01"
    status: active
    capabilities: { moderation: true }
    pricing: { currency: usd }
    specifications: { max_tokens: 4096 }
    engine: { type: openai, base_url: "${upstreamUrl}", model: upstream-guard }
tiers:
  enterprise: { rpm: 100000000, tpm: 100000000000 }
`;

async function timeStream(url: string, apiKey: string, modelId: string): Promise<{ first: number; total: number }> {
  const started = performance.now();
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      model: modelId,
      stream: true,
      max_tokens: 200,
      messages: [{ role: 'user', content: 'Go. #tokens=150 #delay=2' }],
    }),
  });
  let first = Number.NaN;
  const decoder = new TextDecoder();
  let seen = '';
  for await (const part of res.body as unknown as AsyncIterable<Uint8Array>) {
    seen += decoder.decode(part, { stream: true });
    if (Number.isNaN(first) && /"content":"[^"]/.test(seen)) first = performance.now() - started;
  }
  if (!seen.includes('[DONE]')) throw new Error(`stream of ${modelId} did not finish: ${seen.slice(-200)}`);
  return { first, total: performance.now() - started };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

export async function benchContentFilter(upstreamUrl: string) {
  const tollgate = await startTollgate({ CONFIG: benchConfig(upstreamUrl, extra(upstreamUrl)), LOG_LEVEL: 'warn' });
  try {
    const { apiKey } = await createAccount(tollgate.url, 'enterprise');
    const models = ['chat-bench', 'chat-filtered', 'chat-filtered-50'];
    for (const m of models) await timeStream(tollgate.url, apiKey, m); // warm-up
    const results: Record<string, { first: number[]; total: number[] }> = {};
    for (const m of models) results[m] = { first: [], total: [] };
    // Interleaved, so that the machine's noise spreads over all three alike.
    for (let i = 0; i < REQUESTS; i++) {
      for (const m of models) {
        const r = await timeStream(tollgate.url, apiKey, m);
        results[m]!.first.push(r.first);
        results[m]!.total.push(r.total);
      }
    }
    console.log(`\n== content filter: streamed answers of 150 words (≈ 700 characters), ${REQUESTS} each, one at a time`);
    const base = results['chat-bench']!;
    for (const [m, label] of [
      ['chat-bench', 'no filter'],
      ['chat-filtered', 'input + output, window 200'],
      ['chat-filtered-50', 'input + output, window 50'],
    ] as const) {
      const r = results[m]!;
      const added =
        m === 'chat-bench' ? '' : `  (+${fmt(median(r.first) - median(base.first))} ms, +${fmt(median(r.total) - median(base.total))} ms)`;
      console.log(
        `  ${label.padEnd(30)} first content p50 ${fmt(median(r.first)).padStart(7)} ms   whole stream p50 ${fmt(median(r.total)).padStart(7)} ms${added}`,
      );
    }
  } finally {
    await tollgate.stop();
  }
}
