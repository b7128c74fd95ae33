// What real upstreams' wires carry that the fake does not, read by OpenAIEngine from servers
// written here on loopback: llama.cpp's `error:` field inside a stream, events without data, a
// streamed n > 1 whose upstream sends fewer choices, a proxy's HTML page (or JSON without its
// content type) in answer to a stream, a stream broken off after its head, duplicate rerank
// indexes, base64 that is not, redirects and compressed answers (logged so an operator can act).
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { DomainError } from '../src/domain/errors.js';
import type { EngineChatRequest, EngineStreamEvent } from '../src/domain/inference/engine.js';
import { OpenAIEngine } from '../src/domain/inference/openai/openai-engine.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

type Handler = (req: IncomingMessage, res: ServerResponse, body: Record<string, unknown>) => void;

/** A server answering every request with `handler`; `calls` counts them. */
async function upstream(handler: Handler) {
  const state = { calls: 0 };
  const srv = createServer((req, res) => {
    let text = '';
    req.on('data', (c) => {
      text += c;
    });
    req.on('end', () => {
      state.calls++;
      handler(req, res, text ? (JSON.parse(text) as Record<string, unknown>) : {});
    });
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  cleanups.push(
    () =>
      new Promise((r) => {
        srv.closeAllConnections();
        srv.close(() => r());
      }),
  );
  return { url: `http://127.0.0.1:${(srv.address() as { port: number }).port}/v1`, state };
}

interface Warning {
  obj: Record<string, unknown>;
  msg?: string;
}

function engine(baseUrls: string[]) {
  const warnings: Warning[] = [];
  const e = new OpenAIEngine(
    {
      type: 'openai',
      base_urls: baseUrls,
      model: 'up',
      timeout_ms: 5_000,
      max_duration_ms: 30_000,
      connect_timeout_ms: 3_000,
      circuit_breaker: { failure_threshold: 1, cooldown_ms: 600_000 },
      rerank_path: '/rerank',
    },
    { logger: { warn: (obj, msg) => warnings.push({ obj: obj as Record<string, unknown>, msg }) } },
  );
  cleanups.push(() => e.close());
  return { e, warnings };
}

const signal = () => new AbortController().signal;
const req = (extra: Partial<EngineChatRequest> = {}): EngineChatRequest => ({
  messages: [{ role: 'user', content: 'hi' }],
  maxTokens: 50,
  ...extra,
});

const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) =>
  `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices, ...extra })}\n\n`;
const delta = (content: string, finish: string | null = null, index = 0) => ({ index, delta: { content }, finish_reason: finish });
const USAGE = chunk([], { usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 } });
const DONE = 'data: [DONE]\n\n';

/** A handler writing these SSE frames, each in a write of its own. */
const sse =
  (...frames: string[]): Handler =>
  (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    for (const f of frames) res.write(f);
    res.end();
  };

/** The stream's events, or the error it ended with (and the events before it). */
async function drain(events: AsyncIterable<EngineStreamEvent>): Promise<{ events: EngineStreamEvent[]; error?: unknown }> {
  const out: EngineStreamEvent[] = [];
  try {
    for await (const ev of events) out.push(ev);
    return { events: out };
  } catch (error) {
    return { events: out, error };
  }
}
const text = (events: EngineStreamEvent[]) => events.map((e) => (e.type === 'delta' ? e.content : '')).join('');

