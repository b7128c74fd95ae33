// What real upstreams send that the OpenAI format does not quite say (SGLang's `finish_reason: ""`,
// Ollama's tool calls on one index and its usage of 0, vLLM's `abort`, TGI's `eos_token`, Foundry
// Local's `"error": null`, llama.cpp's and TEI's refusals, `event: error`, a response held open
// after [DONE], TEI's /rerank body), read through the running server with a wallet-paid key: what
// the client gets, and what is billed.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Catalog } from '../src/domain/catalog/catalog.js';
import type { ModelConfig } from '../src/domain/catalog/model.js';
import type { Engine, Usage } from '../src/domain/inference/engine.js';
import { clampChatUsage, InferenceService } from '../src/domain/inference/inference-service.js';
import { countChatTokens, countTextTokens, truncateTextTokens } from '../src/domain/inference/tokenizer.js';
import { MODEL } from './support/billing-fixtures.js';
import { startFakeUpstream, type FakeUpstream } from './support/fake-upstream.js';
import { embeddingModelYaml, startTestServer, type TestServer, forwardedChatModelYaml } from './support/harness.js';
import { client, seed } from './support/seed.js';
import { until } from './support/wait.js';

const chatModel = (id: string, engine: string) => forwardedChatModelYaml(id, engine, { functionCalling: true });

/** One SSE event of a chat chunk with these choices (and other top-level fields). */
const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) =>
  `data: ${JSON.stringify({ id: 'chatcmpl-x', object: 'chat.completion.chunk', created: 1735689600, model: 'm', choices, ...extra })}\n\n`;
const choice = (delta: Record<string, unknown>, finish: unknown = null, index = 0) => ({
  index,
  delta,
  logprobs: null,
  finish_reason: finish,
});
const usage = (prompt: number, completion: number) => ({
  prompt_tokens: prompt,
  completion_tokens: completion,
  total_tokens: prompt + completion,
});
const DONE = 'data: [DONE]\n\n';
const sse = (...events: string[]) => ({ raw: events.join(''), type: 'text/event-stream' });

const TOOLS = [
  { type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } },
  { type: 'function', function: { name: 'get_time', parameters: { type: 'object' } } },
];

/** Parses an SSE body into its data payloads. */
function sseData(text: string): string[] {
  return text
    .split('\n\n')
    .filter((e) => e.startsWith('data: '))
    .map((e) => e.slice('data: '.length));
}
/** The chunks of a streamed answer (without [DONE]). */
const chunksOf = (text: string) =>
  sseData(text)
    .filter((d) => d !== '[DONE]')
    .map((d) => JSON.parse(d));
const contentOf = (text: string) =>
  chunksOf(text)
    .map((c) => c.choices?.[0]?.delta?.content ?? '')
    .join('');

/** The tool calls a client assembles from a stream's chunks, by their index (as the SDKs do). */
const assembled = (text: string) => {
  const calls: { id?: string; name: string; arguments: string }[] = [];
  for (const ch of chunksOf(text))
    for (const t of ch.choices?.[0]?.delta?.tool_calls ?? []) {
      const call = (calls[t.index] ??= { name: '', arguments: '' });
      if (t.id) call.id = t.id;
      call.name += t.function?.name ?? '';
      call.arguments += t.function?.arguments ?? '';
    }
  return calls;
};

