// The in-process engine through the running server, as users reach it: /v1 with the openai SDK and
// raw SSE, and GraphQL over HTTP and graphql-ws, on the project's GGUF fixtures. Also a broken file
// and a missing one in the same catalog: refused at start-up while the other models serve.
import { readFileSync } from 'node:fs';
import { print } from 'graphql';
import { createClient } from 'graphql-ws';
import OpenAI from 'openai';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ChatCompletionStreamDocument,
  CreateChatCompletionDocument,
  CreateEmbeddingsDocument,
  ModerateDocument,
  RerankDocument,
} from '../src/generated/graphql.js';
import { startTestServer, type TestServer } from './support/harness.js';
import { makeFixtureDir } from './support/llamacpp.js';
import { violations } from './support/oracle.js';

const fixtures = makeFixtureDir();
const truncated = fixtures.write('truncated.gguf', readFileSync(fixtures.files.chat).subarray(0, 100_000));

function model(id: string, category: string, body: string, engine: string): string {
  return `
  - id: ${id}
    category: ${category}
    owned_by: tests
    created: 1735689600
    version: "fixture"
    status: beta
${body
  .trim()
  .split('\n')
  .map((l) => `    ${l.trim()}`)
  .join('\n')}
    engine: ${engine}`;
}

const local = (file: string, extra = '') => `{ type: llamacpp, file: "${file}", threads: 1${extra} }`;
const chatBody = `capabilities: { chat_completion: true, streaming: true, function_calling: false }
pricing: { input_price_per_million: 1, output_price_per_million: 2, currency: usd }
specifications: { context_window: 1024, max_output_tokens: 256, training_cutoff: "2025-01" }`;

export function fixturesYaml(): string {
  return `models:${[
    model('tiny-chat', 'chat', chatBody, local(fixtures.files.chat, ', parallel: 2')),
    model('tiny-chat-narrow', 'chat', chatBody, local(fixtures.files.chat, ', parallel: 1, queue: { max_depth: 0, max_wait_ms: 1000 }')),
    model('tiny-chat-broken', 'chat', chatBody, local(truncated)),
    model('tiny-chat-missing', 'chat', chatBody, local(`${fixtures.dir}/not-pulled.gguf", source: "hf:acme/tiny-GGUF/not-pulled.gguf`)),
    model('tiny-chat-lazy-broken', 'chat', chatBody, local(truncated, ', load: lazy')),
    model('tiny-chat-lazy-missing', 'chat', chatBody, local(`${fixtures.dir}/not-pulled-either.gguf`, ', load: lazy')),
    model(
      'tiny-embed',
      'embedding',
      `capabilities: { embeddings: true }
      pricing: { price_per_million_tokens: 0.1, currency: usd }
      specifications: { max_tokens: 512, output_dimensions: 64 }`,
      local(fixtures.files.embedding),
    ),
    model(
      'tiny-rerank',
      'reranking',
      `capabilities: { rerank: true }
      pricing: { price_per_million_tokens: 0.1, currency: usd }
      specifications: { max_tokens: 512 }`,
      local(fixtures.files.reranker),
    ),
    model(
      'tiny-guard',
      'moderation',
      `capabilities: { moderation: true }
      pricing: { currency: usd }
      specifications: { max_tokens: 512 }`,
      local(fixtures.files.guard, ', load: lazy'),
    ),
  ].join('')}
`;
}

let s: TestServer;
let key: string;
let client: OpenAI;

beforeAll(async () => {
  s = await startTestServer({ yaml: fixturesYaml });
  await s.services.engines.startLoading();
  ({ apiKey: key } = await s.account('developer'));
  client = new OpenAI({ apiKey: key, baseURL: s.v1, maxRetries: 0 });
});
afterAll(async () => {
  await s.close();
  fixtures.remove();
});

