// Chat beyond plain text through the openai engine (issue 16): tool calls, JSON output, seed, n and
// log-probabilities, over /v1 (plain and streamed) and GraphQL (mutation and subscription), against
// the fake upstream; every /v1 answer is checked against OpenAI's own response schemas.
import { print } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChatCompletionStreamDocument, CreateChatCompletionDocument } from '../src/generated/graphql.js';
import { catalogYaml, startTestServer, toolsCatalogYaml, type TestServer } from './support/harness.js';
import { violations } from './support/oracle.js';
import { subscribeAll } from './support/ws.js';
import { client, credit, seed } from './support/seed.js';
import { formatDecimal, parseDecimal } from '../src/domain/billing/money.js';

let s: TestServer;
let key: string;

beforeAll(async () => {
  s = await startTestServer({
    yaml: (url) => toolsCatalogYaml(url, '\ntiers:\n  startup: { monthly_tokens: 0 }\n'),
  });
  key = (await s.account('developer')).apiKey;
});
afterAll(() => s.close());

const weather = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'The weather in a city',
    parameters: {
      type: 'object',
      properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['c', 'f'] } },
      required: ['city', 'unit'],
      additionalProperties: false,
    },
  },
};
const time = { type: 'function', function: { name: 'get_time', parameters: { type: 'object', properties: { zone: { type: 'string' } } } } };

/** [[[…]]] nested `depth` deep, built without recursion. */
function deepArrays(depth: number): unknown[] {
  let v: unknown[] = [];
  for (let i = 1; i < depth; i++) v = [v];
  return v;
}

