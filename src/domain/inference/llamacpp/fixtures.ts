// Tiny random-weight GGUF models the project makes itself, so that tests (and anyone offline, through
// `npx tollgate models fixtures`) run the real llama.cpp path without downloading weights:
//   - tiny-chat.gguf:   llama architecture, byte-level BPE (gpt2) tokenizer, a ChatML chat template;
//   - tiny-embed.gguf:  BERT with mean pooling, 64 dimensions, 512 tokens;
//   - tiny-rerank.gguf: BERT with a classifier head and rank pooling;
//   - tiny-guard-unsafe.gguf: the chat model biased towards "u", so a guard verdict comes out "unsafe".
// Seeded and deterministic: the same seed writes the same bytes. Each file is under 0.5 MB and is
// made in a few milliseconds. Random weights produce broken text: only counts, framing and
// determinism are worth asserting on them. The keys and tensors are the ones llama.cpp requires
// (../shared/STACK-NOTES.md, "llama.cpp through node-llama-cpp").
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { gguf, writeGguf, type GgufSpec, type GgufTensor } from './gguf-writer.js';

export const CHATML_TEMPLATE =
  "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}" +
  "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

/** What the fixtures declare, for catalogs and tests. */
export const FIXTURES = {
  chat: { file: 'tiny-chat.gguf', contextLength: 2048, embeddingLength: 64 },
  embedding: { file: 'tiny-embed.gguf', contextLength: 512, dimensions: 64 },
  reranker: { file: 'tiny-rerank.gguf', contextLength: 512 },
  /** The chat fixture leaning hard towards "u": under the verdict grammar it answers "unsafe". */
  guard: { file: 'tiny-guard-unsafe.gguf' },
} as const;

/** Mulberry32: a small seeded generator, enough for reproducible random weights. */
function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

class WeightMaker {
  private readonly random: () => number;
  constructor(seed: number) {
    this.random = seededRandom(seed);
  }
  /** Uniform in [-scale, scale]. */
  uniform(dims: number[], scale: number): Float32Array {
    const n = dims.reduce((a, b) => a * b, 1);
    const data = new Float32Array(n);
    for (let i = 0; i < n; i++) data[i] = (this.random() * 2 - 1) * scale;
    return data;
  }
  /** A linear layer: ggml dims [in, out], scaled by its fan-in. */
  linear(name: string, input: number, output: number): GgufTensor {
    return { name, dims: [input, output], data: this.uniform([input, output], Math.sqrt(3 / input)) };
  }
  constant(name: string, dims: number[], value: number): GgufTensor {
    const data = new Float32Array(dims.reduce((a, b) => a * b, 1));
    data.fill(value);
    return { name, dims, data };
  }
}

/** GPT-2's byte ↔ printable-character table: every byte is one vocabulary character. */
function gpt2ByteCharacters(): string[] {
  const printable: number[] = [];
  for (let b = 33; b <= 126; b++) printable.push(b);
  for (let b = 161; b <= 172; b++) printable.push(b);
  for (let b = 174; b <= 255; b++) printable.push(b);
  const chars: string[] = new Array(256);
  let extra = 0;
  for (let b = 0; b < 256; b++) {
    chars[b] = printable.includes(b) ? String.fromCodePoint(b) : String.fromCodePoint(256 + extra++);
  }
  return chars;
}

/** A few merges so the tokenizer is real BPE; each merged pair is also a token. */
const CHAT_MERGES = ['Ġ t', 'h e', 'i n', 'e r', 'Ġ a', 'o n', 'r e', 'Ġ s', 'e n', 'a t', 'o r', 'Ġt he'];
const TOKEN_NORMAL = 1;
const TOKEN_UNKNOWN = 2;
const TOKEN_CONTROL = 3;

export interface ChatFixtureOptions {
  seed?: number;
  layers?: number;
  embeddingLength?: number;
  contextLength?: number;
  /** Logit biases by token text (the token must exist), e.g. {u: 40} for a guard that leans to "unsafe". */
  logitBias?: Record<string, number>;
}