const messages = [{ role: 'user' as const, content: 'Tell me about tea.' }];
const post = (route: string, body: unknown) =>
  fetch(`${s.v1}/${route}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify(body),
  });

/** The events of an SSE body, `[DONE]` included, as raw strings. */
async function sseEvents(res: Response): Promise<string[]> {
  const text = await res.text();
  return text
    .split('\n\n')
    .map((e) => e.trim())
    .filter(Boolean)
    .map((e) => {
      expect(e.startsWith('data: ')).toBe(true);
      return e.slice('data: '.length);
    });
}

describe('the server with in-process models', () => {
  it('is ready once the eager models are loaded, and reports the ones it could not load', async () => {
    const ready = await fetch(`${s.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(s.services.engines.local('tiny-chat')?.status).toBe('ready');
    expect(s.services.engines.local('tiny-guard')?.status).toBe('idle'); // lazy: on its first call
    const broken = s.services.engines.local('tiny-chat-broken')!;
    expect(broken.status).toBe('failed');
    expect(broken.failureReason).toContain(truncated);
    expect(broken.failureReason).toContain('truncated');
    const missing = s.services.engines.local('tiny-chat-missing')!;
    expect(missing.failureReason).toContain('npx tollgate models pull hf:acme/tiny-GGUF/not-pulled.gguf');
  });

  it('reports in /readyz the lazy models whose file is known to be missing or broken as failed, as the eager ones, not idle', async () => {
    const { models } = await (await fetch(`${s.url}/readyz`)).json();
    expect(models['tiny-guard'].status).toBe('idle'); // lazy, its file fine: loads on its first call
    for (const id of ['tiny-chat-broken', 'tiny-chat-missing', 'tiny-chat-lazy-broken', 'tiny-chat-lazy-missing'])
      expect({ id, status: models[id].status }).toEqual({ id, status: 'failed' });
    // With the reason /v1/models gives (no path).
    expect(models['tiny-chat-lazy-missing'].reason).toBe('its model file is not on the server (not downloaded yet)');
    expect(models['tiny-chat-lazy-broken'].reason).toBe('its model file could not be loaded (see the server log)');
    expect(models['tiny-guard'].reason).toBeUndefined();
    expect(s.services.engines.local('tiny-chat-lazy-broken')!.failureReason).toContain('truncated');
    const listing = await fetch(`${s.v1}/models`).then((r) => r.json());
    const byId = Object.fromEntries(listing.data.map((m: any) => [m.id, m]));
    expect(byId['tiny-chat-lazy-broken']).toMatchObject({
      available: false,
      unavailable_reason: expect.stringContaining('could not be loaded'),
    });
    expect(byId['tiny-chat-lazy-missing']).toMatchObject({
      available: false,
      unavailable_reason: expect.stringContaining('not on the server'),
    });
  });

  it('shows in /v1/models and GraphQL which models can serve now and why not, while status keeps the catalog state', async () => {
    const listing = await fetch(`${s.v1}/models`).then((r) => r.json());
    const byId = Object.fromEntries(listing.data.map((m: any) => [m.id, m]));
    expect(byId['tiny-chat']).toMatchObject({ status: 'beta', available: true, unavailable_reason: null });
    expect(byId['tiny-guard']).toMatchObject({ available: true }); // lazy: loads on its first call
    expect(byId['tiny-chat-missing']).toMatchObject({ status: 'beta', available: false });
    expect(byId['tiny-chat-missing'].unavailable_reason).toContain('not on the server');
    expect(byId['tiny-chat-broken']).toMatchObject({ status: 'beta', available: false });
    expect(byId['tiny-chat-broken'].unavailable_reason).toContain('could not be loaded');
    expect(JSON.stringify(listing)).not.toContain(fixtures.dir); // no file paths to clients
    expect(violations('ListModelsResponse', listing)).toEqual([]);
    const one = await fetch(`${s.v1}/models/tiny-chat-missing`).then((r) => r.json());
    expect(one.available).toBe(false);
    const g = await s.graphql('{ models { id status available unavailableReason } }');
    const gById = Object.fromEntries(g.body.data.models.map((m: any) => [m.id, m]));
    expect(gById['tiny-chat']).toEqual({ id: 'tiny-chat', status: 'beta', available: true, unavailableReason: null });
    expect(gById['tiny-chat-broken'].available).toBe(false);
    expect(gById['tiny-chat-broken'].unavailableReason).toBe(byId['tiny-chat-broken'].unavailable_reason);
  });

  it('answers 503 model_unavailable for a model whose file was refused, while the others serve', async () => {
    for (const id of ['tiny-chat-broken', 'tiny-chat-missing']) {
      const res = await post('chat/completions', { model: id, messages });
      expect(res.status).toBe(503);
      const body = await res.json();
      expect(body.error).toMatchObject({ type: 'server_error', code: 'model_unavailable' });
      expect(body.error.message).not.toContain(fixtures.dir); // no file paths to clients
    }
    const ok = await client.chat.completions.create({ model: 'tiny-chat', messages, max_tokens: 3 });
    expect(ok.usage!.completion_tokens).toBe(3);
  });
});