async function post(body: Record<string, unknown>) {
  const res = await fetch(`${s.v1}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'chat-tools', messages: [{ role: 'user', content: 'hi #tokens=3' }], ...body }),
  });
  const text = await res.text();
  if (!body.stream || res.status !== 200) return { status: res.status, body: JSON.parse(text), events: [] as any[] };
  const events = text
    .split('\n\n')
    .filter((b) => b.startsWith('data: ') && b !== 'data: [DONE]')
    .map((b) => JSON.parse(b.slice(6)));
  expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true);
  return { status: res.status, body: undefined as any, events };
}

const lastRequest = () => s.upstream.requests.filter((r) => r.path.endsWith('/chat/completions')).at(-1)!.body as Record<string, any>;

/** Assembles streamed tool-call fragments per choice, as a client does. */
function assemble(events: any[]) {
  const out: Record<
    number,
    { content: string; calls: { id?: string; type?: string; name: string; arguments: string }[]; finish?: string }
  > = {};
  for (const e of events) {
    for (const c of e.choices) {
      const slot = (out[c.index] ??= { content: '', calls: [] });
      if (c.delta.content) slot.content += c.delta.content;
      for (const t of c.delta.tool_calls ?? []) {
        const call = (slot.calls[t.index] ??= { name: '', arguments: '' });
        if (t.id) call.id = t.id;
        if (t.type) call.type = t.type;
        if (t.function?.name) call.name += t.function.name;
        call.arguments += t.function?.arguments ?? '';
      }
      if (c.finish_reason) slot.finish = c.finish_reason;
    }
  }
  return out;
}

function expectStreamValid(events: any[]) {
  for (const e of events) expect(violations('CreateChatCompletionStreamResponse', e)).toEqual([]);
}

describe('tool calls through /v1 (openai engine)', () => {
  it('forwards tools and answers tool_calls with null content and finish reason tool_calls', async () => {
    const r = await post({ tools: [weather], tool_choice: 'auto' });
    expect(r.status).toBe(200);
    expect(violations('CreateChatCompletionResponse', r.body)).toEqual([]);
    const choice = r.body.choices[0];
    expect(choice.finish_reason).toBe('tool_calls');
    expect(choice.message.content).toBeNull();
    expect(choice.message.tool_calls).toHaveLength(1);
    const call = choice.message.tool_calls[0];
    expect(call).toMatchObject({ type: 'function', function: { name: 'get_weather' } });
    expect(call.id).toMatch(/^call_/);
    expect(JSON.parse(call.function.arguments)).toEqual({ city: 'x', unit: 'c' });
    const sent = lastRequest();
    expect(sent.tools).toEqual([weather]);
    expect(sent.tool_choice).toBe('auto');
    expect(r.body.usage.completion_tokens).toBeGreaterThan(0);
  });

  it('makes parallel calls unless parallel_tool_calls is false, and calls a named function alone', async () => {
    const parallel = await post({ tools: [weather, time] });
    expect(parallel.body.choices[0].message.tool_calls.map((c: any) => c.function.name)).toEqual(['get_weather', 'get_time']);
    const single = await post({ tools: [weather, time], parallel_tool_calls: false });
    expect(single.body.choices[0].message.tool_calls).toHaveLength(1);
    expect(lastRequest().parallel_tool_calls).toBe(false);
    const named = await post({ tools: [weather, time], tool_choice: { type: 'function', function: { name: 'get_time' } } });
    expect(named.body.choices[0].message.tool_calls.map((c: any) => c.function.name)).toEqual(['get_time']);
    expect(lastRequest().tool_choice).toEqual({ type: 'function', function: { name: 'get_time' } });
    const none = await post({ tools: [weather], tool_choice: 'none' });
    expect(none.body.choices[0].message.tool_calls).toBeUndefined();
    expect(none.body.choices[0].message.content).toBe('w0 w1 w2');
  });

  it("takes OpenAI's allowed_tools choice: only the tools it names are offered, in its mode", async () => {
    const allowed = (mode: string, names: string[]) => ({
      type: 'allowed_tools',
      allowed_tools: { mode, tools: names.map((name) => ({ type: 'function', function: { name } })) },
    });
    const r = await post({ tools: [weather, time], tool_choice: allowed('required', ['get_time']) });
    expect(r.status).toBe(200);
    expect(r.body.choices[0].message.tool_calls.map((c: any) => c.function.name)).toEqual(['get_time']);
    expect(lastRequest().tools.map((t: any) => t.function.name)).toEqual(['get_time']);
    expect(lastRequest().tool_choice).toBe('required');
    await post({ tools: [weather, time], tool_choice: allowed('auto', ['get_weather', 'get_time']) });
    expect(lastRequest().tools.map((t: any) => t.function.name)).toEqual(['get_weather', 'get_time']);
    expect(lastRequest().tool_choice).toBe('auto');
  });

  it('takes an assistant refusal part in the history as what the assistant said', async () => {
    const r = await post({
      messages: [
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: [{ type: 'refusal', refusal: 'I cannot help with that.' }] },
        { role: 'user', content: 'ok #tokens=3' },
      ],
    });
    expect(r.status).toBe(200);
    expect(lastRequest().messages[1]).toMatchObject({ role: 'assistant', content: 'I cannot help with that.' });
  });

  it('takes the tool results back in the history (assistant tool_calls, tool messages)', async () => {
    const r = await post({
      tools: [weather],
      messages: [
        { role: 'user', content: 'weather in Paris?' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris","unit":"c"}' } }],
        },
        { role: 'tool', tool_call_id: 'call_1', content: '21 degrees' },
      ],
    });
    expect(r.status).toBe(200);
    expect(r.body.choices[0]).toMatchObject({ finish_reason: 'stop', message: { content: 'results: 21 degrees' } });
    const sent = lastRequest();
    expect(sent.messages[1]).toEqual({
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris","unit":"c"}' } }],
    });
    expect(sent.messages[2]).toEqual({ role: 'tool', content: '21 degrees', tool_call_id: 'call_1' });
  });

  it('takes a history assembled from a stream: tool calls with their `index` and without `type`, function fields beyond the four', async () => {
    // Clients that rebuild the assistant message from streamed deltas keep each piece's `index`
    // (and some SDKs extra keys); they mean nothing in a request and are left out, as unknown keys
    // of a message are.
    const r = await post({
      tools: [{ ...weather, function: { ...weather.function, examples: [] } }],
      messages: [
        { role: 'user', content: 'weather in Paris?' },
        {
          role: 'assistant',
          content: '',
          // Without its `type` too: 'function' is the only kind there is.
          tool_calls: [{ index: 0, id: 'call_1', function: { name: 'get_weather', arguments: '{"city":"Paris","unit":"c"}' } }],
        },
        { role: 'tool', tool_call_id: 'call_1', name: 'get_weather', content: '21 degrees' },
      ],
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const sent = lastRequest();
    expect(sent.messages[1].tool_calls).toEqual([
      { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris","unit":"c"}' } },
    ]);
    expect(sent.tools[0].function).toEqual(weather.function);
  });

  it('streams tool calls as OpenAI does: id, type and name first, then argument pieces', async () => {
    const r = await post({ tools: [weather, time], stream: true, stream_options: { include_usage: true } });
    expect(r.status).toBe(200);
    expectStreamValid(r.events);
    // The role chunk of a call that may call tools has content null, as OpenAI's (an empty string
    // there opens an empty text part in clients such as the AI SDK); a plain stream's has "".
    expect(r.events[0].choices[0].delta).toEqual({ role: 'assistant', content: null });
    const plain = await post({ stream: true });
    expect(plain.events[0].choices[0].delta).toEqual({ role: 'assistant', content: '' });
    const pieces = r.events.flatMap((e) => e.choices.flatMap((c: any) => c.delta.tool_calls ?? []));
    const firsts = pieces.filter((p: any) => p.id);
    expect(firsts.map((p: any) => [p.index, p.type, p.function.name])).toEqual([
      [0, 'function', 'get_weather'],
      [1, 'function', 'get_time'],
    ]);
    expect(
      pieces.filter((p: any) => !p.id).every((p: any) => p.function.name === undefined && typeof p.function.arguments === 'string'),
    ).toBe(true);
    const got = assemble(r.events)[0]!;
    expect(got.finish).toBe('tool_calls');
    expect(JSON.parse(got.calls[0]!.arguments)).toEqual({ city: 'x', unit: 'c' });
    expect(JSON.parse(got.calls[1]!.arguments)).toEqual({ zone: 'x' });
    expect(r.events.at(-1).usage.completion_tokens).toBeGreaterThan(0);
  });

  it('refuses what it cannot do or what is malformed, naming the parameter', async () => {
    const plain = await fetch(`${s.v1}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'chat-test', messages: [{ role: 'user', content: 'hi' }], tools: [weather] }),
    });
    expect(plain.status).toBe(400);
    expect((await plain.json()).error).toMatchObject({
      code: 'unsupported_parameter',
      param: 'tools',
      message: expect.stringContaining("'chat-test'"),
    });
    const cases: [Record<string, unknown>, string, string][] = [
      [{ tools: [weather], tool_choice: { type: 'function', function: { name: 'nope' } } }, 'invalid_value', 'tool_choice'],
      [{ tool_choice: 'required' }, 'invalid_value', 'tool_choice'],
      [{ tools: [weather, weather] }, 'invalid_value', 'tools[1].function.name'],
      [{ tools: [{ type: 'function', function: { name: 'bad name' } }] }, 'invalid_value', 'tools[0].function.name'],
      [{ messages: [{ role: 'tool', content: 'x' }] }, 'invalid_value', 'messages[0].tool_call_id'],
      [{ messages: [{ role: 'user', content: null }] }, 'invalid_value', 'messages[0].content'],
      [{ functions: [{ name: 'f' }] }, 'unsupported_parameter', 'functions'],
      [
        { response_format: { type: 'json_schema', json_schema: { name: 'has space' } } },
        'invalid_value',
        'response_format.json_schema.name',
      ],
      // The same rules and words as GraphQL's, not a type error naming no allowed value.
      [{ response_format: { type: 'xml' } }, 'invalid_value', 'response_format.type'],
      [{ response_format: { type: 'json_schema' } }, 'invalid_value', 'response_format.json_schema'],
      [
        { response_format: { type: 'json_schema', json_schema: { name: 'x', schema: 'an object' } } },
        'invalid_value',
        'response_format.json_schema.schema',
      ],
      [
        { tools: [{ type: 'function', function: { name: 'f', parameters: 'an object' } }] },
        'invalid_value',
        'tools[0].function.parameters',
      ],
      [{ n: 5 }, 'invalid_value', 'n'],
      [{ n: 0 }, 'invalid_value', 'n'],
      [{ top_logprobs: 3 }, 'invalid_value', 'top_logprobs'],
      [{ logprobs: true, top_logprobs: 21 }, 'invalid_value', 'top_logprobs'],
      [{ seed: 1.5 }, 'invalid_type', 'seed'],
      [
        {
          tools: [weather],
          tool_choice: {
            type: 'allowed_tools',
            allowed_tools: { mode: 'auto', tools: [{ type: 'function', function: { name: 'nope' } }] },
          },
        },
        'invalid_value',
        'tool_choice.allowed_tools.tools[0].function.name',
      ],
      [
        { tools: [weather], tool_choice: { type: 'allowed_tools', allowed_tools: { mode: 'none', tools: [] } } },
        'invalid_value',
        'tool_choice',
      ],
      [{ tools: [weather], tool_choice: { type: 'custom', custom: { name: 'x' } } }, 'unsupported_parameter', 'tool_choice'],
      [{ tools: [weather], tool_choice: { type: 'constructor' } }, 'unsupported_parameter', 'tool_choice'],
      [{ max_tokens: 5, max_completion_tokens: 6 }, 'invalid_value', 'max_completion_tokens'],
      [{ messages: [{ role: 'user', content: [{ type: 'refusal', refusal: 'no' }] }] }, 'invalid_value', 'messages[0].content[0].type'],
      [{ messages: [{ role: 'user', content: [] }] }, 'invalid_value', 'messages[0].content'],
      // Schemas nested past what anything reading them should take (a stack overflow, once); a whole body nesting past 256 levels is refused before (test/v1-body.test.ts).
      [
        { tools: [{ type: 'function', function: { name: 'deep', parameters: { type: 'object', default: deepArrays(100) } } }] },
        'invalid_value',
        'tools[0].function.parameters',
      ],
      [
        { response_format: { type: 'json_schema', json_schema: { name: 'deep', schema: { type: 'object', default: deepArrays(65) } } } },
        'invalid_value',
        'response_format.json_schema.schema',
      ],
    ];
    const before = s.upstream.requests.length;
    for (const [body, code, param] of cases) {
      const r = await post(body);
      expect([r.status, r.body.error.code, r.body.error.param], JSON.stringify(body)).toEqual([400, code, param]);
    }
    expect((await post({ response_format: { type: 'xml' } })).body.error.message).toBe(
      "'response_format.type' must be 'text', 'json_object' or 'json_schema'; got 'xml'.",
    );
    expect(s.upstream.requests.length).toBe(before);
  });

  it('counts the tool definitions as prompt tokens', async () => {
    // #nousage: the upstream leaves usage out, so the server counts the prompt itself.
    const without = await post({ messages: [{ role: 'user', content: 'hi #nousage' }], tool_choice: 'none' });
    const withTools = await post({ messages: [{ role: 'user', content: 'hi #nousage' }], tools: [weather], tool_choice: 'none' });
    expect(withTools.body.usage.prompt_tokens - without.body.usage.prompt_tokens).toBeGreaterThan(30);
  });
});

