// Chat beyond plain text on the in-process engine (issue 16), on the tiny random-weight fixture:
// JSON output under a grammar built from the schema, tool calls in the template's syntax with
// grammar-constrained arguments, seeds, several choices and log-probabilities; then the same through
// the server (/v1 plain and streamed, GraphQL). Random weights give garbage text: the tests assert
// structure, validity against the schemas and determinism, never text content.
import { readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { print } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EngineChatRequest, EngineStreamEvent } from '../src/domain/inference/engine.js';
import { countPrompt } from '../src/domain/inference/inference-service.js';
import type { LlamaCppEngine } from '../src/domain/inference/llamacpp/llamacpp-engine.js';
import { ChatCompletionStreamDocument, CreateChatCompletionDocument } from '../src/generated/graphql.js';
import { startTestServer, type TestServer } from './support/harness.js';
import { neverAborted, withLoadedChatEngine } from './support/llamacpp.js';
import { violations } from './support/oracle.js';
import { subscribeAll } from './support/ws.js';

let engine: LlamaCppEngine;
const fixtures = withLoadedChatEngine((e) => {
  engine = e;
});
const ajv = new Ajv2020({ strict: false });

const messages: EngineChatRequest['messages'] = [{ role: 'user', content: 'Describe a pet.' }];
// Bounded: enums, booleans and constants end on a random model (free strings and integers may not).
const petSchema = {
  type: 'object',
  properties: {
    kind: { type: 'string', enum: ['cat', 'dog', 'fish'] },
    indoor: { type: 'boolean' },
    size: { enum: ['small', 'large'] },
  },
  required: ['kind', 'indoor', 'size'],
  additionalProperties: false,
};
const weather = {
  type: 'function' as const,
  function: {
    name: 'get_weather',
    description: 'The weather in a city',
    parameters: {
      type: 'object',
      properties: { city: { enum: ['Paris', 'Oslo'] }, unit: { type: 'string', enum: ['c', 'f'] } },
      required: ['city', 'unit'],
      additionalProperties: false,
    },
  },
};
const alarm = {
  type: 'function' as const,
  function: {
    name: 'set_alarm',
    parameters: { type: 'object', properties: { on: { type: 'boolean' } }, required: ['on'], additionalProperties: false },
  },
};
const req = (extra: Partial<EngineChatRequest> = {}): EngineChatRequest => ({ messages, maxTokens: 128, temperature: 0, ...extra });

async function collect(events: AsyncIterable<EngineStreamEvent>) {
  const all: EngineStreamEvent[] = [];
  for await (const e of events) all.push(e);
  return all;
}

