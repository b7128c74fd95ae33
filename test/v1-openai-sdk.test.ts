// The /v1 API driven by the official openai SDK, as customers' apps use it; every response is
// checked against OpenAI's own response schemas.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/harness.js';
import { violations } from './support/oracle.js';

let s: TestServer;
let client: OpenAI;

beforeAll(async () => {
  s = await startTestServer();
  const { apiKey } = await s.account('developer');
  client = new OpenAI({ apiKey, baseURL: s.v1, maxRetries: 0 });
});
afterAll(() => s.close());

describe('the openai SDK against /v1', () => {
  it('lists the catalog with every field of section 2.4', async () => {
    const page = await client.models.list();
    const ids = page.data.map((m) => m.id);
    expect(ids).toEqual(['chat-test', 'chat-old', 'embed-test', 'rerank-test', 'guard-test']);
    const chat = page.data[0] as unknown as Record<string, unknown>;
    expect(chat).toEqual({
      id: 'chat-test',
      object: 'model',
      created: 1735689600,
      owned_by: 'tests',
      category: 'chat',
      version: '2025-01-01',
      capabilities: { chat_completion: true, streaming: true, function_calling: false },
      pricing: { input_price_per_million: 1, output_price_per_million: 2, currency: 'usd' },
      specifications: { context_window: 4096, max_output_tokens: 256, training_cutoff: '2024-10' },
      status: 'active',
      available: true,
      unavailable_reason: null,
    });
    const embed = page.data[2] as unknown as Record<string, unknown>;
    expect(embed.capabilities).toEqual({ embeddings: true });
    expect(embed.pricing).toEqual({ price_per_million_tokens: 0.1, currency: 'usd' });
    expect(embed.specifications).toEqual({ max_tokens: 512, output_dimensions: 768 });
    const raw = await (await fetch(`${s.v1}/models`)).json();
    expect(violations('ListModelsResponse', raw)).toEqual([]);
  });

  it('retrieves one model, and a missing one is a 404 in the error body', async () => {
    const m = await client.models.retrieve('embed-test');
    expect(m.id).toBe('embed-test');
    const err = await client.models.retrieve('nope').catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.NotFoundError);
    expect(err.status).toBe(404);
    expect(err.error).toMatchObject({ type: 'invalid_request_error', code: 'model_not_found' });
  });

  it('lists models with no key, but a key that is sent must be valid: a wrong one is 401, as OpenAI answers', async () => {
    expect((await fetch(`${s.v1}/models`)).status).toBe(200);
    // Through fetch too: the answer is checked against the OpenAPI document, which declares the 401.
    for (const path of ['/models', '/models/chat-test']) {
      const refused = await fetch(`${s.v1}${path}`, { headers: { authorization: 'Bearer ask_not-a-key-at-all' } });
      expect(refused.status, path).toBe(401);
    }
    const wrong = new OpenAI({ apiKey: 'ask_not-a-key-at-all', baseURL: s.v1, maxRetries: 0 });
    const err = await wrong.models.list().catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.AuthenticationError);
    expect(err.error).toMatchObject({ code: 'invalid_api_key' });
    const one = await wrong.models.retrieve('chat-test').catch((e) => e);
    expect(one).toBeInstanceOf(OpenAI.AuthenticationError);
    expect((await client.models.list()).data.length).toBeGreaterThan(0);
  });

  it("forwards a message's name, text parts on lines of their own, and an assistant's refusal in the history as what it said", async () => {
    s.upstream.reset();
    await client.chat.completions.create({
      model: 'chat-test',
      messages: [
        {
          role: 'user',
          name: 'alice',
          content: [
            { type: 'text', text: 'Here is the file:' },
            { type: 'text', text: 'def foo(): pass' },
          ],
        },
        { role: 'assistant', content: null, refusal: 'I cannot help with that.' },
        { role: 'user', content: 'why?' },
      ],
    });
    const sent = s.upstream.requests.find((q) => q.path === '/v1/chat/completions')!.body as { messages: unknown[] };
    expect(sent.messages).toEqual([
      { role: 'user', content: 'Here is the file:\ndef foo(): pass', name: 'alice' },
      { role: 'assistant', content: 'I cannot help with that.' },
      { role: 'user', content: 'why?' },
    ]);
    const bad = await client.chat.completions
      .create({ model: 'chat-test', messages: [{ role: 'user', name: 'al ice', content: 'hi' }] })
      .catch((e) => e);
    expect(bad).toBeInstanceOf(OpenAI.BadRequestError);
    expect(bad.error).toMatchObject({ code: 'invalid_value', param: 'messages[0].name' });
  });

  it("relays an upstream model's refusal as OpenAI's: message.refusal with content null, and delta.refusal in a stream, billed as output", async () => {
    const said = "I'm sorry, I can't help with that.";
    s.upstream.setFault({
      raw: JSON.stringify({
        id: 'chatcmpl-up',
        object: 'chat.completion',
        created: 1,
        model: 'upstream-chat',
        choices: [{ index: 0, message: { role: 'assistant', content: null, refusal: said }, finish_reason: 'stop' }],
      }),
    });
    try {
      const plain = await client.chat.completions.create({ model: 'chat-test', messages: [{ role: 'user', content: 'something bad' }] });
      expect(violations('CreateChatCompletionResponse', plain)).toEqual([]);
      expect(plain.choices[0]!.message).toMatchObject({ role: 'assistant', content: null, refusal: said });
      // No usage from the upstream: the refusal is counted as the output.
      expect(plain.usage!.completion_tokens).toBeGreaterThan(5);

      const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
        `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
      s.upstream.setFault({
        raw: [
          chunk({ role: 'assistant', content: null, refusal: '' }),
          chunk({ refusal: "I'm sorry, " }),
          chunk({ refusal: "I can't help with that." }),
          chunk({}, 'stop'),
          'data: [DONE]\n\n',
        ].join(''),
        type: 'text/event-stream',
      });
      const pieces: string[] = [];
      const chunks: unknown[] = [];
      const stream = client.chat.completions
        .stream({ model: 'chat-test', messages: [{ role: 'user', content: 'something bad' }], stream_options: { include_usage: true } })
        .on('refusal.delta', (e) => pieces.push(e.delta))
        .on('chunk', (c) => chunks.push(c));
      const final = await stream.finalChatCompletion();
      expect(chunks.flatMap((c) => violations('CreateChatCompletionStreamResponse', c))).toEqual([]);
      expect(pieces.join('')).toBe(said);
      expect(final.choices[0]!.message.refusal).toBe(said);
      expect(final.choices[0]!.message.content).toBeNull();
      expect(final.usage!.completion_tokens).toBeGreaterThan(5);
    } finally {
      s.upstream.setFault(null);
    }
  });

  it('creates a plain chat completion with exact usage', async () => {
    const c = await client.chat.completions.create({ model: 'chat-test', messages: [{ role: 'user', content: 'hello #tokens=5' }] });
    expect(c.object).toBe('chat.completion');
    expect(c.model).toBe('chat-test');
    expect(c.choices).toHaveLength(1);
    expect(c.choices[0]!.message).toMatchObject({ role: 'assistant', content: 'w0 w1 w2 w3 w4' });
    expect(c.choices[0]!.finish_reason).toBe('stop');
    expect(c.usage!.completion_tokens).toBe(5);
    expect(c.usage!.total_tokens).toBe(c.usage!.prompt_tokens + 5);
    expect(violations('CreateChatCompletionResponse', c)).toEqual([]);
    // The upstream received our parameters in its own names.
    const sent = s.upstream.requests.at(-1)!.body as Record<string, unknown>;
    expect(sent.model).toBe('upstream-chat');
    expect(sent.max_tokens).toBe(256);
  });

  it('reports length when max_tokens cuts the answer', async () => {
    const c = await client.chat.completions.create({
      model: 'chat-test',
      max_tokens: 2,
      messages: [{ role: 'user', content: 'hi #tokens=9' }],
    });
    expect(c.choices[0]!.finish_reason).toBe('length');
    expect(c.usage!.completion_tokens).toBe(2);
  });

  it('streams a chat completion with the role first, one id, and a final finish reason', async () => {
    const stream = await client.chat.completions.create({
      model: 'chat-test',
      stream: true,
      messages: [{ role: 'user', content: 'hi #tokens=4' }],
    });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    for (const c of chunks) expect(violations('CreateChatCompletionStreamResponse', c)).toEqual([]);
    expect(new Set(chunks.map((c) => c.id)).size).toBe(1);
    expect(chunks[0]!.choices[0]!.delta.role).toBe('assistant');
    const last = chunks.at(-1)!;
    expect(last.choices[0]!.delta).toEqual({});
    expect(last.choices[0]!.finish_reason).toBe('stop');
    expect(chunks.slice(0, -1).every((c) => c.choices[0]!.finish_reason === null)).toBe(true);
    expect(chunks.map((c) => c.choices[0]!.delta.content ?? '').join('')).toBe('w0 w1 w2 w3');
    expect(chunks.every((c) => !('usage' in c) || c.usage === null)).toBe(true);
  });

  it('adds a usage chunk with no choices when stream_options.include_usage is set', async () => {
    const stream = await client.chat.completions.create({
      model: 'chat-test',
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: 'user', content: 'hi #tokens=3' }],
    });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    const last = chunks.at(-1)!;
    expect(last.choices).toEqual([]);
    expect(last.usage).toMatchObject({ completion_tokens: 3 });
    expect(last.usage!.total_tokens).toBe(last.usage!.prompt_tokens + 3);
    for (const c of chunks) expect(violations('CreateChatCompletionStreamResponse', c)).toEqual([]);
  });

  it('creates embeddings in the SDK default (base64) and as floats, with the same vectors', async () => {
    const b64 = await client.embeddings.create({ model: 'embed-test', input: ['one', 'two', 'three'] });
    const flt = await client.embeddings.create({ model: 'embed-test', input: ['one', 'two', 'three'], encoding_format: 'float' });
    expect(b64.data.map((d) => d.index)).toEqual([0, 1, 2]);
    expect(b64.data[0]!.embedding).toHaveLength(768);
    for (let i = 0; i < 3; i++) {
      const a = b64.data[i]!.embedding;
      const b = flt.data[i]!.embedding;
      expect(a.length).toBe(b.length);
      // base64 carries float32: equal to the float answer at float32 precision.
      for (let j = 0; j < a.length; j += 97) expect(a[j]).toBeCloseTo(Math.fround(b[j]!), 7);
    }
    expect(flt.usage.prompt_tokens).toBe(flt.usage.total_tokens);
    expect(violations('CreateEmbeddingResponse', flt)).toEqual([]);
    const raw = await fetch(`${s.v1}/embeddings`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${client.apiKey}` },
      body: JSON.stringify({ model: 'embed-test', input: 'one', encoding_format: 'base64' }),
    }).then((r) => r.json());
    expect(typeof raw.data[0].embedding).toBe('string');
    // (OpenAI's schema describes only the float form, so the base64 body is not checked against it.)
    expect(Buffer.from(raw.data[0].embedding, 'base64').length).toBe(768 * 4);
  });

  it("moderates through the path the SDK calls, in the shape of OpenAI's schema", async () => {
    const r = await client.moderations.create({ model: 'guard-test', input: 'I will kill the process' });
    expect(violations('CreateModerationResponse', r)).toEqual([]);
    expect(r.results[0]!.category_applied_input_types.violence).toEqual(['text']);
    expect(r.results).toHaveLength(1);
    expect(r.results[0]!.flagged).toBe(true);
    for (const k of ['hate', 'harassment', 'self-harm', 'sexual', 'violence']) {
      expect(typeof (r.results[0]!.categories as unknown as Record<string, boolean>)[k]).toBe('boolean');
      expect(typeof (r.results[0]!.category_scores as unknown as Record<string, number>)[k]).toBe('number');
    }
  });

  it("fills in the categories of OpenAI's schema an upstream does not judge: unflagged, scored 0, applied to no input", async () => {
    const five = { hate: false, harassment: false, 'self-harm': false, sexual: false, violence: true };
    s.upstream.setFault({
      raw: JSON.stringify({
        id: 'modr-1',
        model: 'upstream-guard',
        results: [
          {
            flagged: true,
            categories: five,
            category_scores: { hate: 0.01, harassment: 0.02, 'self-harm': 0, sexual: 0, violence: 0.97 },
          },
        ],
      }),
    });
    try {
      const r = await client.moderations.create({ model: 'guard-test', input: 'I will kill the process' });
      expect(violations('CreateModerationResponse', r)).toEqual([]);
      const [result] = r.results;
      expect(result!.categories.violence).toBe(true);
      expect(result!.category_scores.violence).toBe(0.97);
      expect(result!.category_applied_input_types.violence).toEqual(['text']);
      expect(result!.categories['violence/graphic']).toBe(false);
      expect(result!.category_scores['hate/threatening']).toBe(0);
      expect(result!.category_applied_input_types['sexual/minors']).toEqual([]);
    } finally {
      s.upstream.setFault(null);
    }
  });

  it('moderates a list of inputs in one upstream call, one result each in order, and refuses an empty string', async () => {
    s.upstream.reset();
    const inputs = ['hello', 'I will kill the process', 'fine', 'a hateful remark', 'ok', 'more', 'and more', 'last'];
    const r = await client.moderations.create({ model: 'guard-test', input: inputs });
    expect(violations('CreateModerationResponse', r)).toEqual([]);
    expect(r.results.map((x) => x.flagged)).toEqual([false, true, false, true, false, false, false, false]);
    const calls = s.upstream.requests.filter((q) => q.path === '/v1/moderations');
    expect(calls).toHaveLength(1);
    expect(calls[0]!.body).toMatchObject({ model: 'upstream-guard', input: inputs });
    const empty = await client.moderations.create({ model: 'guard-test', input: ['fine', ''] }).catch((e) => e);
    expect(empty).toBeInstanceOf(OpenAI.APIError);
    expect(empty.status).toBe(400);
    expect(empty.error).toMatchObject({ code: 'invalid_value', param: 'input', message: "'input[1]' is an empty string." });
  });

  it("moderates without a model, as the SDK allows: the catalog's moderation model answers", async () => {
    const r = await client.moderations.create({ input: 'I will kill the process' });
    expect(r.model).toBe('guard-test');
    expect(r.results[0]!.flagged).toBe(true);
  });

  it('turns an upstream failure into a 502 error the SDK raises, without upstream details', async () => {
    const err = await client.chat.completions
      .create({ model: 'chat-test', messages: [{ role: 'user', content: 'x #fail=500' }] })
      .catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect(err.status).toBe(502);
    expect(err.error).toMatchObject({ type: 'server_error', code: 'upstream_error' });
    expect(JSON.stringify(err.error)).not.toContain('127.0.0.1');
    expect(JSON.stringify(err.error)).not.toContain(String(s.upstream.port));
  });

  it('makes a stream cut mid-way fail in the SDK instead of looking finished', async () => {
    const stream = await client.chat.completions.create({
      model: 'chat-test',
      stream: true,
      messages: [{ role: 'user', content: 'x #tokens=10 #fail=midstream' }],
    });
    const got: string[] = [];
    const err = await (async () => {
      for await (const chunk of stream) got.push(chunk.choices[0]?.delta.content ?? '');
    })().catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect(String(err.message)).toMatch(/upstream|model/i);
  });
});