describe('JSON output, seed, n and logprobs through /v1 (openai engine)', () => {
  const schema = {
    type: 'object',
    properties: { name: { type: 'string' }, age: { type: 'integer', minimum: 0 }, tags: { type: 'array', items: { type: 'string' } } },
    required: ['name', 'age', 'tags'],
    additionalProperties: false,
  };

  it('forwards response_format json_schema and json_object; the answer parses', async () => {
    const r = await post({ response_format: { type: 'json_schema', json_schema: { name: 'person', schema, strict: true } } });
    expect(violations('CreateChatCompletionResponse', r.body)).toEqual([]);
    expect(JSON.parse(r.body.choices[0].message.content)).toEqual({ name: 'x', age: 0, tags: [] });
    expect(lastRequest().response_format).toEqual({ type: 'json_schema', json_schema: { name: 'person', schema, strict: true } });
    const o = await post({ response_format: { type: 'json_object' }, stream: true });
    expectStreamValid(o.events);
    expect(JSON.parse(assemble(o.events)[0]!.content)).toEqual({ answer: 'w0 w1 w2' });
    expect(lastRequest().response_format).toEqual({ type: 'json_object' });
    await post({ response_format: { type: 'text' } });
    expect(lastRequest().response_format).toBeUndefined();
  });

  it('forwards the seed', async () => {
    await post({ seed: 42 });
    expect(lastRequest().seed).toBe(42);
  });

  it('answers n choices, billed for every choice and the prompt once', async () => {
    const one = await post({});
    const r = await post({ n: 3 });
    expect(violations('CreateChatCompletionResponse', r.body)).toEqual([]);
    expect(r.body.choices.map((c: any) => [c.index, c.message.content])).toEqual([
      [0, 'w0 w1 w2'],
      [1, 'c1w0 c1w1 c1w2'],
      [2, 'c2w0 c2w1 c2w2'],
    ]);
    expect(lastRequest().n).toBe(3);
    expect(r.body.usage.prompt_tokens).toBe(one.body.usage.prompt_tokens);
    expect(r.body.usage.completion_tokens).toBe(3 * one.body.usage.completion_tokens);
  });

  it('streams n choices, each chunk carrying its choice index', async () => {
    const r = await post({ n: 2, stream: true, stream_options: { include_usage: true } });
    expectStreamValid(r.events);
    const got = assemble(r.events);
    expect(got[0]).toMatchObject({ content: 'w0 w1 w2', finish: 'stop' });
    expect(got[1]).toMatchObject({ content: 'c1w0 c1w1 c1w2', finish: 'stop' });
    expect(r.events.filter((e) => e.choices[0]?.delta.role).map((e) => e.choices[0].index)).toEqual([0, 1]);
    expect(r.events.at(-1).usage.completion_tokens).toBe(6);
  });

  it('returns logprobs with top_logprobs alternatives, streamed and not', async () => {
    const r = await post({ logprobs: true, top_logprobs: 2 });
    expect(violations('CreateChatCompletionResponse', r.body)).toEqual([]);
    const content = r.body.choices[0].logprobs.content;
    expect(content.map((l: any) => l.token).join('')).toBe(r.body.choices[0].message.content);
    for (const l of content) {
      expect(l.logprob).toBeLessThan(0);
      expect(l.top_logprobs).toHaveLength(2);
      expect(l.bytes).toEqual([...Buffer.from(l.token, 'utf8')]);
    }
    expect(lastRequest()).toMatchObject({ logprobs: true, top_logprobs: 2 });
    const st = await post({ logprobs: true, top_logprobs: 1, stream: true });
    expectStreamValid(st.events);
    const withText = st.events.flatMap((e) => e.choices).filter((c: any) => c.delta.content);
    expect(withText.length).toBe(3);
    for (const c of withText) expect(c.logprobs.content[0].token).toBe(c.delta.content);
    const plain = await post({});
    expect(plain.body.choices[0].logprobs).toBeNull();
  });
});

