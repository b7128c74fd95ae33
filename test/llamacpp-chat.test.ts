// Chat through the in-process engine on the tiny llama-architecture fixture: usage from the model's
// own tokenizer, max_tokens, stop sequences, streaming, determinism, disconnects and the queue.
// Random weights give broken text: the tests assert counts, framing and finish reasons, never text.
import { getLlama, LlamaLogLevel, resolveChatWrapper } from 'node-llama-cpp';
import { describe, expect, it } from 'vitest';
import type { EngineChatRequest, EngineStreamEvent } from '../src/domain/inference/engine.js';
import type { LlamaCppEngine } from '../src/domain/inference/llamacpp/llamacpp-engine.js';
import { llamaEngine, neverAborted, withLoadedChatEngine } from './support/llamacpp.js';

let engine: LlamaCppEngine;
const fixtures = withLoadedChatEngine((e) => {
  engine = e;
});

const messages: EngineChatRequest['messages'] = [
  { role: 'system', content: 'You are terse.' },
  { role: 'user', content: 'Name three colours, please.' },
];
const greedy = (extra: Partial<EngineChatRequest> = {}): EngineChatRequest => ({ messages, maxTokens: 24, temperature: 0, ...extra });

async function collect(events: AsyncIterable<EngineStreamEvent>) {
  const deltas: string[] = [];
  const finishes: Extract<EngineStreamEvent, { type: 'finish' }>[] = [];
  for await (const e of events) {
    if (e.type === 'delta') {
      expect(finishes).toHaveLength(0); // nothing after the finish
      deltas.push(e.content);
    } else if (e.type === 'finish') {
      finishes.push(e);
    }
  }
  return { deltas, finishes };
}

