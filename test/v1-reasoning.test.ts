// Reasoning models (vLLM with --reasoning-parser, llama.cpp's server with --reasoning-format,
// DeepSeek's API, Ollama): the reasoning their upstream sends apart from the answer
// (`reasoning_content`, or `reasoning`) reaches the client as `reasoning_content`, in the message
// and streamed before the content, and is billed as output when the upstream reports no usage.
// Answers without reasoning keep OpenAI's shape exactly; an output content filter withholds the
// reasoning (not moderated) and still bills it. Through the running server, against the fake
// upstream's `#reasoning=N` marker (reasoning words r0 … rN-1).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countTextTokens } from '../src/domain/inference/tokenizer.js';
import { catalogYaml, chatModelYaml, startTestServer, type TestServer } from './support/harness.js';
import { violations } from './support/oracle.js';
import { client } from './support/seed.js';
import { until } from './support/wait.js';

/** chat-test with an output content filter (the fake's moderation flags the word "kill"). */
const filteredModel = (url: string) =>
  chatModelYaml(url, { id: 'chat-filtered', inputPrice: '1.0', outputPrice: '2.0', maxOutputTokens: 256, timeoutMs: 5000 }).replace(
    /\n$/,
    '\n    safety: { moderation_model: guard-test, input: false, window_chars: 24 }\n',
  );

let s: TestServer;

beforeAll(async () => {
  s = await startTestServer({ yaml: (url) => catalogYaml(url, filteredModel(url)) });
});
afterAll(() => s?.close());

const reasoningOf = (n: number) => Array.from({ length: n }, (_, i) => `r${i}`).join(' ');
const answerOf = (n: number) => Array.from({ length: n }, (_, i) => `w${i}`).join(' ');

async function newClient() {
  const account = await s.account('developer');
  const c = client(s, account.apiKey);
  /** The usage event of the account's `count`th call (the server settles a stream after its last event). */
  const usageEvent = (count: number) =>
    until(async () => {
      const events = await s.services.billing.listUsageEvents(account.id);
      return events.filter((e) => e.model.startsWith('chat-'))[count - 1];
    });
  return { c, usageEvent };
}

const ask = (content: string, extra: Record<string, unknown> = {}) => ({
  model: 'chat-test',
  messages: [{ role: 'user', content }],
  ...extra,
});

/** The JSON chunks of an SSE stream (without [DONE]). */
function chunksOf(text: string): any[] {
  return text
    .split('\n\n')
    .map((e) => e.trim())
    .filter((e) => e.startsWith('data: ') && e !== 'data: [DONE]')
    .map((e) => JSON.parse(e.slice(6)));
}

/** The finish reason a stream's chunks carry. */
const finishOf = (chunks: any[]) => chunks.find((ch) => ch.choices[0]?.finish_reason)?.choices[0].finish_reason;

/**
 * Runs `call` while the upstream answers every request with one whole JSON answer (as a server that
 * ignores `stream: true`, and max_tokens, does): `choices` are its messages' fields (a `logprobs`
 * field goes on the choice), `completionTokens` the usage it reports.
 */
async function answeredWhole<T>(choices: Record<string, unknown>[], completionTokens: number, call: () => Promise<T>): Promise<T> {
  const raw = JSON.stringify({
    id: 'x',
    object: 'chat.completion',
    created: 1,
    model: 'm',
    choices: choices.map(({ logprobs, ...message }, index) => ({
      index,
      message: { role: 'assistant', ...message },
      ...(logprobs ? { logprobs } : {}),
      finish_reason: 'stop',
    })),
    usage: { prompt_tokens: 5, completion_tokens: completionTokens, total_tokens: 5 + completionTokens },
  });
  s.upstream.setFault({ raw });
  try {
    return await call();
  } finally {
    s.upstream.setFault(null);
  }
}

