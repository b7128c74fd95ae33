// Content filtering (issue 16): a chat model naming a moderation model of the catalog has its input
// refused before generation (400 content_filter, naming the categories) and its answer cut, before
// the window that flags, with finish_reason content_filter; over /v1 (streamed and not) and GraphQL
// (mutation and subscription); with the fake upstream's moderation (it flags "kill" and "hateful";
// `#flag=N` puts "kill" at word N of the fake's answer) and llama.cpp guards (the fixture biased to
// "unsafe", and the plain chat fixture, whose verdicts say "safe"). The moderation calls are billed
// at the moderation model's price as usage events of their own; a refused input's generation is not.
import OpenAI from 'openai';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, parseConfigText } from '../src/config.js';
import { countTextTokens } from '../src/domain/inference/tokenizer.js';
import { catalogYaml, moderationModelYaml, type TestServer } from './support/harness.js';
import { makeFixtureDir, withLoadedServer } from './support/llamacpp.js';
import { client as v1 } from './support/seed.js';
import { subscribeAll } from './support/ws.js';

const fixtures = makeFixtureDir();
const WINDOW = 24;

/** What chat-refusing's upstream answers, always: a refusal (OpenAI's models' form), plain or streamed. */
const REFUSAL = 'I am sorry, but I will not help with that: helping to kill anyone is not something I do.';
const refusing = createServer((req, res) => {
  let text = '';
  req.on('data', (c) => {
    text += c;
  });
  req.on('end', () => {
    const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
      `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
    if (JSON.parse(text).stream) {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const words = REFUSAL.split(' ').map((w, i) => chunk({ refusal: i ? ` ${w}` : w }));
      res.end([chunk({ role: 'assistant', content: null }), ...words, chunk({}, 'stop'), 'data: [DONE]\n\n'].join(''));
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({
        id: 'c',
        object: 'chat.completion',
        created: 1,
        model: 'm',
        choices: [{ index: 0, message: { role: 'assistant', content: null, refusal: REFUSAL }, finish_reason: 'stop' }],
      }),
    );
  });
});
await new Promise<void>((r) => refusing.listen(0, '127.0.0.1', r));
afterAll(() => new Promise<void>((r) => refusing.close(() => r())));
const REFUSING_URL = `http://127.0.0.1:${(refusing.address() as AddressInfo).port}/v1`;

const chat = (id: string, engine: string, safety: string) => `  - id: ${id}
    category: chat
    owned_by: tests
    created: 1735689600
    version: "2025-01-01"
    status: active
    capabilities: { chat_completion: true, streaming: true, function_calling: true }
    pricing: { input_price_per_million: 1, output_price_per_million: 2, currency: usd }
    specifications: { context_window: 1024, max_output_tokens: 256, training_cutoff: "2024-10" }
    engine: ${engine}
    safety: ${safety}
`;

const yaml = (url: string) => {
  const upstream = (model: string) => `{ type: openai, base_url: "${url}", model: ${model} }`;
  const local = (file: string) => `{ type: llamacpp, file: "${file}", threads: 1 }`;
  return catalogYaml(
    url,
    chat('chat-safe', upstream('upstream-chat'), `{ moderation_model: guard-test, window_chars: ${WINDOW} }`) +
      chat(
        'chat-refusing',
        `{ type: openai, base_url: "${REFUSING_URL}", model: upstream-chat }`,
        `{ moderation_model: guard-test, input: false, window_chars: ${WINDOW} }`,
      ) +
      chat('chat-safe-priced', upstream('upstream-chat'), `{ moderation_model: guard-priced, input: true, output: false }`) +
      chat('chat-llama-guarded', upstream('upstream-chat'), `{ moderation_model: tiny-guard-safe, window_chars: ${WINDOW} }`) +
      chat('tiny-chat-out', local(fixtures.files.chat), `{ moderation_model: tiny-guard-unsafe, input: false, window_chars: ${WINDOW} }`) +
      chat('tiny-chat-in', local(fixtures.files.chat), '{ moderation_model: tiny-guard-unsafe, output: false }') +
      chat('tiny-chat-clean', local(fixtures.files.chat), `{ moderation_model: guard-test, window_chars: ${WINDOW} }`) +
      moderationModelYaml('guard-priced', upstream('upstream-guard'), { price: 'price_per_million_tokens: 1, ' }) +
      moderationModelYaml('tiny-guard-unsafe', local(fixtures.files.guard)) +
      moderationModelYaml('tiny-guard-safe', local(fixtures.files.chat)),
  );
};

let s: TestServer;
let key: string;
let accountId: string;
withLoadedServer(yaml, fixtures, (server, account) => {
  s = server;
  ({ key, accountId } = account);
});

const body = (model: string, content: string, extra: Record<string, unknown> = {}) => ({
  model,
  messages: [{ role: 'user', content }],
  max_tokens: 64,
  ...extra,
});
const fullAnswer = (n: number) => Array.from({ length: n }, (_, i) => `w${i}`).join(' ');
const events = () => s.services.billing.listUsageEvents(accountId);
const newEvents = async (before: number) => (await events()).slice(before);

/** The text, finish reason and usage of an SSE chat stream. */
async function readStream(res: { text: string }) {
  const chunks = res.text
    .split('\n\n')
    .map((e) => e.trim())
    .filter((e) => e.startsWith('data: ') && e !== 'data: [DONE]')
    .map((e) => JSON.parse(e.slice(6)));
  const text = chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('');
  const finish = chunks.find((c) => c.choices[0]?.finish_reason)?.choices[0].finish_reason;
  return { chunks, text, finish, usage: chunks.at(-1)?.usage, done: res.text.includes('data: [DONE]') };
}

const CHAT_FIELDS = 'choices { message { content } finishReason contentFilter { flagged categories } } usage { completionTokens }';
const mutation = `mutation($i: ChatCompletionInput!) { createChatCompletion(input: $i) { ${CHAT_FIELDS} } }`;
const subscription =
  'subscription($i: ChatCompletionInput!) { chatCompletionStream(input: $i) { choices { delta { content } finishReason contentFilter { flagged categories } } usage { completionTokens } } }';
const gqlInput = (model: string, content: string) => ({ i: { model, messages: [{ role: 'user', content }], maxTokens: 64 } });

describe('a flagged input', () => {
  it.each([
    ['plain', {}],
    ['streamed', { stream: true }],
  ])(
    'is refused (%s) with 400 content_filter naming the categories, before generation; only the moderation is billed',
    async (_, extra) => {
      const before = (await events()).length;
      s.upstream.reset();
      for (const [content, categories] of [
        ['how do I kill a process', 'violence'],
        ['write something hateful', 'harassment, hate'],
      ] as const) {
        const r = await v1(s, key).post('/chat/completions', body('chat-safe', content, extra));
        expect(r.status).toBe(400);
        expect(r.body.error).toMatchObject({ type: 'invalid_request_error', code: 'content_filter', param: 'messages' });
        expect(r.body.error.message).toContain(`(${categories})`);
      }
      // The upstream saw two moderation requests and no chat request.
      expect(s.upstream.requests.map((q) => q.path)).toEqual(['/v1/moderations', '/v1/moderations']);
      const added = await newEvents(before);
      expect(added.map((e) => [e.model, e.outcome])).toEqual([
        ['guard-test', 'completed'],
        ['guard-test', 'completed'],
      ]);
      expect(added[0]!.promptTokens).toBe(countTextTokens('how do I kill a process'));
    },
  );

  it('is refused over GraphQL, as a mutation and as a subscription, with the same code', async () => {
    const m = await s.graphql(mutation, gqlInput('chat-safe', 'kill'), key);
    expect(m.body.errors[0].extensions).toMatchObject({ code: 'content_filter', param: 'messages', status: 400 });
    const sub = await subscribeAll(s.url, subscription, gqlInput('chat-safe', 'kill'), key);
    expect(sub.events.flatMap((e) => e.errors ?? []).concat((sub.error as any[]) ?? [])[0]).toMatchObject({
      extensions: { code: 'content_filter' },
    });
  });

  it('checks every message, not only the last', async () => {
    const r = await v1(s, key).post('/chat/completions', {
      model: 'chat-safe',
      messages: [
        { role: 'system', content: 'be hateful' },
        { role: 'user', content: 'hello' },
      ],
    });
    expect(r.body.error?.code).toBe('content_filter');
  });

  it('is refused on llama.cpp with its guard model (the fixture that says unsafe)', async () => {
    const before = (await events()).length;
    const r = await v1(s, key).post('/chat/completions', body('tiny-chat-in', 'Tell me about tea.'));
    expect(r.status).toBe(400);
    expect(r.body.error).toMatchObject({ code: 'content_filter', param: 'messages' });
    expect((await newEvents(before)).map((e) => e.model)).toEqual(['tiny-guard-unsafe']);
  });

  it("bills the moderation at the moderation model's own price, on the same account", async () => {
    const before = (await events()).length;
    const r = await v1(s, key).post('/chat/completions', body('chat-safe-priced', 'a calm question #tokens=3'));
    expect(r.status).toBe(200);
    const added = await newEvents(before);
    expect(added.map((e) => e.model)).toEqual(['guard-priced', 'chat-safe-priced']);
    const tokens = countTextTokens('a calm question #tokens=3');
    expect(added[0]).toMatchObject({ promptTokens: tokens, completionTokens: 0 });
    // 1 USD per million tokens, from the allocation first: the allocation covers it here.
    expect(added[0]!.allocationTokens + Number(added[0]!.walletNanos / 1000n)).toBe(tokens);
  });
});

describe('a flagged answer', () => {
  const content = 'go #tokens=40 #flag=20';
  it('is cut before the window that flags, with finish_reason content_filter, billed for what was delivered', async () => {
    const before = (await events()).length;
    const r = await v1(s, key).post('/chat/completions', body('chat-safe', content));
    expect(r.status).toBe(200);
    const choice = r.body.choices[0];
    expect(choice.finish_reason).toBe('content_filter');
    const answer = fullAnswer(40).replace('w20', 'kill');
    expect(answer.startsWith(choice.message.content)).toBe(true);
    expect(choice.message.content).not.toContain('kill');
    // Cut at a window boundary, at most two windows before the word (a window is checked with the one before it).
    expect(choice.message.content.length % WINDOW).toBe(0);
    expect(answer.indexOf('kill') - choice.message.content.length).toBeLessThan(2 * WINDOW);
    // What was delivered, counted, up to the model's own count of its whole answer (one word a token).
    expect(r.body.usage.completion_tokens).toBe(Math.min(countTextTokens(choice.message.content), 40));
    const added = await newEvents(before);
    expect(added.at(-1)).toMatchObject({ model: 'chat-safe', completionTokens: r.body.usage.completion_tokens });
    expect(added.slice(0, -1).every((e) => e.model === 'guard-test')).toBe(true);
  });

  it('ends a stream without sending the window that flags, and stops there', async () => {
    const r = await v1(s, key).post(
      '/chat/completions',
      body('chat-safe', content, { stream: true, stream_options: { include_usage: true } }),
    );
    expect(r.status).toBe(200);
    const out = await readStream(r);
    expect(out.finish).toBe('content_filter');
    expect(out.done).toBe(true);
    expect(out.text).not.toContain('kill');
    expect(fullAnswer(40).startsWith(out.text)).toBe(true);
    expect(out.text.length).toBeGreaterThan(0);
    expect(out.usage.completion_tokens).toBe(countTextTokens(out.text));
  });

  it("is never billed more than the model's count of its whole answer, plain or streamed", async () => {
    // The model counts its 40-word answer as 6 tokens; tollgate's tokenizer counts the kept part higher.
    s.upstream.setFault({ usage: 6 });
    try {
      const before = (await events()).length;
      const plain = await v1(s, key).post('/chat/completions', body('chat-safe', content));
      expect(plain.body.choices[0].finish_reason).toBe('content_filter');
      expect(countTextTokens(plain.body.choices[0].message.content)).toBeGreaterThan(6);
      expect(plain.body.usage).toMatchObject({ prompt_tokens: 6, completion_tokens: 6, total_tokens: 12 });
      // Streamed, the model's count is known when the window that flags is the last one (checked
      // at the model's finish); cut before, the model is stopped and what was sent is counted.
      const streamed = await readStream(
        await v1(s, key).post(
          '/chat/completions',
          body('chat-safe', 'go #tokens=38 #flag=36', { stream: true, stream_options: { include_usage: true } }),
        ),
      );
      expect(streamed.finish).toBe('content_filter');
      expect(countTextTokens(streamed.text)).toBeGreaterThan(6);
      expect(streamed.usage.completion_tokens).toBe(6);
      // Its prompt as the model counted it, as the plain answer's (not tollgate's estimate).
      expect(streamed.usage.prompt_tokens).toBe(6);
      const billed = (await newEvents(before)).filter((e) => e.model === 'chat-safe');
      expect(billed.map((e) => e.completionTokens)).toEqual([6, 6]);
    } finally {
      s.upstream.setFault(null);
    }
  });

  it('says which categories fired over GraphQL, as a mutation and as a subscription', async () => {
    const m = await s.graphql(mutation, gqlInput('chat-safe', content), key);
    expect(m.body.errors).toBeUndefined();
    const choice = m.body.data.createChatCompletion.choices[0];
    expect(choice.finishReason).toBe('content_filter');
    expect(choice.contentFilter).toEqual({ flagged: true, categories: ['violence'] });
    const sub = await subscribeAll(s.url, subscription, gqlInput('chat-safe', content), key);
    expect(sub.error).toBeUndefined();
    const chunks = sub.events.map((e) => e.data.chatCompletionStream);
    const finish = chunks.find((c) => c.choices[0]?.finishReason);
    expect(finish.choices[0]).toMatchObject({ finishReason: 'content_filter', contentFilter: { flagged: true, categories: ['violence'] } });
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).not.toContain('kill');
  });

  it('on llama.cpp with a guard that says unsafe: nothing of the answer is sent, plain or streamed', async () => {
    const plain = await v1(s, key).post('/chat/completions', body('tiny-chat-out', 'Tell me about tea.', { temperature: 0 }));
    expect(plain.status).toBe(200);
    expect(plain.body.choices[0]).toMatchObject({ finish_reason: 'content_filter', message: { content: '' } });
    expect(plain.body.usage.completion_tokens).toBe(0);
    const streamed = await readStream(
      await v1(s, key).post('/chat/completions', body('tiny-chat-out', 'Tell me about tea.', { stream: true })),
    );
    expect(streamed.finish).toBe('content_filter');
    expect(streamed.text).toBe('');
    const g = await s.graphql(mutation, gqlInput('tiny-chat-out', 'Tell me about tea.'), key);
    const choice = g.body.data.createChatCompletion.choices[0];
    expect(choice.contentFilter.flagged).toBe(true);
    expect(choice.contentFilter.categories.length).toBeGreaterThan(0);
  });
});

describe("a model's refusal", () => {
  it('is checked as an answer is, plain and streamed: cut before the window that flags', async () => {
    const r = await v1(s, key).post('/chat/completions', body('chat-refusing', 'something bad'));
    expect(r.status).toBe(200);
    const choice = r.body.choices[0];
    expect(choice.finish_reason).toBe('content_filter');
    expect(REFUSAL.startsWith(choice.message.refusal ?? '')).toBe(true);
    expect(choice.message.refusal ?? '').not.toContain('kill');
    const streamed = await v1(s, key).post('/chat/completions', body('chat-refusing', 'something bad', { stream: true }));
    const out = await readStream(streamed);
    expect(out.finish).toBe('content_filter');
    const refused = out.chunks.map((c) => c.choices[0]?.delta?.refusal ?? '').join('');
    expect(REFUSAL.startsWith(refused)).toBe(true);
    expect(refused).not.toContain('kill');
  });
});

describe('an upstream that ignores max_tokens', () => {
  it('has only the first max_tokens of the answer checked and sent, not a moderation call per window of the rest', async () => {
    s.upstream.reset();
    s.upstream.setFault('ignore-max-tokens');
    try {
      const r = await v1(s, key).post('/chat/completions', body('chat-safe', 'go #tokens=3000', { max_tokens: 8 }));
      expect(r.status).toBe(200);
      const answer: string = r.body.choices[0].message.content;
      expect(r.body.choices[0].finish_reason).toBe('length');
      expect(answer.length).toBeGreaterThan(0);
      expect(fullAnswer(3000).startsWith(answer)).toBe(true);
      expect(countTextTokens(answer)).toBeLessThanOrEqual(8);
      // The input, then the few characters of those 8 tokens (one window of 24): not the 700-odd
      // windows of the 3000 words the upstream wrote.
      expect(s.upstream.requests.filter((q) => q.path === '/v1/moderations')).toHaveLength(2);
    } finally {
      s.upstream.setFault(null);
    }
  });
});

describe('an upstream that ignores max_tokens, and an answer that flags', () => {
  it('is cut and billed as when the upstream keeps to max_tokens', async () => {
    const request = body('chat-safe', 'go #tokens=400 #flag=50', { max_tokens: 200 });
    const kept = await v1(s, key).post('/chat/completions', request);
    s.upstream.setFault('ignore-max-tokens');
    try {
      const ignored = await v1(s, key).post('/chat/completions', request);
      expect(kept.body.choices[0].finish_reason).toBe('content_filter');
      expect(ignored.body.choices).toEqual(kept.body.choices);
      expect(ignored.body.usage).toEqual(kept.body.usage);
      expect(ignored.body.usage.completion_tokens).toBe(countTextTokens(kept.body.choices[0].message.content));
    } finally {
      s.upstream.setFault(null);
    }
  });
});

describe('several choices and tool calls', () => {
  const content = 'go #tokens=40 #flag=20';
  it('cuts only the choice that flags (n = 2), plain and streamed, billed for what each delivered', async () => {
    const plain = await v1(s, key).post('/chat/completions', body('chat-safe', content, { n: 2 }));
    expect(plain.status).toBe(200);
    const [first, second] = plain.body.choices;
    expect(first.finish_reason).toBe('content_filter');
    expect(first.message.content).not.toContain('kill');
    const flaggedAnswer = fullAnswer(40).replace('w20', 'kill');
    expect(flaggedAnswer.startsWith(first.message.content)).toBe(true);
    const clean = Array.from({ length: 40 }, (_, i) => `c1w${i}`).join(' ');
    expect(second).toMatchObject({ finish_reason: 'stop', message: { content: clean } });
    // The fake counts a word a token: 40 for the second choice, 40 less the withheld text for the first.
    expect(plain.body.usage.completion_tokens).toBeGreaterThanOrEqual(countTextTokens(first.message.content));
    expect(plain.body.usage.completion_tokens).toBeLessThan(80);

    const streamed = await v1(s, key).post('/chat/completions', body('chat-safe', content, { n: 2, stream: true }));
    const chunks = streamed.text
      .split('\n\n')
      .filter((e) => e.startsWith('data: {'))
      .map((e) => JSON.parse(e.slice(6)));
    const text = (i: number) =>
      chunks
        .filter((c) => c.choices[0]?.index === i)
        .map((c) => c.choices[0].delta.content ?? '')
        .join('');
    const finish = (i: number) => chunks.find((c) => c.choices[0]?.index === i && c.choices[0].finish_reason)?.choices[0].finish_reason;
    expect([finish(0), finish(1)]).toEqual(['content_filter', 'stop']);
    expect(text(0)).not.toContain('kill');
    expect(flaggedAnswer.startsWith(text(0))).toBe(true);
    expect(text(1)).toBe(clean);
    expect(streamed.text).toContain('data: [DONE]');
  });

  it('passes tool calls as the model made them (only text is moderated), plain and streamed', async () => {
    const tools = [
      { type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { enum: ['Paris'] } } } } },
    ];
    const plain = await v1(s, key).post('/chat/completions', body('chat-safe', 'weather?', { tools, tool_choice: 'required' }));
    expect(plain.status).toBe(200);
    expect(plain.body.choices[0]).toMatchObject({ finish_reason: 'tool_calls' });
    expect(plain.body.choices[0].message.tool_calls[0].function).toEqual({ name: 'get_weather', arguments: '{"city":"Paris"}' });
    const streamed = await readStream(
      await v1(s, key).post('/chat/completions', body('chat-safe', 'weather?', { tools, tool_choice: 'required', stream: true })),
    );
    expect(streamed.finish).toBe('tool_calls');
    const args = streamed.chunks
      .flatMap((c) => c.choices[0]?.delta?.tool_calls ?? [])
      .map((t: any) => t.function.arguments)
      .join('');
    expect(args).toBe('{"city":"Paris"}');
    const g = await s.graphql(
      'mutation($i: ChatCompletionInput!) { createChatCompletion(input: $i) { choices { finishReason contentFilter { flagged } message { toolCalls { function { name } } } } } }',
      { i: { model: 'chat-safe', messages: [{ role: 'user', content: 'weather?' }], tools, toolChoice: { mode: 'required' } } },
      key,
    );
    expect(g.body.errors).toBeUndefined();
    expect(g.body.data.createChatCompletion.choices[0]).toMatchObject({ finishReason: 'tool_calls', contentFilter: { flagged: false } });
  });
});

