// Embeddings and rerank on llama.cpp: each input (or query and document) in turn on a context the
// slot pool lends, with the exact token count the model reads.
import type { Token } from 'node-llama-cpp';
import { DomainError } from '../../errors.js';
import type { EngineEmbedResult, EngineRerankResult } from '../engine.js';
import { abortReason, type EmbeddingRunner, l2normalise, MAX_KEPT_EMBEDDING_INPUTS, type RankingRunner } from './runners.js';

/**
 * An embedding input's tokens and the length the model reads. The service counts every input
 * before it embeds them (to refuse input_too_long before any work and to place the hold), so the
 * count keeps its tokens for the embedding that follows instead of tokenizing each text twice.
 */
export function embeddingInput(runner: EmbeddingRunner, text: string, keep: boolean): { tokens: Token[]; length: number } {
  const counted = runner.counted.get(text);
  if (counted) {
    if (!keep) runner.counted.delete(text);
    return counted;
  }
  const tokens = runner.model.tokenize(text, false);
  const input = { tokens, length: runner.contexts[0]!.calculateInputLength(tokens) };
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
