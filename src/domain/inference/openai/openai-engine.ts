// Engine that forwards to any OpenAI-compatible server (vLLM, llama.cpp's server, Ollama, TEI,
// Infinity): chat (plain and SSE), embeddings, rerank and moderation, over keep-alive undici pools,
// with round-robin and failover across several base URLs.
//
// Every call is bounded: a connect timeout, a first-byte timeout (the response head), an idle
// timeout between stream events (comments and keep-alives are not progress) and a total deadline
// across every base URL tried. A base URL that cannot be reached, sends no head in time, breaks
// off or answers garbage (not JSON) is failed over (while nothing reached the consumer) and counts
// towards its circuit breaker, which ejects it for a while (circuit-breaker.ts); JSON of the wrong
// shape is the caller's error alone (readAnswer). An upstream 429 or 503 becomes 503
// model_overloaded with the upstream's Retry-After, once no other base URL can take the call.
//
// Error policy: callers see only fixed messages. Upstream addresses, ports, keys and upstream error
// bodies go to the logger, never into a DomainError, because those messages reach API clients.
import { Pool } from 'undici';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import type { OpenAIEngineConfig } from '../../catalog/model.js';
import { DomainError } from '../../errors.js';
import { embedResultFrom, moderationResultsFrom, rerankResultFrom } from './answers.js';
import { answerEvents, chatPayload, choiceEvents, choiceText, readChoices, type StreamReading, streamReading } from './chat-wire.js';
import { CircuitBreaker, type BreakerState } from './circuit-breaker.js';
import type {
  ChatMessage,
  Engine,
  EngineChatRequest,
  EngineChatResult,
  EngineEmbedResult,
  EngineModerationResult,
  EngineRerankResult,
  EngineStreamEvent,
  ToolDefinition,
  Usage,
} from '../engine.js';
import { countChatTokens, countTextTokens, countTextTokensWithin } from '../tokenizer.js';
import { withinMaxTokens } from '../chat-options.js';
import {
  ANSWER_BODY_LIMIT,
  CONTEXT_LENGTH_RE,
  abortReason,
  asRecord,
  MAX_EVENT_CHARS,
  Attempt,
  CallDeadline,
  headerValue,
  invalidResponse,
  MAX_RETRY_AFTER_S,
  msg,
  noopLogger,
  parseJson,
  readErrorBody,
  requestWhole,
  statusError,
  type ResponseData,
  Retryable,
  type StreamState,
  tokenCount,
  truncate,
  type Upstream,
  type WholeAnswer,
  worthReporting,
  withoutBom,
} from './upstream.js';

import type { OpenAIEngineLogger, OpenAIEngineOptions, UpstreamHealth } from './upstream.js';

export type { OpenAIEngineLogger, OpenAIEngineOptions, UpstreamHealth };

/** TextDecoder's options for a piece of a stream (one object, not one per network read). */
const DECODE_STREAM = { stream: true } as const;
/** The most distinct unknown finish reasons an engine logs (an upstream cannot grow the set without bound). */
const MAX_WARNED_FINISHES = 32;
/** A response body's iterator that leaves the body open when the loop over it is left. */
const KEEP_BODY = { destroyOnReturn: false } as const;
/** How long a stream's response may take to end after its [DONE] before it is closed. */
const DRAIN_AFTER_DONE_MS = 1_000;
/** How long an idle upstream socket is kept when the server sends no Keep-Alive hint: below uvicorn's and Node's 5 s. */
const IDLE_SOCKET_MS = 4_000;

/**
 * The output tokens a call may bill (max_tokens for each choice): an answer without usage is counted
 * up to just past it, so that the work of counting is bounded by the call, not by the upstream.
 */
const outputLimit = (req: EngineChatRequest) => req.maxTokens * (req.n ?? 1);

/**
 * The rest of a response whose [DONE] arrived, read and dropped: a server that ends it at once gets
 * its socket back in the pool; one that holds it open has it closed after DRAIN_AFTER_DONE_MS.
 */
function drainAfterDone(body: ResponseData['body']): void {
  const timer = setTimeout(destroyBody, DRAIN_AFTER_DONE_MS, body);
  body.once('close', () => clearTimeout(timer));
  body.resume();
}
function destroyBody(body: ResponseData['body']): void {
  body.destroy();
}
function ignoreError(): void {}

