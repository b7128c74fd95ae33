// Engine that forwards to any OpenAI-compatible server (vLLM, llama.cpp's server, Ollama, TEI,
// Infinity): chat (plain and SSE), embeddings, rerank and moderation, over keep-alive undici pools,
// with round-robin and failover across several base URLs.
//
// Error policy: callers see only fixed messages. Upstream addresses, ports, keys and upstream error
// bodies go to the logger, never into a DomainError, because those messages reach API clients.
import { Pool } from 'undici';
import type { Dispatcher } from 'undici';
import { createParser } from 'eventsource-parser';
import type { OpenAIEngineConfig } from '../../../config.js';
import { DomainError } from '../../errors.js';
import type {
  ChatMessage,
  Engine,
  EngineChatRequest,
  EngineChatResult,
  EngineEmbedResult,
  EngineModerationResult,
  EngineRerankResult,
  EngineStreamEvent,
  FinishReason,
  Usage,
} from '../engine.js';
import { countChatTokens, countTextTokens } from '../tokenizer.js';

export interface OpenAIEngineLogger {
  warn(obj: object, msg?: string): void;
}

export interface OpenAIEngineOptions {
  logger?: OpenAIEngineLogger;
  env?: NodeJS.ProcessEnv;
}

interface Upstream {
  pool: Pool;
  /** Path of the base URL without its trailing slash, e.g. "/v1". */
  prefix: string;
  /** Origin and path, for logs only (URL.origin drops any user:password). */
  label: string;
}

type ResponseData = Dispatcher.ResponseData;

/** A failure another base URL may not have: the caller tries the next one, or throws `error` when none is left. */
class Retryable {
  constructor(readonly error: DomainError) {}
}

/**
 * One attempt's timeout and abort wiring. Both the caller's signal and the timer abort the upstream
 * request through `signal`. The timer covers the wait for headers, then each gap between body
 * chunks; it is paused while the consumer holds a delta, since a slow reader is not a slow upstream.
 * (undici's own headersTimeout/bodyTimeout tick at about one second, too coarse for short timeouts.)
 */
class Deadline {
  private readonly ctl = new AbortController();
  private readonly timer: NodeJS.Timeout;
  private paused = false;
  expired = false;

  constructor(
    private readonly caller: AbortSignal,
    ms: number,
  ) {
    this.timer = setTimeout(this.onTimer, ms);
    caller.addEventListener('abort', this.onCallerAbort);
  }

  get signal(): AbortSignal {
    return this.ctl.signal;
  }

  get callerAborted(): boolean {
    return this.caller.aborted;
  }

  callerReason(): unknown {
    return abortReason(this.caller);
  }

  private readonly onTimer = () => {
    if (this.paused) return;
    this.expired = true;
    this.ctl.abort(new DOMException('upstream timeout', 'TimeoutError'));
  };

  private readonly onCallerAbort = () => this.ctl.abort(this.caller.reason);

  /** Data arrived: the next gap starts now. */
  touch(): void {
    this.timer.refresh();
  }

  pause(): void {
    this.paused = true;
  }

  resume(): void {
    this.paused = false;
    // Re-arms the timer even if it fired (and was ignored) while paused.
    this.timer.refresh();
  }

  dispose(): void {
    clearTimeout(this.timer);
    this.caller.removeEventListener('abort', this.onCallerAbort);
  }
}

const MODERATION_KEYS = ['hate', 'harassment', 'self-harm', 'sexual', 'violence'] as const;
const FINISH_REASONS: ReadonlySet<string> = new Set<FinishReason>(['stop', 'length', 'content_filter']);
/** Upstream error bodies are read only to be logged or to spot a context-length complaint. */
const ERROR_BODY_LIMIT = 16 * 1024;
const CONTEXT_LENGTH_RE = /context[ _-]?(length|window)|maximum context|too many tokens|prompt is too long/i;
const noopLogger: OpenAIEngineLogger = { warn() {} };

