// Token counting bounded by the model, not by the input. A request's text is refused without any
// tokenizing when its length alone proves it cannot fit (no token covers more than
// MAX_CHARS_PER_TOKEN characters), or its words do (no token spans two words); otherwise it is
// counted in pieces of about PIECE_CHARS
// characters, counting stops as soon as the limit is passed, and the event loop gets a turn every
// few milliseconds, so one request never holds the process for longer than that (BPE time grows
// with the square of an unbroken run's length: a 900 KB word took minutes in one call).
import { setImmediate as nextTurn } from 'node:timers/promises';

/**
 * The most characters one token covers, in any tokenizer served here: o200k's longest token is 128
 * characters (a test reads the vocabulary); llama.cpp vocabularies stay far below. A text longer
 * than `limit × MAX_CHARS_PER_TOKEN` has more than `limit` tokens.
 */
export const MAX_CHARS_PER_TOKEN = 128;

/** Texts up to this long are counted in one call (exactly, as the engine counts them). */
export const PIECE_CHARS = 1024;

/** The most time spent counting between two turns of the event loop. */
const SLICE_MS = 2;

/** Counts one piece of text (an engine's tokenizer). */
export type CountPiece = (text: string) => number | Promise<number>;

/**
 * The words of `texts` (runs of characters between ASCII whitespace), counted until there are more
 * than `stopAbove`. Every tokenizer served here splits words at whitespace (o200k's pre-tokenizer,
 * llama.cpp's BPE and SentencePiece vocabularies, BERT's WordPiece), so no token spans two words:
 * more words than the limit is more tokens than the limit, found by a scan that costs next to
 * nothing beside tokenizing.
 */
export function countWords(texts: readonly string[], stopAbove: number): number {
  let words = 0;
  for (const text of texts) {
    let inWord = false;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      const space = c === 32 || c === 10 || c === 9 || c === 13;
      if (!space && !inWord && ++words > stopAbove) return words;
      inWord = !space;
    }
  }
  return words;
}

/** True when `chars` characters cannot fit in `limit` tokens, whatever the tokenizer. */
export function provablyOver(chars: number, limit: number): boolean {
  return chars > limit * MAX_CHARS_PER_TOKEN;
}

/**
 * The end of the piece that starts at `start`: before the last whitespace in the second half of the
 * window (a tokenizer splits words there too, so the count matches counting the whole), else at the
 * window's end, never between the two halves of a surrogate pair.
 */
export function pieceEnd(text: string, start: number): number {
  const end = start + PIECE_CHARS;
  if (end >= text.length) return text.length;
  for (let i = end; i > start + PIECE_CHARS / 2; i--) {
    const c = text.charCodeAt(i);
    if (c === 32 || c === 10 || c === 9 || c === 13) return i;
  }
  const c = text.charCodeAt(end - 1);
  return c >= 0xd800 && c <= 0xdbff ? end - 1 : end;
}

/**
 * Counts the tokens of `texts` (plus `overhead`) with `countPiece`, piece by piece, and returns as
 * soon as the total passes `limit` (any number above it then). Texts of up to PIECE_CHARS are
 * counted whole; longer ones in pieces cut at whitespace, which counts the same but for words of
 * over PIECE_CHARS characters (a token or so more per cut).
 */
export async function countWithin(texts: readonly string[], limit: number, countPiece: CountPiece, overhead = 0): Promise<number> {
  let total = overhead;
  let chars = 0;
  for (const t of texts) chars += t.length;
  const room = Math.max(0, limit - overhead);
  if (provablyOver(chars, room) || countWords(texts, room) > room) return Math.max(limit + 1, total);
  let sliceStart = performance.now();
  for (const text of texts) {
    for (let start = 0; start < text.length; ) {
      const end = pieceEnd(text, start);
      total += await countPiece(start === 0 && end === text.length ? text : text.slice(start, end));
      if (total > limit) return total;
      start = end;
      if (performance.now() - sliceStart > SLICE_MS) {
        await nextTurn();
        sliceStart = performance.now();
      }
    }
  }
  return total;
}
