// Embeddings and reranking through the in-process engine on the BERT fixtures, and the rerank
// use case (sorting, top_n, stability) through the inference service on top of it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ModelConfig } from '../src/config.js';
import { Catalog } from '../src/domain/catalog/catalog.js';
import { InferenceService } from '../src/domain/inference/inference-service.js';
import type { LlamaCppEngine } from '../src/domain/inference/llamacpp/llamacpp-engine.js';
import { llamaEngine, makeFixtureDir, neverAborted } from './support/llamacpp.js';

const fixtures = makeFixtureDir();
let embed: LlamaCppEngine;
let rerank: LlamaCppEngine;

beforeAll(async () => {
  embed = llamaEngine('embedding', { file: fixtures.files.embedding });
  rerank = llamaEngine('reranking', { file: fixtures.files.reranker });
  await Promise.all([embed.load(), rerank.load()]);
});
afterAll(async () => {
  await Promise.all([embed.close(), rerank.close()]);
  fixtures.remove();
});

const norm = (v: number[]) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));

const caller = { accountId: 'acct_test', requestId: 'req' };
/** A catalog entry for a fixture served by `engine`, and the inference service on it. */
function serviceOn(engine: LlamaCppEngine, category: 'embedding' | 'reranking') {
  const model = {
    id: `${category}-local`,
    category,
    owned_by: 'tests',
    created: 0,
    version: '1',
    status: 'active',
    capabilities: category === 'embedding' ? { embeddings: true } : { rerank: true },
    pricing: { price_per_million_tokens: 0, currency: 'usd' },
    specifications: category === 'embedding' ? { max_tokens: 512, output_dimensions: 64 } : { max_tokens: 512, max_documents: 100 },
    engine: { type: 'llamacpp', file: category === 'embedding' ? fixtures.files.embedding : fixtures.files.reranker },
  } as unknown as ModelConfig;
  return new InferenceService(new Catalog([model]), { get: () => engine });
}

/** Whitespace and characters the model's tokenizer drops: no token of their own. */
const BLANK = ['   ', '\n', '\t', '\u200b', '\u3000', '\u00a0', '\ufeff'];

describe('embeddings on the in-process engine', () => {
  it('have the declared dimensions and unit norm, one per input in input order', async () => {
    const inputs = ['green tea', 'a cup of coffee', 'green tea'];
    const { embeddings } = await embed.embed(inputs, neverAborted());
    expect(embeddings).toHaveLength(3);
    for (const e of embeddings) {
      expect(e).toHaveLength(64);
      expect(norm(e)).toBeCloseTo(1, 6);
    }
    expect(embeddings[2]).toEqual(embeddings[0]);
    expect(embeddings[1]).not.toEqual(embeddings[0]);
  });

  it('are the same for the same text across calls', async () => {
    const a = await embed.embed(['deterministic?'], neverAborted());
    const b = await embed.embed(['deterministic?'], neverAborted());
    expect(b.embeddings[0]).toEqual(a.embeddings[0]);
  });

  it("count what the model reads: each text's tokens with [CLS] and [SEP]", async () => {
    const texts = ['hello world', 'x'];
    const counts = await Promise.all(texts.map((t) => embed.countTokens(t)));
    // "hello world" is 10 characters without the space in a character vocabulary, plus [CLS] and [SEP].
    expect(counts).toEqual([12, 3]);
    const { promptTokens } = await embed.embed(texts, neverAborted());
    expect(promptTokens).toBe(15);
  });

  it('refuses an input longer than the model reads', async () => {
    await expect(embed.embed(['a'.repeat(600)], neverAborted())).rejects.toMatchObject({ code: 'input_too_long' });
  });

  it('embeds a text the same whether or not it was counted first (the count keeps its tokens for the embedding)', async () => {
    const texts = ['counted first', 'not counted', 'counted first', 'many '.repeat(40)];
    const alone = await embed.embed(texts, neverAborted());
    for (const t of [texts[0]!, texts[0]!, texts[3]!]) await embed.countTokens(t);
    const afterCount = await embed.embed(texts, neverAborted());
    expect(afterCount).toEqual(alone);
    // Counting many texts that are never embedded keeps the engine serving the same.
    for (let i = 0; i < 500; i++) await embed.countTokens(`never embedded ${i}`);
    expect(await embed.embed(texts, neverAborted())).toEqual(alone);
    await expect(embed.countTokens('a'.repeat(600))).resolves.toBe(602);
    await expect(embed.embed(['a'.repeat(600)], neverAborted())).rejects.toMatchObject({ code: 'input_too_long' });
  });
});

