// OpenAIEngine against the fake OpenAI-compatible upstream on loopback: wire mapping, streaming,
// usage fallbacks, failover, timeouts, aborts, and that errors never leak upstream details.
import { createServer } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { OpenAIEngineConfig } from '../src/config.js';
import { DomainError } from '../src/domain/errors.js';
import type { EngineChatRequest, EngineStreamEvent } from '../src/domain/inference/engine.js';
import { OpenAIEngine } from '../src/domain/inference/openai/openai-engine.js';
import { countChatTokens, countTextTokens } from '../src/domain/inference/tokenizer.js';
import { fakeEmbedding, fakeRerankScore, startFakeUpstream, type FakeUpstream, type FakeUpstreamOptions } from './support/fake-upstream.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function fake(opts: FakeUpstreamOptions = {}): Promise<FakeUpstream> {
  const f = await startFakeUpstream(opts);
  cleanups.push(() => f.close());
  return f;
}

interface Warning {
  obj: object;
  msg?: string;
}

const ENGINE_DEFAULTS = {
  max_duration_ms: 30_000,
  connect_timeout_ms: 3_000,
  circuit_breaker: { failure_threshold: 3, cooldown_ms: 30_000 },
};

function engine(baseUrls: string[], extra: Partial<OpenAIEngineConfig> = {}, env: NodeJS.ProcessEnv = {}) {
  const warnings: Warning[] = [];
  const config: OpenAIEngineConfig = {
    type: 'openai',
    base_urls: baseUrls,
    model: 'up-model',
    timeout_ms: 5_000,
    rerank_path: '/rerank',
    ...ENGINE_DEFAULTS,
    ...extra,
  };
  const e = new OpenAIEngine(config, { logger: { warn: (obj, msg) => warnings.push({ obj, msg }) }, env });
  cleanups.push(() => e.close());
  return { e, warnings };
}

/** A port nothing listens on: bind one, then let it go. */
async function closedPortUrl(): Promise<{ url: string; port: number }> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as { port: number }).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return { url: `http://127.0.0.1:${port}/v1`, port };
}

function req(content: string, extra: Partial<EngineChatRequest> = {}): EngineChatRequest {
  return {
    messages: [
      { role: 'system', content: 'be brief' },
      { role: 'user', content },
    ],
    maxTokens: 100,
    ...extra,
  };
}

const signal = () => new AbortController().signal;

/** A stream's events after its `started` (checked to come first, once). */
async function collect(it: AsyncIterable<EngineStreamEvent>): Promise<EngineStreamEvent[]> {
  const out: EngineStreamEvent[] = [];
  for await (const ev of it) out.push(ev);
  if (out[0]?.type !== 'started' || out.filter((e) => e.type === 'started').length !== 1)
    throw new Error(`expected one started event first: ${JSON.stringify(out)}`);
  return out.slice(1);
}

async function rejection(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (e) {
    return e;
  }
  throw new Error('expected a rejection');
}

