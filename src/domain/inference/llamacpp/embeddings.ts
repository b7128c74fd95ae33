// Embeddings and rerank on llama.cpp: each input (or query and document) in turn on a context the
// slot pool lends, with the exact token count the model reads. The count of a text includes the
// tokens the model adds around it (an embedding model's [CLS] and [SEP], a reranker's framing of a
// query-document pair), once: the admission count (the inference service) is that count, and the
// limit the catalog's max_tokens, which the contexts are built to take (./llamacpp-engine.ts).
import { type LlamaModel, LlamaVocabularyType, type Token } from 'node-llama-cpp';
import { DomainError } from '../../errors.js';
import type { EngineEmbedResult, EngineRerankResult } from '../engine.js';
import { abortReason, type EmbeddingRunner, l2normalise, MAX_KEPT_EMBEDDING_INPUTS, type RankingRunner } from './runners.js';

/**
 * The tokens an embedding context puts around an input: the same rules as node-llama-cpp's own
 * (LlamaEmbeddingContext, after llama.cpp's llama_tokenize): [CLS] and [SEP] for a WordPiece
 * vocabulary, BOS and EOS where the model asks for them.
 */
export function embeddingFraming(model: LlamaModel): Token[] {
  const { tokens } = model;
  let begin: Token | null = tokens.shouldPrependBosToken ? tokens.bos : null;
  let end: Token | null = tokens.shouldAppendEosToken ? tokens.eos : null;
  switch (model.vocabularyType) {
    case LlamaVocabularyType.rwkv:
      begin = end = null;
      break;
    case LlamaVocabularyType.wpm:
      begin = tokens.bos;
      end = tokens.sep;
      break;
    case LlamaVocabularyType.ugm:
      begin = null;
      end = tokens.eos;
      break;
  }
  return [begin, end].filter((t): t is Token => t !== null);
}

/**
 * An embedding input's tokens and the length the model reads. The service counts every input
 * before it embeds them (to refuse input_too_long before any work and to place the hold), so the
 * count keeps its tokens for the embedding that follows instead of tokenizing each text twice.
 * A text of no tokens of its own (only whitespace, or characters the tokenizer drops: U+200B, a
 * BOM) is read as the model reads an empty text, its [CLS] and [SEP] alone, as other servers
 * embed it (node-llama-cpp gives an empty vector for no tokens: it was a 502).
 */
export function embeddingInput(runner: EmbeddingRunner, text: string, keep: boolean): { tokens: Token[]; length: number } {
  const counted = runner.counted.get(text);
  if (counted) {
    if (!keep) runner.counted.delete(text);
    return counted;
  }
  const own = runner.model.tokenize(text, false);
  const tokens = own.length > 0 ? own : runner.framing;
  const input = { tokens, length: own.length > 0 ? runner.contexts[0]!.calculateInputLength(own) : runner.framing.length };
  if (keep) {
    // Bounded: the most inputs one request carries, twice over; the oldest goes first.
    if (runner.counted.size >= 2 * MAX_KEPT_EMBEDDING_INPUTS) runner.counted.delete(runner.counted.keys().next().value!);
    runner.counted.set(text, input);
  }
  return input;
}

/** Embeds each input in turn on one of the model's contexts, L2-normalised. */
export async function embedOn(runner: EmbeddingRunner, modelId: string, input: string[], signal: AbortSignal): Promise<EngineEmbedResult> {
  const lease = await runner.pool.acquire(signal);
  try {
    const context = lease.slot;
    const embeddings: number[][] = [];
    let promptTokens = 0;
    for (let i = 0; i < input.length; i++) {
      if (signal.aborted) throw abortReason(signal);
      const { tokens, length } = embeddingInput(runner, input[i]!, false);
      if (length === 0) {
        // Only for a model that adds no token of its own to a text of none (admission refuses it first).
        throw new DomainError('invalid_value', `'input[${i}]' has no tokens for the model '${modelId}' to read.`, { param: 'input' });
      }
      if (length > runner.maxInputTokens) {
        throw new DomainError(
          'input_too_long',
          `'input[${i}]' has ${length} tokens; the model '${modelId}' takes at most ${runner.maxInputTokens}.`,
          { param: 'input' },
        );
      }
      const { vector } = await context.getEmbeddingFor(tokens);
      embeddings.push(l2normalise(vector));
      promptTokens += length;
    }
    return { embeddings, promptTokens };
  } finally {
    lease.release();
  }
}

/** Scores each document against the query with the model's ranking head, in [0, 1]. */
export async function rerankOn(
  runner: RankingRunner,
  modelId: string,
  query: string,
  documents: string[],
  signal: AbortSignal,
): Promise<EngineRerankResult> {
  const lease = await runner.pool.acquire(signal);
  try {
    const context = lease.slot;
    const scores: number[] = [];
    let promptTokens = 0;
    for (let i = 0; i < documents.length; i++) {
      if (signal.aborted) throw abortReason(signal);
      const length = context.calculateInputLength(query, documents[i]!);
      if (length > runner.maxInputTokens) {
        throw new DomainError(
          'input_too_long',
          `The query with 'documents[${i}]' has ${length} tokens; the model '${modelId}' takes at most ${runner.maxInputTokens}.`,
          {
            param: 'documents',
          },
        );
      }
      const score = await context.rank(query, documents[i]!);
      scores.push(Math.min(1, Math.max(0, score)));
      promptTokens += length;
    }
    return { scores, promptTokens };
  } finally {
    lease.release();
  }
}
