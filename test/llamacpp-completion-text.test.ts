// The per-token text of a completion (src/domain/inference/llamacpp/completion-text.ts), fed with the
// chat fixture's own byte-level tokenizer and detokenizer: characters split over byte tokens, stop
// sequences across tokens, the tail held back while it may become a stop sequence; and the
// decoding in context that SentencePiece-style vocabularies need.
import { getLlama, LlamaLogLevel, type LlamaModel, type Token } from 'node-llama-cpp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CompletionText, decodesWithoutContext, type Detokenizer } from '../src/domain/inference/llamacpp/completion-text.js';
import { makeFixtureDir } from './support/llamacpp.js';

const fixtures = makeFixtureDir();
let model: LlamaModel;

beforeAll(async () => {
  const llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error });
  model = await llama.loadModel({ modelPath: fixtures.files.chat });
});
afterAll(async () => {
  await model.dispose();
  fixtures.remove();
});

/** Feeds `text`'s tokens one by one; returns each push's output, and what `finish` gave. */
function feed(text: string, stops: string[], cache: 'cached' | 'in context' = 'cached') {
  const completion = new CompletionText(model, stops, cache === 'cached' ? new Map() : null);
  const deltas: string[] = [];
  for (const token of model.tokenize(text, false)) {
    if (completion.stopped) break;
    deltas.push(completion.push(token));
  }
  const tail = completion.finish();
  return { deltas, tail, text: deltas.join('') + tail, completion };
}

describe('the text of a completion, token by token', () => {
  it('the fixture decodes byte tokens alone, so token texts are cached', () => {
    expect(decodesWithoutContext(model)).toBe(true);
  });

  for (const mode of ['cached', 'in context'] as const) {
    it(`holds a character split over byte tokens until it completes, then sends it whole (${mode})`, () => {
      const text = 'café 日本語 🙂 ok';
      // The fixture's vocabulary has single bytes: é takes 2 tokens, 日 3, 🙂 4.
      expect(model.tokenize('🙂', false)).toHaveLength(4);
      const { deltas, text: out } = feed(text, [], mode);
      expect(out).toBe(text);
      for (const d of deltas) expect(d).not.toContain('\uFFFD');
      expect(deltas).toContain('🙂');
      expect(deltas).toContain('日');
      // Three of the emoji's four tokens released nothing.
      const i = deltas.indexOf('🙂');
      expect(deltas.slice(i - 3, i)).toEqual(['', '', '']);
    });
  }

  it('sends the bytes of a character that never completes at the end, as the replacement character', () => {
    const completion = new CompletionText(model, [], new Map());
    const [first] = model.tokenize('日', false);
    expect(completion.push(first!)).toBe('');
    expect(completion.finish()).toBe('\uFFFD');
    expect(completion.tokens).toEqual([first]);
  });

  it('cuts before a stop sequence that spans several tokens and sends nothing after it', () => {
    const { text, completion } = feed('The lighthouse keeper watched the sea all night.', ['keeper', 'never-there']);
    expect(text).toBe('The lighthouse ');
    expect(completion.stopped).toBe(true);
  });

  it('cuts before a stop sequence made of a multi-byte character', () => {
    expect(feed('abc 日本語 def', ['本']).text).toBe('abc 日');
  });

  it('holds back a tail that may become a stop sequence, and sends it once it cannot', () => {
    const { deltas, text, completion } = feed('the sea, the sex, the end', ['sea!', 'sex?']);
    expect(text).toBe('the sea, the sex, the end');
    expect(completion.stopped).toBe(false);
    // The tokens " s", "e", "a", ",": the space goes out, "sea" waits for a fourth character, the comma releases it.
    const i = deltas.indexOf('sea,');
    expect(i).toBeGreaterThan(0);
    expect(deltas.slice(i - 3, i + 1)).toEqual([' ', '', '', 'sea,']);
  });

  it('sends a held tail at the end when generation ends before it could become a stop sequence', () => {
    const { deltas, tail } = feed('wait for <|im_en', ['<|im_end|>']);
    expect(deltas.join('')).toBe('wait for ');
    expect(tail).toBe('<|im_en');
  });

  it('uses the earliest of several stop sequences', () => {
    expect(feed('one two three four', ['four', 'two', 'three']).text).toBe('one ');
  });

  it('counts every token pushed, the stop sequence included', () => {
    const tokens = model.tokenize('one two three', false);
    const { completion } = feed('one two three', ['two']);
    expect(completion.tokens).toEqual(tokens.slice(0, completion.tokens.length));
    expect(model.detokenize(completion.tokens)).toBe('one two');
  });
});

describe('a vocabulary whose tokens read differently after other tokens', () => {
  // SentencePiece with a space prefix: "▁sea" alone loses its space ("sea"), after a token keeps it.
  const words = ['The', ' lighthouse', ' keeper', ' watched', ' the', ' sea'];
  const spm: Detokenizer = {
    tokenize: (text) => {
      const out: Token[] = [];
      for (const m of text.matchAll(/ ?[^ ]+/g)) {
        const i = words.indexOf(m[0]);
        out.push((i >= 0 ? i : words.push(m[0]) - 1) as Token);
      }
      return out;
    },
    detokenize: (tokens, _special, lastTokens = []) => {
      const all = [...lastTokens, ...tokens].map((t) => words[t]!).join('');
      const before = lastTokens.map((t) => words[t]!).join('');
      return (lastTokens.length ? all.slice(before.length) : all.replace(/^ /, '')) as string;
    },
  };

  it('is found by the probe, and its tokens are decoded after the ones before them', () => {
    expect(decodesWithoutContext(spm)).toBe(false);
    const completion = new CompletionText(spm, [], null);
    const text =
      spm
        .tokenize('The lighthouse keeper watched the sea')
        .map((t) => completion.push(t))
        .join('') + completion.finish();
    expect(text).toBe('The lighthouse keeper watched the sea');
  });
});