describe('upstream quirks', () => {
  let s: TestServer;
  let second: FakeUpstream;

  beforeAll(async () => {
    second = await startFakeUpstream();
    s = await startTestServer({
      yaml: (url) => `
tiers:
  developer: { monthly_tokens: 0 }
models:
${chatModel('chat-q', `base_url: "${url}", timeout_ms: 5000`)}${chatModel(
  'chat-two',
  `base_urls: ["${url}", "${second.url}"], timeout_ms: 5000, circuit_breaker: { failure_threshold: 1, cooldown_ms: 600000 }`,
)}${embeddingModelYaml('embed-q', '{ max_tokens: 512, output_dimensions: 4 }', `{ type: openai, base_url: "${url}", model: upstream-embed }`)}`,
    });
  });
  afterAll(async () => {
    await s?.close();
    await second?.close();
  });
  afterEach(async () => {
    s.upstream.setFault(null);
    second.setFault(null);
    await until(async () => (await s.services.billing.countOpenHolds()) === 0);
    expect(await s.services.billing.verifyLedger()).toEqual([]);
  });

  const account = async () => {
    const a = await seed(s).account({ tier: 'developer' }).wallet('1.00');
    return { ...a, c: client(s, a.apiKey) };
  };
  const chat = (c: ReturnType<typeof client>, content: string, extra: Record<string, unknown> = {}) =>
    c.post('/chat/completions', { model: 'chat-q', messages: [{ role: 'user', content }], max_tokens: 64, ...extra });
  const stream = (c: ReturnType<typeof client>, content: string, extra: Record<string, unknown> = {}) =>
    chat(c, content, { stream: true, stream_options: { include_usage: true }, ...extra });
  /** The one usage event of an account, once it is settled. */
  const billed = async (accountId: string) => {
    await until(async () => (await s.services.billing.listUsageEvents(accountId)).length === 1);
    return (await s.services.billing.listUsageEvents(accountId))[0]!;
  };

  it('1. finish_reason "" on every chunk (SGLang 0.4.3, older Ollama) is not an ending: the content after it is delivered and billed', async () => {
    const { id, c } = await account();
    s.upstream.setFault(
      sse(
        chunk([choice({ role: 'assistant', content: '' }, '')]),
        chunk([choice({ content: 'The capital' }, '')]),
        chunk([choice({ content: ' is Paris.' }, '')]),
        chunk([choice({ content: '' }, 'stop')]),
        chunk([], { usage: usage(4, 5) }),
        DONE,
      ),
    );
    const r = await stream(c, 'capital?');
    expect(r.status).toBe(200);
    expect(contentOf(r.text)).toBe('The capital is Paris.');
    const finishes = chunksOf(r.text)
      .map((ch) => ch.choices[0]?.finish_reason)
      .filter((f) => f !== undefined && f !== null);
    expect(finishes).toEqual(['stop']);
    expect(sseData(r.text).at(-1)).toBe('[DONE]');
    expect(await billed(id)).toMatchObject({ outcome: 'completed', promptTokens: 4, completionTokens: 5 });
  });

  it('7. "error": null on every chunk (Microsoft Foundry Local) is no error: the stream is delivered and billed', async () => {
    const { id, c } = await account();
    s.upstream.setFault(
      sse(
        chunk([choice({ role: 'assistant', content: '' })], { error: null }),
        chunk([choice({ content: 'Fine' })], { error: null }),
        chunk([choice({}, 'stop')], { error: null }),
        chunk([], { usage: usage(4, 1), error: null }),
        DONE,
      ),
    );
    const r = await stream(c, 'fine?');
    expect(r.status).toBe(200);
    expect(contentOf(r.text)).toBe('Fine');
    expect(sseData(r.text).at(-1)).toBe('[DONE]');
    expect(await billed(id)).toMatchObject({ outcome: 'completed', promptTokens: 4, completionTokens: 1 });
  });

  it('11. an `event: error` SSE event ends the stream as an upstream failure, billed for what was delivered, even when [DONE] follows', async () => {
    const { id, c } = await account();
    s.upstream.setFault(
      sse(
        chunk([choice({ role: 'assistant', content: '' })]),
        chunk([choice({ content: 'Hi there' })]),
        'event: error\ndata: {"message":"upstream model crashed","code":500}\n\n',
        DONE,
      ),
    );
    const r = await stream(c, 'hi', { max_tokens: 16 });
    expect(r.status).toBe(200);
    const data = sseData(r.text);
    expect(data).not.toContain('[DONE]');
    expect(JSON.parse(data.at(-1)!).error).toMatchObject({ code: 'upstream_error' });
    expect(JSON.stringify(data)).not.toContain('crashed');
    expect(contentOf(r.text.slice(0, r.text.lastIndexOf('data: {"error"')))).toBe('Hi there');
    const content = 'hi';
    expect(await billed(id)).toMatchObject({
      outcome: 'failed_mid_stream',
      promptTokens: countChatTokens([{ role: 'user', content }]),
      completionTokens: countTextTokens('Hi there'),
    });
  });

  it('9. a stream whose upstream keeps the response open after [DONE] ends at [DONE], and the upstream response is closed after it', async () => {
    const { id, c } = await account();
    // The idle timeout (5 s here) is what ended such a stream before: the upstream held it open.
    s.upstream.setFault({
      ...sse(
        chunk([choice({ role: 'assistant', content: '' })]),
        chunk([choice({ content: 'Quick' }, 'stop')]),
        chunk([], { usage: usage(4, 1) }),
        DONE,
      ),
      hold: true,
    });
    const aborted = s.upstream.aborted;
    const r = await stream(c, 'quick?');
    expect(r.status).toBe(200);
    expect(sseData(r.text).at(-1)).toBe('[DONE]');
    expect(contentOf(r.text)).toBe('Quick');
    // The client's stream ended while the upstream still held its response open...
    expect(s.upstream.aborted).toBe(aborted);
    expect(await billed(id)).toMatchObject({ outcome: 'completed', promptTokens: 4, completionTokens: 1 });
    // ...which tollgate then closes (after a short grace in which a server may still end it).
    await until(() => s.upstream.aborted > aborted);
  });

  it('9b. a stream whose upstream sends its end and usage but no [DONE], and holds the response open, ends complete at the idle timeout', async () => {
    const { id, c } = await account();
    s.upstream.setFault({
      ...sse(
        chunk([choice({ role: 'assistant', content: '' })]),
        chunk([choice({ content: 'Quick' }, 'stop')]),
        chunk([], { usage: usage(4, 1) }),
      ),
      hold: true,
    });
    const r = await stream(c, 'quick?');
    expect(r.status).toBe(200);
    expect(sseData(r.text).at(-1)).toBe('[DONE]');
    expect(r.text).not.toContain('"error"');
    expect(contentOf(r.text)).toBe('Quick');
    expect(await billed(id)).toMatchObject({ outcome: 'completed', promptTokens: 4, completionTokens: 1 });
  });

  it('9c. a stream of n = 2 whose upstream ends one choice twice but not the other, then holds the response open, is no complete answer', async () => {
    const { id, c } = await account();
    s.upstream.setFault({
      ...sse(
        chunk([choice({ role: 'assistant', content: '' }), choice({ role: 'assistant', content: '' }, null, 1)]),
        chunk([choice({ content: 'Done' }, 'stop'), choice({ content: 'Half an ans' }, null, 1)]),
        chunk([choice({}, 'stop')]),
        chunk([], { usage: usage(4, 6) }),
      ),
      hold: true,
    });
    const r = await stream(c, 'two?', { n: 2 });
    expect(sseData(r.text)).not.toContain('[DONE]');
    expect(JSON.parse(sseData(r.text).at(-1)!).error).toMatchObject({ code: expect.stringMatching(/^upstream_/) });
    expect(await billed(id)).toMatchObject({ outcome: 'failed_mid_stream' });
  });

  describe('6. finish reasons', () => {
    it("vLLM's `abort` after content ends the stream as an upstream failure, billed for what was delivered", async () => {
      const { id, c } = await account();
      s.upstream.setFault(
        sse(
          chunk([choice({ role: 'assistant', content: '' })]),
          chunk([choice({ content: 'The answer is' })]),
          chunk([choice({ content: '' }, 'abort')]),
          chunk([], { usage: usage(4, 3) }),
          DONE,
        ),
      );
      const r = await stream(c, 'answer?');
      expect(r.status).toBe(200);
      const data = sseData(r.text);
      expect(data).not.toContain('[DONE]');
      expect(JSON.parse(data.at(-1)!).error).toMatchObject({ code: 'upstream_error' });
      expect(chunksOf(r.text).some((ch) => ch.choices?.[0]?.finish_reason)).toBe(false);
      expect(await billed(id)).toMatchObject({
        outcome: 'failed_mid_stream',
        promptTokens: countChatTokens([{ role: 'user', content: 'answer?' }]),
        completionTokens: countTextTokens('The answer is'),
      });
    });

    it('`abort` before anything reached the client is failed over, streamed or not, without ejecting the base URL', async () => {
      const { c } = await account();
      const aborted = sse(chunk([choice({ role: 'assistant', content: '' }, 'abort')]), DONE);
      const plainAbort = {
        raw: JSON.stringify({
          choices: [{ index: 0, message: { role: 'assistant', content: 'The ans' }, finish_reason: 'abort' }],
          usage: usage(4, 2),
        }),
      };
      const content = 'hello #tokens=2';
      for (const streamed of [true, false, true, false]) {
        s.upstream.setFault(streamed ? aborted : plainAbort);
        const r = streamed
          ? await c.post('/chat/completions', { model: 'chat-two', messages: [{ role: 'user', content }], max_tokens: 2, stream: true })
          : await c.post('/chat/completions', { model: 'chat-two', messages: [{ role: 'user', content }], max_tokens: 2 });
        expect(r.status).toBe(200);
        expect(streamed ? contentOf(r.text) : r.body.choices[0].message.content).toBe('w0 w1');
      }
      // Round-robin: two of the four calls started on the aborting URL; its breaker (threshold 1) stayed closed.
      expect((await (await fetch(`${s.url}/readyz`)).json()).upstreams['chat-two'][0]).toMatchObject({ state: 'closed' });
    });

    it("TGI's `eos_token` is `stop`, or `tool_calls` for an answer that calls tools", async () => {
      const { c } = await account();
      s.upstream.setFault(sse(chunk([choice({ role: 'assistant', content: 'Done' })]), chunk([choice({}, 'eos_token')]), DONE));
      const r = await stream(c, 'done?');
      expect(chunksOf(r.text).map((ch) => ch.choices[0]?.finish_reason ?? null)).toContain('stop');
      expect(sseData(r.text).at(-1)).toBe('[DONE]');
      s.upstream.setFault({
        raw: JSON.stringify({
          choices: [
            {
              index: 0,
              message: {
                role: 'assistant',
                tool_calls: [{ id: '0', type: 'function', function: { name: 'get_weather', arguments: { city: 'Paris' } } }],
              },
              finish_reason: 'eos_token',
            },
          ],
          usage: usage(4, 12),
        }),
      });
      const plain = await chat(c, 'weather?', { tools: TOOLS });
      expect(plain.status).toBe(200);
      expect(plain.body.choices[0]).toMatchObject({
        finish_reason: 'tool_calls',
        message: { tool_calls: [{ id: '0', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
      });
      // Streamed, the arguments as a JSON object too: sent as text, as OpenAI's clients parse them.
      s.upstream.setFault(
        sse(
          chunk([
            choice({
              role: 'assistant',
              tool_calls: [{ index: 0, id: '0', type: 'function', function: { name: 'get_weather', arguments: { city: 'Paris' } } }],
            }),
          ]),
          chunk([choice({}, 'eos_token')]),
          DONE,
        ),
      );
      const streamed = await stream(c, 'weather?', { tools: TOOLS });
      expect(assembled(streamed.text)).toEqual([{ id: '0', name: 'get_weather', arguments: '{"city":"Paris"}' }]);
      expect(chunksOf(streamed.text).map((ch) => ch.choices[0]?.finish_reason ?? null)).toContain('tool_calls');
    });
  });

  describe('2. an answer tollgate judges invalid, and the tool calls it can read safely', () => {
    it('fewer choices than n: 502 to that client, billed nothing, not failed over and not counted towards ejection', async () => {
      const { id, c } = await account();
      const one = JSON.stringify({
        choices: [{ index: 0, message: { role: 'assistant', content: 'only one' }, finish_reason: 'stop' }],
        usage: usage(4, 2),
      });
      s.upstream.setFault({ raw: one });
      const body = { model: 'chat-two', messages: [{ role: 'user', content: 'two #tokens=2' }], max_tokens: 2, n: 2 };
      const before = second.requests.length;
      const statuses: number[] = [];
      // Round-robin: of these four calls, two start on the URL that answers one choice.
      for (let i = 0; i < 4; i++) {
        const r = await c.post('/chat/completions', i % 2 ? { ...body, stream: true } : body);
        statuses.push(r.status === 200 && r.text.includes('"error"') ? 502 : r.status);
        if (r.status !== 200)
          expect(r.body.error).toMatchObject({ code: 'upstream_error', message: "The model's upstream server sent an invalid response." });
      }
      expect(statuses.sort()).toEqual([200, 200, 502, 502]);
      // Only the calls that started on the second URL reached it: the refused ones were not failed over...
      expect(second.requests.length - before).toBe(2);
      // ...and the first URL (failure_threshold 1) was not ejected.
      expect((await (await fetch(`${s.url}/readyz`)).json()).upstreams['chat-two'][0]).toMatchObject({ state: 'closed', failures: 0 });
      const events = await s.services.billing.listUsageEvents(id);
      expect(events.filter((e) => e.outcome === 'failed').map((e) => [e.promptTokens, e.completionTokens])).toEqual([
        [0, 0],
        [0, 0],
      ]);
    });

    it('a tool call without an id gets one (`call_…`)', async () => {
      const { c } = await account();
      s.upstream.setFault({
        raw: JSON.stringify({
          choices: [
            {
              index: 0,
              message: {
                role: 'assistant',
                content: null,
                tool_calls: [{ type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }],
              },
              finish_reason: 'tool_calls',
            },
          ],
          usage: usage(4, 12),
        }),
      });
      const r = await chat(c, 'weather?', { tools: TOOLS });
      expect(r.status).toBe(200);
      expect(r.body.choices[0].message.tool_calls).toEqual([
        {
          id: expect.stringMatching(/^call_[0-9A-Za-z]{24}$/),
          type: 'function',
          function: { name: 'get_weather', arguments: '{"city":"Paris"}' },
        },
      ]);
    });

    it('streamed tool calls without `index` (older Ollama) are numbered by their ids; one without an id either gets one', async () => {
      const { id, c } = await account();
      s.upstream.setFault(
        sse(
          chunk([
            choice({
              role: 'assistant',
              content: '',
              tool_calls: [
                { id: 'call_x1', type: 'function', function: { name: 'get_weather', arguments: '{"city":' } },
                { function: { arguments: '"Paris"}' } },
                { id: 'call_x2', type: 'function', function: { name: 'get_time', arguments: '{}' } },
              ],
            }),
          ]),
          chunk([choice({ content: '' }, 'tool_calls')]),
          chunk([], { usage: usage(4, 9) }),
          DONE,
        ),
      );
      const r = await stream(c, 'weather?', { tools: TOOLS });
      expect(sseData(r.text).at(-1)).toBe('[DONE]');
      expect(assembled(r.text)).toEqual([
        { id: 'call_x1', name: 'get_weather', arguments: '{"city":"Paris"}' },
        { id: 'call_x2', name: 'get_time', arguments: '{}' },
      ]);
      expect(await billed(id)).toMatchObject({ outcome: 'completed', completionTokens: 9 });

      s.upstream.setFault(
        sse(
          chunk([choice({ tool_calls: [{ type: 'function', function: { name: 'get_time', arguments: '{}' } }] })]),
          chunk([choice({}, 'tool_calls')]),
          DONE,
        ),
      );
      const noId = await stream(c, 'time?', { tools: TOOLS });
      expect(assembled(noId.text)).toEqual([{ id: expect.stringMatching(/^call_[0-9A-Za-z]{24}$/), name: 'get_time', arguments: '{}' }]);
    });

    it('3. tool calls with different ids on one index (Ollama, older vLLM and SGLang parsers) get an index each', async () => {
      const { c } = await account();
      s.upstream.setFault(
        sse(
          chunk([
            choice({
              role: 'assistant',
              content: '',
              tool_calls: [{ id: 'call_a', index: 0, type: 'function', function: { name: 'get_weather', arguments: '{"city":' } }],
            }),
          ]),
          chunk([choice({ tool_calls: [{ index: 0, function: { arguments: '"Paris"}' } }] })]),
          chunk([
            choice({ tool_calls: [{ id: 'call_b', index: 0, type: 'function', function: { name: 'get_time', arguments: '{"tz":' } }] }),
          ]),
          chunk([choice({ tool_calls: [{ index: 0, function: { arguments: '"CET"}' } }] })]),
          chunk([choice({ content: '' }, 'tool_calls')]),
          chunk([], { usage: usage(4, 20) }),
          DONE,
        ),
      );
      const r = await stream(c, 'weather and time?', { tools: TOOLS });
      expect(assembled(r.text)).toEqual([
        { id: 'call_a', name: 'get_weather', arguments: '{"city":"Paris"}' },
        { id: 'call_b', name: 'get_time', arguments: '{"tz":"CET"}' },
      ]);
      expect(chunksOf(r.text).map((ch) => ch.choices[0]?.finish_reason ?? null)).toContain('tool_calls');
    });
  });

  describe('4. usage reported as 0 (Ollama, for a cached prompt) is no usage: what tollgate counts is billed', () => {
    const answer = 'A fairly long answer with several words in it, about twenty tokens or so, to bill.';

    it('chat, streamed and not', async () => {
      const { id, c } = await account();
      const content = 'cached prompt';
      const expected = { promptTokens: countChatTokens([{ role: 'user', content }]), completionTokens: countTextTokens(answer) };
      s.upstream.setFault(
        sse(
          chunk([choice({ role: 'assistant', content: '' })]),
          chunk([choice({ content: answer }, 'stop')]),
          chunk([], { usage: usage(0, 0) }),
          DONE,
        ),
      );
      const streamed = await stream(c, content);
      expect(chunksOf(streamed.text).at(-1).usage).toEqual({
        prompt_tokens: expected.promptTokens,
        completion_tokens: expected.completionTokens,
        total_tokens: expected.promptTokens + expected.completionTokens,
      });
      expect(await billed(id)).toMatchObject({ outcome: 'completed', ...expected });

      s.upstream.setFault({
        raw: JSON.stringify({
          choices: [{ index: 0, message: { role: 'assistant', content: answer }, finish_reason: 'stop' }],
          usage: usage(0, 0),
        }),
      });
      const plain = await chat(c, content);
      expect(plain.body.usage).toEqual({
        prompt_tokens: expected.promptTokens,
        completion_tokens: expected.completionTokens,
        total_tokens: expected.promptTokens + expected.completionTokens,
      });
      // A count of 0 for one side only: the other side's count is kept.
      s.upstream.setFault({
        raw: JSON.stringify({
          choices: [{ index: 0, message: { role: 'assistant', content: answer }, finish_reason: 'stop' }],
          usage: usage(3, 0),
        }),
      });
      expect((await chat(c, content)).body.usage).toMatchObject({ prompt_tokens: 3, completion_tokens: expected.completionTokens });
    });

    it('embeddings', async () => {
      const { c } = await account();
      const input = ['first text here', 'second text'];
      s.upstream.setFault({
        raw: JSON.stringify({
          object: 'list',
          data: input.map((_, index) => ({ object: 'embedding', index, embedding: [0.5, 0.5, 0.5, 0.5] })),
          usage: { prompt_tokens: 0, total_tokens: 0 },
        }),
      });
      const r = await c.post('/embeddings', { model: 'embed-q', input });
      expect(r.status).toBe(200);
      const counted = countTextTokens(input[0]!) + countTextTokens(input[1]!);
      expect(r.body.usage).toEqual({ prompt_tokens: counted, total_tokens: counted });
    });
  });

  describe('5. output of any length is counted in bounded time; one stream event is at most 4 MB', () => {
    const MB = 2 ** 20;

    it('a plain answer of 1 MB without a space and without usage: cut at max_tokens, billed max_tokens', async () => {
      const { id, c } = await account();
      s.upstream.setFault({
        raw: JSON.stringify({ choices: [{ index: 0, message: { role: 'assistant', content: 'a'.repeat(MB) }, finish_reason: 'length' }] }),
      });
      const r = await chat(c, 'degenerate', { max_tokens: 64 });
      expect(r.status).toBe(200);
      expect(r.body.choices[0]).toMatchObject({ finish_reason: 'length', message: { content: truncateTextTokens('a'.repeat(MB), 64) } });
      expect(r.body.usage.completion_tokens).toBe(64);
      expect(await billed(id)).toMatchObject({ outcome: 'completed', completionTokens: 64 });
    });

    it('a stream of 4 KB runs without usage: relayed up to max_tokens tokens, billed max_tokens', async () => {
      const { id, c } = await account();
      const run = 'a'.repeat(4096);
      const events = [chunk([choice({ role: 'assistant', content: '' })])];
      for (let i = 0; i < 300; i++) events.push(chunk([choice({ content: run })]));
      s.upstream.setFault(sse(...events, chunk([choice({}, 'length')]), DONE));
      const r = await stream(c, 'degenerate', { max_tokens: 256 });
      expect(sseData(r.text).at(-1)).toBe('[DONE]');
      // Each run is many tokens: the stream ends once they make max_tokens (counted with slack for
      // a tokenizer other than the model's), not after 256 runs.
      const content = contentOf(r.text);
      expect(run.repeat(300).startsWith(content)).toBe(true);
      expect(content.length).toBeLessThan(run.length * 256);
      expect(countTextTokens(content)).toBeLessThanOrEqual(4 * 256);
      expect(chunksOf(r.text).at(-2).choices[0].finish_reason).toBe('length');
      expect(chunksOf(r.text).at(-1).usage.completion_tokens).toBe(256);
      expect(await billed(id)).toMatchObject({ outcome: 'completed', completionTokens: 256 });
    });

    it('a stream sending many tokens a chunk past max_tokens is cut to max_tokens: what is sent is what is billed', async () => {
      const { id, c } = await account();
      const words = Array.from({ length: 2000 }, (_, i) => `word${i}`).join(' ');
      s.upstream.setFault(
        sse(
          chunk([choice({ role: 'assistant', content: '' })]),
          chunk([choice({ content: words })]),
          chunk([choice({}, 'stop')]),
          chunk([], { usage: usage(4, 2000) }),
          DONE,
        ),
      );
      const r = await stream(c, 'many', { max_tokens: 3 });
      expect(sseData(r.text).at(-1)).toBe('[DONE]');
      // Cut at 4 o200k tokens a token of max_tokens: the model's tokenizer may need fewer than o200k.
      expect(contentOf(r.text)).toBe(truncateTextTokens(words, 12));
      expect(chunksOf(r.text).map((ch) => ch.choices[0]?.finish_reason ?? null)).toContain('length');
      expect(chunksOf(r.text).at(-1).usage.completion_tokens).toBe(3);
      expect(await billed(id)).toMatchObject({ outcome: 'completed', completionTokens: 3 });
    });

    it('a compliant upstream sending a long chunk near max_tokens is not cut, though o200k counts it higher', async () => {
      const { id, c } = await account();
      const hex = 'The hash is 3f9a1c7be2d84f6a0c5e9b7d1a2f4c6e8b0d2f4a6c8e0b2d4f6a8c0e2b4d6f8a0c2e4b6d8f0a2c4e6b8d0f2a4c6';
      expect(countTextTokens(hex)).toBeGreaterThan(30);
      s.upstream.setFault(
        sse(
          chunk([choice({ role: 'assistant', content: '' })]),
          chunk([choice({ content: hex })]),
          chunk([choice({}, 'stop')]),
          chunk([], { usage: usage(4, 30) }),
          DONE,
        ),
      );
      const r = await stream(c, 'hash?', { max_tokens: 30 });
      expect(contentOf(r.text)).toBe(hex);
      expect(chunksOf(r.text).map((ch) => ch.choices[0]?.finish_reason ?? null)).toContain('stop');
      expect(await billed(id)).toMatchObject({ outcome: 'completed', completionTokens: 30 });
    });

    it('tool-call arguments of many tokens a chunk past max_tokens are cut there too, and billed for what was sent', async () => {
      const { id, c } = await account();
      const words = Array.from({ length: 2000 }, (_, i) => `word${i}`).join(' ');
      s.upstream.setFault(
        sse(
          chunk([
            choice({
              role: 'assistant',
              tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: { city: words } } }],
            }),
          ]),
          chunk([choice({}, 'tool_calls')]),
          chunk([], { usage: usage(4, 4000) }),
          DONE,
        ),
      );
      const r = await stream(c, 'weather?', { max_tokens: 3, tools: TOOLS });
      const [call] = assembled(r.text);
      expect(call!.name).toBe('get_weather');
      expect(countTextTokens(call!.name + call!.arguments)).toBeLessThanOrEqual(12);
      expect(chunksOf(r.text).map((ch) => ch.choices[0]?.finish_reason ?? null)).toContain('length');
      expect(await billed(id)).toMatchObject({ outcome: 'completed', completionTokens: 3 });
    });

    it('a plain answer whose tool-call arguments go on past max_tokens is cut there, as the stream is, and billed for what was sent', async () => {
      const { id, c } = await account();
      const words = Array.from({ length: 2000 }, (_, i) => `word${i}`).join(' ');
      const call = (index: number, name: string, args: string) => ({
        id: `call_${index}`,
        type: 'function',
        function: { name, arguments: args },
      });
      s.upstream.setFault({
        raw: JSON.stringify({
          choices: [
            {
              index: 0,
              message: {
                role: 'assistant',
                tool_calls: [call(0, 'get_weather', JSON.stringify({ city: words })), call(1, 'get_time', '{}')],
              },
              finish_reason: 'tool_calls',
            },
          ],
          usage: usage(4, 4000),
        }),
      });
      const r = await chat(c, 'weather?', { max_tokens: 20, tools: TOOLS });
      expect(r.status).toBe(200);
      const [answer] = r.body.choices;
      expect(answer.finish_reason).toBe('length');
      // The first call as a model stopped at 20 tokens would have sent it; the second never began.
      expect(answer.message.tool_calls).toHaveLength(1);
      const [first] = answer.message.tool_calls;
      expect(first).toMatchObject({ id: 'call_0', function: { name: 'get_weather' } });
      expect(JSON.stringify({ city: words }).startsWith(first.function.arguments)).toBe(true);
      expect(first.function.arguments.length).toBeGreaterThan(0);
      expect(countTextTokens(first.function.name + first.function.arguments)).toBeLessThanOrEqual(20);
      expect(r.body.usage.completion_tokens).toBeLessThanOrEqual(20);
      expect(await billed(id)).toMatchObject({ outcome: 'completed', completionTokens: r.body.usage.completion_tokens });
      // Within max_tokens, both calls come whole.
      const small = await account();
      s.upstream.setFault({
        raw: JSON.stringify({
          choices: [
            {
              index: 0,
              message: { role: 'assistant', tool_calls: [call(0, 'get_weather', '{"city":"Paris"}'), call(1, 'get_time', '{}')] },
              finish_reason: 'tool_calls',
            },
          ],
          usage: usage(4, 12),
        }),
      });
      const whole = await chat(small.c, 'weather?', { max_tokens: 20, tools: TOOLS });
      expect(whole.body.choices[0].finish_reason).toBe('tool_calls');
      expect(whole.body.choices[0].message.tool_calls.map((t: { function: { arguments: string } }) => t.function.arguments)).toEqual([
        '{"city":"Paris"}',
        '{}',
      ]);
    });

    it('n = 2 with one choice cut here at max_tokens: billed for what was sent, not the text cut away', async () => {
      const { id, c } = await account();
      // Choice 0 goes on past max_tokens (100) a token a chunk; choice 1 says "ok"; the upstream counts it all.
      const events = [chunk([choice({ role: 'assistant', content: '' }), choice({ role: 'assistant', content: '' }, null, 1)])];
      for (let i = 0; i < 150; i++) events.push(chunk([choice({ content: ' hello' })]));
      events.push(chunk([choice({ content: 'ok' }, null, 1)]), chunk([choice({}, 'stop'), choice({}, 'stop', 1)]));
      s.upstream.setFault(sse(...events, chunk([], { usage: usage(4, 151) }), DONE));
      const r = await stream(c, 'two?', { max_tokens: 100, n: 2 });
      const sent = (index: number) =>
        chunksOf(r.text)
          .flatMap((ch) => ch.choices ?? [])
          .filter((ch: { index: number }) => ch.index === index)
          .map((ch: { delta?: { content?: string } }) => ch.delta?.content ?? '')
          .join('');
      expect(sent(0)).toBe(' hello'.repeat(100));
      expect(sent(1)).toBe('ok');
      const billedTokens = countTextTokens(sent(0)) + countTextTokens('ok');
      expect(billedTokens).toBeLessThan(151);
      expect(chunksOf(r.text).at(-1).usage.completion_tokens).toBe(billedTokens);
      expect(await billed(id)).toMatchObject({ completionTokens: billedTokens });
    });

    it('usage past max_tokens is not believed, streamed as plain: what was delivered is counted', async () => {
      const answer = 'The capital of France is Paris.';
      const reported = usage(4, 9e15);
      const plain = await account();
      s.upstream.setFault({
        raw: JSON.stringify({
          choices: [{ index: 0, message: { role: 'assistant', content: answer }, finish_reason: 'stop' }],
          usage: reported,
        }),
      });
      expect((await chat(plain.c, 'capital?')).body.usage.completion_tokens).toBe(countTextTokens(answer));
      expect(await billed(plain.id)).toMatchObject({ completionTokens: countTextTokens(answer) });
      const streamed = await account();
      s.upstream.setFault(
        sse(
          chunk([choice({ role: 'assistant', content: '' })]),
          chunk([choice({ content: answer })]),
          chunk([choice({}, 'stop')]),
          chunk([], { usage: reported }),
          DONE,
        ),
      );
      const r = await stream(streamed.c, 'capital?');
      expect(contentOf(r.text)).toBe(answer);
      expect(chunksOf(r.text).at(-1).usage.completion_tokens).toBe(countTextTokens(answer));
      expect(await billed(streamed.id)).toMatchObject({ completionTokens: countTextTokens(answer) });
    });

    it("an upstream's prompt count above the admission's estimate (its chat template) is billed, within the hold's room; an absurd one is not", async () => {
      const answer = 'Hello there.';
      const content = 'hi';
      const estimate = countChatTokens([{ role: 'user', content }]);
      const completion = countTextTokens(answer);
      const plain = (prompt: number) => ({
        raw: JSON.stringify({
          choices: [{ index: 0, message: { role: 'assistant', content: answer }, finish_reason: 'stop' }],
          usage: usage(prompt, completion),
        }),
      });
      // Llama 3's template: about 25 tokens the o200k estimate does not see. Billed as the model read them.
      const templated = estimate + 25;
      const a = await account();
      s.upstream.setFault(plain(templated));
      const r = await chat(a.c, content); // max_tokens 64: room for 64 − completion more prompt tokens
      expect(r.body.usage).toEqual({ prompt_tokens: templated, completion_tokens: completion, total_tokens: templated + completion });
      const event = await billed(a.id);
      expect(event).toMatchObject({ promptTokens: templated, completionTokens: completion, billingNote: null });
      // Charged what the response says (the chat-q prices: 1 and 2 USD per million tokens).
      expect(event.walletNanos).toBe(BigInt(templated) * 1000n + BigInt(completion) * 2000n);
      // Streamed the same.
      const b = await account();
      s.upstream.setFault(
        sse(
          chunk([choice({ role: 'assistant', content: '' })]),
          chunk([choice({ content: answer }, 'stop')]),
          chunk([], { usage: usage(templated, completion) }),
          DONE,
        ),
      );
      expect(chunksOf((await stream(b.c, content)).text).at(-1).usage.prompt_tokens).toBe(templated);
      expect(await billed(b.id)).toMatchObject({ promptTokens: templated });
      // Beyond the hold's room (the estimate and the output not used): at most that, never more than was held.
      const c = await account();
      s.upstream.setFault(plain(estimate + 500));
      const tight = await chat(c.c, content, { max_tokens: completion + 3 });
      expect(tight.body.usage.prompt_tokens).toBe(estimate + 3);
      expect(await billed(c.id)).toMatchObject({ promptTokens: estimate + 3, billingNote: null });
      // An absurd count: within the room too (the model's 256 output tokens, not used), not 3e9.
      const d = await account();
      s.upstream.setFault(plain(3_000_000_000));
      const absurd = await chat(d.c, content, { max_tokens: 256 });
      expect(absurd.status).toBe(200);
      expect(absurd.body.usage.prompt_tokens).toBe(estimate + 256 - completion);
      // And never more than 4 × the estimate + 1,024, however much room a call leaves.
      const wide = { promptTokens: 10, maxTokens: 1_000_000, delivered: answer };
      expect(clampChatUsage({ promptTokens: 3e9, completionTokens: completion, totalTokens: 0 }, wide)).toMatchObject({
        promptTokens: 4 * 10 + 1024,
      });
      expect(clampChatUsage({ promptTokens: 900, completionTokens: completion, totalTokens: 0 }, wide).promptTokens).toBe(900);
      expect(clampChatUsage({ promptTokens: 0, completionTokens: completion, totalTokens: 0 }, wide).promptTokens).toBe(10);
    });

    it('an SSE event over 4 MB ends the stream as an upstream error; the server goes on serving', async () => {
      const { id, c } = await account();
      s.upstream.setFault(
        sse(
          chunk([choice({ role: 'assistant', content: '' })]),
          chunk([choice({ content: 'Before' })]),
          `data: {"choices":[{"index":0,"delta":{"content":"${'y'.repeat(5 * MB)}"},"finish_reason":"stop"}]}\n\n`,
          DONE,
        ),
      );
      const r = await stream(c, 'huge');
      const data = sseData(r.text);
      expect(data).not.toContain('[DONE]');
      expect(JSON.parse(data.at(-1)!).error).toMatchObject({ code: 'upstream_error', message: expect.stringContaining('4 MB') });
      expect(r.text.length).toBeLessThan(MB);
      expect(await billed(id)).toMatchObject({ outcome: 'failed_mid_stream', completionTokens: countTextTokens('Before') });
      s.upstream.setFault(null);
      expect((await chat(c, 'fine #tokens=2', { max_tokens: 2 })).status).toBe(200);
    });
  });

  describe("8. an upstream's refusal caused by the client's input is answered as such", () => {
    const refusal = (status: number, body: unknown) => ({ status, body: JSON.stringify(body) });
    const inputTooLong = {
      code: 'input_too_long',
      type: 'invalid_request_error',
      message: 'An input is longer than the model takes: its upstream server refused it as too long. Send a shorter input.',
    };
    const contextLength = {
      code: 'context_length_exceeded',
      type: 'invalid_request_error',
      message: "The request exceeds the model's context length.",
    };

    it.each([
      [
        "llama.cpp's exceed_context_size_error",
        refusal(400, {
          error: {
            code: 400,
            message: 'the request exceeds the available context size, try increasing it',
            type: 'exceed_context_size_error',
            n_prompt_tokens: 5000,
            n_ctx: 4096,
          },
        }),
      ],
      [
        "TGI's 422 on inputs + max_new_tokens",
        refusal(422, {
          error:
            'Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. Given: 4000 `inputs` tokens and 512 `max_new_tokens`',
          error_type: 'validation',
        }),
      ],
      [
        "SGLang's input longer than the context length",
        refusal(400, {
          object: 'error',
          message: "The input (5000 tokens) is longer than the model's context length (4096 tokens).",
          type: 'BadRequestError',
          code: 400,
        }),
      ],
    ])('chat: %s is 400 context_length_exceeded, streamed or not, billed nothing', async (_name, fault) => {
      const { id, c } = await account();
      s.upstream.setFault(fault);
      for (const r of [await chat(c, 'long'), await stream(c, 'long')]) {
        expect(r.status).toBe(400);
        expect(r.body.error).toMatchObject({ ...contextLength, param: 'messages' });
      }
      const events = await s.services.billing.listUsageEvents(id);
      expect(events.every((e) => e.promptTokens === 0 && e.completionTokens === 0)).toBe(true);
    });

    it("embeddings: TEI's 422 on an input over its tokens is 400 input_too_long (as tollgate's own count says); its 413 on a batch is 413", async () => {
      const { c } = await account();
      s.upstream.setFault(
        refusal(422, {
          message: 'Input validation error: `inputs` must have less than 512 tokens. Given: 600',
          code: 422,
          type: 'validation',
        }),
      );
      const long = await c.post('/embeddings', { model: 'embed-q', input: 'a text' });
      expect(long.status).toBe(400);
      expect(long.body.error).toMatchObject({ ...inputTooLong, param: 'input' });
      s.upstream.setFault(refusal(413, { message: 'batch size 200 > maximum allowed batch size 32', code: 413, type: 'validation' }));
      const batch = await c.post('/embeddings', { model: 'embed-q', input: ['one', 'two'] });
      expect(batch.status).toBe(413);
      expect(batch.body.error).toMatchObject({
        code: 'request_too_large',
        type: 'invalid_request_error',
        param: 'input',
        message:
          "The model's upstream server refused the request as too large (too many inputs, or inputs too long); send fewer or shorter inputs.",
      });
      expect(JSON.stringify(batch.body)).not.toContain('32');
    });

    it("embeddings: llama.cpp's server's 500 on an input over its batch is 400 input_too_long, not failed over as a server failure", async () => {
      const { id, c } = await account();
      s.upstream.reset();
      s.upstream.setFault(
        refusal(500, {
          error: {
            code: 500,
            message: 'input (600 tokens) is too large to process. increase the physical batch size (current batch size: 512)',
            type: 'server_error',
          },
        }),
      );
      const r = await c.post('/embeddings', { model: 'embed-q', input: 'a text' });
      expect(r.status).toBe(400);
      expect(r.body.error).toMatchObject({ ...inputTooLong, param: 'input' });
      expect(s.upstream.requests.filter((q) => q.path === '/v1/embeddings')).toHaveLength(1);
      const events = await s.services.billing.listUsageEvents(id);
      expect(events.every((e) => e.promptTokens === 0 && e.walletNanos === 0n)).toBe(true);
      // Any other 500 is still the upstream's failure.
      s.upstream.setFault(refusal(500, { error: { code: 500, message: 'something broke', type: 'server_error' } }));
      expect((await c.post('/embeddings', { model: 'embed-q', input: 'a text' })).status).toBe(502);
      s.upstream.setFault(null);
    });

    it.each([
      [
        'vLLM refusing a JSON schema',
        refusal(400, {
          object: 'error',
          message: 'The provided JSON schema contains features not supported by xgrammar.',
          type: 'BadRequestError',
          code: 400,
        }),
        ': The provided JSON schema contains features not supported by xgrammar.',
      ],
      [
        'a FastAPI validation list (422)',
        refusal(422, { detail: [{ loc: ['body', 'top_k'], msg: 'Input should be a valid integer' }] }),
        // A reason without its full stop gets one.
        ': Input should be a valid integer.',
      ],
      ['llama.cpp error as a string', refusal(400, { error: 'grammar\nparse   failed' }), ': grammar parse failed.'],
      ['an HTML page', { status: 400, body: '<html><body>Bad Request</body></html>' }, '.'],
    ])(
      "chat: the upstream's own 400 or 422 (%s) is 400 upstream_rejected_request with its reason, streamed or not, not retried, billed nothing",
      async (_name, fault, tail) => {
        const { id, c } = await account();
        s.upstream.setFault(fault);
        const before = s.upstream.requests.length;
        for (const r of [await chat(c, 'hi'), await stream(c, 'hi')]) {
          expect(r.status).toBe(400);
          expect(r.body.error).toMatchObject({ code: 'upstream_rejected_request', type: 'invalid_request_error' });
          const status = fault.status;
          expect(r.body.error.message).toBe(
            `The model's upstream server refused the request (HTTP ${status})${tail} Change the request; sending it again as it is will be refused again.`,
          );
        }
        // One upstream request per call: neither failed over nor retried.
        expect(s.upstream.requests.length - before).toBe(2);
        const events = await s.services.billing.listUsageEvents(id);
        expect(events.every((e) => e.promptTokens === 0 && e.walletNanos === 0n)).toBe(true);
        s.upstream.setFault(null);
      },
    );

    it('any other 4xx (Ollama 404 model not found) stays 502, and the upstream text stays in the logs', async () => {
      const { c } = await account();
      s.upstream.setFault(refusal(404, { error: { message: 'model "llama9" not found, try pulling it first', type: 'api_error' } }));
      const r = await chat(c, 'hi');
      expect(r.status).toBe(502);
      expect(r.body.error).toMatchObject({ code: 'upstream_error', message: "The model's upstream server failed to answer (HTTP 404)." });
    });
  });
});

