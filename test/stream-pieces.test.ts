// A whole answer to a streamed request is replayed in word-sized pieces (chat-wire.ts
// streamPieces), so the relay counts it towards max_tokens as it counts a real stream: the pieces
// must give back the text exactly, whatever it holds, and each must be a whole string of code
// points (no surrogate pair cut in two, which a client would receive as two broken characters).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { streamPieces } from '../src/domain/inference/openai/chat-wire.js';

const loneSurrogateAtEdge = (piece: string) => /^[\udc00-\udfff]|[\ud800-\udbff]$/.test(piece);

describe('streamPieces', () => {
  it('gives back any text exactly, in pieces of at most one word and 64 code points besides the whitespace before it', () => {
    const text = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 400 }),
      fc
        .array(fc.constantFrom('a', 'é', '😀', '中', ' ', '\n', '\r\n', '\t', '\u00a0', 'word', 'x'.repeat(70)), { maxLength: 60 })
        .map((a) => a.join('')),
    );
    fc.assert(
      fc.property(text, (t) => {
        const pieces = streamPieces(t);
        expect(pieces.join('')).toBe(t);
        for (const piece of pieces) {
          expect(piece.length).toBeGreaterThan(0);
          expect([...piece.trimStart()].length).toBeLessThanOrEqual(64);
          expect(/\S\s/.test(piece)).toBe(false);
        }
      }),
      { numRuns: 500 },
    );
  });

  it('never cuts a surrogate pair, even inside a word longer than a piece', () => {
    const text = `${'a'.repeat(63)}😀${'😀'.repeat(70)} tail`;
    const pieces = streamPieces(text);
    expect(pieces.join('')).toBe(text);
    expect(pieces.length).toBeGreaterThan(2);
    expect(pieces.filter(loneSurrogateAtEdge)).toEqual([]);
  });

  it('cuts a sentence into its words, each with the space before it', () => {
    expect(streamPieces('w0 w1  w2\n')).toEqual(['w0', ' w1', '  w2', '\n']);
    expect(streamPieces('')).toEqual([]);
  });
});