describe('a text of no tokens of its own', () => {
  it('is embedded as the model reads an empty text, its [CLS] and [SEP]: a unit vector, 2 tokens', async () => {
    for (const t of BLANK) await expect(embed.countTokens(t)).resolves.toBe(2);
    const { embeddings, promptTokens } = await embed.embed(BLANK, neverAborted());
    expect(embeddings).toHaveLength(BLANK.length);
    for (const e of embeddings) {
      expect(e).toHaveLength(64);
      expect(norm(e)).toBeCloseTo(1, 6);
      expect(e).toEqual(embeddings[0]);
    }
    expect(promptTokens).toBe(2 * BLANK.length);
    expect(embeddings[0]).not.toEqual((await embed.embed(['x'], neverAborted())).embeddings[0]);
  });

  it('is refused with 400 invalid_value naming it when the model adds no tokens of its own either', async () => {
    // A model that reads no [CLS] or [SEP]: its count of a text is its characters other than whitespace.
    const bare = { countTokens: (t: string) => t.replace(/[\s\u200b\ufeff]/g, '').length } as unknown as LlamaCppEngine;
    const service = serviceOn(bare, 'embedding');
    for (const blank of BLANK) {
      await expect(
        service.createEmbeddings(caller, { model: 'embedding-local', input: ['text', blank] }, neverAborted()),
      ).rejects.toMatchObject({ code: 'invalid_value', param: 'input', message: expect.stringContaining("'input[1]'") });
    }
  });

  it('among 100 inputs through the inference service: every input embedded and billed, no 5xx', async () => {
    const service = serviceOn(embed, 'embedding');
    for (const blank of BLANK) {
      const input = Array.from({ length: 100 }, (_, i) => (i === 37 ? blank : `text ${i}`));
      const r = await service.createEmbeddings(caller, { model: 'embedding-local', input }, neverAborted());
      expect(r.data).toHaveLength(100);
      expect(r.data[37]!.embedding).toHaveLength(64);
      let counted = 0;
      for (const text of input) counted += await embed.countTokens(text);
      expect(r.usage.promptTokens).toBe(counted);
    }
  });
});

describe('rerank on the in-process engine', () => {
  it('scores each document in [0, 1], in input order, the same on every call', async () => {
    const docs = ['coffee beans', 'green tea leaves', 'a teapot', 'xyz'];
    const a = await rerank.rerank('green tea', docs, neverAborted());
    const b = await rerank.rerank('green tea', docs, neverAborted());
    expect(a.scores).toHaveLength(docs.length);
    for (const s of a.scores) {
      expect(s).toBeGreaterThanOrEqual(0);
      expect(s).toBeLessThanOrEqual(1);
    }
    expect(b.scores).toEqual(a.scores);
    // Each document is scored alone with the query: its score does not depend on its neighbours.
    const alone = await rerank.rerank('green tea', [docs[2]!], neverAborted());
    expect(alone.scores[0]).toBe(a.scores[2]);
  });

  it('counts the tokens of every query-document pair as the model reads it: the framing once per pair', async () => {
    const { promptTokens } = await rerank.rerank('tea', ['ab', 'c'], neverAborted());
    // A text's count is what the model reads of it with a pair's framing ([CLS] q [SEP] d here); the empty text's is that framing.
    const framing = await rerank.countTokens('');
    expect(framing).toBe(2);
    const count = (t: string) => rerank.countTokens(t) as Promise<number>;
    expect(await count('tea')).toBe(framing + 3);
    const pair = async (d: string) => (await count('tea')) + (await count(d)) - framing;
    expect(promptTokens).toBe((await pair('ab')) + (await pair('c')));
    expect(promptTokens).toBe(2 * framing + 3 * 2 + 2 + 1);
  });

  it('through the inference service: sorted by score, top_n respected, ties kept in input order', async () => {
    const service = serviceOn(rerank, 'reranking');
    const docs = ['coffee beans', 'green tea leaves', 'a teapot', 'coffee beans', 'xyz'];
    const all = await service.rerank(caller, { model: 'reranking-local', query: 'green tea', documents: docs }, neverAborted());
    const scores = all.results.map((r) => r.relevanceScore);
    expect([...scores].sort((x, y) => y - x)).toEqual(scores);
    expect(all.results.map((r) => r.index).sort()).toEqual([0, 1, 2, 3, 4]);
    // The duplicate document has the same score: the earlier index comes first.
    const dupes = all.results.filter((r) => r.document?.text === 'coffee beans').map((r) => r.index);
    expect(dupes).toEqual([0, 3]);
    const top = await service.rerank(
      caller,
      { model: 'reranking-local', query: 'green tea', documents: docs, topN: 2, returnDocuments: false },
      neverAborted(),
    );
    expect(top.results).toEqual(all.results.slice(0, 2).map((r) => ({ ...r, document: null })));
  });
});