describe('chat on the in-process engine', () => {
  it("counts prompt tokens exactly as the model's tokenizer does with its chat template", async () => {
    // An independent count: node-llama-cpp on the same file, the template it resolves, its tokenizer.
    const llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error });
    const model = await llama.loadModel({ modelPath: fixtures.files.chat });
    const wrapper = resolveChatWrapper(model);
    expect(wrapper.wrapperName).toBe('ChatML');
    const { contextText } = wrapper.generateContextState({
      chatHistory: [
        { type: 'system', text: messages[0]!.content },
        { type: 'user', text: messages[1]!.content },
        { type: 'model', response: [] },
      ],
    });
    const expected = contextText.tokenize(model.tokenizer).length;
    await model.dispose();

    expect(await engine.countChatTokens(messages)).toBe(expected);
    const result = await engine.chat(greedy({ maxTokens: 7 }), neverAborted());
    expect(result.usage).toEqual({ promptTokens: expected, completionTokens: 7, totalTokens: expected + 7 });
  });

  it('counts completion tokens as the tokens it generated', async () => {
    const before = engine.stats.generatedTokens;
    const result = await engine.chat(greedy({ maxTokens: 12 }), neverAborted());
    expect(result.usage.completionTokens).toBe(engine.stats.generatedTokens - before);
  });

  it('stops at exactly max_tokens with finish_reason length', async () => {
    const result = await engine.chat(greedy({ maxTokens: 5 }), neverAborted());
    expect(result.finishReason).toBe('length');
    expect(result.usage.completionTokens).toBe(5);
  });

  it('gives the same tokens for the same request at temperature 0', async () => {
    const a = await engine.chat(greedy(), neverAborted());
    const b = await engine.chat(greedy(), neverAborted());
    expect(b.content).toBe(a.content);
    expect(b.usage).toEqual(a.usage);
  });

  it('cuts the text before a stop sequence and finishes with stop', async () => {
    const free = await engine.chat(greedy({ maxTokens: 40 }), neverAborted());
    // A stop sequence the model is known to produce: two characters from the middle of its answer.
    const stop = [...free.content].slice(8, 10).join('');
    const cutAt = free.content.indexOf(stop);
    expect(cutAt).toBeGreaterThan(0);
    const stopped = await engine.chat(greedy({ maxTokens: 40, stop: ['never-produced-sequence', stop] }), neverAborted());
    expect(stopped.finishReason).toBe('stop');
    expect(stopped.content).toBe(free.content.slice(0, cutAt));
    expect(stopped.content).not.toContain(stop);
    expect(stopped.usage.completionTokens).toBeLessThan(free.usage.completionTokens);
  });

  it('streams the same text as the non-streamed call, then one finish event with the usage', async () => {
    const whole = await engine.chat(greedy({ maxTokens: 30 }), neverAborted());
    const { deltas, finishes } = await collect(engine.chatStream(greedy({ maxTokens: 30 }), neverAborted()));
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.join('')).toBe(whole.content);
    expect(finishes).toEqual([{ type: 'finish', finishReason: 'length', usage: whole.usage }]);
  });

  it('streams token by token: no delta carries more than a few tokens of text', async () => {
    const { deltas, finishes } = await collect(engine.chatStream(greedy({ maxTokens: 20 }), neverAborted()));
    expect(finishes[0]!.usage.completionTokens).toBe(20);
    // Each token is at most a few bytes here; a delta holds one token, or a few that make up one character.
    for (const d of deltas) expect(Buffer.byteLength(d)).toBeLessThanOrEqual(12);
  });

  it("answers with the text of exactly the tokens it generated, as the model's detokenizer reads them", async () => {
    // An independent greedy run on the same file and prompt: node-llama-cpp, every token decoded at once.
    const llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error });
    const model = await llama.loadModel({ modelPath: fixtures.files.chat });
    const context = await model.createContext({ contextSize: 1024, threads: 1 });
    const { contextText } = resolveChatWrapper(model).generateContextState({
      chatHistory: [
        { type: 'system', text: messages[0]!.content },
        { type: 'user', text: messages[1]!.content },
        { type: 'model', response: [] },
      ],
    });
    const tokens = [];
    for await (const token of context
      .getSequence()
      .evaluate(contextText.tokenize(model.tokenizer), { temperature: 0, yieldEogToken: true })) {
      if (model.isEogToken(token)) break;
      tokens.push(token);
      if (tokens.length === 120) break;
    }
    const expected = model.detokenize(tokens);
    await context.dispose();
    await model.dispose();

    // Random weights: the answer is mostly bytes that are no character, some that are multi-byte ones.
    const result = await engine.chat(greedy({ maxTokens: 120 }), neverAborted());
    expect(result.usage.completionTokens).toBe(tokens.length);
    expect(result.content).toBe(expected);
    const { deltas } = await collect(engine.chatStream(greedy({ maxTokens: 120 }), neverAborted()));
    expect(deltas.join('')).toBe(expected);
  });

  it('accepts sampling parameters and penalties and still honours max_tokens', async () => {
    const result = await engine.chat(
      { messages, maxTokens: 16, temperature: 1.3, topP: 0.9, presencePenalty: 1.5, frequencyPenalty: -0.5 },
      neverAborted(),
    );
    expect(result.finishReason).toBe('length');
    expect(result.usage.completionTokens).toBe(16);
  });

  it('refuses a request that does not fit the context it is served with', async () => {
    await expect(engine.chat(greedy({ maxTokens: 1024 }), neverAborted())).rejects.toMatchObject({ code: 'context_length_exceeded' });
  });
});

describe('a caller that goes away', () => {
  it('stops generation at once when the stream is closed', async () => {
    const stream = engine.chatStream(greedy({ maxTokens: 200 }), neverAborted())[Symbol.asyncIterator]();
    for (let i = 0; i < 3; i++) expect((await stream.next()).done).toBe(false);
    const atClose = engine.stats.generatedTokens;
    await stream.return?.(undefined);
    // The one slot is free at once, and the next call's tokens are the only ones generated since.
    const after = await engine.chat(greedy({ maxTokens: 3 }), neverAborted());
    expect(after.usage.completionTokens).toBe(3);
    expect(engine.stats.generatedTokens - atClose).toBe(3);
  });

  it('stops generation at once when its signal aborts', async () => {
    const ctl = new AbortController();
    const stream = engine.chatStream(greedy({ maxTokens: 200 }), ctl.signal)[Symbol.asyncIterator]();
    for (let i = 0; i < 3; i++) await stream.next();
    const atAbort = engine.stats.generatedTokens;
    ctl.abort();
    await expect(stream.next()).rejects.toMatchObject({ name: 'AbortError' });
    // The slot is free again, and the next call's tokens are the only ones generated since.
    const after = await engine.chat(greedy({ maxTokens: 3 }), neverAborted());
    expect(after.usage.completionTokens).toBe(3);
    expect(engine.stats.generatedTokens - atAbort).toBe(3);
  });

  it('stops a non-streamed call too', async () => {
    const ctl = new AbortController();
    ctl.abort();
    await expect(engine.chat(greedy({ maxTokens: 50 }), ctl.signal)).rejects.toMatchObject({ name: 'AbortError' });
  });

  it('stops a non-streamed call at once when its signal aborts during generation', async () => {
    const ctl = new AbortController();
    const before = engine.stats.generatedTokens;
    const call = engine.chat(greedy({ maxTokens: 500 }), ctl.signal);
    while (engine.stats.generatedTokens - before < 3) await new Promise((r) => setImmediate(r));
    ctl.abort();
    await expect(call).rejects.toMatchObject({ name: 'AbortError' });
    const atAbort = engine.stats.generatedTokens;
    expect(atAbort - before).toBeLessThan(500);
    const after = await engine.chat(greedy({ maxTokens: 3 }), neverAborted());
    expect(after.usage.completionTokens).toBe(3);
    expect(engine.stats.generatedTokens - atAbort).toBe(3);
  });
});