describe('upstream wires', () => {
  it('an SSE event without data (`data:` alone) is skipped, as the SSE rules say, and the stream goes on', async () => {
    const up = await upstream(sse(chunk([delta('Hello')]), 'data: \n\n', 'data:\n\n', chunk([delta(' world', 'stop')]), USAGE, DONE));
    const { e } = engine([up.url]);
    const r = await drain(e.chatStream(req(), signal()));
    expect(r.error).toBeUndefined();
    expect(text(r.events)).toBe('Hello world');
    expect(r.events.at(-1)).toMatchObject({ type: 'finish', finishReason: 'stop' });
  });

  it("llama.cpp's `error:` field inside a stream ends it as an upstream failure, its detail logged", async () => {
    const up = await upstream(
      sse(chunk([delta('Hello')]), 'error: {"code":500,"message":"slot crashed while decoding","type":"server_error"}\n\n', DONE),
    );
    const { e, warnings } = engine([up.url]);
    const r = await drain(e.chatStream(req(), signal()));
    expect(text(r.events)).toBe('Hello');
    expect(r.error).toBeInstanceOf(DomainError);
    expect(r.error).toMatchObject({
      code: 'upstream_error',
      message: "The model's upstream server sent an error in place of the rest of the stream.",
    });
    expect(warnings.find((w) => w.msg === 'upstream sent an error inside the stream')?.obj.detail).toContain('slot crashed');
  });

  it("llama.cpp's exceed_context_size_error as a stream's first event is context_length_exceeded, not tried on the next base URL", async () => {
    const full = await upstream(
      sse(
        'error: {"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error"}\n\n',
      ),
    );
    const other = await upstream(sse(chunk([delta('fine', 'stop')]), DONE));
    const { e } = engine([full.url, other.url]);
    const r = await drain(e.chatStream(req(), signal()));
    expect(r.error).toMatchObject({ code: 'context_length_exceeded', param: 'messages' });
    expect(other.state.calls).toBe(0);
  });

  it('an in-stream error that mentions the context after some of the answer is a broken stream, not context_length_exceeded', async () => {
    const up = await upstream(
      sse(chunk([delta('Hello')]), 'error: {"code":500,"message":"context size exceeded while decoding","type":"server_error"}\n\n'),
    );
    const r = await drain(engine([up.url]).e.chatStream(req(), signal()));
    expect(text(r.events)).toBe('Hello');
    expect(r.error).toMatchObject({
      code: 'upstream_error',
      message: "The model's upstream server sent an error in place of the rest of the stream.",
    });
  });

  it.each([
    [
      'an `error` chunk (Ollama, its runner crashed)',
      'data: {"error":{"message":"llama runner process has terminated: signal: killed"}}\n\n',
    ],
    ["llama.cpp's `error:` field", 'error: {"code":500,"message":"slot unavailable","type":"server_error"}\n\n'],
    ['an `event: error` event', 'event: error\ndata: {"message":"model crashed","code":500}\n\n'],
  ])('%s before any of the answer is failed over to the next base URL, as a 5xx is, and ejects nothing', async (_what, error) => {
    // The role chunk first, as Ollama sends it: it carries none of the answer.
    const broken = await upstream(sse(chunk([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }]), error));
    const fine = await upstream(sse(chunk([delta('fine', 'stop')]), USAGE, DONE));
    const { e } = engine([broken.url, fine.url]);
    for (let i = 0; i < 2; i++) {
      const r = await drain(e.chatStream(req(), signal()));
      expect(r.error).toBeUndefined();
      expect(text(r.events)).toBe('fine');
    }
    // Round-robin started each call at the next base URL; the broken one (threshold 1) was not ejected.
    expect(broken.state.calls).toBe(1);
    expect(fine.state.calls).toBe(2);
    const third = await drain(e.chatStream(req(), signal()));
    expect(text(third.events)).toBe('fine');
    expect(broken.state.calls).toBe(2);
    // Alone, it is an upstream error that says the upstream answered with one.
    const only = await drain(engine([broken.url]).e.chatStream(req(), signal()));
    expect(only.error).toMatchObject({ code: 'upstream_error', message: "The model's upstream server answered with an error." });
  });

  it("TEI's 424 (its model failed on the input) is failed over as a 5xx is", async () => {
    const failing = await upstream((_req, res) => {
      res.writeHead(424, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: 'Inference failed', error_type: 'backend' }));
    });
    const fine = await upstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ data: [{ index: 0, embedding: [0.6, 0.8] }], usage: { prompt_tokens: 1, total_tokens: 1 } }));
    });
    const { e } = engine([failing.url, fine.url]);
    for (let i = 0; i < 2; i++) expect((await e.embed(['a'], signal())).embeddings[0]).toEqual([0.6, 0.8]);
    expect([failing.state.calls, fine.state.calls]).toEqual([1, 2]);
    await expect(engine([failing.url]).e.embed(['a'], signal())).rejects.toMatchObject({
      code: 'upstream_error',
      message: "The model's upstream server failed to answer (HTTP 424).",
    });
  });

  it('a streamed n = 2 whose upstream sends one choice (it ignores n) is an invalid answer, as it is unstreamed', async () => {
    const up = await upstream(sse(chunk([delta('One')]), chunk([delta('', 'stop')]), USAGE, DONE));
    const { e, warnings } = engine([up.url]);
    const r = await drain(e.chatStream(req({ n: 2 }), signal()));
    expect(r.error).toMatchObject({ code: 'upstream_error', message: "The model's upstream server sent an invalid response." });
    expect(r.events.some((ev) => ev.type === 'finish')).toBe(false);
    expect(warnings.map((w) => w.msg)).toContain('upstream stream ended without every choice the request asked for (n)');
    // Both choices sent: complete.
    const both = await upstream(sse(chunk([delta('One', 'stop'), delta('Two', 'stop', 1)]), USAGE, DONE));
    const ok = await drain(engine([both.url]).e.chatStream(req({ n: 2 }), signal()));
    expect(ok.error).toBeUndefined();
    expect(ok.events.at(-1)).toMatchObject({ type: 'finish' });
  });

  it("a proxy's HTML page in answer to a stream is failed over and counts towards the base URL's ejection, its start logged", async () => {
    const html = await upstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<html><body><h1>502 Bad Gateway</h1>nginx</body></html>');
    });
    const good = await upstream(sse(chunk([delta('Hello there', 'stop')]), USAGE, DONE));
    const { e, warnings } = engine([html.url, good.url]);
    const r = await drain(e.chatStream(req(), signal()));
    expect(r.error).toBeUndefined();
    expect(text(r.events)).toBe('Hello there');
    expect(html.state.calls).toBe(1);
    // failure_threshold 1: ejected.
    expect(e.health()[0]).toMatchObject({ index: 0, state: 'open' });
    const logged = warnings.find((w) => w.msg === 'upstream answered a streamed request with something that is not an event stream');
    expect(logged?.obj).toMatchObject({ content_type: 'text/html', detail: expect.stringContaining('502 Bad Gateway') });
  });

  it('an empty 200 in answer to a stream is garbage too: with one base URL, the client is told the answer was invalid', async () => {
    const empty = await upstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end();
    });
    const { e } = engine([empty.url]);
    const r = await drain(e.chatStream(req(), signal()));
    expect(r.error).toMatchObject({ code: 'upstream_error', message: "The model's upstream server sent an invalid response." });
    expect(e.health()[0]).toMatchObject({ state: 'open' });
  });

  it('a whole JSON answer sent to a stream without its content type (or as text/plain) is relayed as one', async () => {
    for (const type of [undefined, 'text/plain']) {
      const up = await upstream((_req, res) => {
        res.writeHead(200, type ? { 'content-type': type } : {});
        res.end(
          JSON.stringify({
            choices: [{ index: 0, message: { role: 'assistant', content: 'Whole answer' }, finish_reason: 'stop' }],
            usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
          }),
        );
      });
      const { e } = engine([up.url]);
      const r = await drain(e.chatStream(req(), signal()));
      expect(r.error, String(type)).toBeUndefined();
      expect(text(r.events)).toBe('Whole answer');
      expect(r.events.at(-1)).toMatchObject({ type: 'finish', usage: { promptTokens: 3, completionTokens: 2 } });
    }
  });

  it('a stream broken off after its head, before any event, says the stream was broken off', async () => {
    const up = await upstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(': warming up\n\n');
      setTimeout(() => res.socket?.destroy(), 20);
    });
    const { e } = engine([up.url]);
    const r = await drain(e.chatStream(req(), signal()));
    expect(r.error).toMatchObject({ code: 'upstream_error', message: "The model's upstream server broke off the stream." });
  });

  it('a streamed choice with an index that is not a whole number is an invalid answer', async () => {
    const up = await upstream(sse(chunk([delta('x', 'stop', 0.5)]), DONE));
    const r = await drain(engine([up.url]).e.chatStream(req(), signal()));
    expect(r.error).toMatchObject({ code: 'upstream_error', message: "The model's upstream server sent an invalid response." });
  });

  it('a rerank answer scoring one document twice is an invalid answer, not the last score', async () => {
    const up = await upstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          results: [
            { index: 0, relevance_score: 0.5 },
            { index: 1, relevance_score: 0.5 },
            { index: 0, relevance_score: 0.99 },
          ],
        }),
      );
    });
    await expect(engine([up.url]).e.rerank('q', ['a', 'b'], signal())).rejects.toMatchObject({
      code: 'upstream_error',
      message: "The model's upstream server sent an invalid response.",
    });
  });

  it('an embedding in base64 that is not base64 is an invalid answer, not floats decoded from what Node skips', async () => {
    const answers = [
      Buffer.from(new Float32Array([0.5, 0.5, 0.5, 0.5]).buffer).toString('base64'),
      // 20 characters Node decodes to 12 bytes, skipping the stars: three floats of nothing.
      'AAAA**AAAAAAAAAAAAAA',
      // Valid base64 of 6 bytes: a float and a half.
      'AAAAAAAA',
    ];
    for (const [i, embedding] of answers.entries()) {
      const up = await upstream((_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ data: [{ index: 0, embedding }], usage: { prompt_tokens: 1, total_tokens: 1 } }));
      });
      const e = engine([up.url]).e;
      if (i === 0) expect((await e.embed(['a'], signal())).embeddings[0]).toEqual([0.5, 0.5, 0.5, 0.5]);
      else await expect(e.embed(['a'], signal()), embedding).rejects.toMatchObject({ code: 'upstream_error' });
    }
  });

  it("an upstream's refusal reason is its own sentence in the message", async () => {
    const up = await upstream((_req, res) => {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({ object: 'error', message: 'best_of must be 1 when using greedy sampling', type: 'BadRequestError', code: 400 }),
      );
    });
    await expect(engine([up.url]).e.chat(req(), signal())).rejects.toMatchObject({
      code: 'upstream_rejected_request',
      message:
        "The model's upstream server refused the request (HTTP 400): best_of must be 1 when using greedy sampling. Change the request; sending it again as it is will be refused again.",
    });
  });

  it('a redirect is not followed, and the log says where it points; a compressed answer is logged as compressed', async () => {
    const moved = await upstream((_req, res) => {
      res.writeHead(307, { location: 'http://10.0.0.7:8000/v1/chat/completions' });
      res.end();
    });
    const m = engine([moved.url]);
    await expect(m.e.chat(req(), signal())).rejects.toMatchObject({ code: 'upstream_error' });
    expect(m.warnings.find((w) => w.obj.status === 307)).toMatchObject({
      obj: { location: 'http://10.0.0.7:8000/v1/chat/completions' },
      msg: expect.stringContaining('redirect'),
    });
    // Streamed too.
    const ms = engine([moved.url]);
    await drain(ms.e.chatStream(req(), signal()));
    expect(ms.warnings.find((w) => w.obj.status === 307)?.obj.location).toBe('http://10.0.0.7:8000/v1/chat/completions');

    const zipped = await upstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
      res.end(gzipSync(JSON.stringify({ choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }] })));
    });
    const z = engine([zipped.url]);
    await expect(z.e.chat(req(), signal())).rejects.toMatchObject({ code: 'upstream_error' });
    expect(z.warnings.find((w) => w.obj.content_encoding === 'gzip')?.msg).toContain('compressed');
  });
});
