// Token counting bounded by the model: the length bound is sound for the tokenizer served, counting
// in pieces gives the same figure as counting whole on ordinary text, and it stops past the limit.
import { decode } from 'gpt-tokenizer/encoding/o200k_base';
import { describe, expect, it } from 'vitest';
import { countWithin, countWords, MAX_CHARS_PER_TOKEN, PIECE_CHARS, provablyOver } from '../src/domain/inference/bounded-count.js';
import { countTextTokens } from '../src/domain/inference/tokenizer.js';

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