describe('the same features over GraphQL', () => {
  const gqlTools = [{ type: 'function', function: { name: 'get_weather', parameters: weather.function.parameters } }];

  it('createChatCompletion with tools, a named tool choice, n and logprobs', async () => {
    const r = await s.graphql(
      print(CreateChatCompletionDocument),
      {
        input: {
          model: 'chat-tools',
          messages: [{ role: 'user', content: 'hi #tokens=2' }],
          tools: gqlTools,
          toolChoice: { functionName: 'get_weather' },
          n: 2,
          seed: 7,
        },
      },
      key,
    );
    expect(r.body.errors).toBeUndefined();
    const c = r.body.data.createChatCompletion;
    expect(c.choices).toHaveLength(2);
    for (const ch of c.choices) {
      expect(ch.finishReason).toBe('tool_calls');
      expect(ch.message.content).toBeNull();
      expect(JSON.parse(ch.message.toolCalls[0].function.arguments)).toEqual({ city: 'x', unit: 'c' });
    }
    expect(lastRequest()).toMatchObject({ seed: 7, n: 2, tool_choice: { type: 'function', function: { name: 'get_weather' } } });
    const lp = await s.graphql(
      print(CreateChatCompletionDocument),
      {
        input: {
          model: 'chat-tools',
          messages: [{ role: 'user', content: 'hi #tokens=2' }],
          logprobs: true,
          topLogprobs: 3,
          responseFormat: { type: 'json_object' },
        },
      },
      key,
    );
    const choice = lp.body.data.createChatCompletion.choices[0];
    expect(JSON.parse(choice.message.content)).toEqual({ answer: 'w0 w1' });
    expect(choice.logprobs.length).toBeGreaterThan(0);
    expect(choice.logprobs[0].topLogprobs).toHaveLength(3);
  });

  it('refuses a tool choice with both a mode and a function name', async () => {
    const r = await s.graphql(
      print(CreateChatCompletionDocument),
      {
        input: {
          model: 'chat-tools',
          messages: [{ role: 'user', content: 'hi' }],
          tools: gqlTools,
          toolChoice: { mode: 'auto', functionName: 'get_weather' },
        },
      },
      key,
    );
    expect(r.body.errors[0].extensions).toMatchObject({ code: 'invalid_value' });
  });

  it('chatCompletionStream streams tool-call pieces and per-choice chunks', async () => {
    const { events, error } = await subscribeAll(
      s.url,
      print(ChatCompletionStreamDocument),
      { input: { model: 'chat-tools', messages: [{ role: 'user', content: 'hi' }], tools: gqlTools, n: 2 } },
      key,
    );
    expect(error).toBeUndefined();
    const chunks = events.map((e) => e.data.chatCompletionStream);
    const pieces = chunks.flatMap((c) => c.choices.filter((ch: any) => ch.index === 1).flatMap((ch: any) => ch.delta.toolCalls ?? []));
    expect(pieces[0]).toMatchObject({ index: 0, type: 'function', function: { name: 'get_weather', arguments: '' } });
    expect(JSON.parse(pieces.map((p: any) => p.function.arguments).join(''))).toEqual({ city: 'x', unit: 'c' });
    const finishes = chunks.flatMap((c) => c.choices.filter((ch: any) => ch.finishReason).map((ch: any) => [ch.index, ch.finishReason]));
    expect(finishes.sort()).toEqual([
      [0, 'tool_calls'],
      [1, 'tool_calls'],
    ]);
    expect(chunks.at(-1).usage.completionTokens).toBeGreaterThan(0);
  });
});