export class OpenAIEngine implements Engine {
  private readonly upstreams: Upstream[];
  private readonly model: string;
  private readonly rerankPath: string;
  private readonly rerankScores: 'auto' | 'probabilities' | 'logits';
  private readonly maxTokensParam: 'max_tokens' | 'max_completion_tokens';
  /** Whether `auto` rerank scores were seen to be logits (said once in the log). */
  private guessedLogitsSaid = false;
  private readonly logger: OpenAIEngineLogger;
  private readonly jsonHeaders: Record<string, string>;
  private readonly sseHeaders: Record<string, string>;
  private readonly timeoutMs: number;
  private readonly firstByteMs: number;
  private readonly maxDurationMs: number;
  private next = 0;
  /** The unknown finish reasons already logged (each once; at most MAX_WARNED_FINISHES). */
  private readonly warnedFinishes = new Set<string>();

  constructor(config: OpenAIEngineConfig, opts: OpenAIEngineOptions = {}) {
    const env = opts.env ?? process.env;
    this.logger = opts.logger ?? noopLogger;
    this.model = config.model;
    const rerankPath = config.rerank_path ?? '/rerank';
    this.rerankPath = rerankPath.startsWith('/') ? rerankPath : `/${rerankPath}`;
    this.rerankScores = config.rerank_scores ?? 'auto';
    this.maxTokensParam = config.max_tokens_param ?? 'max_tokens';

    const baseUrls = config.base_urls ?? (config.base_url ? [config.base_url] : []);
    if (baseUrls.length === 0) throw new Error(`OpenAIEngine for model "${config.model}": no base_url`);
    this.timeoutMs = config.timeout_ms ?? 60_000;
    this.firstByteMs = config.first_byte_timeout_ms ?? this.timeoutMs;
    this.maxDurationMs = config.max_duration_ms ?? 300_000;
    const backstop = Math.max(this.timeoutMs, this.firstByteMs) + 5_000;
    const breaker = config.circuit_breaker ?? { failure_threshold: 3, cooldown_ms: 30_000 };
    this.upstreams = baseUrls.map((raw, index) => {
      const url = new URL(raw);
      const prefix = url.pathname.replace(/\/+$/, '');
      const label = url.origin + prefix;
      return {
        // One keep-alive pool per base URL: undici reuses sockets and honours the server's
        // Keep-Alive hint. The per-call timeouts are Attempt's; undici's own header and body
        // timeouts only back them up, set past them so they never decide first.
        pool: new Pool(url.origin, {
          headersTimeout: backstop,
          bodyTimeout: backstop,
          // Without a hint, an idle socket is let go before the server may close it: uvicorn (vLLM,
          // TEI's router, most Python servers) closes idle connections after 5 s and says nothing,
          // and a call written on a socket the server is closing fails (undici does not retry a POST).
          keepAliveTimeout: IDLE_SOCKET_MS,
          // Short and separate from the first-byte timeout: a host that drops packets is failed over quickly.
          connect: { timeout: config.connect_timeout_ms ?? 3_000 },
        }),
        prefix,
        label,
        index,
        breaker: new CircuitBreaker({ failureThreshold: breaker.failure_threshold, cooldownMs: breaker.cooldown_ms }, (state, failures) =>
          this.logBreaker(label, index, state, failures, breaker.cooldown_ms),
        ),
      };
    });

    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (config.api_key_env) {
      const key = env[config.api_key_env];
      if (key) headers.authorization = `Bearer ${key}`;
      else
        this.logger.warn(
          { upstream_model: config.model, api_key_env: config.api_key_env },
          'upstream API key variable is not set; calling without Authorization',
        );
    }
    this.jsonHeaders = { ...headers, accept: 'application/json' };
    this.sseHeaders = { ...headers, accept: 'text/event-stream' };
  }

  chat(req: EngineChatRequest, signal: AbortSignal): Promise<EngineChatResult> {
    return this.postJson('/chat/completions', chatPayload(this.model, req, false, this.maxTokensParam), signal, 'chat', (data) =>
      this.chatResultFrom(data, req),
    );
  }

