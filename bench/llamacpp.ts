// The in-process engine's cost: completion tokens per second and embeddings per second through
// tollgate's /v1 API (a child process serving the project's tiny GGUF fixtures with llama.cpp) against
// node-llama-cpp called directly on the same files, in the same run, with the same settings
// (threads 1, greedy decoding, the same chat template and prompt). Prints both and the ratio; the
// goal is at least 0.95. BENCH_LLAMA_ROUNDS (default 8) sets how many requests each side makes.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { getLlama, LlamaLogLevel, resolveChatWrapper } from 'node-llama-cpp';
import { writeFixtures } from '../src/domain/inference/llamacpp/fixtures.js';
import { createAccount, fmt, startTollgate } from './lib.js';

const ROUNDS = Number(process.env.BENCH_LLAMA_ROUNDS ?? 8);
const MAX_TOKENS = 256;
const EMBED_BATCH = 32;
const MESSAGES = [{ role: 'user' as const, content: 'Write a long story about a lighthouse keeper and the sea.' }];
const EMBED_INPUTS = Array.from({ length: EMBED_BATCH }, (_, i) => `document number ${i}: a short text about topic ${i % 7} to embed`);

function catalog(files: ReturnType<typeof writeFixtures>): string {
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
  perSecond: number;
  count: number;
  seconds: number;
}

async function timed(run: () => Promise<number>): Promise<Rate> {
  let count = 0;
  const started = process.hrtime.bigint();
  for (let i = 0; i < ROUNDS; i++) count += await run();
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  return { perSecond: count / seconds, count, seconds };
}

/** node-llama-cpp on its own: the same prompt, template and sampling as the engine uses. */
async function direct(files: ReturnType<typeof writeFixtures>) {
  const llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error });
  const model = await llama.loadModel({ modelPath: files.chat });
  const context = await model.createContext({ contextSize: 1024, threads: 1 });
  const sequence = context.getSequence();
  const { contextText } = resolveChatWrapper(model).generateContextState({
    chatHistory: [{ type: 'user', text: MESSAGES[0].content }, { type: 'model', response: [] }],
  });
  const prompt = contextText.tokenize(model.tokenizer);
  const generate = async () => {
    await sequence.eraseContextTokenRanges([{ start: 0, end: sequence.nextTokenIndex }]);
    let n = 0;
    for await (const token of sequence.evaluate(prompt, { temperature: 0, yieldEogToken: true })) {
      if (model.isEogToken(token)) break;
      model.detokenize([token]);
      if (++n >= MAX_TOKENS) break;
    }
    return n;
  };
  await generate(); // warm-up
  const chat = await timed(generate);
  await context.dispose();
  await model.dispose();

  const embedModel = await llama.loadModel({ modelPath: files.embedding });
  const embedContext = await embedModel.createEmbeddingContext({ contextSize: 513, batchSize: 513, threads: 1 });
  const embedAll = async () => {
    for (const text of EMBED_INPUTS) await embedContext.getEmbeddingFor(text);
    return EMBED_INPUTS.length;
  };
  await embedAll();
  const embed = await timed(embedAll);
  await embedContext.dispose();
  await embedModel.dispose();
  return { chat, embed };
}

/** The same work through tollgate's /v1 API, one request at a time. */
async function throughTollgate(files: ReturnType<typeof writeFixtures>, dir: string) {
  const config = path.join(dir, 'config.yaml');
  writeFileSync(config, catalog(files));
  const tollgate = await startTollgate({ CONFIG: config });
  try {
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
    const generate = async () => (await post('chat/completions', { model: 'chat-local', messages: MESSAGES, max_tokens: MAX_TOKENS, temperature: 0 })).usage.completion_tokens!;
    await generate();
    const chat = await timed(generate);
    const embedAll = async () => (await post('embeddings', { model: 'embed-local', input: EMBED_INPUTS })).data!.length;
    await embedAll();
    const embed = await timed(embedAll);
    return { chat, embed };
  } finally {
    await tollgate.stop();
  }
}

export async function benchLlamaCpp(): Promise<void> {
  const dir = mkdtempSync(path.join(tmpdir(), 'tollgate-bench-llama-'));
  try {
    const files = writeFixtures(dir);
    console.log(`\nin-process llama.cpp (tiny fixtures, threads 1, greedy), ${ROUNDS} requests per run`);
    const through = await throughTollgate(files, dir);
    const straight = await direct(files);
    const line = (name: string, r: Rate, unit: string) => `  ${name.padEnd(32)} ${fmt(r.perSecond, 0).padStart(8)} ${unit}  (${r.count} in ${fmt(r.seconds)} s)`;
    console.log(line('node-llama-cpp directly', straight.chat, 'completion tokens/s'));
    console.log(line('tollgate /v1/chat/completions', through.chat, 'completion tokens/s'));
    const chatRatio = through.chat.perSecond / straight.chat.perSecond;
    console.log(`  ratio ${fmt(chatRatio, 3)} (goal ≥ 0.95: ${chatRatio >= 0.95 ? 'met' : 'NOT met'})`);
    console.log(line('node-llama-cpp directly', straight.embed, 'embeddings/s'));
    console.log(line('tollgate /v1/embeddings', through.embed, 'embeddings/s'));
    const embedRatio = through.embed.perSecond / straight.embed.perSecond;
    console.log(`  ratio ${fmt(embedRatio, 3)} (goal ≥ 0.95: ${embedRatio >= 0.95 ? 'met' : 'NOT met'})`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
