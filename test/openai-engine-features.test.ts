// OpenAIEngine's reading of answers with tool calls, several choices and log-probabilities, from
// upstreams that answer in ways the fake does not: a stream request answered in one JSON piece,
// fewer choices than asked for, the deprecated `function_call` finish reason, no usage.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { DomainError } from '../src/domain/errors.js';
import type { EngineChatRequest, EngineStreamEvent } from '../src/domain/inference/engine.js';
import { OpenAIEngine } from '../src/domain/inference/openai/openai-engine.js';
import { countTextTokens } from '../src/domain/inference/tokenizer.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

/** An upstream that answers every chat request with `body` (JSON), and records what it was sent. */
async function canned(body: unknown) {
  const seen: Record<string, unknown>[] = [];
  const srv = createServer((req: IncomingMessage, res: ServerResponse) => {
    let text = '';
    req.on('data', (c) => {
      text += c;
    });
    req.on('end', () => {
      seen.push(JSON.parse(text));
      const out = JSON.stringify(body);
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(out) });
      res.end(out);
    });
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  cleanups.push(() => new Promise((r) => srv.close(() => r())));
  const url = `http://127.0.0.1:${(srv.address() as { port: number }).port}/v1`;
  const e = new OpenAIEngine({
    type: 'openai',
    base_urls: [url],
    model: 'up',
    timeout_ms: 5_000,
    max_duration_ms: 30_000,
    connect_timeout_ms: 3_000,
    circuit_breaker: { failure_threshold: 3, cooldown_ms: 30_000 },
    rerank_path: '/rerank',
  });
  cleanups.push(() => e.close());
  return { e, seen };
}

const signal = () => new AbortController().signal;
const req = (extra: Partial<EngineChatRequest> = {}): EngineChatRequest => ({
  messages: [{ role: 'user', content: 'hi' }],
  maxTokens: 50,
  ...extra,
});
const call = (id: string, name: string, args: string) => ({ id, type: 'function', function: { name, arguments: args } });

async function collect(events: AsyncIterable<EngineStreamEvent>) {
  const out: EngineStreamEvent[] = [];
  for await (const e of events) out.push(e);
  return out;
}

describe('OpenAIEngine with tool calls, choices and log-probabilities', () => {
  const twoChoices = {
    choices: [
      { index: 1, message: { role: 'assistant', content: 'second' }, finish_reason: 'stop' },
      { index: 0, message: { role: 'assistant', content: null, tool_calls: [call('c1', 'f', '{"a":1}')] }, finish_reason: 'tool_calls' },
    ],
    usage: { prompt_tokens: 5, completion_tokens: 9, total_tokens: 14 },
  };

  it('reads the choices by their index, tool calls included', async () => {
    const { e, seen } = await canned(twoChoices);
    const r = await e.chat(req({ n: 2, tools: [{ type: 'function', function: { name: 'f' } }], toolChoice: 'required' }), signal());
    expect(r.choices!.map((c) => [c.content, c.finishReason, c.toolCalls?.[0]?.function.arguments])).toEqual([
      ['', 'tool_calls', '{"a":1}'],
      ['second', 'stop', undefined],
    ]);
    expect(r.toolCalls).toEqual([call('c1', 'f', '{"a":1}')]);
    expect(seen[0]).toMatchObject({ n: 2, tool_choice: 'required', tools: [{ type: 'function', function: { name: 'f' } }] });
  });

  it('replays a stream request answered in one JSON piece as per-choice events', async () => {
    const { e } = await canned(twoChoices);
    const events = await collect(e.chatStream(req({ n: 2 }), signal()));
    expect(events.filter((x) => x.type !== 'started')).toEqual([
      { type: 'tool_call', choice: 0, index: 0, id: 'c1', name: 'f', arguments: '{"a":1}' },
      { type: 'choice_finish', choice: 0, finishReason: 'tool_calls' },
      { type: 'delta', content: 'second', choice: 1 },
      { type: 'choice_finish', choice: 1, finishReason: 'stop' },
      { type: 'finish', finishReason: 'tool_calls', usage: { promptTokens: 5, completionTokens: 9, totalTokens: 14 } },
    ]);
  });

  it('refuses an answer with fewer choices than asked for', async () => {
    const { e } = await canned({ choices: [twoChoices.choices[1]] });
    const err = await e.chat(req({ n: 2 }), signal()).catch((x) => x);
    expect(err).toBeInstanceOf(DomainError);
    expect((err as DomainError).code).toBe('upstream_error');
  });

  it("reads the deprecated 'function_call' finish reason as tool_calls, and log-probabilities", async () => {
    const { e } = await canned({
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: 'ok' },
          finish_reason: 'function_call',
          logprobs: {
            content: [{ token: 'ok', logprob: -0.5, bytes: [111, 107], top_logprobs: [{ token: 'ok', logprob: -0.5, bytes: null }] }],
          },
        },
      ],
    });
    const r = await e.chat(req({ logprobs: true, topLogprobs: 1 }), signal());
    expect(r.finishReason).toBe('tool_calls');
    expect(r.logprobs).toEqual([
      { token: 'ok', logprob: -0.5, bytes: [111, 107], topLogprobs: [{ token: 'ok', logprob: -0.5, bytes: null }] },
    ]);
  });

  it('counts tool calls as completion tokens when the upstream leaves usage out', async () => {
    const { e } = await canned({
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: null, tool_calls: [call('c', 'lookup', '{"q":"tollgate"}')] },
          finish_reason: 'tool_calls',
        },
      ],
    });
    const r = await e.chat(req(), signal());
    expect(r.usage.completionTokens).toBe(countTextTokens('lookup{"q":"tollgate"}'));
  });
});