describe('reasoning of a reasoning model', () => {
  it("a plain answer carries the upstream's reasoning_content beside the content, and still matches OpenAI's schema", async () => {
    const { c } = await newClient();
    const r = await c.post('/chat/completions', ask('think first #tokens=3 #reasoning=4'));
    expect(r.status).toBe(200);
    expect(r.body.choices[0].message).toEqual({
      role: 'assistant',
      content: answerOf(3),
      reasoning_content: reasoningOf(4),
      refusal: null,
    });
    expect(violations('CreateChatCompletionResponse', r.body)).toEqual([]);
    // The upstream's usage counts the reasoning as output (as vLLM's does): taken as it is.
    expect(r.body.usage.completion_tokens).toBe(7);
  });

  it('a stream sends each piece of reasoning as its own delta.reasoning_content event, all before the content', async () => {
    const { c } = await newClient();
    const r = await c.post('/chat/completions', ask('think first #tokens=3 #reasoning=4', { stream: true }));
    expect(r.status).toBe(200);
    const chunks = chunksOf(r.text);
    for (const chunk of chunks) expect(violations('CreateChatCompletionStreamResponse', chunk)).toEqual([]);
    const deltas = chunks.map((ch) => ch.choices[0]?.delta ?? {});
    const thinking = deltas.flatMap((d, i) => (d.reasoning_content !== undefined ? [i] : []));
    const answering = deltas.flatMap((d, i) => (d.content ? [i] : []));
    // One event per upstream piece, none merged and none carrying content too.
    expect(thinking.map((i) => deltas[i])).toEqual(['r0', ' r1', ' r2', ' r3'].map((piece) => ({ reasoning_content: piece })));
    expect(answering.length).toBe(3);
    expect(Math.max(...thinking)).toBeLessThan(Math.min(...answering));
    expect(deltas.map((d) => d.content ?? '').join('')).toBe(answerOf(3));
  });

  it('a stream whose upstream answered whole (ignoring stream: true) still sends the reasoning, before the content', async () => {
    const { c } = await newClient();
    const r = await answeredWhole([{ content: 'w0 w1', reasoning_content: 'r0 r1' }], 4, () =>
      c.post('/chat/completions', ask('hi', { stream: true })),
    );
    expect(r.status).toBe(200);
    const deltas = chunksOf(r.text).map((ch) => ch.choices[0]?.delta ?? {});
    const kinds = deltas.flatMap((d) => (d.reasoning_content ? ['reasoning'] : d.content ? ['content'] : []));
    // Word by word, as a stream would have brought them.
    expect(kinds).toEqual(['reasoning', 'reasoning', 'content', 'content']);
    expect(deltas.filter((d) => d.reasoning_content)).toEqual([{ reasoning_content: 'r0' }, { reasoning_content: ' r1' }]);
    expect(deltas.map((d) => d.content ?? '').join('')).toBe('w0 w1');
  });

  it('a stream whose upstream answered whole and ignored max_tokens is cut there, then relayed word by word', async () => {
    const { c } = await newClient();
    const r = await answeredWhole([{ content: answerOf(300), reasoning_content: reasoningOf(300) }], 600, () =>
      c.post('/chat/completions', ask('hi', { stream: true, max_tokens: 8, stream_options: { include_usage: true } })),
    );
    expect(r.status).toBe(200);
    const chunks = chunksOf(r.text);
    const pieces = chunks.flatMap((ch) => {
      const d = ch.choices[0]?.delta ?? {};
      return [d.reasoning_content, d.content].filter((p): p is string => typeof p === 'string' && p !== '');
    });
    // Cut to 8 tokens (the reasoning first), then relayed a word a chunk, as a stream would have come.
    const sent = pieces.join('');
    expect(sent.length).toBeGreaterThan(0);
    expect(reasoningOf(300).startsWith(sent)).toBe(true);
    expect(countTextTokens(sent)).toBeLessThanOrEqual(8);
    expect(pieces).toEqual(sent.split(' ').map((w, i) => (i === 0 ? w : ` ${w}`)));
    expect(finishOf(chunks)).toBe('length');
    expect(chunks.at(-1).usage.completion_tokens).toBeLessThanOrEqual(8);
  });

  it('a whole answer without spaces (CJK) or with log-probabilities, replayed to a stream, stops at max_tokens too', async () => {
    const { c } = await newClient();
    const logprobs = {
      content: Array.from({ length: 400 }, (_, i) => ({ token: `${i ? ' ' : ''}w${i}`, logprob: -0.1, bytes: null, top_logprobs: [] })),
    };
    const cases: [string, Record<string, unknown>][] = [
      ['中文字符'.repeat(400), {}],
      [answerOf(400), { logprobs: true }],
    ];
    for (const [content, extra] of cases) {
      const choice = 'logprobs' in extra ? { content, logprobs } : { content };
      const r = await answeredWhole([choice], 3000, () =>
        c.post('/chat/completions', ask('hi', { stream: true, max_tokens: 8, stream_options: { include_usage: true }, ...extra })),
      );
      expect(r.status).toBe(200);
      const chunks = chunksOf(r.text);
      const sent = chunks.map((ch) => ch.choices[0]?.delta?.content ?? '').join('');
      expect(sent.length).toBeGreaterThan(0);
      expect(content.startsWith(sent)).toBe(true);
      expect(countTextTokens(sent)).toBeLessThanOrEqual(8);
      expect(finishOf(chunks)).toBe('length');
      expect(chunks.at(-1).usage.completion_tokens).toBeLessThanOrEqual(8);
    }
  });

  it("a plain answer of n = 2 choices that overran is billed for what is left of it, not the upstream's clamped count", async () => {
    const { c } = await newClient();
    const r = await answeredWhole([{ content: 'short answer' }, { content: answerOf(400) }], 1000, () =>
      c.post('/chat/completions', ask('hi', { n: 2, max_tokens: 10 })),
    );
    expect(r.status).toBe(200);
    const [first, second] = r.body.choices;
    expect(first.message.content).toBe('short answer');
    expect(second.finish_reason).toBe('length');
    expect(countTextTokens(second.message.content)).toBeLessThanOrEqual(10);
    expect(r.body.usage.completion_tokens).toBe(countTextTokens('short answer') + countTextTokens(second.message.content));
  });

  it("reads the reasoning from the 'reasoning' field too (newer vLLM, Ollama), streamed and not", async () => {
    const { c } = await newClient();
    const plain = await c.post('/chat/completions', ask('think #tokens=2 #reasoning=3 #reasoning-field=reasoning'));
    expect(plain.status).toBe(200);
    expect(plain.body.choices[0].message.reasoning_content).toBe(reasoningOf(3));
    expect(plain.body.choices[0].message).not.toHaveProperty('reasoning');
    const streamed = await c.post('/chat/completions', ask('think #tokens=2 #reasoning=3 #reasoning-field=reasoning', { stream: true }));
    const deltas = chunksOf(streamed.text).map((ch) => ch.choices[0]?.delta ?? {});
    expect(deltas.map((d) => d.reasoning_content ?? '').join('')).toBe(reasoningOf(3));
    expect(deltas.some((d) => 'reasoning' in d)).toBe(false);
  });

  it('an answer without reasoning has no reasoning_content key, in the message or in any chunk', async () => {
    const { c } = await newClient();
    const plain = await c.post('/chat/completions', ask('no thinking #tokens=3'));
    expect(Object.keys(plain.body.choices[0].message)).toEqual(['role', 'content', 'refusal']);
    const streamed = await c.post('/chat/completions', ask('no thinking #tokens=3', { stream: true }));
    const chunks = chunksOf(streamed.text);
    expect(chunks.length).toBeGreaterThan(3);
    for (const chunk of chunks) for (const choice of chunk.choices) expect(choice.delta).not.toHaveProperty('reasoning_content');
    expect(streamed.text).not.toContain('reasoning');
  });

  it('reasoning_content that is not text is a broken answer, refused exactly as content that is not text', async () => {
    const { c } = await newClient();
    const answer = (message: string) =>
      `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":${message},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}`;
    const chunk = (delta: string) =>
      `data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":${delta},"finish_reason":null}]}\n\n`;
    const streamOf = (delta: string) => `${chunk('{"role":"assistant"}')}${chunk(delta)}data: [DONE]\n\n`;
    const outcome = async (raw: string, streamed: boolean) => {
      s.upstream.setFault(streamed ? { raw, type: 'text/event-stream' } : { raw });
      try {
        const r = await c.post('/chat/completions', ask('hi', streamed ? { stream: true } : {}));
        return streamed && r.status === 200 ? { status: 200, body: chunksOf(r.text).at(-1) } : { status: r.status, body: r.body };
      } finally {
        s.upstream.setFault(null);
      }
    };
    for (const field of ['reasoning_content', 'reasoning']) {
      const badContent = await outcome(answer('{"role":"assistant","content":42}'), false);
      const badReasoning = await outcome(answer(`{"role":"assistant","content":"hi","${field}":42}`), false);
      expect(badContent.status).toBe(502);
      expect(badReasoning).toEqual(badContent);
      const badContentChunk = await outcome(streamOf('{"content":42}'), true);
      const badReasoningChunk = await outcome(streamOf(`{"${field}":{"text":"hm"}}`), true);
      expect(badContentChunk.body.error.code).toBe('upstream_error');
      expect(badReasoningChunk).toEqual(badContentChunk);
    }
  });

  it('with no usage from the upstream, the reasoning is counted, reported and billed as output tokens', async () => {
    const { c, usageEvent } = await newClient();
    const reasoning = reasoningOf(40);
    const without = await c.post('/chat/completions', ask('#tokens=3 #nousage'));
    const plain = await c.post('/chat/completions', ask('#tokens=3 #reasoning=40 #nousage'));
    expect(plain.body.choices[0].message.reasoning_content).toBe(reasoning);
    const extra = plain.body.usage.completion_tokens - without.body.usage.completion_tokens;
    expect(extra).toBeGreaterThanOrEqual(countTextTokens(reasoning) - 1);
    expect((await usageEvent(2)).completionTokens).toBe(plain.body.usage.completion_tokens);
    const streamed = await c.post(
      '/chat/completions',
      ask('#tokens=3 #reasoning=40 #nousage', { stream: true, stream_options: { include_usage: true } }),
    );
    const usage = chunksOf(streamed.text).at(-1).usage;
    expect(usage.completion_tokens - without.body.usage.completion_tokens).toBeGreaterThanOrEqual(countTextTokens(reasoning) - 1);
    expect((await usageEvent(3)).completionTokens).toBe(usage.completion_tokens);
  });

  it("with the upstream's usage, a long reasoning before a short answer is billed in full (the answer's length does not cap it)", async () => {
    const { c, usageEvent } = await newClient();
    const r = await c.post('/chat/completions', ask('#tokens=1 #reasoning=60'));
    expect(r.body.usage.completion_tokens).toBe(61);
    expect((await usageEvent(1)).completionTokens).toBe(61);
    const streamed = await c.post(
      '/chat/completions',
      ask('#tokens=1 #reasoning=60', { stream: true, stream_options: { include_usage: true } }),
    );
    expect(chunksOf(streamed.text).at(-1).usage.completion_tokens).toBe(61);
    expect((await usageEvent(2)).completionTokens).toBe(61);
  });

  it('GraphQL createChatCompletion returns reasoningContent (null for an answer without), and the stream type has it', async () => {
    const { c } = await newClient();
    const query =
      'mutation($input: ChatCompletionInput!) { createChatCompletion(input: $input) { choices { message { content reasoningContent } } } }';
    const input = (content: string) => ({ model: 'chat-test', messages: [{ role: 'user', content }] });
    const r = await c.graphql(query, { input: input('#tokens=2 #reasoning=3') });
    expect(r.body.errors).toBeUndefined();
    expect(r.body.data.createChatCompletion.choices[0].message).toEqual({ content: answerOf(2), reasoningContent: reasoningOf(3) });
    const none = await c.graphql(query, { input: input('#tokens=2') });
    expect(none.body.data.createChatCompletion.choices[0].message).toEqual({ content: answerOf(2), reasoningContent: null });
    const delta = await c.graphql('{ __type(name: "ChatDelta") { fields { name type { name kind } } } }');
    expect(delta.body.data.__type.fields).toContainEqual({ name: 'reasoningContent', type: { name: 'String', kind: 'SCALAR' } });
  });

  it('with an output content filter, the reasoning is withheld (not relayed, not moderated) and still billed as output', async () => {
    const { c, usageEvent } = await newClient();
    const filtered = (content: string, extra: Record<string, unknown> = {}) => ({ ...ask(content, extra), model: 'chat-filtered' });
    const plain = await c.post('/chat/completions', filtered('#tokens=3 #reasoning=30 #nousage'));
    expect(plain.status).toBe(200);
    expect(plain.body.choices[0].message).toEqual({ role: 'assistant', content: answerOf(3), refusal: null });
    expect(plain.body.choices[0].finish_reason).toBe('stop');
    const answerTokens = countTextTokens(answerOf(3));
    expect(plain.body.usage.completion_tokens).toBeGreaterThanOrEqual(answerTokens + countTextTokens(reasoningOf(30)) - 1);
    expect((await usageEvent(1)).completionTokens).toBe(plain.body.usage.completion_tokens);

    const streamed = await c.post(
      '/chat/completions',
      filtered('#tokens=3 #reasoning=30 #nousage', { stream: true, stream_options: { include_usage: true } }),
    );
    expect(streamed.status).toBe(200);
    expect(streamed.text).not.toContain('reasoning_content');
    const chunks = chunksOf(streamed.text);
    expect(chunks.map((ch) => ch.choices[0]?.delta?.content ?? '').join('')).toBe(answerOf(3));
    const usage = chunks.at(-1).usage;
    expect(usage.completion_tokens).toBeGreaterThanOrEqual(answerTokens + countTextTokens(reasoningOf(30)) - 1);
    expect((await usageEvent(2)).completionTokens).toBe(usage.completion_tokens);
  });

  it('a plain answer from an upstream that ignores max_tokens is cut to max_tokens, its reasoning included', async () => {
    const { c } = await newClient();
    s.upstream.setFault('ignore-max-tokens');
    try {
      const r = await c.post('/chat/completions', ask('#tokens=400 #reasoning=300', { max_tokens: 8 }));
      expect(r.status).toBe(200);
      const { message, finish_reason } = r.body.choices[0];
      expect(finish_reason).toBe('length');
      expect(reasoningOf(300).startsWith(message.reasoning_content)).toBe(true);
      expect(countTextTokens(message.reasoning_content) + countTextTokens(message.content ?? '')).toBeLessThanOrEqual(8);
      expect(r.body.usage.completion_tokens).toBeLessThanOrEqual(8);
    } finally {
      s.upstream.setFault(null);
    }
  });

  it('a stream of a filtered model that fails before any answer is sent still bills the withheld reasoning', async () => {
    const { c, usageEvent } = await newClient();
    // 30 pieces of reasoning (withheld), two words of answer (short of a window: not sent), then the upstream's socket dies.
    const r = await c.post('/chat/completions', {
      ...ask('#tokens=5 #reasoning=30 #fail=midstream', { stream: true }),
      model: 'chat-filtered',
    });
    expect(r.text).not.toContain('reasoning_content');
    const event = await usageEvent(1);
    expect(event.outcome).toBe('failed_mid_stream');
    expect(event.completionTokens).toBeGreaterThanOrEqual(countTextTokens(reasoningOf(30)) - 1);
  });

  it('an answer the content filter cuts still bills the withheld reasoning, streamed and not', async () => {
    const { c, usageEvent } = await newClient();
    const filtered = (extra: Record<string, unknown> = {}) => ({
      ...ask('#tokens=20 #flag=12 #reasoning=30 #nousage', extra),
      model: 'chat-filtered',
    });
    const reasoningTokens = countTextTokens(reasoningOf(30));
    const plain = await c.post('/chat/completions', filtered());
    expect(plain.body.choices[0].finish_reason).toBe('content_filter');
    expect(plain.body.choices[0].message).not.toHaveProperty('reasoning_content');
    const kept = plain.body.choices[0].message.content as string;
    expect(kept).not.toContain('kill');
    expect(plain.body.usage.completion_tokens).toBeGreaterThanOrEqual(reasoningTokens + countTextTokens(kept) - 1);
    expect((await usageEvent(1)).completionTokens).toBe(plain.body.usage.completion_tokens);
    const streamed = await c.post('/chat/completions', filtered({ stream: true, stream_options: { include_usage: true } }));
    const chunks = chunksOf(streamed.text);
    expect(chunks.find((ch) => ch.choices[0]?.finish_reason)?.choices[0].finish_reason).toBe('content_filter');
    expect(streamed.text).not.toContain('reasoning_content');
    const sent = chunks.map((ch) => ch.choices[0]?.delta?.content ?? '').join('');
    const usage = chunks.at(-1).usage;
    expect(usage.completion_tokens).toBeGreaterThanOrEqual(reasoningTokens + countTextTokens(sent) - 1);
    expect((await usageEvent(2)).completionTokens).toBe(usage.completion_tokens);
  });
});