async function until(cond: () => boolean, ms = 2_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** The fake's prompt count: words plus 4 per message. */
const fakePrompt = (r: EngineChatRequest) => r.messages.reduce((n, m) => n + 4 + m.content.split(/\s+/).filter(Boolean).length, 0);

function expectNoLeak(err: unknown, ports: number[]) {
  expect(err).toBeInstanceOf(DomainError);
  const message = (err as DomainError).message;
  expect(message).not.toContain('127.0.0.1');
  expect(message).not.toContain('localhost');
  expect(message).not.toContain('simulated');
  for (const p of ports) expect(message).not.toContain(String(p));
}

describe('tokenizer', () => {
  it('counts chat tokens as 3 per message plus role and content plus 3 for the reply', () => {
    const messages = [{ role: 'user' as const, content: 'Hello world' }];
    expect(countChatTokens([])).toBe(3);
    expect(countChatTokens(messages)).toBe(3 + countTextTokens('user') + countTextTokens('Hello world') + 3);
  });

  it('treats special-token text as plain text instead of throwing', () => {
    expect(countTextTokens('a <|endoftext|> b')).toBeGreaterThan(3);
    expect(countTextTokens('')).toBe(0);
  });
});

describe('OpenAIEngine', () => {
  it('forwards a chat request in snake_case and maps the answer', async () => {
    const f = await fake();
    const { e } = engine([f.url], {}, { UP_KEY: 'sk-secret' });
    const { e: authed } = engine([f.url], { api_key_env: 'UP_KEY' }, { UP_KEY: 'sk-secret' });
    const r = req('hi #tokens=5', { temperature: 0.5, topP: 0.9, stop: ['x'], presencePenalty: 0.1, frequencyPenalty: 0.2, user: 'u1' });

    const out = await e.chat(r, signal());
    expect(out.content).toBe('w0 w1 w2 w3 w4');
    expect(out.finishReason).toBe('stop');
    expect(out.usage).toEqual({ promptTokens: fakePrompt(r), completionTokens: 5, totalTokens: fakePrompt(r) + 5 });

    const sent = f.requests[0]!;
    expect(sent.path).toBe('/v1/chat/completions');
    expect(sent.body).toEqual({
      model: 'up-model',
      messages: r.messages,
      max_tokens: 100,
      temperature: 0.5,
      top_p: 0.9,
      stop: ['x'],
      presence_penalty: 0.1,
      frequency_penalty: 0.2,
      user: 'u1',
    });
    expect(sent.headers.authorization).toBeUndefined();

    await authed.chat(req('hi'), signal());
    expect(f.requests[1]!.headers.authorization).toBe('Bearer sk-secret');
  });

  it('sends the output limit as max_completion_tokens when engine.max_tokens_param says so (OpenAI reasoning models), streamed or not', async () => {
    const f = await fake();
    const { e } = engine([f.url], { max_tokens_param: 'max_completion_tokens' });
    await e.chat(req('hi #tokens=3', { reasoningEffort: 'high' }), signal());
    await collect(e.chatStream(req('hi #tokens=3'), signal()));
    for (const sent of f.requests) {
      expect(sent.body).toMatchObject({ max_completion_tokens: 100 });
      expect(sent.body).not.toHaveProperty('max_tokens');
    }
    expect(f.requests[0]!.body).toMatchObject({ reasoning_effort: 'high' });
    expect(f.requests).toHaveLength(2);
  });

  it('reports finish_reason length when max_tokens caps the completion', async () => {
    const f = await fake();
    const { e } = engine([f.url]);
    const out = await e.chat(req('hi #tokens=10', { maxTokens: 3 }), signal());
    expect(out).toMatchObject({ content: 'w0 w1 w2', finishReason: 'length' });
  });

  it('streams deltas and finishes with the upstream usage', async () => {
    const f = await fake();
    const { e } = engine([f.url]);
    const r = req('stream please #tokens=4');
    const events = await collect(e.chatStream(r, signal()));
    expect(events.slice(0, -2)).toEqual(['w0', ' w1', ' w2', ' w3'].map((content) => ({ type: 'delta', content })));
    // The choice's end as the upstream's finish chunk comes, then the stream's end with the usage.
    expect(events.at(-2)).toEqual({ type: 'choice_finish', choice: 0, finishReason: 'stop' });
    expect(events.at(-1)).toEqual({
      type: 'finish',
      finishReason: 'stop',
      usage: { promptTokens: fakePrompt(r), completionTokens: 4, totalTokens: fakePrompt(r) + 4 },
    });
    expect(f.requests[0]!.body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
  });

  it('counts usage with the tokenizer when the upstream omits it, streaming or not', async () => {
    const f = await fake();
    const { e } = engine([f.url]);
    const r = req('no usage here #tokens=6 #nousage', { maxTokens: 4 });
    const expected = (content: string) => {
      const promptTokens = countChatTokens(r.messages);
      const completionTokens = countTextTokens(content);
      return { promptTokens, completionTokens, totalTokens: promptTokens + completionTokens };
    };

    const events = await collect(e.chatStream(r, signal()));
    const text = events.map((ev) => (ev.type === 'delta' ? ev.content : '')).join('');
    expect(text).toBe('w0 w1 w2 w3');
    expect(events.at(-1)).toEqual({ type: 'finish', finishReason: 'length', usage: expected(text) });

    const plain = await e.chat(r, signal());
    expect(plain.usage).toEqual(expected('w0 w1 w2 w3'));
  });

  it('returns embeddings in input order even when the upstream answers out of order', async () => {
    const f = await fake({ reverseEmbeddings: true, dimensions: { 'up-model': 16 } });
    const { e } = engine([f.url]);
    const input = ['alpha', 'beta', 'gamma'];
    const out = await e.embed(input, signal());
    expect(out.embeddings).toEqual(input.map((t) => fakeEmbedding(t, 16)));
    expect(out.promptTokens).toBe(3);
    expect(f.requests[0]!.body).toEqual({ model: 'up-model', input, encoding_format: 'float' });
  });

  it('returns rerank scores in input order and squashes logits into [0, 1]', async () => {
    const query = 'red apple pie';
    const docs = ['green pear', 'red apple', 'apple pie red recipe'];
    const plain = await fake();
    const { e } = engine([plain.url]);
    const out = await e.rerank(query, docs, signal());
    expect(out.scores).toEqual(docs.map((d) => fakeRerankScore(query, d)));
    expect(out.promptTokens).toBeGreaterThan(0);
    expect(plain.requests[0]!.body).toMatchObject({ model: 'up-model', query, documents: docs, top_n: 3, return_documents: false });

    const logits = await fake({ rerankLogits: true });
    const { e: e2 } = engine([logits.url]);
    const squashed = await e2.rerank(query, docs, signal());
    for (const s of squashed.scores) expect(s).toBeGreaterThanOrEqual(0), expect(s).toBeLessThanOrEqual(1);
    expect(squashed.scores[2]).toBeGreaterThan(squashed.scores[1]!);
    expect(squashed.scores[1]).toBeGreaterThan(squashed.scores[0]!);
  });

  it('rerank_scores: logits puts every score through the sigmoid, whatever the request; auto says once that it met logits', async () => {
    const f = await fake();
    const answer = (...scores: number[]) =>
      f.setFault({ raw: JSON.stringify({ results: scores.map((relevance_score, index) => ({ index, relevance_score })) }) });
    const sigmoid = (x: number) => 1 / (1 + Math.exp(-x));
    const { e: declared } = engine([f.url], { rerank_scores: 'logits' });
    // The same logit (0.5) scores the same beside any other document.
    answer(0.5, 0.9);
    expect((await declared.rerank('q', ['a', 'b'], signal())).scores).toEqual([sigmoid(0.5), sigmoid(0.9)]);
    answer(0.5, 3);
    expect((await declared.rerank('q', ['a', 'b'], signal())).scores).toEqual([sigmoid(0.5), sigmoid(3)]);
    // Declared probabilities are passed as they are; one outside [0, 1] is a broken answer.
    const { e: probabilities } = engine([f.url], { rerank_scores: 'probabilities' });
    answer(0.5, 0.9);
    expect((await probabilities.rerank('q', ['a', 'b'], signal())).scores).toEqual([0.5, 0.9]);
    answer(0.5, 3);
    await expect(probabilities.rerank('q', ['a', 'b'], signal())).rejects.toMatchObject({ code: 'upstream_error' });
    // auto guesses per request, and tells the operator once what to set.
    const { e: auto, warnings } = engine([f.url]);
    answer(0.5, 0.9);
    expect((await auto.rerank('q', ['a', 'b'], signal())).scores).toEqual([0.5, 0.9]);
    expect(warnings.filter((w) => w.msg?.includes('rerank_scores'))).toEqual([]);
    answer(0.5, 3);
    expect((await auto.rerank('q', ['a', 'b'], signal())).scores).toEqual([sigmoid(0.5), sigmoid(3)]);
    await auto.rerank('q', ['a', 'b'], signal());
    expect(warnings.filter((w) => w.msg?.includes('set engine.rerank_scores: logits'))).toHaveLength(1);
    f.setFault(null);
  });

  it("reranks on TEI's native /rerank too, which takes the documents as `texts` (vLLM, llama.cpp and Infinity take `documents`)", async () => {
    const query = 'red apple pie';
    const docs = ['green pear', 'red apple', 'apple pie red recipe'];
    const tei = await fake({ teiRerank: true });
    const { e } = engine([tei.url.replace(/\/v1$/, '')]);
    const out = await e.rerank(query, docs, signal());
    expect(out.scores).toEqual(docs.map((d) => fakeRerankScore(query, d)));
    // TEI reports no usage: the query once per document, and each document, counted here.
    expect(out.promptTokens).toBe(3 * countTextTokens(query) + docs.reduce((n, d) => n + countTextTokens(d), 0));
    expect(tei.requests[0]!.body).toMatchObject({ query, texts: docs, documents: docs });
  });

  it('fills in the five moderation categories the upstream leaves out', async () => {
    const f = await fake({ moderationKeys: ['violence'] });
    const { e } = engine([f.url]);
    const [bad] = await e.moderate(['I will kill the process'], signal());
    expect(bad!.flagged).toBe(true);
    expect(bad!.categories).toEqual({ hate: false, harassment: false, 'self-harm': false, sexual: false, violence: true });
    expect(Object.keys(bad!.categoryScores).sort()).toEqual(['harassment', 'hate', 'self-harm', 'sexual', 'violence']);
    expect(bad!.promptTokens).toBe(countTextTokens('I will kill the process'));
    const [good] = await e.moderate(['hello'], signal());
    expect(good!.flagged).toBe(false);
  });

  it('moderates every input of a request in one upstream call, the results in order', async () => {
    const f = await fake();
    const { e } = engine([f.url]);
    const inputs = ['hello', 'I will kill the process', 'fine', 'a hateful remark'];
    const results = await e.moderate(inputs, signal());
    expect(results.map((r) => r.flagged)).toEqual([false, true, false, true]);
    expect(results.map((r) => r.promptTokens)).toEqual(inputs.map((i) => countTextTokens(i)));
    const calls = f.requests.filter((r) => r.path === '/v1/moderations');
    expect(calls).toHaveLength(1);
    expect(calls[0]!.body).toMatchObject({ input: inputs });
    // An answer with another number of results than inputs is a broken answer, not a shorter list.
    f.setFault({ raw: JSON.stringify({ id: 'x', model: 'm', results: [{ flagged: false, categories: {}, category_scores: {} }] }) });
    await expect(e.moderate(inputs, signal())).rejects.toMatchObject({ code: 'upstream_error' });
  });

  it('spreads calls round-robin across base URLs', async () => {
    const a = await fake();
    const b = await fake();
    const { e } = engine([a.url, b.url]);
    for (let i = 0; i < 4; i++) await e.chat(req('hi'), signal());
    expect(a.requests).toHaveLength(2);
    expect(b.requests).toHaveLength(2);
  });

  it('fails over to the next base URL when the first refuses connections', async () => {
    const closed = await closedPortUrl();
    const b = await fake();
    const { e, warnings } = engine([closed.url, b.url]);
    expect((await e.chat(req('hi #tokens=2'), signal())).content).toBe('w0 w1');
    const events = await collect(e.chatStream(req('hi #tokens=2'), signal()));
    expect(events.at(-1)?.type).toBe('finish');
    expect(b.requests).toHaveLength(2);
    // The details go to the log, not to the caller.
    expect(JSON.stringify(warnings)).toContain(String(closed.port));
  });

  it('fails over to the next base URL when the first answers 503 or resets before headers', async () => {
    const a = await fake({ fail: '503' });
    const b = await fake();
    const { e } = engine([a.url, b.url]);
    expect((await e.chat(req('hi'), signal())).finishReason).toBe('stop');
    a.setFailMode('reset');
    const events = await collect(e.chatStream(req('hi #tokens=3'), signal()));
    expect(events.map((ev) => ev.type)).toEqual(['delta', 'delta', 'delta', 'choice_finish', 'finish']);
    a.setFailMode('503');
    expect((await e.embed(['x'], signal())).embeddings).toHaveLength(1);
    expect(a.requests.length).toBeGreaterThanOrEqual(2);
    expect(b.requests).toHaveLength(3);
  });

  it('throws upstream_error without leaking addresses when every base URL fails', async () => {
    const closed = await closedPortUrl();
    const a = await fake({ fail: '500' });
    const { e } = engine([a.url, closed.url]);
    const err = await rejection(e.chat(req('hi'), signal()));
    expect((err as DomainError).code).toBe('upstream_error');
    expectNoLeak(err, [a.port, closed.port]);

    const single = await fake();
    const { e: e1, warnings } = engine([single.url]);
    const status = await rejection(e1.chat(req('hi #fail=500'), signal()));
    expect((status as DomainError).message).toBe("The model's upstream server failed to answer (HTTP 500).");
    expectNoLeak(status, [single.port]);
    expect(JSON.stringify(warnings)).toContain('simulated failure');
    const reset = await rejection(e1.chat(req('hi #fail=reset'), signal()));
    expectNoLeak(reset, [single.port]);
    expect((reset as DomainError).code).toBe('upstream_error');
  });

  it('does not fail over once a delta was yielded, and throws upstream_error on a mid-stream failure', async () => {
    const a = await fake();
    const b = await fake();
    const { e } = engine([a.url, b.url]);
    const seen: EngineStreamEvent[] = [];
    const err = await rejection(
      (async () => {
        for await (const ev of e.chatStream(req('go #tokens=10 #fail=midstream'), signal())) if (ev.type !== 'started') seen.push(ev);
      })(),
    );
    expect((err as DomainError).code).toBe('upstream_error');
    expectNoLeak(err, [a.port, b.port]);
    expect(seen).toEqual([
      { type: 'delta', content: 'w0' },
      { type: 'delta', content: ' w1' },
    ]);
    expect(b.requests).toHaveLength(0);
  });

  it('maps a slow upstream to upstream_timeout, before headers and between stream chunks', async () => {
    const f = await fake();
    const { e } = engine([f.url], { timeout_ms: 150 });
    const plain = await rejection(e.chat(req('slow #delay=600'), signal()));
    expect((plain as DomainError).code).toBe('upstream_timeout');
    expectNoLeak(plain, [f.port]);

    // A stream whose chunks are each 100 ms apart is fine with a 150 ms gap budget...
    const ok = await collect(e.chatStream(req('paced #delay=60 #tokens=4'), signal()));
    expect(ok.at(-1)?.type).toBe('finish');
    // ...one that stalls longer is not.
    const stream = await rejection(collect(e.chatStream(req('stalls #delay=400 #tokens=3'), signal())));
    expect((stream as DomainError).code).toBe('upstream_timeout');
    expectNoLeak(stream, [f.port]);
  });

  it('does not count a slow consumer against the upstream timeout', async () => {
    const f = await fake();
    const { e } = engine([f.url], { timeout_ms: 100 });
    const events: EngineStreamEvent[] = [];
    for await (const ev of e.chatStream(req('hi #tokens=3 #delay=10'), signal())) {
      events.push(ev);
      await new Promise((r) => setTimeout(r, 250));
    }
    expect(events.map((ev) => ev.type)).toEqual(['started', 'delta', 'delta', 'delta', 'choice_finish', 'finish']);
  });

  it('closes the upstream request when the consumer stops iterating', async () => {
    const f = await fake();
    const { e } = engine([f.url]);
    const it = e.chatStream(req('long #tokens=200 #delay=20'), signal())[Symbol.asyncIterator]();
    expect((await it.next()).value).toEqual({ type: 'started' });
    const first = await it.next();
    expect(first.value).toEqual({ type: 'delta', content: 'w0' });
    await it.return?.(undefined);
    await until(() => f.aborted === 1);
  });

  it('ends a stream at [DONE] and still reuses the connection of an upstream that ends its response just after', async () => {
    const { createServer: createHttpServer } = await import('node:http');
    let connections = 0;
    const srv = createHttpServer((request, res) => {
      request.resume();
      request.on('end', () => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write('data: {"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n');
        setTimeout(() => res.end(), 5);
      });
    });
    srv.on('connection', () => connections++);
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
    cleanups.push(() => new Promise((r) => srv.close(() => r())));
    const { e } = engine([`http://127.0.0.1:${(srv.address() as { port: number }).port}/v1`]);
    for (let i = 0; i < 3; i++) {
      expect((await collect(e.chatStream(req('hi'), signal()))).at(-1)).toMatchObject({ type: 'finish', finishReason: 'stop' });
      // The response's end arrives after the stream ended; the socket goes back to the pool then.
      await new Promise((r) => setTimeout(r, 30));
    }
    expect(connections).toBe(1);
  });

  it('closes the upstream request and throws an AbortError when the signal fires', async () => {
    const f = await fake();
    const { e } = engine([f.url]);

    const streamCtl = new AbortController();
    const it = e.chatStream(req('long #tokens=200 #delay=20'), streamCtl.signal)[Symbol.asyncIterator]();
    await it.next();
    streamCtl.abort();
    const streamErr = await rejection(it.next());
    expect((streamErr as Error).name).toBe('AbortError');
    await until(() => f.aborted === 1);

    const chatCtl = new AbortController();
    const pending = e.chat(req('slow #delay=2000'), chatCtl.signal);
    await until(() => f.requests.length === 2);
    const reason = new Error('client went away');
    chatCtl.abort(reason);
    expect(await rejection(pending)).toBe(reason);
    await until(() => f.aborted === 2);

    const early = new AbortController();
    early.abort();
    expect(((await rejection(e.embed(['x'], early.signal))) as Error).name).toBe('AbortError');
  });

  it('reads a finish reason it does not know as stop, and warns of each such value once', async () => {
    const f = await fake();
    const { e, warnings } = engine([f.url]);
    const frame = (finish: string) =>
      `data: {"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"${finish}"}]}\n\ndata: [DONE]\n\n`;
    const unknown = () => warnings.filter((w) => w.msg === 'upstream sent a finish_reason tollgate does not know; read as stop');
    for (const finish of ['matched_stop', 'matched_stop', 'recitation']) {
      f.setFault({ raw: frame(finish), type: 'text/event-stream' });
      expect((await collect(e.chatStream(req('hi'), signal()))).at(-1)).toMatchObject({ type: 'finish', finishReason: 'stop' });
    }
    f.setFault({
      raw: JSON.stringify({ choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'recitation' }] }),
    });
    expect((await e.chat(req('hi'), signal())).finishReason).toBe('stop');
    expect(unknown().map((w) => (w.obj as { finish_reason: string }).finish_reason)).toEqual(['matched_stop', 'recitation']);
  });

  it('maps a 400 about the context length to context_length_exceeded', async () => {
    // A tiny server that answers like vLLM does for an over-long prompt.
    const { createServer: createHttpServer } = await import('node:http');
    const srv = createHttpServer((_req, res) => {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({ error: { message: "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens." } }),
      );
    });
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
    cleanups.push(() => new Promise((r) => srv.close(() => r())));
    const port = (srv.address() as { port: number }).port;
    const { e } = engine([`http://127.0.0.1:${port}/v1`]);
    const err = await rejection(e.chat(req('hi'), signal()));
    expect((err as DomainError).code).toBe('context_length_exceeded');
    expect((err as DomainError).message).not.toContain('4096');
  });

  it('answers model_unavailable with Retry-After at once, without calling, when every base URL is ejected', async () => {
    const f = await fake();
    f.setFault('hang');
    const { e, warnings } = engine([f.url], { first_byte_timeout_ms: 200, circuit_breaker: { failure_threshold: 1, cooldown_ms: 60_000 } });
    expect(((await rejection(e.chat(req('hi'), signal()))) as DomainError).code).toBe('upstream_timeout');
    expect(e.health()).toMatchObject([{ index: 0, state: 'open', failures: 1 }]);
    // The upstream's own model apart from the catalog model's id, which the engine's logger adds.
    expect(warnings.find((w) => w.msg === 'upstream ejected: its circuit breaker opened')?.obj).toMatchObject({
      upstream_model: 'up-model',
    });
    expect(warnings.find((w) => w.msg === 'upstream ejected: its circuit breaker opened')?.obj).not.toHaveProperty('model');

    const plain = (await rejection(e.chat(req('hi'), signal()))) as DomainError;
    const streamed = (await rejection(collect(e.chatStream(req('hi'), signal())))) as DomainError;
    for (const err of [plain, streamed]) {
      expect(err.code).toBe('model_unavailable');
      expect(err.retryAfter).toBeGreaterThan(1);
      expect(err.retryAfter).toBeLessThanOrEqual(60);
      expectNoLeak(err, [f.port]);
    }
    expect(f.requests).toHaveLength(1);
  });

  it("passes an upstream 503's Retry-After on as model_overloaded: seconds or an HTTP date, within 1 s to 10 min", async () => {
    const f = await fake();
    const { e } = engine([f.url]);
    const overloaded = async (retryAfter?: string) => {
      f.setFault({ status: 503, retryAfter });
      const err = (await rejection(e.chat(req('hi'), signal()))) as DomainError;
      expect(err.code).toBe('model_overloaded');
      return err.retryAfter;
    };
    expect(await overloaded('7')).toBe(7);
    expect(await overloaded(new Date(Date.now() + 3_600_000).toUTCString())).toBe(600);
    expect(await overloaded(undefined)).toBe(1);
    expect(await overloaded('soon')).toBe(1);
    // A busy server is not a broken one: it stays in rotation.
    expect(e.health()[0]!.state).toBe('closed');
  });
});
