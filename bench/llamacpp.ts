// The in-process engine's cost: completion tokens per second and embeddings per second through
// tollgate's /v1 API (a child process serving the project's tiny GGUF fixtures with llama.cpp) against
// node-llama-cpp called directly on the same files (in a child process of its own too), in the same
// run, with the same settings (threads 1, greedy decoding, the same chat template and prompt). Prints both and the ratio; the
// goal is at least 0.95. BENCH_LLAMA_ROUNDS (default 24) sets how many requests each side makes.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fork } from 'node:child_process';
import { writeFixtures } from '../src/fixtures/gguf-fixtures.js';
import { compiled, createAccount, fmt, startTollgate } from './lib.js';
import { EMBED_INPUTS, type Fixtures, MAX_TOKENS, MESSAGES } from './llamacpp-shared.js';

const ROUNDS = Number(process.env.BENCH_LLAMA_ROUNDS ?? 24);
function catalog(files: Fixtures): string {
  const common = 'owned_by: bench\n    created: 1735689600\n    version: "2025-01-01"\n    status: active';
  return `models:
  - id: chat-local
    category: chat
    ${common}
    capabilities: { chat_completion: true, streaming: true, function_calling: false }
    pricing: { input_price_per_million: 0, output_price_per_million: 0, currency: usd }
    specifications: { context_window: 1024, max_output_tokens: ${MAX_TOKENS}, training_cutoff: "2024-10" }
    engine: { type: llamacpp, file: "${files.chat}", threads: 1 }
  - id: embed-local
    category: embedding
    ${common}
    capabilities: { embeddings: true }
    pricing: { price_per_million_tokens: 0, currency: usd }
    specifications: { max_tokens: 512, output_dimensions: 64 }
    engine: { type: llamacpp, file: "${files.embedding}", threads: 1 }
`;
}

interface Rate {
  /** Units over the time of all the side's requests. */
  perSecond: number;
  count: number;
  seconds: number;
  /** The median of the requests' own rates, for a look at the spread. */
  median: number;
  /** The fastest request's rate: the least disturbed by other work on a shared machine. */
  best: number;
}