describe('4. any engine whose usage says 0', () => {
  // The inference service does not take 0 from any engine: the prompt as admission counted it, the
  // delivered text as the engine counts it.
  const model: ModelConfig = { ...MODEL, id: 'chat-zero' };
  const zero: Usage = { promptTokens: 0, completionTokens: 0, totalTokens: 0 };
  const engine: Engine = {
    chat: async () => ({ content: 'Twelve words of text, all of them delivered to the client here.', finishReason: 'stop', usage: zero }),
    async *chatStream() {
      yield { type: 'delta', content: 'Twelve words of text,' };
      yield { type: 'delta', content: ' all of them delivered to the client here.' };
      yield { type: 'finish', finishReason: 'stop', usage: zero };
    },
    embed: async () => ({ embeddings: [], promptTokens: 0 }),
    rerank: async () => ({ scores: [], promptTokens: 0 }),
    moderate: async () => [{ flagged: false, categories: {}, categoryScores: {}, promptTokens: 0 }],
    countChatTokens: (messages) => countChatTokens(messages),
    countTokens: (text) => countTextTokens(text),
  };
  const service = new InferenceService(new Catalog([model]), { get: () => engine });
  const caller = { accountId: 'acct_test', requestId: 'req' };
  const input = { model: 'chat-zero', messages: [{ role: 'user', content: 'say it' }], maxTokens: 64 };
  const expected = {
    promptTokens: countChatTokens([{ role: 'user', content: 'say it' }]),
    completionTokens: countTextTokens('Twelve words of text, all of them delivered to the client here.'),
  };

  it('plain and streamed', async () => {
    const plain = await service.createChatCompletion(caller, input, new AbortController().signal);
    expect(plain.usage).toEqual({ ...expected, totalTokens: expected.promptTokens + expected.completionTokens });
    const chunks = [];
    for await (const ch of service.chatCompletionStream(caller, input, new AbortController().signal)) chunks.push(ch);
    expect(chunks.at(-1)!.usage).toEqual({ ...expected, totalTokens: expected.promptTokens + expected.completionTokens });
  });
});