describe('billing several choices', () => {
  it('holds n times max_tokens of output, and charges every choice its output and the prompt once', async () => {
    const a = await seed(s).account({ tier: 'startup' }); // no allocation, empty wallet
    const c = client(s, a.apiKey);
    const ask = (n: number) =>
      c.post('/chat/completions', { model: 'chat-tools', messages: [{ role: 'user', content: 'q #tokens=10' }], max_tokens: 10, n });
    const needs = (r: { body: any }) => parseDecimal(/needs ([0-9.]+) USD/.exec(r.body.error.message)![1]!);
    const one = await ask(1);
    const three = await ask(3);
    expect([one.status, three.status]).toEqual([402, 402]);
    // Two more choices of 10 tokens each at 2 USD per million output tokens.
    expect(needs(three) - needs(one)).toBe(2n * 10n * 2_000n);

    await credit(s, a.id, formatDecimal(needs(three)));
    const served = await ask(3);
    expect(served.status).toBe(200);
    expect(served.body.choices).toHaveLength(3);
    expect(served.body.usage.completion_tokens).toBe(30);
    const charge = BigInt(served.body.usage.prompt_tokens) * 1_000n + 30n * 2_000n;
    expect(await c.balance()).toBe(formatDecimal(needs(three) - charge));
  });
});