/** A llama-architecture chat model with a byte-level BPE vocabulary and ChatML control tokens. */
export function chatFixtureSpec(opts: ChatFixtureOptions = {}): GgufSpec {
  const seed = opts.seed ?? 1;
  const layers = opts.layers ?? 2;
  const embd = opts.embeddingLength ?? FIXTURES.chat.embeddingLength;
  const heads = 4;
  const headsKv = 2;
  const headDim = embd / heads;
  const ff = embd * 2;
  const ctx = opts.contextLength ?? FIXTURES.chat.contextLength;

  const tokens = [...gpt2ByteCharacters()];
  for (const merge of CHAT_MERGES) tokens.push(merge.replace(' ', ''));
  const specials = ['<|endoftext|>', '<|im_start|>', '<|im_end|>'];
  const firstSpecial = tokens.length;
  tokens.push(...specials);
  const types = tokens.map((_, i) => (i >= firstSpecial ? TOKEN_CONTROL : TOKEN_NORMAL));
  const imEnd = firstSpecial + 2;

  const w = new WeightMaker(seed);
  const embeddings = w.uniform([embd, tokens.length], 1);
  const tensors: GgufTensor[] = [{ name: 'token_embd.weight', dims: [embd, tokens.length], data: embeddings }];
  for (let i = 0; i < layers; i++) {
    tensors.push(
      w.constant(`blk.${i}.attn_norm.weight`, [embd], 1),
      w.linear(`blk.${i}.attn_q.weight`, embd, embd),
      w.linear(`blk.${i}.attn_k.weight`, embd, headDim * headsKv),
      w.linear(`blk.${i}.attn_v.weight`, embd, headDim * headsKv),
      w.linear(`blk.${i}.attn_output.weight`, embd, embd),
      w.constant(`blk.${i}.ffn_norm.weight`, [embd], 1),
      w.linear(`blk.${i}.ffn_gate.weight`, embd, ff),
      w.linear(`blk.${i}.ffn_up.weight`, embd, ff),
      w.linear(`blk.${i}.ffn_down.weight`, ff, embd),
    );
  }
  tensors.push(w.constant('output_norm.weight', [embd], 1));
  const output = w.uniform([embd, tokens.length], 2);
  // Control tokens get a zero logit while the others spread widely: a random model practically
  // never ends on its own, so max_tokens decides (tests count on it); stop sequences and grammars
  // still end generation.
  for (let t = firstSpecial; t < tokens.length; t++) output.fill(0, t * embd, (t + 1) * embd);
  if (opts.logitBias) {
    // Dimension 0 of every token embedding is a large constant, so it dominates the residual stream
    // and survives the final norm as a roughly constant positive value; a token's weight on it is
    // then a bias on its logit, whatever the context.
    for (let t = 0; t < tokens.length; t++) embeddings[t * embd] = 8;
    for (const [text, bias] of Object.entries(opts.logitBias)) {
      const id = tokens.indexOf(text);
      if (id < 0) throw new Error(`chat fixture: no token ${JSON.stringify(text)} to bias`);
      output[id * embd] = bias / 5;
    }
  }
  tensors.push({ name: 'output.weight', dims: [embd, tokens.length], data: output });

  return {
    metadata: [
      ['general.architecture', gguf.str('llama')],
      ['general.name', gguf.str('tollgate tiny chat (random weights)')],
      ['general.file_type', gguf.u32(0)],
      ['llama.context_length', gguf.u32(ctx)],
      ['llama.embedding_length', gguf.u32(embd)],
      ['llama.block_count', gguf.u32(layers)],
      ['llama.feed_forward_length', gguf.u32(ff)],
      ['llama.attention.head_count', gguf.u32(heads)],
      ['llama.attention.head_count_kv', gguf.u32(headsKv)],
      ['llama.attention.layer_norm_rms_epsilon', gguf.f32(1e-5)],
      ['llama.rope.dimension_count', gguf.u32(headDim)],
      ['llama.rope.freq_base', gguf.f32(10000)],
      ['tokenizer.ggml.model', gguf.str('gpt2')],
      ['tokenizer.ggml.pre', gguf.str('default')],
      ['tokenizer.ggml.tokens', gguf.strings(tokens)],
      ['tokenizer.ggml.token_type', gguf.i32s(types)],
      ['tokenizer.ggml.merges', gguf.strings(CHAT_MERGES)],
      ['tokenizer.ggml.bos_token_id', gguf.u32(firstSpecial)],
      ['tokenizer.ggml.eos_token_id', gguf.u32(imEnd)],
      ['tokenizer.ggml.padding_token_id', gguf.u32(firstSpecial)],
      ['tokenizer.ggml.add_bos_token', gguf.bool(false)],
      ['tokenizer.chat_template', gguf.str(CHATML_TEMPLATE)],
    ],
    tensors,
  };
}

