// How the openai engine reads the answers of the non-chat endpoints (embeddings, rerank, moderation),
// counting what an upstream leaves out of its usage.
import type { EngineEmbedResult, EngineModerationResult, EngineRerankResult } from '../engine.js';
import { countTextTokens } from '../tokenizer.js';
import { asRecord, decodeEmbedding, invalidResponse, MODERATION_KEYS, sigmoid, tokenCount } from './upstream.js';

export function embedResultFrom(data: Record<string, unknown>, input: string[]): EngineEmbedResult {
  const items = data.data;
  if (!Array.isArray(items) || items.length !== input.length) throw invalidResponse();
  const embeddings: number[][] = new Array(input.length);
  for (let i = 0; i < items.length; i++) {
    const item = asRecord(items[i]);
    // Servers are expected to keep input order, but `index` is what the format promises.
    const index = item && typeof item.index === 'number' ? item.index : i;
    const vector = item ? decodeEmbedding(item.embedding) : undefined;
    if (
      !vector ||
      !Number.isInteger(index) ||
      index < 0 ||
      index >= input.length ||
      embeddings[index] !== undefined ||
      !vector.every(isFiniteNumber)
    )
      throw invalidResponse();
    embeddings[index] = vector;
  }
  const usage = asRecord(data.usage);
  const promptTokens =
    tokenCount(usage?.prompt_tokens) ?? tokenCount(usage?.total_tokens) ?? input.reduce((n, s) => n + countTextTokens(s), 0);
  return { embeddings, promptTokens };
}

/**
 * The scores of a rerank answer, in [0, 1]: `logits` are put through a sigmoid, `probabilities`
 * taken as they are; `auto` takes a request with any score outside [0, 1] for logits (squashing
 * them all, so the ranking between documents is kept) and one without for probabilities.
 */
export function rerankResultFrom(
  data: Record<string, unknown>,
  query: string,
  documents: string[],
  kind: 'auto' | 'probabilities' | 'logits' = 'auto',
): EngineRerankResult & { guessedLogits: boolean } {
  // TEI's native /rerank answers a bare array of {index, score}; the others wrap {index, relevance_score}.
  const results = Array.isArray(data) ? (data as unknown[]) : data.results;
  if (!Array.isArray(results)) throw invalidResponse();
  const raw: number[] = new Array(documents.length).fill(Number.NaN);
  for (const r of results) {
    const item = asRecord(r);
    const index = item?.index;
    const score = item?.relevance_score ?? item?.score;
    // Each document scored once: a second score for one index is a broken answer, not a correction.
    if (
      typeof index !== 'number' ||
      !Number.isInteger(index) ||
      index < 0 ||
      index >= documents.length ||
      !isFiniteNumber(score) ||
      !Number.isNaN(raw[index])
    ) {
      throw invalidResponse();
    }
    raw[index] = score;
  }
  if (raw.some(Number.isNaN)) throw invalidResponse();
  const outside = raw.some((s) => s < 0 || s > 1);
  // Declared probabilities outside [0, 1] are a broken answer, not scores to pass on.
  if (kind === 'probabilities' && outside) throw invalidResponse();
  const logits = kind === 'logits' || (kind === 'auto' && outside);
  const scores = logits ? raw.map(sigmoid) : raw;
  const usage = asRecord(Array.isArray(data) ? undefined : data.usage);
  const promptTokens =
    tokenCount(usage?.prompt_tokens) ??
    tokenCount(usage?.total_tokens) ??
    // A cross-encoder reads the query once per document.
    countTextTokens(query) * documents.length + documents.reduce((n, d) => n + countTextTokens(d), 0);
  return { scores, promptTokens, guessedLogits: kind === 'auto' && outside };
}

/** One result per input, in order: an answer with another number of results is broken. */
export function moderationResultsFrom(data: Record<string, unknown>, inputs: string[]): EngineModerationResult[] {
  if (!Array.isArray(data.results) || data.results.length !== inputs.length) throw invalidResponse();
  return inputs.map((input, i) => moderationResultFrom(asRecord((data.results as unknown[])[i]), input));
}

function moderationResultFrom(first: Record<string, unknown> | undefined, input: string): EngineModerationResult {
  if (!first) throw invalidResponse();
  // Without a prototype: a category named like one of Object's properties (`constructor`) is a
  // category like any other, not a lookup that finds a function.
  const categories: Record<string, boolean> = Object.create(null);
  const categoryScores: Record<string, number> = Object.create(null);
  for (const key of MODERATION_KEYS) {
    categories[key] = false;
    categoryScores[key] = 0;
  }
  const flags = Object.entries(asRecord(first.categories) ?? {});
  for (const [k, v] of flags) categories[k] = v === true;
  const scored = new Set<string>();
  for (const [k, v] of Object.entries(asRecord(first.category_scores) ?? {})) {
    // No score (null) scores as the flag says, below; one that is not a finite number (text,
    // 1e999 read as Infinity) is a broken answer.
    if (v === null) continue;
    if (!isFiniteNumber(v)) throw invalidResponse();
    categoryScores[k] = v;
    scored.add(k);
    if (!(k in categories)) categories[k] = false;
  }
  // A category reported without a score (the five always shown included) scores as its flag says.
  for (const [k] of flags) if (!scored.has(k)) categoryScores[k] = categories[k] ? 1 : 0;
  const flagged = typeof first.flagged === 'boolean' ? first.flagged : Object.values(categories).some(Boolean);
  return { flagged, categories, categoryScores, promptTokens: countTextTokens(input) };
}

const isFiniteNumber = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);