const msg = {
  unreachable: "The model's upstream server could not be reached.",
  timeout: "The model's upstream server did not answer in time.",
  invalid: "The model's upstream server sent an invalid response.",
  brokenStream: "The model's upstream server broke off the stream.",
  status: (status: number) => `The model's upstream server failed to answer (HTTP ${status}).`,
  contextLength: "The request exceeds the model's context length.",
};

function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('This operation was aborted', 'AbortError');
}

function mapFinishReason(value: unknown): FinishReason {
  return typeof value === 'string' && FINISH_REASONS.has(value) ? (value as FinishReason) : 'stop';
}

function tokenCount(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 ? value : undefined;
}

function sigmoid(x: number): number {
  return 1 / (1 + Math.exp(-x));
}

function invalidResponse(): DomainError {
  return new DomainError('upstream_error', msg.invalid);
}

function asRecord(value: unknown): Record<string, unknown> | undefined {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

/** Some servers answer base64 whatever encoding_format asked for. */
function decodeEmbedding(value: unknown): number[] | undefined {
  if (Array.isArray(value)) return value as number[];
  if (typeof value === 'string') {
    const buf = Buffer.from(value, 'base64');
    return Array.from(new Float32Array(buf.buffer, buf.byteOffset, buf.byteLength >> 2));
  }
  return undefined;
}

interface StreamState {
  yielded: boolean;
  content: string;
  finishReason: FinishReason | undefined;
  usage: Record<string, unknown> | undefined;
  done: boolean;
}

export class OpenAIEngine implements Engine {
  private readonly upstreams: Upstream[];
  private readonly model: string;
  private readonly rerankPath: string;
  private readonly logger: OpenAIEngineLogger;
  private readonly jsonHeaders: Record<string, string>;
  private readonly sseHeaders: Record<string, string>;
  private readonly timeoutMs: number;
  private next = 0;

  constructor(config: OpenAIEngineConfig, opts: OpenAIEngineOptions = {}) {
    const env = opts.env ?? process.env;
    this.logger = opts.logger ?? noopLogger;
    this.model = config.model;
    const rerankPath = config.rerank_path ?? '/rerank';
    this.rerankPath = rerankPath.startsWith('/') ? rerankPath : `/${rerankPath}`;

    const baseUrls = config.base_urls ?? (config.base_url ? [config.base_url] : []);
    if (baseUrls.length === 0) throw new Error(`OpenAIEngine for model "${config.model}": no base_url`);
    const timeout = config.timeout_ms ?? 60_000;
    this.timeoutMs = timeout;
    this.upstreams = baseUrls.map((raw) => {
      const url = new URL(raw);
      const prefix = url.pathname.replace(/\/+$/, '');
      return {
        // One keep-alive pool per base URL: undici reuses sockets and honours the server's
        // Keep-Alive hint. The per-call timeout is Deadline's; undici's own timeouts only back
        // it up, set past it so they never decide first.
        pool: new Pool(url.origin, {
          headersTimeout: timeout + 5_000,
          bodyTimeout: timeout + 5_000,
          keepAliveTimeout: 30_000,
          // Shorter than the call's timeout, so that an unreachable server leaves time to fail over.
          connect: { timeout: Math.min(Math.ceil(timeout / 2), 10_000) },
        }),
        prefix,
        label: url.origin + prefix,
      };
    });

    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (config.api_key_env) {
      const key = env[config.api_key_env];
      if (key) headers.authorization = `Bearer ${key}`;
      else this.logger.warn({ model: config.model, api_key_env: config.api_key_env }, 'upstream API key variable is not set; calling without Authorization');
    }
    this.jsonHeaders = { ...headers, accept: 'application/json' };
    this.sseHeaders = { ...headers, accept: 'text/event-stream' };
  }

  async chat(req: EngineChatRequest, signal: AbortSignal): Promise<EngineChatResult> {
    const data = await this.postJson('/chat/completions', this.chatPayload(req, false), signal, 'chat');
    return this.chatResultFrom(data, req);
  }

  async *chatStream(req: EngineChatRequest, signal: AbortSignal): AsyncGenerator<EngineStreamEvent> {
    if (signal.aborted) throw abortReason(signal);
    const body = JSON.stringify(this.chatPayload(req, true));
    let last: DomainError | undefined;
    for (const up of this.order()) {
      // A fresh state per attempt: we only move on to another server while nothing was yielded.
      const state: StreamState = { yielded: false, content: '', finishReason: undefined, usage: undefined, done: false };
      const deadline = new Deadline(signal, this.timeoutMs);
      let res: ResponseData;
      try {
        res = await this.open(up, '/chat/completions', body, deadline, 'chat.stream', this.sseHeaders);
      } catch (e) {
        deadline.dispose();
        if (e instanceof Retryable) {
          last = e.error;
          continue;
        }
        throw e;
      }
      try {
        yield* this.relay(res, state, deadline);
      } catch (e) {
        const err = this.translate(e, deadline, up, 'chat.stream');
        // Once the consumer has seen a delta, another server would produce a different text:
        // the only honest outcome is an error.
        if (err instanceof Retryable && !state.yielded) {
          last = err.error;
          continue;
        }
        if (err instanceof Retryable) throw new DomainError('upstream_error', msg.brokenStream, { cause: e });
        throw err;
      } finally {
        // Reached with the body unfinished when the consumer called return() or an error struck:
        // destroying it aborts the request, which closes the upstream socket and stops generation.
        if (!res.body.readableEnded) res.body.destroy();
        deadline.dispose();
      }
      if (!state.finishReason && !state.done) {
        this.logger.warn({ upstream: up.label, op: 'chat.stream' }, 'upstream stream ended without finish_reason or [DONE]');
        const err = new DomainError('upstream_error', msg.brokenStream);
        if (state.yielded) throw err;
        last = err;
        continue;
      }
      yield { type: 'finish', finishReason: state.finishReason ?? 'stop', usage: this.usageFrom(state.usage, req, state.content) };
      return;
    }
    throw last ?? new DomainError('upstream_error', msg.unreachable);
  }

  async embed(input: string[], signal: AbortSignal): Promise<EngineEmbedResult> {
    const data = await this.postJson('/embeddings', { model: this.model, input, encoding_format: 'float' }, signal, 'embed');
    const items = data.data;
    if (!Array.isArray(items) || items.length !== input.length) throw invalidResponse();
    const embeddings: number[][] = new Array(input.length);
    for (let i = 0; i < items.length; i++) {
      const item = asRecord(items[i]);
      // Servers are expected to keep input order, but `index` is what the format promises.
      const index = item && typeof item.index === 'number' ? item.index : i;
      const vector = item ? decodeEmbedding(item.embedding) : undefined;
      if (!vector || index < 0 || index >= input.length || embeddings[index] !== undefined) throw invalidResponse();
      embeddings[index] = vector;
    }
    const usage = asRecord(data.usage);
    const promptTokens = tokenCount(usage?.prompt_tokens) ?? tokenCount(usage?.total_tokens) ?? input.reduce((n, s) => n + countTextTokens(s), 0);
    return { embeddings, promptTokens };
  }

  async rerank(query: string, documents: string[], signal: AbortSignal): Promise<EngineRerankResult> {
    const payload = { model: this.model, query, documents, top_n: documents.length, return_documents: false };
    const data = await this.postJson(this.rerankPath, payload, signal, 'rerank');
    // TEI's native /rerank answers a bare array of {index, score}; the others wrap {index, relevance_score}.
    const results = Array.isArray(data) ? (data as unknown[]) : data.results;
    if (!Array.isArray(results)) throw invalidResponse();
    const raw: number[] = new Array(documents.length).fill(Number.NaN);
    for (const r of results) {
      const item = asRecord(r);
      const index = item?.index;
      const score = item?.relevance_score ?? item?.score;
      if (typeof index !== 'number' || index < 0 || index >= documents.length || typeof score !== 'number' || !Number.isFinite(score)) {
        throw invalidResponse();
      }
      raw[index] = score;
    }
    if (raw.some(Number.isNaN)) throw invalidResponse();
    // A score outside [0, 1] means the server returns raw logits; squash them all, not just the
    // outliers, so that the ranking between documents is preserved.
    const logits = raw.some((s) => s < 0 || s > 1);
    const scores = logits ? raw.map(sigmoid) : raw;
    const usage = asRecord(Array.isArray(data) ? undefined : data.usage);
    const promptTokens =
      tokenCount(usage?.prompt_tokens) ??
      tokenCount(usage?.total_tokens) ??
      // A cross-encoder reads the query once per document.
      countTextTokens(query) * documents.length + documents.reduce((n, d) => n + countTextTokens(d), 0);
    return { scores, promptTokens };
  }

  async moderate(input: string, signal: AbortSignal): Promise<EngineModerationResult> {
    const data = await this.postJson('/moderations', { model: this.model, input }, signal, 'moderate');
    const first = Array.isArray(data.results) ? asRecord(data.results[0]) : undefined;
    if (!first) throw invalidResponse();
    const categories: Record<string, boolean> = {};
    const categoryScores: Record<string, number> = {};
    for (const key of MODERATION_KEYS) {
      categories[key] = false;
      categoryScores[key] = 0;
    }
    for (const [k, v] of Object.entries(asRecord(first.categories) ?? {})) categories[k] = v === true;
    for (const [k, v] of Object.entries(asRecord(first.category_scores) ?? {})) {
      if (typeof v === 'number' && Number.isFinite(v)) categoryScores[k] = v;
    }
    const flagged = typeof first.flagged === 'boolean' ? first.flagged : Object.values(categories).some(Boolean);
    return { flagged, categories, categoryScores, promptTokens: countTextTokens(input) };
  }

  countChatTokens(messages: ChatMessage[]): number {
    return countChatTokens(messages);
  }

  countTokens(text: string): number {
    return countTextTokens(text);
  }

  async close(): Promise<void> {
    await Promise.all(this.upstreams.map((u) => u.pool.close()));
  }

  // ---------------------------------------------------------------------------------------------

  private chatPayload(req: EngineChatRequest, stream: boolean): Record<string, unknown> {
    const p: Record<string, unknown> = {
      model: this.model,
      messages: req.messages.map((m) => ({ role: m.role, content: m.content })),
      max_tokens: req.maxTokens,
    };
    if (req.temperature !== undefined) p.temperature = req.temperature;
    if (req.topP !== undefined) p.top_p = req.topP;
    if (req.stop !== undefined && req.stop.length > 0) p.stop = req.stop;
    if (req.presencePenalty !== undefined) p.presence_penalty = req.presencePenalty;
    if (req.frequencyPenalty !== undefined) p.frequency_penalty = req.frequencyPenalty;
    if (req.user !== undefined) p.user = req.user;
    if (stream) {
      p.stream = true;
      p.stream_options = { include_usage: true };
    }
    return p;
  }

  private chatResultFrom(data: Record<string, unknown>, req: EngineChatRequest): EngineChatResult {
    const choice = Array.isArray(data.choices) ? asRecord(data.choices[0]) : undefined;
    if (!choice) throw invalidResponse();
    const message = asRecord(choice.message);
    const content = typeof message?.content === 'string' ? message.content : '';
    return { content, finishReason: mapFinishReason(choice.finish_reason), usage: this.usageFrom(asRecord(data.usage), req, content) };
  }

  /** Usage as the upstream reported it; what it left out is counted here. */
  private usageFrom(usage: Record<string, unknown> | undefined, req: EngineChatRequest, content: string): Usage {
    const promptTokens = tokenCount(usage?.prompt_tokens) ?? countChatTokens(req.messages);
    const completionTokens = tokenCount(usage?.completion_tokens) ?? countTextTokens(content);
    return { promptTokens, completionTokens, totalTokens: promptTokens + completionTokens };
  }

  /** Reads one SSE response into the state, yielding content deltas as they come. */
  private async *relay(res: ResponseData, state: StreamState, deadline: Deadline): AsyncGenerator<EngineStreamEvent> {
    const type = res.headers['content-type'];
    if (typeof type === 'string' && type.includes('application/json')) {
      // The server ignored stream: true and answered in one piece: relay it as a one-delta stream.
      const data = asRecord(parseJson(await res.body.text()));
      const choice = data && Array.isArray(data.choices) ? asRecord(data.choices[0]) : undefined;
      if (!data || !choice) throw invalidResponse();
      const message = asRecord(choice.message);
      const content = typeof message?.content === 'string' ? message.content : '';
      state.usage = asRecord(data.usage);
      state.finishReason = mapFinishReason(choice.finish_reason);
      state.done = true;
      if (content) {
        state.content = content;
        state.yielded = true;
        deadline.pause();
        yield { type: 'delta', content };
      }
      return;
    }

    const events: string[] = [];
    const parser = createParser({ onEvent: (e) => events.push(e.data) });
    // undici's body ignores setEncoding; a streaming decoder keeps characters split across chunks whole.
    const decoder = new TextDecoder();
    try {
      for await (const chunk of res.body as AsyncIterable<Buffer>) {
        deadline.touch();
        if (state.done) continue; // drain to the end so the socket goes back to the pool
        parser.feed(decoder.decode(chunk, { stream: true }));
        for (let i = 0; i < events.length; i++) {
          const data = events[i]!;
          if (data === '[DONE]') {
            state.done = true;
            break;
          }
          const delta = this.readChunk(data, state);
          if (delta) {
            state.content += delta;
            state.yielded = true;
            deadline.pause();
            yield { type: 'delta', content: delta };
            deadline.resume();
          }
        }
        events.length = 0;
      }
    } catch (e) {
      // After [DONE] everything the consumer needs is in hand; a broken tail changes nothing.
      if (!state.done) throw e;
    }
  }

  /** Applies one chunk to the state; returns its content delta, if any. */
  private readChunk(data: string, state: StreamState): string | undefined {
    const chunk = asRecord(parseJson(data));
    if (!chunk) throw invalidResponse();
    if (chunk.error !== undefined) {
      this.logger.warn({ op: 'chat.stream', detail: truncate(data) }, 'upstream sent an error inside the stream');
      throw new DomainError('upstream_error', msg.brokenStream);
    }
    // Servers with continuous usage stats send usage on every chunk: the last one wins.
    const usage = asRecord(chunk.usage);
    if (usage) state.usage = usage;
    const choice = Array.isArray(chunk.choices) ? asRecord(chunk.choices[0]) : undefined;
    if (!choice) return undefined;
    if (choice.finish_reason !== null && choice.finish_reason !== undefined) state.finishReason = mapFinishReason(choice.finish_reason);
    const content = asRecord(choice.delta)?.content;
    return typeof content === 'string' && content.length > 0 ? content : undefined;
  }

  /** POSTs with failover and returns the parsed JSON body of the first 2xx answer. */
  private async postJson(path: string, payload: unknown, signal: AbortSignal, op: string): Promise<Record<string, unknown>> {
    if (signal.aborted) throw abortReason(signal);
    const body = JSON.stringify(payload);
    let last: DomainError | undefined;
    for (const up of this.order()) {
      const deadline = new Deadline(signal, this.timeoutMs);
      try {
        const res = await this.open(up, path, body, deadline, op, this.jsonHeaders);
        let text: string;
        try {
          text = await res.body.text();
        } catch (e) {
          throw this.translate(e, deadline, up, op);
        }
        // Arrays are let through for the bare-array rerank answer; callers check shapes.
        const data = parseJson(text);
        if (data === null || typeof data !== 'object') {
          this.logger.warn({ upstream: up.label, op, detail: truncate(text) }, 'upstream answered with something that is not JSON');
          throw invalidResponse();
        }
        return data as Record<string, unknown>;
      } catch (e) {
        if (e instanceof Retryable) {
          last = e.error;
          continue;
        }
        throw e;
      } finally {
        deadline.dispose();
      }
    }
    throw last ?? new DomainError('upstream_error', msg.unreachable);
  }

  /**
   * Sends one request to one upstream and returns its 2xx response with the body unread.
   * Throws Retryable for what the next base URL may not suffer (connection failures, 5xx, 429),
   * a DomainError for the rest, or the signal's reason on abort.
   */
  private async open(up: Upstream, path: string, body: string, deadline: Deadline, op: string, headers: Record<string, string>): Promise<ResponseData> {
    let res: ResponseData;
    try {
      res = await up.pool.request({ method: 'POST', path: up.prefix + path, headers, body, signal: deadline.signal });
    } catch (e) {
      throw this.translate(e, deadline, up, op);
    }
    const status = res.statusCode;
    if (status >= 200 && status < 300) return res;

    const detail = await readErrorBody(res);
    this.logger.warn({ upstream: up.label, op, status, detail }, 'upstream answered with an error status');
    if (deadline.callerAborted || deadline.expired) throw this.translate(undefined, deadline, up, op);
    if (status >= 500 || status === 429) throw new Retryable(new DomainError('upstream_error', msg.status(status)));
    if (status === 400 && CONTEXT_LENGTH_RE.test(detail)) {
      throw new DomainError('context_length_exceeded', msg.contextLength, { param: 'messages' });
    }
    throw new DomainError('upstream_error', msg.status(status));
  }

  /** Maps a transport error to what the caller should see, logging the details. */
  private translate(e: unknown, deadline: Deadline, up: Upstream, op: string): unknown {
    if (deadline.callerAborted) return deadline.callerReason();
    if (deadline.expired) {
      this.logger.warn({ upstream: up.label, op, timeoutMs: this.timeoutMs }, 'upstream did not answer in time');
      return new DomainError('upstream_timeout', msg.timeout);
    }
    if (e instanceof DomainError || e instanceof Retryable) return e;
    const code = (e as { code?: unknown })?.code;
    // Transport errors carry a code (ECONNRESET, UND_ERR_SOCKET...); anything else is a bug here,
    // and dressing it up as an upstream failure would hide it.
    if (typeof code !== 'string') return e;
    this.logger.warn({ upstream: up.label, op, err: { code, message: (e as Error)?.message } }, 'upstream request failed');
    if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') {
      return new DomainError('upstream_timeout', msg.timeout);
    }
    if (code === 'UND_ERR_CONNECT_TIMEOUT') return new Retryable(new DomainError('upstream_timeout', msg.timeout));
    // Refused, reset, closed before or during the response, DNS failures: another server may do better.
    return new Retryable(new DomainError('upstream_error', msg.unreachable));
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

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function truncate(text: string): string {
  return text.length > 500 ? `${text.slice(0, 500)}…` : text;
}

/** Reads at most ERROR_BODY_LIMIT characters of an error answer, for logs; never throws. */
async function readErrorBody(res: ResponseData): Promise<string> {
  let text = '';
  const decoder = new TextDecoder();
  try {
    for await (const chunk of res.body as AsyncIterable<Buffer>) {
      text += decoder.decode(chunk, { stream: true });
      if (text.length > ERROR_BODY_LIMIT) break; // leaving the loop destroys the body
    }
  } catch {
    // The status is what matters; a body that breaks off is no further news.
  }
  return truncate(text);
}