describe('a caller that goes away while its prompt is read', () => {
  // Batches of 4 tokens: the long prompt (about 800 tokens) is read in some 200 batches.
  const reading = (id: string) =>
    llamaEngine('chat', { file: fixtures.files.chat, parallel: 1, batch_size: 4, queue: { max_depth: 4, max_wait_ms: 120_000 } }, { id });
  const long = [{ role: 'user' as const, content: 'tea and coffee '.repeat(60) }];
  const half = [{ role: 'user' as const, content: 'tea and coffee '.repeat(30) }];
  const turn = () => new Promise((r) => setImmediate(r));

  it.each([
    ['a plain call', {}],
    ['a call with log-probabilities (one choice at a time)', { logprobs: true, topLogprobs: 1 }],
  ])('%s gives its slot to the next call within a batch, long before its prompt would have been read', async (_, extra) => {
    const slow = reading(`chat-prefill-${Object.keys(extra).length}`);
    // A clock in the same unit as the prompt: another model reading half the prompt from the start.
    const twin = reading(`chat-prefill-twin-${Object.keys(extra).length}`);
    await Promise.all([slow.load(), twin.load()]);
    expect(await slow.countChatTokens(long)).toBeGreaterThan(700);
    const ctl = new AbortController();
    const aborted = slow.chat({ messages: long, maxTokens: 4, temperature: 0, ...extra }, ctl.signal);
    const settled = aborted.catch((e: unknown) => e);
    await turn(); // it holds the only slot and reads its prompt
    const next = slow.chat(greedy({ maxTokens: 2 }), neverAborted());
    await turn();
    expect(slow.queueDepth).toBe(1); // the next call waits for that slot
    ctl.abort();
    const clock = twin.chat({ messages: half, maxTokens: 1, temperature: 0 }, neverAborted());
    // The next call, its own prompt and tokens included, is served before the twin has read half the
    // prompt: the aborted call stopped reading within a batch. (Read to the end, it held the slot
    // for twice the twin's work.)
    const first = await Promise.race([next.then(() => 'the next call'), clock.then(() => 'the twin')]);
    expect(await settled).toMatchObject({ name: 'AbortError' });
    expect((await next).usage.completionTokens).toBe(2);
    await clock;
    expect(first).toBe('the next call');
    await Promise.all([slow.close(), twin.close()]);
  });

  it('reads a long prompt a batch at a time with the same result: the tokens of one evaluation of it, seed for seed', async () => {
    const llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error });
    const model = await llama.loadModel({ modelPath: fixtures.files.chat });
    const context = await model.createContext({ contextSize: 1024, batchSize: 4, threads: 1 });
    const { contextText } = resolveChatWrapper(model).generateContextState({
      chatHistory: [
        { type: 'user', text: long[0]!.content },
        { type: 'model', response: [] },
      ],
    });
    const tokens = [];
    const sampling = { temperature: 1, topK: 0, topP: 1, minP: 0, seed: 42, yieldEogToken: true };
    for await (const token of context.getSequence().evaluate(contextText.tokenize(model.tokenizer), sampling)) {
      if (model.isEogToken(token)) break;
      tokens.push(token);
      if (tokens.length === 24) break;
    }
    const expected = model.detokenize(tokens);
    await context.dispose();
    await model.dispose();

    const sliced = reading('chat-prefill-same');
    await sliced.load();
    const plain = await sliced.chat({ messages: long, maxTokens: 24, temperature: 1, seed: 42 }, neverAborted());
    expect(plain.content).toBe(expected);
    const choice = await sliced.chat({ messages: long, maxTokens: 24, temperature: 1, seed: 42, logprobs: true }, neverAborted());
    expect(choice.content).toBe(expected);
    await sliced.close();
  });
});

