// The llama.cpp engine's vocabulary: its config and catalog entry, the loaded model with its slots
// for each category (a "runner"), one chat call's generation, and small helpers its parts share.
import type {
  ChatWrapper,
  LlamaContext,
  LlamaContextSequence,
  LlamaEmbeddingContext,
  LlamaGrammar,
  LlamaModel,
  LlamaRankingContext,
  Token,
} from 'node-llama-cpp';
import { ConfigError } from '../../errors.js';
import type { EngineChatResult, FinishReason } from '../engine.js';
import type { CompletionText } from './completion-text.js';
import type { SlotPool } from './slot-pool.js';

export interface LlamaCppEngineConfig {
  type: 'llamacpp';
  /** The GGUF file; a relative path is taken from the working directory. */
  file: string;
  /** Where the file comes from (`hf:owner/repo/file.gguf` or an https URL), for `models pull`. */
  source?: string;
  /** Threads per context; default: the machine's cores. */
  threads?: number;
  /** Calls served at once (sequences or contexts); default 1. */
  parallel?: number;
  /** Tokens per context (per sequence); default: what the catalog entry needs. */
  context_size?: number;
  batch_size?: number;
  queue?: { max_depth?: number; max_wait_ms?: number };
  /** Total deadline of one call (its wait in the queue included); default 5 minutes. */
  max_duration_ms?: number;
  /** eager: load at start-up (the default); lazy: on the first call. */
  load?: 'eager' | 'lazy';
  /** Layers offloaded to the GPU by a GPU build: 'auto' (all that fit; the default), 'max', or a count. */
  gpu_layers?: 'auto' | 'max' | number;
}

/** The parts of a catalog entry the engine reads. */
export type LlamaCppModel = { id: string; engine: LlamaCppEngineConfig } & (
  | { category: 'chat'; specifications: { context_window: number; max_output_tokens: number } }
  | { category: 'embedding'; specifications: { max_tokens: number; output_dimensions: number } }
  | { category: 'reranking'; specifications: { max_tokens: number } }
  | { category: 'moderation'; specifications: { max_tokens: number } }
);

export interface LlamaCppLogger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

/** The catalog says something the GGUF contradicts: a configuration error, which stops start-up. */
export class CatalogMismatchError extends ConfigError {
  constructor(message: string) {
    super(message);
    this.name = 'CatalogMismatchError';
  }
}

export type EngineStatus = 'idle' | 'loading' | 'ready' | 'failed' | 'closed';

export const DEFAULT_QUEUE = { max_depth: 16, max_wait_ms: 30_000 } as const;
/** The verdict is at most "unsafe\nS10,S11,S12" (18 characters): a byte tokenizer needs 18 tokens. */
export const VERDICT_MAX_TOKENS = 32;
/** The most inputs one embeddings request carries (the specification's limit). */
export const MAX_KEPT_EMBEDDING_INPUTS = 100;

export const noopLogger: LlamaCppLogger = { info() {}, warn() {}, error() {} };

export function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('This operation was aborted', 'AbortError');
}

/**
 * Reads `tokens` into `seq` a batch at a time, all but the last batch, and returns that last batch
 * for the caller to evaluate with sampling. llama.cpp cannot stop inside a batch and
 * node-llama-cpp's evaluate takes no signal: a long prompt read in one call held its slot to the
 * end however early its caller left (a 6,000-token prompt, about 12 s on a small CPU, while the
 * next caller waited for the only slot); read this way, a caller that goes away frees the slot
 * within one batch. The batches are those the context cuts one call into anyway (its batch size,
 * from the first token), so the model computes the same numbers: a call that is not aborted gets
 * the same tokens.
 */
export async function prefill(seq: LlamaContextSequence, tokens: Token[], signal: AbortSignal): Promise<Token[]> {
  const batch = seq.context.batchSize;
  let start = 0;
  for (; tokens.length - start > batch; start += batch) {
    if (signal.aborted) throw abortReason(signal);
    await seq.evaluateWithoutGeneratingNewTokens(tokens.slice(start, start + batch));
  }
  if (signal.aborted) throw abortReason(signal);
  return start === 0 ? tokens : tokens.slice(start);
}

export function l2normalise(v: readonly number[]): number[] {
  let sum = 0;
  for (const x of v) sum += x * x;
  const norm = Math.sqrt(sum);
  return norm > 0 ? v.map((x) => x / norm) : [...v];
}

export interface ChatRunner {
  kind: 'chat';
  model: LlamaModel;
  context: LlamaContext;
  pool: SlotPool<LlamaContextSequence>;
  wrapper: ChatWrapper;
  /** Tokens that end generation besides the end-of-generation ones (the template's end-of-turn). */
  stopTokens: Set<Token>;
  /** Plain-text stop triggers of the template. */
  stopTexts: string[];
  /** Each token's text, when it does not depend on the tokens before it (./completion-text.ts); else null. */
  pieces: Map<Token, string> | null;
  contextSize: number;
  guard?: { verdict: LlamaGrammar; digits: LlamaGrammar; llama3Headers: boolean };
}

export interface EmbeddingRunner {
  kind: 'embedding';
  model: LlamaModel;
  contexts: LlamaEmbeddingContext[];
  pool: SlotPool<LlamaEmbeddingContext>;
  maxInputTokens: number;
  /** The tokens the model puts around every input ([CLS] and [SEP]): what it reads of a text of none. */
  framing: Token[];
  /** Inputs counted and not yet embedded: their tokens and length (see `embeddingInput`). */
  counted: Map<string, { tokens: Token[]; length: number }>;
}

export interface RankingRunner {
  kind: 'reranking';
  model: LlamaModel;
  contexts: LlamaRankingContext[];
  pool: SlotPool<LlamaRankingContext>;
  maxInputTokens: number;
  /** The tokens the model reads around a query and a document ([CLS], [SEP]…), the same for every pair. */
  framing: number;
}

export type Runner = ChatRunner | EmbeddingRunner | RankingRunner;

/** One chat call's generation: the model's tokens and what becomes of each. */
export interface Generation {
  tokens: AsyncIterable<Token>;
  completion: CompletionText;
  /** Set by `take` when the token it took ends generation. */
  finishReason: FinishReason | undefined;
  /** Takes the next token; returns the text that may be sent now ('' when none). */
  take(token: Token): string;
  /** The end of generation: the text held back (settles the finish reason under a grammar). */
  end(): string;
  usage(): EngineChatResult['usage'];
}