  async *chatStream(req: EngineChatRequest, signal: AbortSignal): AsyncGenerator<EngineStreamEvent> {
    if (signal.aborted) throw abortReason(signal);
    const body = JSON.stringify(chatPayload(this.model, req, true, this.maxTokensParam));
    const n = req.n ?? 1;
    const call = new CallDeadline(this.maxDurationMs);
    const order = this.order();
    let last: DomainError | undefined;
    let attempted = false;
    let started = false;
    try {
      for (const up of order) {
        if (call.expired) break;
        if (!up.breaker.tryAcquire()) continue;
        attempted = true;
        // A fresh state per attempt: we only move on to another server while nothing was yielded.
        const state: StreamState = {
          yielded: false,
          content: '',
          finishReason: undefined,
          finished: new Set(),
          usage: undefined,
          done: false,
        };
        const reading = streamReading(n, this.unknownFinish);
        const attempt = new Attempt(signal, call, this.firstByteMs, this.timeoutMs);
        let res: ResponseData;
        try {
          res = await this.open(up, '/chat/completions', body, attempt, 'chat.stream', this.sseHeaders);
        } catch (e) {
          attempt.dispose();
          if (e instanceof Retryable) {
            this.judge(up, e);
            last = worthReporting(last, e.error);
            continue;
          }
          up.breaker.released();
          throw e;
        }
        let judged = false;
        try {
          if (!started) {
            // An upstream took the call: the door may send its head now, before the first token.
            started = true;
            attempt.pause();
            yield { type: 'started' };
            attempt.resume();
          }
          const type = res.headers['content-type'];
          // A whole answer replayed as a stream's events, when the server sent no stream.
          let replay: EngineStreamEvent[] | undefined;
          if (typeof type === 'string' && type.includes('application/json')) {
            // The server ignored stream: true and answered in one piece: relay it as a stream would have
            // brought it (chat-wire.ts answerEvents), cut to max_tokens first.
            replay = this.wholeAnswer(await textWithin(res.body, ANSWER_BODY_LIMIT), up, state, n, req.maxTokens);
          } else {
            // The SSE answer, relayed event by event as it comes (written out here rather than in
            // a generator of its own: every event would pass through one more).
            const events: EventSourceMessage[] = [];
            const out: EngineStreamEvent[] = [];
            // Comments (": ping") and retry fields are not events: they do not count as progress.
            // llama.cpp's server sends an error inside its stream as a field of its own
            // (`error: {…}`), which SSE does not know: read as an `event: error` event.
            const parser = createParser({
              onEvent(e) {
                events.push(e);
              },
              onError(e) {
                if (e.type === 'unknown-field' && e.field === 'error') events.push({ event: 'error', data: e.value ?? '', id: undefined });
              },
            });
            // What came before the first event, kept while there is none: a body that brings no
            // event at all (a proxy's HTML page, JSON sent without its content type) is read whole.
            let before: string[] | undefined = [];
            // undici's body ignores setEncoding; a streaming decoder keeps characters split across chunks whole.
            const decoder = new TextDecoder();
            try {
              // Characters fed since the last whole event (about: the rest of the network read that
              // completed one is not counted), so that one event cannot grow without bound.
              let pending = 0;
              // Left at [DONE] without destroying the body: the finally below lets the rest drain.
              for await (const chunk of res.body.iterator(KEEP_BODY) as AsyncIterable<Buffer>) {
                const text = decoder.decode(chunk, DECODE_STREAM);
                parser.feed(text);
                if (events.length > 0) {
                  attempt.progress();
                  pending = 0;
                  before = undefined;
                } else if ((pending += text.length) > MAX_EVENT_CHARS) {
                  throw this.eventTooLarge(up);
                } else {
                  before?.push(text);
                }
                for (let i = 0; i < events.length; i++) {
                  const { data, event } = events[i]!;
                  if (data.length > MAX_EVENT_CHARS) throw this.eventTooLarge(up);
                  if (event === 'error') this.streamError(data, up, state.yielded);
                  // An event without data is not dispatched (the SSE rules): vLLM's and others'
                  // keep-alives may be such.
                  if (data === '') continue;
                  if (data === '[DONE]') {
                    state.done = true;
                    break;
                  }
                  this.readChunk(data, state, reading, out, up);
                  // The first well-formed event: the base URL works.
                  if (!judged) {
                    judged = true;
                    up.breaker.succeeded();
                  }
                  if (out.length > 0) {
                    state.yielded = true;
                    attempt.pause();
                    for (let j = 0; j < out.length; j++) yield out[j]!;
                    out.length = 0;
                    attempt.resume();
                  }
                }
                events.length = 0;
                // Everything is in hand at [DONE]: the client's stream ends now, whether or not the
                // upstream ends its response (some keep it open until a timeout).
                if (state.done) break;
              }
            } catch (e) {
              // After [DONE] everything the consumer needs is in hand; a broken tail changes nothing.
              // Nor does one after every choice's end and the usage, when the upstream then holds
              // its response open without a [DONE] until a timeout, or breaks it off.
              if (!state.done && !(state.finished.size >= n && state.usage)) throw e;
            }
            // The body ended without a single event.
            if (before) replay = this.notAStream(before.join('') + decoder.decode(), res, up, state, n, req.maxTokens);
          }
          if (replay) {
            judged = true;
            up.breaker.succeeded();
            if (replay.length > 0) {
              state.yielded = true;
              attempt.pause();
              yield* replay;
            }
          }
        } catch (e) {
          const err = this.translate(e, attempt, up, 'chat.stream');
          if (err instanceof Retryable) {
            if (!judged) this.judge(up, err);
            judged = true;
            // A stream the upstream broke off after its head is said as a stream's.
            const broken = err.error.message === msg.unreachable || err.error.message === msg.brokenAnswer;
            const error =
              broken && (state.yielded || attempt.headSeen) ? new DomainError('upstream_error', msg.brokenStream, { cause: e }) : err.error;
            // Once the consumer has seen a delta, another server would produce a different text:
            // the only honest outcome is an error.
            if (!state.yielded) {
              last = worthReporting(last, error);
              continue;
            }
            throw error;
          }
          throw err;
        } finally {
          // Reached with the body unfinished when the consumer called return() or an error struck:
          // destroying it aborts the request, which closes the upstream socket and stops generation.
          // After [DONE] the rest may drain for a moment, so that the socket can go back to the pool.
          // (The loop's iterator no longer listens to the body: its error on destroy() is expected.)
          if (!res.body.readableEnded) {
            res.body.on('error', ignoreError);
            if (state.done) drainAfterDone(res.body);
            else res.body.destroy();
          }
          attempt.dispose();
          if (!judged) up.breaker.released();
        }
        if (!state.finishReason && !state.done) {
          this.logger.warn({ upstream: up.label, op: 'chat.stream' }, 'upstream stream ended without finish_reason or [DONE]');
          const err = new DomainError('upstream_error', msg.brokenStream);
          if (state.yielded) throw err;
          last = worthReporting(last, err);
          continue;
        }
        if (state.finished.size < n && n > 1) {
          // Fewer choices than asked for, as for an answer read whole (readChoices): invalid, and
          // the client's alone (what a request asks for may lead an upstream there), not failed over.
          this.logger.warn(
            { upstream: up.label, op: 'chat.stream', n, finished: state.finished.size },
            'upstream stream ended without every choice the request asked for (n)',
          );
          throw invalidResponse();
        }
        yield { type: 'finish', finishReason: state.finishReason ?? 'stop', usage: this.usageFrom(state.usage, req, state.content) };
        return;
      }
      throw this.noneLeft(call, attempted, last, order);
    } finally {
      call.dispose();
    }
  }