describe('a clean answer', () => {
  it('passes whole, streamed or not, with contentFilter flagged false (fake moderation)', async () => {
    const plain = await v1(s, key).post('/chat/completions', body('chat-safe', 'go #tokens=30'));
    expect(plain.body.choices[0]).toMatchObject({ finish_reason: 'stop', message: { content: fullAnswer(30) } });
    const streamed = await readStream(await v1(s, key).post('/chat/completions', body('chat-safe', 'go #tokens=30', { stream: true })));
    expect(streamed).toMatchObject({ finish: 'stop', text: fullAnswer(30), done: true });
    const g = await s.graphql(mutation, gqlInput('chat-safe', 'go #tokens=30'), key);
    expect(g.body.data.createChatCompletion.choices[0].contentFilter).toEqual({ flagged: false, categories: [] });
  });

  it('passes through a llama.cpp guard that says safe, and a llama.cpp chat through the fake moderation', async () => {
    const sdk = new OpenAI({ apiKey: key, baseURL: s.v1, maxRetries: 0 });
    const a = await sdk.chat.completions.create({ model: 'chat-llama-guarded', messages: [{ role: 'user', content: 'go #tokens=12' }] });
    expect(a.choices[0]).toMatchObject({ finish_reason: 'stop', message: { content: fullAnswer(12) } });
    const stream = await sdk.chat.completions.create({
      model: 'chat-llama-guarded',
      stream: true,
      messages: [{ role: 'user', content: 'go #tokens=12' }],
    });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe(fullAnswer(12));
    const sub = await subscribeAll(s.url, subscription, gqlInput('tiny-chat-clean', 'Tell me about tea.'), key);
    expect(sub.error).toBeUndefined();
    const finish = sub.events.map((e) => e.data.chatCompletionStream).find((c) => c.choices[0]?.finishReason);
    expect(finish.choices[0].contentFilter).toEqual({ flagged: false, categories: [] });
  });

  it('on a model without safety has no contentFilter', async () => {
    const g = await s.graphql(mutation, gqlInput('chat-test', 'go #tokens=3'), key);
    expect(g.body.data.createChatCompletion.choices[0].contentFilter).toBeNull();
  });
});