describe('the queue in front of the model', () => {
  it('answers 503 model_overloaded with a Retry-After when it is full, and serves the waiting call in turn', async () => {
    const queued = llamaEngine(
      'chat',
      { file: fixtures.files.chat, parallel: 1, queue: { max_depth: 1, max_wait_ms: 30_000 } },
      { id: 'chat-queued' },
    );
    await queued.load();
    const holder = queued.chatStream(greedy({ maxTokens: 100 }), neverAborted())[Symbol.asyncIterator]();
    await holder.next(); // holds the only slot
    const waiting = queued.chat(greedy({ maxTokens: 4 }), neverAborted()); // the one place in the queue
    await expect(queued.chat(greedy({ maxTokens: 4 }), neverAborted())).rejects.toMatchObject({
      code: 'model_overloaded',
      status: 503,
      retryAfter: 30,
    });
    await holder.return?.(undefined);
    const served = await waiting;
    expect(served.usage.completionTokens).toBe(4);
    await queued.close();
  });

  it('refuses a call that waited longer than the queue allows', async () => {
    const queued = llamaEngine(
      'chat',
      { file: fixtures.files.chat, parallel: 1, queue: { max_depth: 4, max_wait_ms: 30 } },
      { id: 'chat-impatient' },
    );
    await queued.load();
    const holder = queued.chatStream(greedy({ maxTokens: 100 }), neverAborted())[Symbol.asyncIterator]();
    await holder.next();
    await expect(queued.chat(greedy({ maxTokens: 4 }), neverAborted())).rejects.toMatchObject({ code: 'model_overloaded', retryAfter: 1 });
    await holder.return?.(undefined);
    await queued.close();
  });

  it("ends a call at engine.max_duration_ms, its wait in the queue and a stream consumer's pauses included: 504 upstream_timeout", async () => {
    const bounded = llamaEngine(
      'chat',
      { file: fixtures.files.chat, parallel: 1, max_duration_ms: 400, queue: { max_depth: 4, max_wait_ms: 30_000 } },
      { id: 'chat-bounded' },
    );
    await bounded.load();
    const holder = bounded.chatStream(greedy({ maxTokens: 100 }), neverAborted())[Symbol.asyncIterator]();
    expect((await holder.next()).done).toBe(false); // holds the only slot
    // Queued behind it: ended at its deadline, long before the queue's own 30 s.
    const started = Date.now();
    await expect(bounded.chat(greedy({ maxTokens: 4 }), neverAborted())).rejects.toMatchObject({
      code: 'upstream_timeout',
      message: 'The call ran past its time limit and was ended.',
    });
    expect(Date.now() - started).toBeLessThan(20_000);
    // The holder's consumer has paused past its deadline: its next piece is the timeout, and the slot is freed.
    await new Promise((r) => setTimeout(r, 500));
    await expect(holder.next()).rejects.toMatchObject({ code: 'upstream_timeout' });
    expect((await bounded.chat(greedy({ maxTokens: 2 }), neverAborted())).usage.completionTokens).toBe(2);
    // A caller's own abort is still an abort, not a timeout.
    const caller = new AbortController();
    caller.abort(new Error('client left'));
    await expect(bounded.chat(greedy({ maxTokens: 2 }), caller.signal)).rejects.toThrow('client left');
    await bounded.close();
  });

  it('serves as many calls at once as it has sequences', async () => {
    const wide = llamaEngine(
      'chat',
      { file: fixtures.files.chat, parallel: 2, queue: { max_depth: 0, max_wait_ms: 1000 } },
      { id: 'chat-wide' },
    );
    await wide.load();
    const a = wide.chatStream(greedy({ maxTokens: 50 }), neverAborted())[Symbol.asyncIterator]();
    const b = wide.chatStream(greedy({ maxTokens: 50 }), neverAborted())[Symbol.asyncIterator]();
    await Promise.all([a.next(), b.next()]);
    await expect(wide.chat(greedy({ maxTokens: 2 }), neverAborted())).rejects.toMatchObject({ code: 'model_overloaded' });
    await Promise.all([a.return?.(undefined), b.return?.(undefined)]);
    const after = await wide.chat(greedy({ maxTokens: 2 }), neverAborted());
    expect(after.usage.completionTokens).toBe(2);
    await wide.close();
  });
});