  async embed(input: string[], signal: AbortSignal): Promise<EngineEmbedResult> {
    return this.postJson('/embeddings', { model: this.model, input, encoding_format: 'float' }, signal, 'embed', (data) =>
      embedResultFrom(data, input),
    );
  }

  async rerank(query: string, documents: string[], signal: AbortSignal): Promise<EngineRerankResult> {
    // `documents` for vLLM, llama.cpp's server, Infinity and Cohere's form; `texts` for TEI's native
    // /rerank, which refuses a body without it (422). An engine does not know which server it calls,
    // and each ignores the field it does not take, so both are sent.
    const payload = { model: this.model, query, documents, texts: documents, top_n: documents.length, return_documents: false };
    const { scores, promptTokens, guessedLogits } = await this.postJson(this.rerankPath, payload, signal, 'rerank', (data) =>
      rerankResultFrom(data, query, documents, this.rerankScores),
    );
    if (guessedLogits && !this.guessedLogitsSaid) {
      this.guessedLogitsSaid = true;
      // A request whose logits all fall in [0, 1] would pass them as probabilities: scores of one
      // model would then not compare across requests.
      this.logger.warn(
        { op: 'rerank' },
        "upstream rerank scores outside [0, 1]: it answers raw logits (as llama.cpp's server does); set engine.rerank_scores: logits for this model, so every score goes through the same sigmoid",
      );
    }
    return { scores, promptTokens };
  }