describe('5. a stream cut short, from an engine that counts its tokens', () => {
  // The in-process engine says how many tokens it generated for each piece: a stream the client
  // leaves is billed at most that, not at a re-count of the text, which for text that is not valid
  // UTF-8 (replacement characters, 3 bytes each) counts about a token a byte.
  const model: ModelConfig = { ...MODEL, id: 'chat-counted' };
  const piece = '\uFFFD\uFFFD\uFFFD\uFFFD';
  const engine: Engine = {
    chat: async () => ({ content: '', finishReason: 'stop', usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0 } }),
    async *chatStream() {
      for (let i = 0; i < 100; i++) yield { type: 'delta', content: piece, tokens: 2 };
      yield { type: 'finish', finishReason: 'length', usage: { promptTokens: 5, completionTokens: 200, totalTokens: 205 } };
    },
    embed: async () => ({ embeddings: [], promptTokens: 0 }),
    rerank: async () => ({ scores: [], promptTokens: 0 }),
    moderate: async () => [],
    countChatTokens: (messages) => countChatTokens(messages),
    // A model's tokenizer that reads replacement characters back as their bytes, a token each.
    countTokens: (text) => Buffer.byteLength(text, 'utf8'),
  };
  const settled: { usage: Usage; outcome: string }[] = [];
  const metering = {
    admit: async () => ({
      maxOutputTokens: 256,
      settle: async (usage: Usage, outcome: string) => {
        settled.push({ usage, outcome });
      },
    }),
  };
  const service = new InferenceService(new Catalog([model]), { get: () => engine }, metering);
  const caller = { accountId: 'acct_test', requestId: 'req' };
  const input = { model: 'chat-counted', messages: [{ role: 'user', content: 'go' }], maxTokens: 256 };

  it('is billed the tokens generated for what was delivered, not a re-count of the text', async () => {
    let content = 0;
    for await (const ch of service.chatCompletionStream(caller, input, new AbortController().signal)) {
      if (ch.choices[0]?.delta.content) content++;
      if (content === 10) break;
    }
    expect(settled).toHaveLength(1);
    expect(settled[0]!.outcome).toBe('client_disconnected');
    // The text alone would count for more: the engine generated 2 tokens a piece.
    expect(await engine.countTokens(piece.repeat(10))).toBe(120);
    expect(settled[0]!.usage.completionTokens).toBe(20);
  });
});