describe('chat through /v1', () => {
  it("reports usage from the model's own tokenizer", async () => {
    const c = await client.chat.completions.create({ model: 'tiny-chat', messages, max_tokens: 9, temperature: 0 });
    const expectedPrompt = await s.services.engines.local('tiny-chat')!.countChatTokens(messages);
    expect(c.usage).toMatchObject({ prompt_tokens: expectedPrompt, completion_tokens: 9, total_tokens: expectedPrompt + 9 });
    expect(violations('CreateChatCompletionResponse', JSON.parse(JSON.stringify(c)))).toEqual([]);
  });

  it('stops at max_tokens 5 with exactly 5 completion tokens and finish_reason length', async () => {
    const c = await client.chat.completions.create({ model: 'tiny-chat', messages, max_tokens: 5 });
    expect(c.choices[0]!.finish_reason).toBe('length');
    expect(c.usage!.completion_tokens).toBe(5);
  });

  it('cuts the answer before a stop sequence', async () => {
    const free = await client.chat.completions.create({ model: 'tiny-chat', messages, max_tokens: 40, temperature: 0 });
    const text = free.choices[0]!.message.content!;
    const stop = [...text].slice(6, 8).join('');
    const stopped = await client.chat.completions.create({ model: 'tiny-chat', messages, max_tokens: 40, temperature: 0, stop: [stop] });
    expect(stopped.choices[0]!.finish_reason).toBe('stop');
    expect(stopped.choices[0]!.message.content).toBe(text.slice(0, text.indexOf(stop)));
  });

  it('streams chunks framed as SSE: the role first, content with null finish_reason, then the finish chunk, the usage and [DONE]', async () => {
    const whole = await client.chat.completions.create({ model: 'tiny-chat', messages, max_tokens: 12, temperature: 0 });
    const res = await post('chat/completions', {
      model: 'tiny-chat',
      messages,
      max_tokens: 12,
      temperature: 0,
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const events = await sseEvents(res);
    expect(events.at(-1)).toBe('[DONE]');
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e));
    for (const chunk of chunks) expect(violations('CreateChatCompletionStreamResponse', chunk)).toEqual([]);
    expect(new Set(chunks.map((c) => c.id)).size).toBe(1);
    expect(chunks[0].choices[0].delta).toEqual({ role: 'assistant', content: '' });
    const usageChunk = chunks.at(-1);
    expect(usageChunk.choices).toEqual([]);
    expect(usageChunk.usage).toEqual(whole.usage);
    const finish = chunks.at(-2);
    expect(finish.choices[0]).toMatchObject({ delta: {}, finish_reason: 'length' });
    const content = chunks.slice(1, -2);
    expect(content.length).toBeGreaterThan(1);
    for (const c of content) expect(c.choices[0].finish_reason).toBeNull();
    expect(content.map((c) => c.choices[0].delta.content).join('')).toBe(whole.choices[0]!.message.content);
  });

  it('stops generating soon after the client disconnects', async () => {
    const engine = s.services.engines.local('tiny-chat')!;
    const ctl = new AbortController();
    const res = await fetch(`${s.v1}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ model: 'tiny-chat', messages, max_tokens: 250, stream: true }),
      signal: ctl.signal,
    });
    const reader = res.body!.getReader();
    await reader.read();
    await reader.read();
    ctl.abort();
    const atDisconnect = engine.stats.generatedTokens;
    // Let the server notice the closed socket and the engine wind down, then see it stayed stopped.
    let last = -1;
    for (let i = 0; i < 20 && engine.stats.generatedTokens !== last; i++) {
      last = engine.stats.generatedTokens;
      await new Promise((r) => setTimeout(r, 25));
    }
    expect(engine.stats.generatedTokens - atDisconnect).toBeLessThan(20);
    const after = await client.chat.completions.create({ model: 'tiny-chat', messages, max_tokens: 2 });
    expect(after.usage!.completion_tokens).toBe(2);
  });

  it('answers 503 model_overloaded with Retry-After when every slot is taken and the queue is full', async () => {
    const holder = await post('chat/completions', { model: 'tiny-chat-narrow', messages, max_tokens: 250, stream: true });
    const reader = holder.body!.getReader();
    await reader.read(); // the stream has its slot
    const refused = await post('chat/completions', { model: 'tiny-chat-narrow', messages, max_tokens: 2 });
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect((await refused.json()).error).toMatchObject({ type: 'server_error', code: 'model_overloaded' });
    await reader.cancel();
  });
});

describe('chat through GraphQL', () => {
  it('answers the mutation with the same usage rules', async () => {
    const r = await s.graphql(print(CreateChatCompletionDocument), { input: { model: 'tiny-chat', messages, maxTokens: 5 } }, key);
    expect(r.status).toBe(200);
    const c = r.body.data.createChatCompletion;
    expect(c.choices[0].finishReason).toBe('length');
    expect(c.usage.completionTokens).toBe(5);
    expect(c.usage.promptTokens).toBe(await s.services.engines.local('tiny-chat')!.countChatTokens(messages));
  });

  it('streams over graphql-ws: role, content, the finish chunk, then the usage', async () => {
    const ws = createClient({
      url: `${s.url.replace('http', 'ws')}/graphql`,
      webSocketImpl: WebSocket,
      connectionParams: { authorization: `Bearer ${key}` },
      retryAttempts: 0,
    });
    const events: any[] = [];
    await new Promise<void>((resolve, reject) => {
      ws.subscribe(
        {
          query: print(ChatCompletionStreamDocument),
          variables: { input: { model: 'tiny-chat', messages, maxTokens: 6, temperature: 0 } },
        },
        { next: (v) => events.push(v), error: reject, complete: resolve },
      );
    });
    await ws.dispose();
    const chunks = events.map((e) => e.data.chatCompletionStream);
    expect(chunks[0].choices[0].delta.role).toBe('assistant');
    expect(chunks.at(-2).choices[0].finishReason).toBe('length');
    expect(chunks.at(-1).usage.completionTokens).toBe(6);
  });
});

describe('embeddings, rerank and moderation through /v1 and GraphQL', () => {
  it('embeds with the declared dimensions, unit norm and the same vector every time', async () => {
    const r = await client.embeddings.create({ model: 'tiny-embed', input: ['green tea', 'black coffee'], encoding_format: 'float' });
    expect(r.data).toHaveLength(2);
    for (const d of r.data) {
      expect(d.embedding).toHaveLength(64);
      expect(Math.hypot(...d.embedding)).toBeCloseTo(1, 5);
    }
    const again = await client.embeddings.create({ model: 'tiny-embed', input: 'green tea', encoding_format: 'float' });
    expect(again.data[0]!.embedding).toEqual(r.data[0]!.embedding);
    expect(r.usage.prompt_tokens).toBe(
      (await s.services.engines.local('tiny-embed')!.countTokens('green tea')) +
        (await s.services.engines.local('tiny-embed')!.countTokens('black coffee')),
    );
  });

  it('sends base64 that decodes to the float vector', async () => {
    const float = await (await post('embeddings', { model: 'tiny-embed', input: 'green tea' })).json();
    const b64 = await (await post('embeddings', { model: 'tiny-embed', input: 'green tea', encoding_format: 'base64' })).json();
    const bytes = Buffer.from(b64.data[0].embedding, 'base64');
    const decoded = Array.from(new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4));
    expect(decoded).toHaveLength(64);
    for (const [i, x] of decoded.entries()) expect(x).toBeCloseTo(float.data[0].embedding[i], 6);
  });

  it('refuses an input over the model limit with input_too_long before any work', async () => {
    const res = await post('embeddings', { model: 'tiny-embed', input: 'a'.repeat(700) });
    expect(res.status).toBe(400);
    expect((await res.json()).error.code).toBe('input_too_long');
  });

  it('reranks: sorted by relevance, top_n respected, equal scores in input order', async () => {
    const documents = ['coffee', 'green tea leaves', { text: 'a teapot' }, 'coffee'];
    const all = await (await post('rerank', { model: 'tiny-rerank', query: 'green tea', documents })).json();
    const scores = all.results.map((r: any) => r.relevance_score);
    expect([...scores].sort((a: number, b: number) => b - a)).toEqual(scores);
    for (const x of scores) expect(x >= 0 && x <= 1).toBe(true);
    const coffee = all.results.filter((r: any) => r.document.text === 'coffee').map((r: any) => r.index);
    expect(coffee).toEqual([0, 3]);
    const top = await (
      await post('rerank', { model: 'tiny-rerank', query: 'green tea', documents, top_n: 2, return_documents: false })
    ).json();
    expect(top.results).toEqual(all.results.slice(0, 2).map(({ document: _d, ...r }: any) => r));
    const g = await s.graphql(
      print(RerankDocument),
      { input: { model: 'tiny-rerank', query: 'green tea', documents: ['coffee', 'green tea leaves', 'a teapot', 'coffee'], topN: 2 } },
      key,
    );
    expect(g.body.data.rerank.results.map((r: any) => r.index)).toEqual(top.results.map((r: any) => r.index));
  });

  it("moderates with the specification's shape, loading a lazy guard on first use", async () => {
    const m = await client.moderations.create({ model: 'tiny-guard', input: ['some text', 'another'] });
    // Every category of OpenAI's schema, those Llama Guard has no code for too.
    expect(violations('CreateModerationResponse', m)).toEqual([]);
    expect(m.results[0]!.category_applied_input_types['violence/graphic']).toEqual([]);
    expect(m.results).toHaveLength(2);
    for (const r of m.results) {
      expect(r.flagged).toBe(true); // the fixture guard leans to "unsafe"
      for (const c of ['hate', 'harassment', 'self-harm', 'sexual', 'violence']) {
        expect(typeof (r.categories as unknown as Record<string, boolean>)[c]).toBe('boolean');
        const score = (r.category_scores as unknown as Record<string, number>)[c]!;
        expect(score >= 0 && score <= 1).toBe(true);
      }
      expect(Object.values(r.categories).some(Boolean)).toBe(true);
    }
    const g = await s.graphql(print(ModerateDocument), { input: { model: 'tiny-guard', input: ['hello'] } }, key);
    const result = g.body.data.moderate.results[0];
    expect(result.flagged).toBe(true);
    expect(result.categories.map((c: any) => c.name)).toEqual(
      expect.arrayContaining(['hate', 'harassment', 'self-harm', 'sexual', 'violence', 'elections']),
    );
  });

  it('embeds through GraphQL with the same vectors as /v1', async () => {
    const g = await s.graphql(print(CreateEmbeddingsDocument), { input: { model: 'tiny-embed', input: ['green tea'] } }, key);
    const v1 = await client.embeddings.create({ model: 'tiny-embed', input: 'green tea', encoding_format: 'float' });
    for (const [i, x] of (g.body.data.createEmbeddings.data[0].embedding as number[]).entries())
      expect(x).toBeCloseTo(v1.data[0]!.embedding[i]!, 6);
  });
});
