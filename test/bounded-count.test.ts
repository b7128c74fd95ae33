// Token counting bounded by the model: the length bound is sound for the tokenizer served, counting
// in pieces gives the same figure as counting whole on ordinary text, and it stops past the limit.
import { countTokens, decode, encode } from 'gpt-tokenizer/encoding/o200k_base';
import { describe, expect, it } from 'vitest';
import { countWithin, countWords, MAX_CHARS_PER_TOKEN, PIECE_CHARS, provablyOver } from '../src/domain/inference/bounded-count.js';
import { countTextTokens, countTextTokensWithin, truncateTextTokens } from '../src/domain/inference/tokenizer.js';

const prose = (words: number) =>
  Array.from(
    { length: words },
    (_, i) => ['The', 'ledger', 'is', 'append-only,', 'and', 'every', 'hold', 'settles', 'once.\n', 'Réglé'][i % 10],
  ).join(' ');

describe('bounded token counting', () => {
  it('no o200k token covers more characters than MAX_CHARS_PER_TOKEN', () => {
    let longest = 0;
    for (let id = 0; id < 200_000; id++) {
      let text: string;
      try {
        text = decode([id]);
      } catch {
        continue;
      }
      if (text.length > longest) longest = text.length;
    }
    expect(longest).toBeGreaterThan(16);
    expect(longest).toBeLessThanOrEqual(MAX_CHARS_PER_TOKEN);
  });

  it('counts ordinary text in pieces exactly as a whole', async () => {
    const text = prose(3000);
    expect(text.length).toBeGreaterThan(4 * PIECE_CHARS);
    const pieces: string[] = [];
    const total = await countWithin([text], 1_000_000, (p) => {
      pieces.push(p);
      return countTextTokens(p);
    });
    expect(pieces.length).toBeGreaterThan(4);
    expect(pieces.join('')).toBe(text);
    expect(total).toBe(countTextTokens(text));
  });

  it('stops counting soon after the limit is passed', async () => {
    // Few words (so the word bound does not decide), many tokens.
    const text = Array.from({ length: 500 }, (_, i) => `${'xq'.repeat(40)}${i}`).join(' ');
    let chars = 0;
    const total = await countWithin([text], 1000, (p) => {
      chars += p.length;
      return countTextTokens(p);
    });
    expect(total).toBeGreaterThan(1000);
    expect(chars).toBeGreaterThan(0);
    expect(chars).toBeLessThan(text.length / 20);
  });

  it('never cuts a surrogate pair', async () => {
    const text = '😀'.repeat(3000); // no whitespace: cut at the window's end
    const pieces: string[] = [];
    await countWithin([text], 1_000_000, (p) => {
      pieces.push(p);
      return countTextTokens(p);
    });
    expect(pieces.join('')).toBe(text);
    for (const p of pieces) expect(p).toMatch(/^(😀)+$/u);
  });

  it('refuses more words than the limit without counting, and counts when the words fit', async () => {
    expect(countWords(['a b  c\n\td', ' e '], 100)).toBe(5);
    expect(countWords(['w '.repeat(10_000)], 10)).toBe(11); // stops as soon as the limit is passed
    let calls = 0;
    expect(await countWithin([prose(2000)], 1000, () => ++calls)).toBeGreaterThan(1000);
    expect(calls).toBe(0);
    const fits = prose(300);
    expect(await countWithin([fits], 1000, countTextTokens)).toBe(countTextTokens(fits));
    // The bound is sound for o200k: each word costs at least one token.
    expect(countTextTokens(prose(5000))).toBeGreaterThanOrEqual(countWords([prose(5000)], Infinity));
  });

  it('refuses by length alone only what cannot fit', async () => {
    expect(provablyOver(10 * MAX_CHARS_PER_TOKEN, 10)).toBe(false);
    expect(provablyOver(10 * MAX_CHARS_PER_TOKEN + 1, 10)).toBe(true);
    let calls = 0;
    const total = await countWithin(['x'.repeat(10 * MAX_CHARS_PER_TOKEN + 1)], 10, () => ++calls);
    expect(total).toBeGreaterThan(10);
    expect(calls).toBe(0);
  });
});

describe('counting output (text already in hand, of any length)', () => {
  // BPE time grows with the square of an unbroken run: 64,000 characters without whitespace held
  // the event loop for seconds, and 1 MB of them would hold it for hours. These return.
  const MB = 2 ** 20;

  it('counts 1 MB without whitespace, or of whitespace only, piece by piece', () => {
    // o200k has a token for eight 'a's: the count of a run of them is exact.
    expect(countTextTokens('a'.repeat(MB))).toBe(MB / 8);
    for (const run of [' '.repeat(MB), '\n'.repeat(MB), ' \u3000'.repeat(MB / 2), 'é'.repeat(MB)]) {
      const n = countTextTokens(run);
      // No token covers more than MAX_CHARS_PER_TOKEN characters, and each covers at least one.
      expect(n).toBeGreaterThanOrEqual(MB / MAX_CHARS_PER_TOKEN);
      expect(n).toBeLessThanOrEqual(MB);
    }
  });

  it('counts ordinary text exactly, however long', () => {
    const text = prose(20_000);
    expect(countTextTokens(text)).toBe(countTokens(text, { disallowedSpecial: new Set() }));
    expect(countTextTokensWithin(text, 1_000_000)).toBe(countTextTokens(text));
  });

  it('within a limit: exact up to it, and any number above it past it, the work bounded by the limit', () => {
    expect(countTextTokensWithin('a'.repeat(64 * MB), 100)).toBeGreaterThan(100);
    expect(countTextTokensWithin(prose(2_000_000), 100)).toBeGreaterThan(100);
    const fits = prose(300);
    expect(countTextTokensWithin(fits, 1000)).toBe(countTextTokens(fits));
  });

  it('cuts text at a token count without tokenizing what lies beyond it', () => {
    expect(truncateTextTokens('a'.repeat(64 * MB), 10)).toBe('a'.repeat(80));
    const text = prose(3000);
    expect(truncateTextTokens(text, 50)).toBe(decode(encode(text, { disallowedSpecial: new Set() }).slice(0, 50)));
    expect(truncateTextTokens(text, 1_000_000)).toBe(text);
  });
});