interface Side {
  /** Runs one request's worth of work; returns how many units (tokens, embeddings) it produced. */
  chat(): Promise<number>;
  embed(): Promise<number>;
  close(): Promise<void>;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

async function once(run: () => Promise<number>): Promise<{ count: number; seconds: number }> {
  const started = process.hrtime.bigint();
  const count = await run();
  return { count, seconds: Number(process.hrtime.bigint() - started) / 1e9 };
}

/**
 * The two sides take turns, request by request (the order alternating), so that the noise of a
 * shared machine falls on both alike; each side's rate is its units over its requests' total time.
 * Also returns the median of the rounds' own ratios (b's rate over a's, the two requests of a round
 * made one after the other): a burst of other work on the machine spoils one round, not the figure.
 */
async function compare(a: () => Promise<number>, b: () => Promise<number>): Promise<[Rate, Rate, number]> {
  await a();
  await b(); // warm-up
  const runs: [{ count: number; seconds: number }[], { count: number; seconds: number }[]] = [[], []];
  for (let i = 0; i < ROUNDS; i++) {
    if (i % 2 === 0) {
      runs[0].push(await once(a));
      runs[1].push(await once(b));
    } else {
      runs[1].push(await once(b));
      runs[0].push(await once(a));
    }
  }
  const rate = (r: { count: number; seconds: number }[]): Rate => {
    const count = r.reduce((n, x) => n + x.count, 0);
    const seconds = r.reduce((n, x) => n + x.seconds, 0);
    const rates = r.map((x) => x.count / x.seconds);
    return { perSecond: count / seconds, count, seconds, median: median(rates), best: Math.max(...rates) };
  };
  const roundRatios = runs[1].map((x, i) => x.count / x.seconds / (runs[0][i]!.count / runs[0][i]!.seconds));
  return [rate(runs[0]), rate(runs[1]), median(roundRatios)];
}

/**
 * node-llama-cpp on its own, in a child process like tollgate (./llamacpp-direct-main.ts): the same
 * prompt, template, sampling and context sizes as the engine uses. Its own process, not the
 * benchmark's: the two sides then differ only in what tollgate adds, not in which process the
 * work runs in (in one process, engine and direct loop take the same time).
 */
async function direct(files: Fixtures): Promise<Side> {
  // Compiled, as tollgate's side is.
  const child = fork(await compiled('bench/llamacpp-direct-main.ts'), [JSON.stringify(files)], {
    execArgv: [],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const next = () =>
    new Promise<{ count?: number }>((resolve, reject) => {
      const onExit = (code: number | null) => reject(new Error(`the direct side exited with ${code}`));
      child.once('exit', onExit);
      child.once('message', (m) => {
        child.off('exit', onExit);
        resolve(m as { count?: number });
      });
    });
  await next(); // ready: models loaded
  const ask = async (run: 'chat' | 'embed') => {
    const reply = next();
    child.send({ run });
    return (await reply).count!;
  };
  return {
    chat: () => ask('chat'),
    embed: () => ask('embed'),
    async close() {
      const done = next().catch(() => ({}));
      child.send({ run: 'close' });
      await done;
    },
  };
}

/** The same work through tollgate's /v1 API (a child process), one request at a time. */
async function throughTollgate(files: Fixtures, dir: string): Promise<Side> {
  const config = path.join(dir, 'config.yaml');
  writeFileSync(config, catalog(files));
  const tollgate = await startTollgate({ CONFIG: config });
  const { apiKey } = await createAccount(tollgate.url, 'enterprise');
  const post = async (route: string, body: unknown) => {
    const res = await fetch(`${tollgate.url}/v1/${route}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` },
      body: JSON.stringify(body),
    });
    if (!res.ok) throw new Error(`${route}: HTTP ${res.status} ${await res.text()}`);
    return res.json() as Promise<{ usage: { completion_tokens?: number }; data?: unknown[] }>;
  };
  return {
    chat: async () =>
      (await post('chat/completions', { model: 'chat-local', messages: MESSAGES, max_tokens: MAX_TOKENS, temperature: 0 })).usage
        .completion_tokens!,
    embed: async () => (await post('embeddings', { model: 'embed-local', input: EMBED_INPUTS, encoding_format: 'float' })).data!.length,
    close: () => tollgate.stop(),
  };
}

export async function benchLlamaCpp(): Promise<void> {
  const dir = mkdtempSync(path.join(tmpdir(), 'tollgate-bench-llama-'));
  let through: Side | undefined;
  let straight: Side | undefined;
  try {
    const files = writeFixtures(dir);
    console.log(`\n== in-process llama.cpp: tiny fixtures, threads 1, greedy, ${ROUNDS} requests per side, taking turns`);
    through = await throughTollgate(files, dir);
    straight = await direct(files);
    const line = (name: string, r: Rate, unit: string) =>
      `  ${name.padEnd(32)} ${fmt(r.perSecond, 0).padStart(8)} ${unit} (${r.count} in ${fmt(r.seconds)} s; requests: median ${fmt(r.median, 0)}, fastest ${fmt(r.best, 0)})`;
    const ratios = (a: Rate, b: Rate, roundMedian: number) => {
      const total = b.perSecond / a.perSecond;
      return (
        `  ratio ${fmt(total, 3)} (goal ≥ 0.95: ${total >= 0.95 ? 'met' : 'NOT met'}); ` +
        `median of the rounds' ratios ${fmt(roundMedian, 3)}; fastest requests' ratio ${fmt(b.best / a.best, 3)}`
      );
    };
    const [chatDirect, chatThrough, chatRounds] = await compare(straight.chat, through.chat);
    console.log(line('node-llama-cpp directly', chatDirect, 'completion tokens/s'));
    console.log(line('tollgate /v1/chat/completions', chatThrough, 'completion tokens/s'));
    console.log(ratios(chatDirect, chatThrough, chatRounds));
    const [embedDirect, embedThrough, embedRounds] = await compare(straight.embed, through.embed);
    console.log(line('node-llama-cpp directly', embedDirect, 'embeddings/s'));
    console.log(line('tollgate /v1/embeddings', embedThrough, 'embeddings/s'));
    console.log(ratios(embedDirect, embedThrough, embedRounds));
  } finally {
    await straight?.close();
    await through?.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