  /**
   * Every input in one call (OpenAI's /v1/moderations takes a list and answers in order): one
   * round trip, and one max_duration_ms for the whole request, which billing's hold outlives.
   */
  async moderate(inputs: string[], signal: AbortSignal): Promise<EngineModerationResult[]> {
    const input = inputs.length === 1 ? inputs[0] : inputs;
    return this.postJson('/moderations', { model: this.model, input }, signal, 'moderate', (data) => moderationResultsFrom(data, inputs));
  }

  countChatTokens(messages: ChatMessage[], tools?: ToolDefinition[]): number {
    return countChatTokens(messages, tools);
  }

  countTokens(text: string): number {
    return countTextTokens(text);
  }

  async close(): Promise<void> {
    await Promise.all(this.upstreams.map((u) => u.pool.close()));
  }

  /** Each base URL's circuit breaker, for /readyz. */
  health(): UpstreamHealth[] {
    return this.upstreams.map((u) => ({ index: u.index, ...u.breaker.snapshot() }));
  }

  // ---------------------------------------------------------------------------------------------

  private chatResultFrom(data: Record<string, unknown>, req: EngineChatRequest): EngineChatResult {
    const choices = readChoices(data, req.n ?? 1, this.unknownFinish);
    const reported = asRecord(data.usage);
    // What the upstream left out is counted here (the answer's text made only then; up to what the call may bill).
    const promptTokens = tokenCount(reported?.prompt_tokens) ?? countChatTokens(req.messages, req.tools);
    const completionTokens =
      tokenCount(reported?.completion_tokens) ?? countTextTokensWithin(choices.map(choiceText).join(''), outputLimit(req));
    const result: EngineChatResult = {
      ...choices[0]!,
      usage: { promptTokens, completionTokens, totalTokens: promptTokens + completionTokens },
    };
    if (choices.length > 1) result.choices = choices;
    return result;
  }

  /** Usage as the upstream reported it; what it left out is counted here (the output only up to what the call may bill: outputLimit). */
  private usageFrom(usage: Record<string, unknown> | undefined, req: EngineChatRequest, content: string): Usage {
    const promptTokens = tokenCount(usage?.prompt_tokens) ?? countChatTokens(req.messages, req.tools);
    const completionTokens = tokenCount(usage?.completion_tokens) ?? countTextTokensWithin(content, outputLimit(req));
    return { promptTokens, completionTokens, totalTokens: promptTokens + completionTokens };
  }

  /**
   * A JSON answer to a streamed request (a server that ignored stream: true), read into the state:
   * its events. As postJson's: what is not JSON is garbage; JSON tollgate refuses is not. Each
   * choice is cut to `maxTokens` first when the upstream's count goes past it or there is none (an
   * upstream that ignored stream may ignore max_tokens too), so what is replayed, split and checked
   * is never more than the client can get.
   */
  private wholeAnswer(
    text: string,
    up: Upstream,
    state: StreamState,
    n: number,
    maxTokens: number,
    data = asRecord(parseJson(text)),
  ): EngineStreamEvent[] {
    if (!data) throw new Retryable(invalidResponse(), true);
    const read = this.readAnswer(text, up, 'chat.stream', () => readChoices(data, n, this.unknownFinish));
    state.usage = asRecord(data.usage);
    // A count within max_tokens is a compliant upstream's: nothing is cut (o200k may count more).
    const overran = (tokenCount(state.usage?.completion_tokens) ?? Number.POSITIVE_INFINITY) > maxTokens * n;
    const choices = overran ? read.map((c) => withinMaxTokens(c, maxTokens)) : read;
    state.finishReason = choices[0]!.finishReason;
    for (let i = 0; i < choices.length; i++) state.finished.add(i);
    state.done = true;
    state.content = choices.map(choiceText).join('');
    return answerEvents(choices);
  }

  /** Applies one chunk to the state; appends the events it carries (content, tool-call pieces) to `out`. */
  private readChunk(data: string, state: StreamState, reading: StreamReading, out: EngineStreamEvent[], up: Upstream): void {
    const chunk = asRecord(parseJson(data));
    if (!chunk) throw new Retryable(invalidResponse(), true);
    // `"error": null` on every chunk (Microsoft Foundry Local) says there is none.
    if (chunk.error !== undefined && chunk.error !== null) this.streamError(data, up, state.yielded);
    // Servers with continuous usage stats send usage on every chunk: the last one wins.
    const usage = asRecord(chunk.usage);
    if (usage) state.usage = usage;
    if (!Array.isArray(chunk.choices)) return;
    for (const raw of chunk.choices) {
      const choice = asRecord(raw);
      if (!choice) continue;
      const from = out.length;
      const finish = choiceEvents(choice, reading, out);
      if (finish) {
        state.finishReason = finish;
        state.finished.add(typeof choice.index === 'number' ? choice.index : 0);
      }
      for (let i = from; i < out.length; i++) {
        const e = out[i]!;
        if (e.type === 'delta' || e.type === 'reasoning_delta') state.content += e.content;
        else if (e.type === 'tool_call') state.content += (e.name ?? '') + e.arguments;
      }
    }
    // As for an answer read whole: no upstream grows this process without bound.
    if (state.content.length > ANSWER_BODY_LIMIT) throw new Retryable(new DomainError('upstream_error', msg.tooLarge), true);
  }