export interface BertFixtureOptions {
  seed?: number;
  layers?: number;
  embeddingLength?: number;
  contextLength?: number;
  /** 1 mean, 2 CLS; the reranker uses 4 (rank). */
  pooling?: 1 | 2;
}

/** A WordPiece vocabulary of single characters: "▁c" starts a word, "c" continues one. */
function bertVocabulary(): { tokens: string[]; types: number[]; ids: { pad: number; unk: number; cls: number; sep: number; mask: number } } {
  const tokens = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'];
  const types = [TOKEN_CONTROL, TOKEN_UNKNOWN, TOKEN_CONTROL, TOKEN_CONTROL, TOKEN_CONTROL];
  const chars: string[] = [];
  for (let c = 0x21; c <= 0x7e; c++) {
    const ch = String.fromCharCode(c);
    if (ch >= 'A' && ch <= 'Z') continue; // WordPiece lowercases its input
    chars.push(ch);
  }
  for (const ch of chars) {
    tokens.push(`▁${ch}`);
    types.push(TOKEN_NORMAL);
  }
  for (const ch of chars) {
    tokens.push(ch);
    types.push(TOKEN_NORMAL);
  }
  return { tokens, types, ids: { pad: 0, unk: 1, cls: 2, sep: 3, mask: 4 } };
}