describe('a moderation model that fails', () => {
  it('fails the chat call (fail closed): nothing is generated unchecked, nothing billed for the chat', async () => {
    const before = (await events()).length;
    s.upstream.reset();
    s.upstream.setFailMode('500', 1);
    try {
      const r = await v1(s, key).post('/chat/completions', body('chat-safe', 'go #tokens=5'));
      expect(r.status).toBe(502);
      expect(r.body.error.code).toBe('upstream_error');
    } finally {
      s.upstream.setFailMode(null);
    }
    expect(s.upstream.requests.map((q) => q.path)).toEqual(['/v1/moderations']);
    expect((await newEvents(before)).map((e) => [e.model, e.outcome, e.totalTokens])).toEqual([['guard-test', 'failed', 0]]);
  });
});

describe('the safety config', () => {
  const config = (safety: string, extra = '') =>
    `models:\n${chat('c', '{ type: openai, base_url: "http://127.0.0.1:1/v1", model: m }', safety)}${moderationModelYaml('g', '{ type: openai, base_url: "http://127.0.0.1:1/v1", model: m }')}${extra}`;
  it('fills the defaults: input and output checked, windows of 200 characters', () => {
    const m = parseConfigText(config('{ moderation_model: g }'), 't.yaml').models[0]!;
    expect(m.category === 'chat' && m.safety).toEqual({ moderation_model: 'g', input: true, output: true, window_chars: 200 });
  });
  it.each([
    ['{ moderation_model: nope }', 'model "c": safety.moderation_model "nope": no model of the catalog has this id'],
    ['{ moderation_model: c }', 'model "c": safety.moderation_model "c": "c" is a chat model, not a moderation model'],
    ['{ moderation_model: g, input: false, output: false }', 'model "c": safety.input and safety.output are both false'],
    ['{ moderation_model: g, window_chars: 4 }', 'safety.window_chars'],
    ['{ model: g }', 'safety'],
  ])('refuses %s at start-up, naming the model and key', (safety, message) => {
    expect(() => parseConfigText(config(safety), 't.yaml')).toThrow(ConfigError);
    expect(() => parseConfigText(config(safety), 't.yaml')).toThrow(message);
  });
});