  /** Logs a finish reason this engine does not know (read as 'stop'), once per value. */
  private readonly unknownFinish = (value: unknown): void => {
    const key = truncate(String(typeof value === 'string' ? value : JSON.stringify(value)));
    if (this.warnedFinishes.has(key) || this.warnedFinishes.size >= MAX_WARNED_FINISHES) return;
    this.warnedFinishes.add(key);
    this.logger.warn(
      { upstream_model: this.model, finish_reason: key },
      'upstream sent a finish_reason tollgate does not know; read as stop',
    );
  };

  /** A stream event over MAX_EVENT_CHARS: garbage, as an answer that is not JSON is. */
  private eventTooLarge(up: Upstream): Retryable {
    this.logger.warn(
      { upstream: up.label, op: 'chat.stream', limit: MAX_EVENT_CHARS },
      'upstream sent a stream event larger than the limit',
    );
    return new Retryable(new DomainError('upstream_error', msg.eventTooLarge), true);
  }

  /**
   * An error the upstream sent inside its stream (an `error` chunk, an `event: error` event, or
   * llama.cpp's `error:` field): logged, and the stream ends. Before any of the answer reached the
   * client, one that says the context is full (llama.cpp's exceed_context_size_error) is
   * context_length_exceeded, as its HTTP form is, and any other is failed over as a 5xx is (Ollama
   * sends its crashed runner's error so, after a 200), not counted towards ejection: an answer.
   */
  private streamError(data: string, up: Upstream, yielded: boolean): never {
    this.logger.warn({ upstream: up.label, op: 'chat.stream', detail: truncate(data) }, 'upstream sent an error inside the stream');
    if (yielded) throw new DomainError('upstream_error', msg.streamError);
    if (CONTEXT_LENGTH_RE.test(data)) throw new DomainError('context_length_exceeded', msg.contextLength, { param: 'messages' });
    throw new Retryable(new DomainError('upstream_error', msg.erred), false);
  }

  /**
   * A 2xx answer to a streamed request that brought no SSE event at all: a whole JSON answer sent
   * without its content type is relayed as wholeAnswer relays one; anything else (a proxy's HTML
   * page, an empty body) is garbage, logged with its start and failed over, counting towards the
   * base URL's ejection, as a plain call's answer that is not JSON.
   */
  private notAStream(text: string, res: ResponseData, up: Upstream, state: StreamState, n: number, maxTokens: number): EngineStreamEvent[] {
    const data = asRecord(parseJson(text));
    if (data && Array.isArray(data.choices)) return this.wholeAnswer(text, up, state, n, maxTokens, data);
    this.logger.warn(
      {
        upstream: up.label,
        op: 'chat.stream',
        status: res.statusCode,
        content_type: res.headers['content-type'],
        content_encoding: res.headers['content-encoding'],
        detail: truncate(text),
      },
      'upstream answered a streamed request with something that is not an event stream',
    );
    throw new Retryable(invalidResponse(), true);
  }

  /**
   * What `read` makes of an answer that is JSON; what it refuses (a DomainError: fewer choices than
   * asked for, a value of the wrong type) is logged and thrown as it is: answered to this client
   * alone, neither failed over nor counted towards ejection, since what a request asks for (`n`,
   * tools) can lead an upstream to such an answer, and a client must not be able to eject a base
   * URL for everyone.
   */
  private readAnswer<T>(text: string, up: Upstream, op: string, read: () => T): T {
    try {
      return read();
    } catch (e) {
      if (e instanceof DomainError) {
        this.logger.warn({ upstream: up.label, op, detail: truncate(text) }, 'upstream answered with something that is not a valid answer');
      }
      throw e;
    }
  }