describe('the in-process engine', () => {
  it('counts a long conversation (more than 256 messages, counted in pieces) as the engine reads it', async () => {
    for (const content of ['hello world', 'a', 'ok then, '.repeat(60)]) {
      const long = Array.from({ length: 300 }, (_, i) => ({ role: i % 2 ? ('assistant' as const) : ('user' as const), content }));
      const exact = await engine.countChatTokens(long);
      const counted = await countPrompt(engine, long, 10_000_000);
      // Within a token a message of the engine's own count (they were 7 a turn short: half a prompt of short turns).
      expect(Math.abs(counted - exact), `${content}: ${counted} counted, ${exact} exact`).toBeLessThanOrEqual(long.length / 20);
    }
  });

  it('says how many tokens each streamed piece took: together, the completion tokens it reports', async () => {
    for (const extra of [{}, { n: 2, seed: 5, temperature: 1 }, { logprobs: true, topLogprobs: 2 }]) {
      const events = await collect(engine.chatStream(req({ maxTokens: 40, ...extra }), neverAborted()));
      const pieces = events.filter((e) => e.type === 'delta');
      expect(pieces.every((e) => e.type === 'delta' && typeof e.tokens === 'number' && e.tokens >= 0)).toBe(true);
      const sum = pieces.reduce((total, e) => total + (e.type === 'delta' ? (e.tokens ?? 0) : 0), 0);
      const finish = events.at(-1)!;
      expect(finish.type).toBe('finish');
      if (finish.type === 'finish') expect(sum, JSON.stringify(extra)).toBe(finish.usage.completionTokens);
    }
  });

  it('answers JSON that validates against a json_schema response format, plain and streamed', async () => {
    const validate = ajv.compile(petSchema);
    const plain = await engine.chat(
      req({ temperature: 1, seed: 3, responseFormat: { type: 'json_schema', jsonSchema: { name: 'pet', schema: petSchema } } }),
      neverAborted(),
    );
    expect(plain.finishReason).toBe('stop');
    expect(validate(JSON.parse(plain.content)), plain.content).toBe(true);
    const streamed = await collect(
      engine.chatStream(
        req({ temperature: 1, seed: 4, responseFormat: { type: 'json_schema', jsonSchema: { name: 'pet', schema: petSchema } } }),
        neverAborted(),
      ),
    );
    const text = streamed.map((e) => (e.type === 'delta' ? e.content : '')).join('');
    expect(validate(JSON.parse(text)), text).toBe(true);
    expect(streamed.at(-1)).toMatchObject({ type: 'finish', finishReason: 'stop' });
  });

  it("bills a JSON answer's tokens, not the grammar's closing newlines, and a value whole when max_tokens runs out in them is a stop", async () => {
    const pet = { type: 'json_schema' as const, jsonSchema: { name: 'pet', schema: petSchema } };
    for (const seed of [1, 2, 3]) {
      const ask = (extra: Partial<EngineChatRequest>) => req({ temperature: 1, seed, responseFormat: pet, ...extra });
      // With log-probabilities: one per billed token, and together they are the answer.
      const lp = await engine.chat(ask({ logprobs: true }), neverAborted());
      expect(lp.logprobs!.map((l) => l.token).join(''), `seed ${seed}`).toBe(lp.content);
      expect(lp.usage.completionTokens).toBe(lp.logprobs!.length);
      // Streamed: the pieces' tokens add up to what is billed (the newlines were billed, sent in no piece).
      const events = await collect(engine.chatStream(ask({}), neverAborted()));
      const finish = events.at(-1)!;
      const sum = events.reduce((total, e) => total + (e.type === 'delta' ? (e.tokens ?? 0) : 0), 0);
      expect(finish).toMatchObject({ type: 'finish', finishReason: 'stop' });
      if (finish.type === 'finish') expect(sum).toBe(finish.usage.completionTokens);
      // max_tokens at the value's end, or inside the closing newlines: the same answer, finished, billed the same.
      const whole = await engine.chat(ask({}), neverAborted());
      const n = whole.usage.completionTokens;
      for (const maxTokens of [n, n + 1, n + 2, n + 3]) {
        const r = await engine.chat(ask({ maxTokens }), neverAborted());
        expect({ content: r.content, finish: r.finishReason, tokens: r.usage.completionTokens }, `max_tokens ${maxTokens}`).toEqual({
          content: whole.content,
          finish: 'stop',
          tokens: n,
        });
      }
      const cut = await engine.chat(ask({ maxTokens: n - 1 }), neverAborted());
      expect(cut.finishReason).toBe('length');
      expect(cut.usage.completionTokens).toBe(n - 1);
    }
  });

  it("a forced call whose arguments are whole when max_tokens runs out in the grammar's closing newlines finishes tool_calls", async () => {
    for (const seed of [1, 2]) {
      const ask = (extra: Partial<EngineChatRequest>) => req({ temperature: 1, seed, tools: [weather], toolChoice: 'required', ...extra });
      const whole = await engine.chat(ask({}), neverAborted());
      expect(whole.finishReason).toBe('tool_calls');
      const n = whole.usage.completionTokens;
      // Around the arguments' end: whole arguments are a finished call billed as the whole one; cut ones finish length.
      let cut = 0;
      for (let maxTokens = n - 5; maxTokens <= n + 3; maxTokens++) {
        const r = await engine.chat(ask({ maxTokens }), neverAborted());
        const args = r.toolCalls![0]!.function.arguments;
        if (args === whole.toolCalls![0]!.function.arguments) {
          expect({ finish: r.finishReason, tokens: r.usage.completionTokens }, `max_tokens ${maxTokens}`).toEqual({
            finish: 'tool_calls',
            tokens: n,
          });
        } else {
          expect(() => JSON.parse(args), args).toThrow();
          expect({ finish: r.finishReason, tokens: r.usage.completionTokens }, `max_tokens ${maxTokens}`).toEqual({
            finish: 'length',
            tokens: maxTokens,
          });
          cut++;
        }
      }
      expect(cut).toBeGreaterThan(0);
    }
  });

  it('holds answers to what node-llama-cpp alone would let pass: bounds, draft 4 references, allOf, integers without exponents', async () => {
    const schema = {
      type: 'object',
      definitions: {
        pet: { type: 'object', properties: { kind: { enum: ['cat', 'dog'] } }, required: ['kind'], additionalProperties: false },
      },
      properties: {
        n: { type: 'integer', minimum: 10, maximum: 12 },
        count: { type: 'integer', minimum: 0 },
        whole: { type: 'integer' },
        score: { type: 'number', minimum: 0, maximum: 1 },
        price: { type: 'number', exclusiveMinimum: 0 },
        flag: { allOf: [{ type: 'boolean' }] },
        pet: { $ref: '#/definitions/pet' },
      },
      required: ['n', 'count', 'whole', 'score', 'price', 'flag', 'pet'],
      additionalProperties: false,
    };
    const validate = ajv.compile(schema);
    for (const seed of [1, 2, 3, 4]) {
      const r = await engine.chat(
        req({ temperature: 1, seed, maxTokens: 256, responseFormat: { type: 'json_schema', jsonSchema: { name: 'bounded', schema } } }),
        neverAborted(),
      );
      expect(r.finishReason, r.content).toBe('stop');
      const value = JSON.parse(r.content);
      expect(validate(value), `${r.content} ${JSON.stringify(validate.errors)}`).toBe(true);
      expect(r.content).not.toMatch(/[eE][-+]?[0-9]/);
      expect(Number.isSafeInteger(value.whole), r.content).toBe(true);
    }
    const days = {
      type: 'function' as const,
      function: {
        name: 'forecast',
        parameters: { type: 'object', properties: { days: { type: 'integer', minimum: 1, maximum: 7 } }, required: ['days'] },
      },
    };
    for (const seed of [2, 4, 6]) {
      const r = await engine.chat(req({ temperature: 1, seed, tools: [days], toolChoice: 'required' }), neverAborted());
      const args = r.toolCalls![0]!.function.arguments;
      expect(ajv.validate(days.function.parameters, JSON.parse(args)), args).toBe(true);
    }
  });

  it('refuses a schema whose keywords no grammar holds, before anything is generated, naming the keyword and its place', async () => {
    const format = {
      type: 'json_schema' as const,
      jsonSchema: { name: 'zip', schema: { type: 'object', properties: { zip: { type: 'string', pattern: '^[0-9]{5}$' } } } },
    };
    await expect(engine.chat(req({ responseFormat: format }), neverAborted())).rejects.toMatchObject({
      code: 'unsupported_parameter',
      param: 'response_format.json_schema.schema',
      message: expect.stringContaining("'pattern' at response_format.json_schema.schema.properties.zip"),
    });
    const tool = {
      type: 'function' as const,
      function: { name: 'pick', parameters: { type: 'object', properties: { n: { type: 'number', maximum: 9 } } } },
    };
    // With tool_choice auto, before the model has said anything: the call could come in any answer.
    const stream = engine.chatStream(req({ tools: [weather, tool] }), neverAborted());
    await expect(stream.next()).rejects.toMatchObject({ code: 'unsupported_parameter', param: 'tools[1].function.parameters' });
    // One the translation lets through but llama.cpp cannot build (a repetition over its cap): also before anything is generated.
    const many = {
      type: 'function' as const,
      function: {
        name: 'many',
        parameters: { type: 'object', properties: { xs: { type: 'array', items: { type: 'boolean' }, minItems: 100_000 } } },
      },
    };
    await expect(engine.chatStream(req({ tools: [many] }), neverAborted()).next()).rejects.toMatchObject({
      code: 'unsupported_parameter',
      param: 'tools[0].function.parameters',
    });
  });

  it('gives the same text for the same seed and settings', async () => {
    const a = await engine.chat(req({ temperature: 1, seed: 1234, maxTokens: 24 }), neverAborted());
    const b = await engine.chat(req({ temperature: 1, seed: 1234, maxTokens: 24 }), neverAborted());
    expect(b.content).toBe(a.content);
    const streamed = await collect(engine.chatStream(req({ temperature: 1, seed: 1234, maxTokens: 24 }), neverAborted()));
    expect(streamed.map((e) => (e.type === 'delta' ? e.content : '')).join('')).toBe(a.content);
    const others = await Promise.all([1, 2, 3].map((seed) => engine.chat(req({ temperature: 1, seed, maxTokens: 24 }), neverAborted())));
    expect(new Set([a.content, ...others.map((o) => o.content)]).size).toBeGreaterThan(1);
  });

  it('samples with top_k, min_p and repetition_penalty: top_k 1 and min_p 1 pick the likeliest token, as temperature 0 does', async () => {
    const greedy = await engine.chat(req({ maxTokens: 24 }), neverAborted());
    const seeds = [1, 2, 3, 4];
    const sampled = await Promise.all(seeds.map((seed) => engine.chat(req({ temperature: 1, seed, maxTokens: 24 }), neverAborted())));
    // Without them a temperature of 1 wanders off the likeliest path on this model.
    expect(sampled.some((r) => r.content !== greedy.content)).toBe(true);
    for (const extra of [{ topK: 1 }, { minP: 1 }]) {
      for (const seed of seeds) {
        const r = await engine.chat(req({ temperature: 1, seed, maxTokens: 24, ...extra }), neverAborted());
        expect(r.content, JSON.stringify({ ...extra, seed })).toBe(greedy.content);
      }
    }
    // A repeat penalty changes the greedy answer of a model that repeats itself.
    const penalised = await engine.chat(req({ maxTokens: 24, repetitionPenalty: 2 }), neverAborted());
    expect(penalised.content).not.toBe(greedy.content);
  });

  it('forces a tool call with tool_choice required: a name of the tools, arguments that validate', async () => {
    for (const seed of [1, 2, 3]) {
      const r = await engine.chat(req({ temperature: 1, seed, tools: [weather, alarm], toolChoice: 'required' }), neverAborted());
      expect(r.finishReason).toBe('tool_calls');
      expect(r.toolCalls).toHaveLength(1);
      const call = r.toolCalls![0]!;
      expect(call.id).toMatch(/^call_/);
      const tool = [weather, alarm].find((t) => t.function.name === call.function.name)!;
      expect(tool, call.function.name).toBeDefined();
      expect(ajv.validate(tool.function.parameters, JSON.parse(call.function.arguments)), call.function.arguments).toBe(true);
      expect(r.usage.completionTokens).toBeGreaterThan(0);
    }
  });

  it('with a max_tokens too small for the arguments, still gives the forced call its name, finishes length, and counts at most max_tokens', async () => {
    const named = { type: 'function' as const, function: { name: 'get_weather' } };
    // The call's prefix (8 tokens here), name (9 or 8) and the parameters' opening (1) fill the first 17 or 18.
    for (const toolChoice of ['required' as const, named]) {
      for (const maxTokens of [1, 5, 12, 17, 18, 19, 25]) {
        const r = await engine.chat(req({ temperature: 1, seed: 3, maxTokens, tools: [weather, alarm], toolChoice }), neverAborted());
        expect(r.finishReason).toBe('length');
        expect(r.toolCalls).toHaveLength(1);
        expect(['get_weather', 'set_alarm']).toContain(r.toolCalls![0]!.function.name);
        expect(r.usage.completionTokens).toBe(maxTokens);
      }
    }
    const events = await collect(engine.chatStream(req({ maxTokens: 3, tools: [weather, alarm], toolChoice: named }), neverAborted()));
    expect(events.filter((e) => e.type === 'tool_call')).toMatchObject([{ name: 'get_weather', arguments: '' }]);
    expect(events.at(-1)).toMatchObject({ type: 'finish', finishReason: 'length', usage: { completionTokens: 3 } });
  });

  it('calls a named function, and streams the call as its id and name, then argument pieces', async () => {
    const events = await collect(
      engine.chatStream(
        req({ temperature: 1, seed: 9, tools: [weather, alarm], toolChoice: { type: 'function', function: { name: 'get_weather' } } }),
        neverAborted(),
      ),
    );
    const pieces = events.filter((e) => e.type === 'tool_call');
    expect(pieces[0]).toMatchObject({ index: 0, name: 'get_weather', arguments: '' });
    expect(pieces[0]!.id).toMatch(/^call_/);
    expect(pieces.length).toBeGreaterThan(2);
    expect(pieces.slice(1).every((p) => p.id === undefined && p.name === undefined)).toBe(true);
    const args = JSON.parse(pieces.map((p) => p.arguments).join(''));
    expect(ajv.validate(weather.function.parameters, args)).toBe(true);
    expect(events.at(-1)).toMatchObject({ type: 'finish', finishReason: 'tool_calls' });
  });

  it('with tool_choice auto answers in text or with a call, and renders tools and tool results in the prompt', async () => {
    const withTools = await engine.countChatTokens(messages, [weather]);
    expect(withTools).toBeGreaterThan(await engine.countChatTokens(messages));
    const r = await engine.chat(
      req({
        seed: 5,
        maxTokens: 64,
        tools: [weather],
        messages: [
          ...messages,
          {
            role: 'assistant',
            content: '',
            toolCalls: [{ id: 'call_a', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo","unit":"c"}' } }],
          },
          { role: 'tool', content: '3 degrees', toolCallId: 'call_a' },
        ],
      }),
      neverAborted(),
    );
    expect(['stop', 'length', 'tool_calls']).toContain(r.finishReason);
    if (r.finishReason === 'tool_calls') expect(r.toolCalls).toHaveLength(1);
    else expect(r.toolCalls).toBeUndefined();
  });

  it('returns log-probabilities with top alternatives; greedy picks the most likely token', async () => {
    const r = await engine.chat(req({ maxTokens: 12, logprobs: true, topLogprobs: 3 }), neverAborted());
    expect(r.logprobs!.length).toBe(r.usage.completionTokens);
    expect(r.logprobs!.map((l) => l.token).join('')).toBe(r.content);
    for (const l of r.logprobs!) {
      expect(l.logprob).toBeLessThanOrEqual(0);
      expect(l.topLogprobs).toHaveLength(3);
      expect(l.topLogprobs[0]!.logprob).toBeGreaterThanOrEqual(l.topLogprobs[1]!.logprob);
      expect(l.topLogprobs[0]!.token).toBe(l.token);
      expect(l.logprob).toBeCloseTo(l.topLogprobs[0]!.logprob, 6);
    }
  });

  it('generates n choices, each with its own seed, billed together', async () => {
    const one = await engine.chat(req({ temperature: 1, seed: 77, maxTokens: 16 }), neverAborted());
    const r = await engine.chat(req({ temperature: 1, seed: 77, maxTokens: 16, n: 3 }), neverAborted());
    expect(r.choices).toHaveLength(3);
    expect(r.choices![0]!.content).toBe(one.content);
    expect(new Set(r.choices!.map((c) => c.content)).size).toBeGreaterThan(1);
    const events = await collect(engine.chatStream(req({ temperature: 1, seed: 77, maxTokens: 16, n: 3 }), neverAborted()));
    for (let i = 0; i < 3; i++) {
      const text = events.map((e) => (e.type === 'delta' && (e.choice ?? 0) === i ? e.content : '')).join('');
      expect(text).toBe(r.choices![i]!.content);
    }
    expect(events.filter((e) => e.type === 'choice_finish').map((e) => (e as { choice: number }).choice)).toEqual([0, 1, 2]);
    const finish = events.at(-1) as Extract<EngineStreamEvent, { type: 'finish' }>;
    expect(finish.usage.completionTokens).toBe(r.usage.completionTokens);
  });
});

describe('the in-process engine, stopped early', () => {
  it('a consumer that stops in the middle of a tool call frees the slot for the next call', async () => {
    const controller = new AbortController();
    for await (const e of engine.chatStream(req({ seed: 1, n: 2, tools: [weather], toolChoice: 'required' }), controller.signal)) {
      if (e.type === 'tool_call') break;
    }
    const next = await engine.chat(req({ seed: 1, tools: [weather], toolChoice: 'required' }), neverAborted());
    expect(next.finishReason).toBe('tool_calls');
    expect(ajv.validate(weather.function.parameters, JSON.parse(next.toolCalls![0]!.function.arguments))).toBe(true);
  });
});

describe('through the server', () => {
  let s: TestServer;
  let key: string;
  beforeAll(async () => {
    s = await startTestServer({
      yaml: () => `models:
  - id: tiny-tools
    category: chat
    owned_by: tests
    created: 1735689600
    version: "fixture"
    status: beta
    capabilities: { chat_completion: true, streaming: true, function_calling: true }
    pricing: { input_price_per_million: 1, output_price_per_million: 2, currency: usd }
    specifications: { context_window: 1024, max_output_tokens: 256, training_cutoff: "2025-01" }
    engine: { type: llamacpp, file: "${fixtures.files.chat}", threads: 1 }
`,
    });
    key = (await s.account('developer')).apiKey;
  });
  afterAll(() => s.close());

  const post = (body: Record<string, unknown>) =>
    fetch(`${s.v1}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'tiny-tools', messages: [{ role: 'user', content: 'hi' }], max_tokens: 128, ...body }),
    });

  it('/v1: a forced tool call, JSON output, logprobs and n, valid OpenAI answers', async () => {
    const r = await (await post({ tools: [weather], tool_choice: 'required', seed: 2 })).json();
    expect(violations('CreateChatCompletionResponse', r)).toEqual([]);
    expect(r.choices[0].finish_reason).toBe('tool_calls');
    expect(r.choices[0].message.content).toBeNull();
    expect(ajv.validate(weather.function.parameters, JSON.parse(r.choices[0].message.tool_calls[0].function.arguments))).toBe(true);

    const j = await (
      await post({ response_format: { type: 'json_schema', json_schema: { name: 'pet', schema: petSchema } }, seed: 8 })
    ).json();
    expect(ajv.validate(petSchema, JSON.parse(j.choices[0].message.content))).toBe(true);

    const l = await (await post({ logprobs: true, top_logprobs: 2, n: 2, seed: 1, temperature: 1, max_tokens: 8 })).json();
    expect(violations('CreateChatCompletionResponse', l)).toEqual([]);
    expect(l.choices).toHaveLength(2);
    for (const c of l.choices) {
      expect(c.logprobs.content.length).toBeGreaterThan(0);
      for (const t of c.logprobs.content) {
        expect(t.logprob).toBeLessThanOrEqual(0);
        expect(t.top_logprobs).toHaveLength(2);
        // A byte token that is part of a character has no bytes of its own; a whole one has its text's.
        if (t.bytes !== null) expect(Buffer.from(t.bytes).toString('utf8')).toBe(t.token);
      }
    }
  });

  it('/v1 streamed: tool-call pieces, then finish reason tool_calls', async () => {
    const res = await post({ tools: [weather, alarm], tool_choice: 'required', stream: true, seed: 6 });
    const events = (await res.text())
      .split('\n\n')
      .filter((b) => b.startsWith('data: ') && b !== 'data: [DONE]')
      .map((b) => JSON.parse(b.slice(6)));
    for (const e of events) expect(violations('CreateChatCompletionStreamResponse', e)).toEqual([]);
    const pieces = events.flatMap((e) => e.choices.flatMap((c: any) => c.delta.tool_calls ?? []));
    const name = pieces[0].function.name;
    const tool = [weather, alarm].find((t) => t.function.name === name)!;
    expect(ajv.validate(tool.function.parameters, JSON.parse(pieces.map((p: any) => p.function.arguments).join('')))).toBe(true);
    expect(events.flatMap((e) => e.choices.map((c: any) => c.finish_reason)).filter(Boolean)).toEqual(['tool_calls']);
  });

  it('/v1: a forced call cut by a small max_tokens comes with its name and finish reason length, and is billed its tokens', async () => {
    // max_tokens up to 10: within what the name's text lets billing count (its bytes and one).
    for (const tool_choice of ['required', { type: 'function', function: { name: 'get_weather' } }]) {
      for (const max_tokens of [1, 5, 10]) {
        const r = await (await post({ tools: [weather, alarm], tool_choice, seed: 3, max_tokens })).json();
        expect(violations('CreateChatCompletionResponse', r)).toEqual([]);
        expect(r.choices[0].finish_reason).toBe('length');
        expect(['get_weather', 'set_alarm']).toContain(r.choices[0].message.tool_calls[0].function.name);
        expect(r.usage.completion_tokens).toBe(max_tokens);
      }
    }
    const res = await post({
      tools: [weather, alarm],
      tool_choice: 'required',
      stream: true,
      stream_options: { include_usage: true },
      max_tokens: 4,
    });
    const events = (await res.text())
      .split('\n\n')
      .filter((b) => b.startsWith('data: ') && b !== 'data: [DONE]')
      .map((b) => JSON.parse(b.slice(6)));
    expect(events.flatMap((e) => e.choices.flatMap((c: any) => c.delta.tool_calls ?? [])).map((p: any) => p.function.name)).toHaveLength(1);
    expect(events.flatMap((e) => e.choices.map((c: any) => c.finish_reason)).filter(Boolean)).toEqual(['length']);
    expect(events.at(-1).usage.completion_tokens).toBe(4);
  });

  it('refuses schemas nested past 32 deep as the README says: nested arrays by the grammar, nested objects by the 64-level JSON bound first', async () => {
    const nested = (n: number, wrap: (s: object) => object) => {
      let schema: object = { type: 'boolean' };
      for (let i = 0; i < n; i++) schema = wrap(schema);
      return schema;
    };
    const objects = (n: number) =>
      nested(n, (s) => ({ type: 'object', properties: { a: s }, required: ['a'], additionalProperties: false }));
    const arrays = (n: number) => nested(n, (s) => ({ type: 'array', items: s, minItems: 1, maxItems: 1 }));
    const ask = (schema: object) =>
      post({ max_tokens: 4, response_format: { type: 'json_schema', json_schema: { name: 'deep', schema } } });
    for (const schema of [objects(31), arrays(31)]) expect((await ask(schema)).status).toBe(200);
    const deepArrays = await ask(arrays(32));
    expect(deepArrays.status).toBe(400);
    expect((await deepArrays.json()).error).toMatchObject({ code: 'unsupported_parameter', message: expect.stringContaining('32 levels') });
    const deepObjects = await ask(objects(32));
    expect(deepObjects.status).toBe(400);
    expect((await deepObjects.json()).error).toMatchObject({ code: 'invalid_value', message: expect.stringContaining('64 levels') });
    // What the README's "JSON output" paragraph says of it.
    const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
    const paragraph = readme.slice(readme.indexOf('**JSON output.**'), readme.indexOf('\n\n', readme.indexOf('**JSON output.**')));
    expect(paragraph).toContain('32 nested arrays are `400 unsupported_parameter`');
    expect(paragraph).toMatch(/32 nested objects are `400\s+invalid_value`/);
  });

  it('refuses a response format together with tools the model may choose to call, naming the parameter and the model', async () => {
    const r = await post({ tools: [weather], response_format: { type: 'json_object' } });
    expect(r.status).toBe(400);
    expect((await r.json()).error).toMatchObject({
      code: 'unsupported_parameter',
      param: 'response_format',
      message: expect.stringContaining("'tiny-tools'"),
    });
    const forced = await post({ tools: [weather], tool_choice: 'required', response_format: { type: 'json_object' } });
    expect(forced.status).toBe(200);
  });

  it('refuses reasoning_effort, which an in-process model takes no account of, naming the model', async () => {
    const r = await post({ reasoning_effort: 'low' });
    expect(r.status).toBe(400);
    expect((await r.json()).error).toMatchObject({
      code: 'unsupported_parameter',
      param: 'reasoning_effort',
      message:
        "'reasoning_effort' is not supported by the model 'tiny-tools': its engine (llama.cpp, in-process) takes no reasoning effort.",
    });
  });

  it("refuses chat_template_kwargs, which the model file's own template does not take, naming the model", async () => {
    const r = await post({ chat_template_kwargs: { enable_thinking: false } });
    expect(r.status).toBe(400);
    expect((await r.json()).error).toMatchObject({
      code: 'unsupported_parameter',
      param: 'chat_template_kwargs',
      message:
        "'chat_template_kwargs' is not supported by the model 'tiny-tools': its engine (llama.cpp, in-process) renders the chat template the model file carries, without variables.",
    });
    // An empty object asks for nothing.
    expect((await post({ chat_template_kwargs: {}, max_tokens: 4 })).status).toBe(200);
  });

  it('/v1: top_k and min_p reach the sampler (top_k 1 answers as temperature 0 does)', async () => {
    const text = async (extra: object) => {
      const r = await post({ max_tokens: 16, ...extra });
      expect(r.status).toBe(200);
      return (await r.json()).choices[0].message.content as string;
    };
    const greedy = await text({ temperature: 0 });
    expect(await text({ temperature: 1, seed: 9, top_k: 1 })).toBe(greedy);
    expect(await text({ temperature: 1, seed: 9, min_p: 1 })).toBe(greedy);
    // The values that ask for nothing are taken as they are.
    expect((await post({ max_tokens: 4, top_k: -1, min_p: 0, repetition_penalty: 1 })).status).toBe(200);
  });

  it('/v1: a schema no grammar holds is a 400 naming the keyword, and the call is not charged', async () => {
    const balance = async () =>
      (await (await fetch(`${s.v1}/wallet/balance`, { headers: { authorization: `Bearer ${key}` } })).json()).balance;
    const before = await balance();
    for (const stream of [false, true]) {
      const r = await post({
        stream,
        response_format: {
          type: 'json_schema',
          json_schema: { name: 'n', schema: { type: 'object', properties: { n: { type: 'number', minimum: 5 } } } },
        },
      });
      expect(r.status).toBe(400);
      expect((await r.json()).error).toMatchObject({
        type: 'invalid_request_error',
        code: 'unsupported_parameter',
        param: 'response_format.json_schema.schema',
        message: expect.stringContaining("'minimum' at response_format.json_schema.schema.properties.n"),
      });
    }
    expect(await balance()).toBe(before);
  });

  it('GraphQL: the same seed gives the same text; a named tool call', async () => {
    const run = (input: Record<string, unknown>) =>
      s.graphql(
        print(CreateChatCompletionDocument),
        { input: { model: 'tiny-tools', messages: [{ role: 'user', content: 'hi' }], maxTokens: 16, ...input } },
        key,
      );
    const a = await run({ seed: 99, temperature: 1 });
    const b = await run({ seed: 99, temperature: 1 });
    expect(b.body.data.createChatCompletion.choices[0].message.content).toBe(a.body.data.createChatCompletion.choices[0].message.content);
    const t = await run({ tools: [alarm], toolChoice: { functionName: 'set_alarm' }, maxTokens: 128 });
    const call = t.body.data.createChatCompletion.choices[0].message.toolCalls[0];
    expect(call.function.name).toBe('set_alarm');
    expect(ajv.validate(alarm.function.parameters, JSON.parse(call.function.arguments))).toBe(true);
  });

  it('GraphQL subscription: JSON output streamed per choice, logprobs on each content chunk', async () => {
    const { events, error } = await subscribeAll(
      s.url,
      print(ChatCompletionStreamDocument),
      {
        input: {
          model: 'tiny-tools',
          messages: [{ role: 'user', content: 'hi' }],
          maxTokens: 128,
          seed: 5,
          n: 2,
          logprobs: true,
          responseFormat: { type: 'json_schema', jsonSchema: { name: 'pet', schema: petSchema } },
        },
      },
      key,
    );
    expect(error).toBeUndefined();
    const chunks = events.map((e) => e.data.chatCompletionStream);
    for (const index of [0, 1]) {
      const mine = chunks.flatMap((c) => c.choices.filter((ch: any) => ch.index === index));
      const text = mine.map((ch: any) => ch.delta.content ?? '').join('');
      expect(ajv.validate(petSchema, JSON.parse(text)), text).toBe(true);
      for (const ch of mine.filter((m: any) => m.delta.content)) expect(ch.logprobs.length).toBeGreaterThan(0);
      expect(mine.filter((ch: any) => ch.finishReason).map((ch: any) => ch.finishReason)).toEqual(['stop']);
    }
  });
});