function bertSpec(name: string, seed: number, opts: BertFixtureOptions, head: 'embedding' | 'rank'): GgufSpec {
  const layers = opts.layers ?? 2;
  const embd = opts.embeddingLength ?? FIXTURES.embedding.dimensions;
  const ctx = opts.contextLength ?? FIXTURES.embedding.contextLength;
  const ff = embd * 2;
  const { tokens, types, ids } = bertVocabulary();
  const w = new WeightMaker(seed);
  const tensors: GgufTensor[] = [
    { name: 'token_embd.weight', dims: [embd, tokens.length], data: w.uniform([embd, tokens.length], 1) },
    { name: 'token_types.weight', dims: [embd, 2], data: w.uniform([embd, 2], 0.1) },
    { name: 'position_embd.weight', dims: [embd, ctx], data: w.uniform([embd, ctx], 0.1) },
    w.constant('token_embd_norm.weight', [embd], 1),
    w.constant('token_embd_norm.bias', [embd], 0),
  ];
  for (let i = 0; i < layers; i++) {
    tensors.push(
      w.linear(`blk.${i}.attn_q.weight`, embd, embd),
      w.constant(`blk.${i}.attn_q.bias`, [embd], 0),
      w.linear(`blk.${i}.attn_k.weight`, embd, embd),
      w.constant(`blk.${i}.attn_k.bias`, [embd], 0),
      w.linear(`blk.${i}.attn_v.weight`, embd, embd),
      w.constant(`blk.${i}.attn_v.bias`, [embd], 0),
      w.linear(`blk.${i}.attn_output.weight`, embd, embd),
      w.constant(`blk.${i}.attn_output.bias`, [embd], 0),
      w.constant(`blk.${i}.attn_output_norm.weight`, [embd], 1),
      w.constant(`blk.${i}.attn_output_norm.bias`, [embd], 0),
      w.linear(`blk.${i}.ffn_up.weight`, embd, ff),
      w.constant(`blk.${i}.ffn_up.bias`, [ff], 0),
      w.linear(`blk.${i}.ffn_down.weight`, ff, embd),
      w.constant(`blk.${i}.ffn_down.bias`, [embd], 0),
      w.constant(`blk.${i}.layer_output_norm.weight`, [embd], 1),
      w.constant(`blk.${i}.layer_output_norm.bias`, [embd], 0),
    );
  }
  const metadata: GgufSpec['metadata'] = [
    ['general.architecture', gguf.str('bert')],
    ['general.name', gguf.str(name)],
    ['general.file_type', gguf.u32(0)],
    ['bert.context_length', gguf.u32(ctx)],
    ['bert.embedding_length', gguf.u32(embd)],
    ['bert.block_count', gguf.u32(layers)],
    ['bert.feed_forward_length', gguf.u32(ff)],
    ['bert.attention.head_count', gguf.u32(4)],
    ['bert.attention.layer_norm_epsilon', gguf.f32(1e-12)],
    ['bert.attention.causal', gguf.bool(false)],
    ['bert.pooling_type', gguf.u32(head === 'rank' ? 4 : (opts.pooling ?? 1))],
    ['tokenizer.ggml.model', gguf.str('bert')],
    ['tokenizer.ggml.tokens', gguf.strings(tokens)],
    ['tokenizer.ggml.token_type', gguf.i32s(types)],
    ['tokenizer.ggml.token_type_count', gguf.u32(2)],
    ['tokenizer.ggml.bos_token_id', gguf.u32(ids.cls)],
    ['tokenizer.ggml.seperator_token_id', gguf.u32(ids.sep)],
    ['tokenizer.ggml.unknown_token_id', gguf.u32(ids.unk)],
    ['tokenizer.ggml.padding_token_id', gguf.u32(ids.pad)],
    ['tokenizer.ggml.mask_token_id', gguf.u32(ids.mask)],
    ['tokenizer.ggml.add_space_prefix', gguf.bool(true)],
  ];
  if (head === 'rank') {
    metadata.push(['bert.classifier.output_labels', gguf.strings(['relevance'])]);
    tensors.push(
      w.linear('cls.weight', embd, embd),
      w.constant('cls.bias', [embd], 0),
      w.linear('cls.output.weight', embd, 1),
      w.constant('cls.output.bias', [1], 0),
    );
  }
  return { metadata, tensors };
}

/** A BERT embedding model (mean pooling by default), 64 dimensions and 512 tokens unless told otherwise. */
export function embeddingFixtureSpec(opts: BertFixtureOptions = {}): GgufSpec {
  return bertSpec('tollgate tiny embedding (random weights)', opts.seed ?? 2, opts, 'embedding');
}

/** A BERT reranker: rank pooling and a one-label classifier head. */
export function rerankerFixtureSpec(opts: Omit<BertFixtureOptions, 'pooling'> = {}): GgufSpec {
  return bertSpec('tollgate tiny reranker (random weights)', opts.seed ?? 3, opts, 'rank');
}

/** Writes the four fixtures into `dir` and returns their paths (the guard is its own file, served as the moderation model). */
export function writeFixtures(dir: string): { chat: string; embedding: string; reranker: string; guard: string } {
  mkdirSync(dir, { recursive: true });
  const files = {
    chat: path.join(dir, FIXTURES.chat.file),
    embedding: path.join(dir, FIXTURES.embedding.file),
    reranker: path.join(dir, FIXTURES.reranker.file),
    guard: path.join(dir, FIXTURES.guard.file),
  };
  writeFileSync(files.chat, writeGguf(chatFixtureSpec()));
  writeFileSync(files.guard, writeGguf(chatFixtureSpec({ logitBias: { u: 40 } })));
  writeFileSync(files.embedding, writeGguf(embeddingFixtureSpec()));
  writeFileSync(files.reranker, writeGguf(rerankerFixtureSpec()));
  return files;
}