  /**
   * POSTs with failover and returns what `read` makes of the first 2xx answer's JSON body. An
   * answer that is not JSON is garbage: the next base URL is tried, as for a connection that
   * failed. JSON that `read` refuses is not (readAnswer).
   */
  private async postJson<T>(
    path: string,
    payload: unknown,
    signal: AbortSignal,
    op: string,
    read: (data: Record<string, unknown>) => T,
  ): Promise<T> {
    if (signal.aborted) throw abortReason(signal);
    const body = JSON.stringify(payload);
    const call = new CallDeadline(this.maxDurationMs);
    const order = this.order();
    let last: DomainError | undefined;
    let attempted = false;
    try {
      for (const up of order) {
        if (call.expired) break;
        if (!up.breaker.tryAcquire()) continue;
        attempted = true;
        const attempt = new Attempt(signal, call, this.firstByteMs, this.timeoutMs);
        try {
          const answer = await this.openWhole(up, path, body, attempt, op);
          const text = answer.text;
          // Arrays are let through for the bare-array rerank answer; `read` checks shapes.
          const data = parseJson(text);
          if (data === null || typeof data !== 'object') {
            const encoding = answer.rawHeaders && headerValue(answer.rawHeaders, 'content-encoding');
            this.logger.warn(
              { upstream: up.label, op, content_encoding: encoding, detail: truncate(text) },
              encoding && encoding !== 'identity'
                ? 'upstream answered compressed (Content-Encoding), though tollgate asks for no encoding'
                : 'upstream answered with something that is not JSON',
            );
            throw new Retryable(invalidResponse(), true);
          }
          const value = this.readAnswer(text, up, op, () => read(data as Record<string, unknown>));
          up.breaker.succeeded();
          return value;
        } catch (e) {
          if (e instanceof Retryable) {
            this.judge(up, e);
            last = worthReporting(last, e.error);
            continue;
          }
          up.breaker.released();
          throw e;
        } finally {
          attempt.dispose();
        }
      }
      throw this.noneLeft(call, attempted, last, order);
    } finally {
      call.dispose();
    }
  }

  /**
   * Sends one request to one upstream and returns its 2xx response with the body unread.
   * Throws Retryable for what the next base URL may not suffer (connection failures, no head in
   * time, 5xx, 429), a DomainError for the rest, or the signal's reason on abort.
   */
  private async open(
    up: Upstream,
    path: string,
    body: string,
    attempt: Attempt,
    op: string,
    headers: Record<string, string>,
  ): Promise<ResponseData> {
    let res: ResponseData;
    try {
      res = await up.pool.request({ method: 'POST', path: up.prefix + path, headers, body, signal: attempt.signal });
    } catch (e) {
      throw this.translate(e, attempt, up, op);
    }
    attempt.headReceived();
    const status = res.statusCode;
    if (status >= 200 && status < 300) return res;
    const location = res.headers.location;
    throw this.refusal(
      status,
      await readErrorBody(res),
      res.headers['retry-after'],
      attempt,
      up,
      op,
      typeof location === 'string' ? location : undefined,
    );
  }

  /** As open(), for a JSON answer read whole (./upstream.ts requestWhole). */
  private async openWhole(up: Upstream, path: string, body: string, attempt: Attempt, op: string): Promise<WholeAnswer> {
    let answer: WholeAnswer;
    try {
      answer = await requestWhole(up.pool, { path: up.prefix + path, headers: this.jsonHeaders, body, attempt });
    } catch (e) {
      throw this.translate(e, attempt, up, op);
    }
    if (answer.statusCode >= 200 && answer.statusCode < 300) return answer;
    throw this.refusal(answer.statusCode, answer.text, answer.retryAfter, attempt, up, op, answer.location);
  }

  /**
   * What an error status is thrown as; the start of its body goes to the log, and where a redirect
   * points (redirects are not followed: engine.base_urls should name the server's own address).
   */
  private refusal(
    status: number,
    detail: string,
    retryAfter: string | string[] | undefined,
    attempt: Attempt,
    up: Upstream,
    op: string,
    location?: string,
  ) {
    if (status >= 300 && status < 400) {
      this.logger.warn(
        { upstream: up.label, op, status, location: location === undefined ? undefined : truncate(location), detail },
        'upstream answered with a redirect, which tollgate does not follow: set engine.base_urls to where it points',
      );
    } else {
      this.logger.warn({ upstream: up.label, op, status, detail }, 'upstream answered with an error status');
    }
    if (attempt.callerAborted || attempt.callExpired || attempt.expired) return this.translate(undefined, attempt, up, op);
    return statusError(status, detail, retryAfter, op);
  }