describe('tool definitions at admission', () => {
  it('count as prompt tokens in the hold (billing) before the call', async () => {
    const a = await seed(s).account({ tier: 'startup' }); // empty wallet: every call is refused with what it needs
    const c = client(s, a.apiKey);
    const needs = async (extra: Record<string, unknown>) => {
      const r = await c.post('/chat/completions', {
        model: 'chat-tools',
        messages: [{ role: 'user', content: 'q' }],
        max_tokens: 10,
        ...extra,
      });
      expect(r.status).toBe(402);
      return parseDecimal(/needs ([0-9.]+) USD/.exec(r.body.error.message)![1]!);
    };
    const plain = await needs({});
    const withTools = await needs({ tools: [weather, time] });
    // At 1 USD per million input tokens: 1000 nanos a token; the two definitions are dozens of tokens.
    const extraTokens = (withTools - plain) / 1_000n;
    expect(extraTokens).toBeGreaterThan(30n);
    expect(extraTokens).toBeLessThan(200n);
  });
});

describe('chat.max_choices', () => {
  it('sets the most choices a request may ask for', async () => {
    const narrow = await startTestServer({ yaml: (url) => catalogYaml(url, 'chat: { max_choices: 2 }') });
    try {
      const k = (await narrow.account('developer')).apiKey;
      const ask = (n: number) =>
        fetch(`${narrow.v1}/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${k}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'chat-test', messages: [{ role: 'user', content: 'hi' }], n }),
        });
      expect((await ask(2)).status).toBe(200);
      const refused = await ask(3);
      expect(refused.status).toBe(400);
      expect((await refused.json()).error).toMatchObject({
        code: 'invalid_value',
        param: 'n',
        message: expect.stringContaining('from 1 to 2'),
      });
    } finally {
      await narrow.close();
    }
  });
});