describe('the token limits admission publishes are the ones the engine takes', () => {
  // The catalog's max_tokens is 512, as the fixtures' context_length: [CLS] and [SEP] (a pair's framing) included.
  it('embeds an input of exactly max_tokens, and refuses one more, on the engine and through the service alike', async () => {
    const exact = 'a'.repeat(510); // one token a character in the fixture's vocabulary, with [CLS] and [SEP]: 512
    await expect(embed.countTokens(exact)).resolves.toBe(512);
    expect((await embed.embed([exact], neverAborted())).promptTokens).toBe(512);
    await expect(embed.embed([`${exact}a`], neverAborted())).rejects.toMatchObject({ code: 'input_too_long' });
    const service = serviceOn(embed, 'embedding');
    const served = await service.createEmbeddings(caller, { model: 'embedding-local', input: [exact, 'x'] }, neverAborted());
    expect(served.usage.promptTokens).toBe(512 + 3);
    await expect(
      service.createEmbeddings(caller, { model: 'embedding-local', input: ['x', `${exact}a`] }, neverAborted()),
    ).rejects.toMatchObject({ code: 'input_too_long', message: expect.stringContaining("'input[1]'") });
  });

  it('counts a long input (over 4,096 characters, counted in pieces) with its [CLS] and [SEP] once, as the engine reads it', async () => {
    // 508 one-character words, 8 spaces apart: 4,571 characters, 510 tokens with [CLS] and [SEP].
    const long = Array.from({ length: 508 }, () => 'x').join(' '.repeat(8));
    expect(long.length).toBeGreaterThan(4096);
    await expect(embed.countTokens(long)).resolves.toBe(510);
    const service = serviceOn(embed, 'embedding');
    const served = await service.createEmbeddings(caller, { model: 'embedding-local', input: [long] }, neverAborted());
    expect(served.usage.promptTokens).toBe(510);
    // Two words more is 512, one more word than that is too many: refused before any work.
    const longer = `${long}${' x'.repeat(2)}`;
    expect((await service.createEmbeddings(caller, { model: 'embedding-local', input: [longer] }, neverAborted())).usage.promptTokens).toBe(
      512,
    );
    await expect(
      service.createEmbeddings(caller, { model: 'embedding-local', input: [`${longer} x`] }, neverAborted()),
    ).rejects.toMatchObject({ code: 'input_too_long' });
  });

  it('scores a query-document pair of exactly max_tokens with its framing, refuses one more at admission, and bills the framing', async () => {
    const service = serviceOn(rerank, 'reranking');
    const query = 'q'.repeat(255);
    const exact = 'd'.repeat(255); // [CLS] query [SEP] document: 512
    const direct = await rerank.rerank(query, [exact], neverAborted());
    expect(direct.promptTokens).toBe(512);
    const served = await service.rerank(caller, { model: 'reranking-local', query, documents: ['d', exact] }, neverAborted());
    expect(served.results).toHaveLength(2);
    expect(served.usage.promptTokens).toBe((await rerank.rerank(query, ['d'], neverAborted())).promptTokens + 512);
    await expect(
      service.rerank(caller, { model: 'reranking-local', query, documents: ['d', `${exact}d`] }, neverAborted()),
    ).rejects.toMatchObject({ code: 'input_too_long', message: expect.stringContaining("'documents[1]'") });
  });
});