  /** Maps a transport error to what the caller should see, logging the details. */
  private translate(e: unknown, attempt: Attempt, up: Upstream, op: string): unknown {
    if (attempt.callerAborted) return attempt.callerReason();
    if (attempt.callExpired) {
      this.logger.warn({ upstream: up.label, op, maxDurationMs: this.maxDurationMs }, 'call ran past engine.max_duration_ms');
      return new DomainError('upstream_timeout', msg.deadline);
    }
    if (attempt.expired) {
      const timeoutMs = attempt.expired === 'first_byte' ? this.firstByteMs : this.timeoutMs;
      this.logger.warn(
        { upstream: up.label, op, timeoutMs, waitingFor: attempt.expired === 'first_byte' ? 'response head' : 'next event' },
        'upstream did not answer in time',
      );
      return new Retryable(new DomainError('upstream_timeout', msg.timeout), true);
    }
    if (e instanceof DomainError || e instanceof Retryable) return e;
    const code = (e as { code?: unknown })?.code;
    // Transport errors carry a code (ECONNRESET, UND_ERR_SOCKET...); anything else is a bug here,
    // and dressing it up as an upstream failure would hide it.
    if (typeof code !== 'string') return e;
    this.logger.warn({ upstream: up.label, op, err: { code, message: (e as Error)?.message } }, 'upstream request failed');
    if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT' || code === 'UND_ERR_CONNECT_TIMEOUT') {
      return new Retryable(new DomainError('upstream_timeout', msg.timeout), true);
    }
    // Refused, reset or closed, DNS failures: another server may do better. After the head, the
    // server was reached and broke off its answer; before, it could not be reached.
    return new Retryable(new DomainError('upstream_error', attempt.headSeen ? msg.brokenAnswer : msg.unreachable), true);
  }

  /** Tells a base URL's breaker how an attempt that can be failed over went. */
  private judge(up: Upstream, failure: Retryable): void {
    if (failure.ejects) up.breaker.failed();
    else up.breaker.released();
  }

  /** What a call that found no base URL to answer it throws. */
  private noneLeft(call: CallDeadline, attempted: boolean, last: DomainError | undefined, order: Upstream[]): DomainError {
    if (call.expired) return new DomainError('upstream_timeout', msg.deadline);
    if (last) return last;
    if (!attempted) {
      // Every base URL is ejected: answer at once rather than wait on servers known to fail.
      const waitMs = Math.min(...order.map((u) => u.breaker.waitMs()));
      return new DomainError('model_unavailable', msg.ejected, {
        retryAfter: Math.min(MAX_RETRY_AFTER_S, Math.max(1, Math.ceil(waitMs / 1000))),
      });
    }
    return new DomainError('upstream_error', msg.unreachable);
  }

  private logBreaker(upstream: string, index: number, state: BreakerState, failures: number, cooldownMs: number): void {
    const fields = { upstream_model: this.model, upstream, index, breaker: state, failures };
    if (state === 'open') this.logger.warn({ ...fields, cooldownMs }, 'upstream ejected: its circuit breaker opened');
    else if (state === 'half_open')
      (this.logger.info ?? this.logger.warn).call(this.logger, fields, 'upstream circuit breaker half-open: the next call probes it');
    else (this.logger.info ?? this.logger.warn).call(this.logger, fields, 'upstream restored: its circuit breaker closed');
  }

  /** The base URLs in the order this call tries them: round-robin start, then the others. */
  private order(): Upstream[] {
    const n = this.upstreams.length;
    if (n === 1) return this.upstreams;
    const start = this.next;
    this.next = (start + 1) % n;
    const out: Upstream[] = new Array(n);
    for (let i = 0; i < n; i++) out[i] = this.upstreams[(start + i) % n]!;
    return out;
  }
}

/**
 * A response body as text, read only up to `limit` bytes: past it the body is dropped and the
 * answer is too large (as for a plain call's answer, and a stream's events). A leading UTF-8
 * byte-order mark is not part of the text.
 */
async function textWithin(body: AsyncIterable<Buffer> & { destroy(err?: Error): unknown }, limit: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > limit) {
      body.destroy();
      throw new Retryable(new DomainError('upstream_error', msg.tooLarge), true);
    }
    chunks.push(chunk);
  }
  return withoutBom(Buffer.concat(chunks, size)).toString('utf8');
}
