// The OpenAI engine's plumbing: one upstream (base URL) with its pool and circuit breaker, a call's
// deadline and its attempts on successive base URLs, the fixed messages clients see, and helpers
// that read upstream answers defensively. ./openai-engine.ts speaks the API over these.
import type { Dispatcher, Pool } from 'undici';
import { DomainError } from '../../errors.js';
import { CALL_DEADLINE_MESSAGE, type FinishReason } from '../engine.js';
import type { BreakerSnapshot, CircuitBreaker } from './circuit-breaker.js';

export interface OpenAIEngineLogger {
  warn(obj: object, msg?: string): void;
  info?(obj: object, msg?: string): void;
}

export interface OpenAIEngineOptions {
  logger?: OpenAIEngineLogger;
  env?: NodeJS.ProcessEnv;
}

export interface Upstream {
  pool: Pool;
  /** Path of the base URL without its trailing slash, e.g. "/v1". */
  prefix: string;
  /** Origin and path, for logs only (URL.origin drops any user:password). */
  label: string;
  /** Its place in base_urls: how /readyz names it (addresses stay in the logs). */
  index: number;
  breaker: CircuitBreaker;
}

/** A base URL's circuit breaker as /readyz shows it. */
export interface UpstreamHealth extends BreakerSnapshot {
  /** The base URL's index in the model's engine.base_urls (0 for base_url). */
  index: number;
}

export type ResponseData = Dispatcher.ResponseData;

/**
 * A failure another base URL may not have: the caller tries the next one, or throws `error` when
 * none is left. `ejects`: the failure counts towards the URL's circuit breaker (the URL is broken,
 * not merely busy or refusing this request).
 */
export class Retryable {
  constructor(
    readonly error: DomainError,
    readonly ejects: boolean,
  ) {}
}

/**
 * The whole call's deadline (engine.max_duration_ms), across every base URL it tries; never paused.
 * Attempts run one after the other, so the one in progress registers itself (`attach`) to hear the
 * expiry: a method call rather than an AbortSignal, which would cost an EventTarget per call.
 */
export class CallDeadline {
  private readonly timer: NodeJS.Timeout;
  private attempt: Attempt | undefined;
  expired = false;
  /** Why the call was ended, once it has expired. */
  reason: DOMException | undefined;

  constructor(ms: number) {
    this.timer = setTimeout(callExpired, ms, this);
  }

  /** `attempt` hears the expiry (the attempt in progress); undefined detaches it. */
  attach(attempt: Attempt | undefined): void {
    this.attempt = attempt;
  }

  /** The timer fired. */
  expire(): void {
    this.expired = true;
    this.reason = new DOMException('call deadline', 'TimeoutError');
    this.attempt?.abort(this.reason);
  }

  dispose(): void {
    clearTimeout(this.timer);
  }
}

// Timer callbacks at module level, given their object as the timer's argument: no closure per call
// (and none of the names tsx gives every closure, a defineProperty each).
function callExpired(call: CallDeadline): void {
  call.expire();
}
function attemptTimerFired(attempt: Attempt): void {
  attempt.timerFired();
}

/**
 * One attempt's timers and abort wiring. The caller's signal, the call's deadline and the
 * attempt's own timer all abort the upstream request: the one requestWhole sends (through the
 * abort hook it registers with `onAbort`) or, for a stream, the one given `signal`. The timer
 * first covers the wait for the response head (first byte), then each gap between events; it is
 * paused while the consumer holds an event, since a slow reader is not a slow upstream. (undici's
 * own headersTimeout/bodyTimeout tick at about one second, too coarse for short timeouts.) The
 * caller's signal is listened to with the attempt itself (`handleEvent`), and an AbortController
 * is made only for a request that needs a signal.
 */
export class Attempt {
  private ctl: AbortController | undefined;
  private timer: NodeJS.Timeout;
  private paused = false;
  private request: Abortable | undefined;
  /** Why the attempt's request was aborted, once it was (the first reason wins). */
  private reason: unknown;
  aborted = false;
  /** The response head arrived: the timer now measures gaps between events. */
  headSeen = false;
  expired: 'first_byte' | 'idle' | undefined;

  constructor(
    private readonly caller: AbortSignal,
    private readonly call: CallDeadline,
    firstByteMs: number,
    private readonly idleMs: number,
  ) {
    this.timer = setTimeout(attemptTimerFired, firstByteMs, this);
    caller.addEventListener('abort', this);
    call.attach(this);
    if (call.expired) this.abort(call.reason);
  }

  /** An AbortSignal for the request of this attempt (made on first use, aborted with the attempt). */
  get signal(): AbortSignal {
    if (!this.ctl) {
      this.ctl = new AbortController();
      if (this.aborted) this.ctl.abort(this.reason);
    }
    return this.ctl.signal;
  }

  /**
   * Registers the request in progress, to be aborted with the attempt (at once when the attempt
   * was aborted already); undefined unregisters it.
   */
  watch(request: Abortable | undefined): void {
    this.request = request;
    if (request && this.aborted) request.abort(this.reason);
  }

  get callerAborted(): boolean {
    return this.caller.aborted;
  }

  get callExpired(): boolean {
    return this.call.expired;
  }

  callerReason(): unknown {
    return abortReason(this.caller);
  }

  /** Ends the attempt's request with `reason`. */
  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    this.request?.abort(reason);
    this.ctl?.abort(reason);
  }

  /** The caller's signal aborted (the attempt listens to it as an EventListener object). */
  handleEvent(): void {
    this.abort(this.caller.reason);
  }

  /** The attempt's timer fired. */
  timerFired(): void {
    if (this.paused) return;
    this.expired = this.headSeen ? 'idle' : 'first_byte';
    this.abort(new DOMException('upstream timeout', 'TimeoutError'));
  }

  /** The response head arrived: from now on the timer is the idle timeout. */
  headReceived(): void {
    this.headSeen = true;
    clearTimeout(this.timer);
    this.timer = setTimeout(attemptTimerFired, this.idleMs, this);
  }

  /** An event arrived (not a comment, not a keep-alive): the next gap starts now. */
  progress(): void {
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
    this.caller.removeEventListener('abort', this);
    this.call.attach(undefined);
    this.request = undefined;
  }
}

export const MODERATION_KEYS = ['hate', 'harassment', 'self-harm', 'sexual', 'violence'] as const;
export const FINISH_REASONS: ReadonlySet<string> = new Set<FinishReason>(['stop', 'length', 'content_filter', 'tool_calls']);
/** Upstream error bodies are read only to be logged or to spot a context-length complaint. */
export const ERROR_BODY_LIMIT = 16 * 1024;
/**
 * The most of an answer read whole (chat, embeddings, rerank, moderation) this server takes: far
 * beyond any real one (100 embeddings of 4,096 dimensions are about 8 MB), and an upstream that
 * sends more has gone wrong (502), rather than growing this process without bound.
 */
export const ANSWER_BODY_LIMIT = 64 * 1024 * 1024;
/**
 * The most characters one event of a stream may have: far beyond any chunk (a token or a few,
 * with log-probabilities a few KB), and an upstream that sends more has gone wrong (its event is
 * refused as garbage), rather than growing this process with one event without bound.
 */
export const MAX_EVENT_CHARS = 4 * 1024 * 1024;
/**
 * An upstream's refusal of an input too long for the model: vLLM's and SGLang's "maximum context
 * length"/"context length", llama.cpp's `exceed_context_size_error` ("exceeds the available context
 * size"), TGI's "`inputs` tokens + `max_new_tokens` must be <= N", TEI's "`inputs` must have less
 * than N tokens", Ollama's and others' "too many tokens", "prompt is too long".
 */
export const CONTEXT_LENGTH_RE =
  /context[ _-]?(length|window|size)|maximum context|exceed_context_size|too many tokens|prompt is too long|`inputs` tokens \+ `max_new_tokens` must be <=|must have less than \d+ tokens/i;
/** llama.cpp's server on an embedding or rerank input longer than its batch (a 500, yet the input's fault). */
export const TOO_LARGE_TO_PROCESS_RE = /input \(\d+ tokens\) is too large to process/i;
export const noopLogger: OpenAIEngineLogger = { warn() {} };
/** An upstream's Retry-After is passed on, within reason: at least 1 s, at most 10 min. */
export const MAX_RETRY_AFTER_S = 600;

export const msg = {
  unreachable: "The model's upstream server could not be reached.",
  timeout: "The model's upstream server did not answer in time.",
  deadline: CALL_DEADLINE_MESSAGE,
  invalid: "The model's upstream server sent an invalid response.",
  tooLarge: `The model's upstream server sent an answer larger than ${ANSWER_BODY_LIMIT / 1024 / 1024} MB.`,
  eventTooLarge: `The model's upstream server sent a stream event larger than ${MAX_EVENT_CHARS / 1024 / 1024} MB.`,
  brokenAnswer: "The model's upstream server broke off its answer.",
  brokenStream: "The model's upstream server broke off the stream.",
  streamError: "The model's upstream server sent an error in place of the rest of the stream.",
  erred: "The model's upstream server answered with an error.",
  aborted: "The model's upstream server gave up on the answer before it was finished.",
  overloaded: "The model's upstream servers are busy; retry after the time given in Retry-After.",
  ejected: "The model's upstream servers are failing and are being given time to recover; retry after the time given in Retry-After.",
  status: (status: number) => `The model's upstream server failed to answer (HTTP ${status}).`,
  rejected: (status: number, reason: string | null) =>
    `The model's upstream server refused the request (HTTP ${status})${reason ? `: ${reason}${/[.!?…]$/.test(reason) ? '' : '.'}` : '.'} Change the request; sending it again as it is will be refused again.`,
  contextLength: "The request exceeds the model's context length.",
  inputTooLong: 'An input is longer than the model takes: its upstream server refused it as too long. Send a shorter input.',
  refusedTooLarge:
    "The model's upstream server refused the request as too large (too many inputs, or inputs too long); send fewer or shorter inputs.",
};

export function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('This operation was aborted', 'AbortError');
}

/**
 * A choice's finish reason as tollgate reports it. 'abort' (vLLM's, for a request it gave up, as
 * on shutdown) is no ending: the answer broke off, and that is thrown (a failure another base URL
 * may not have, counting nothing towards ejection). `toolCalls`: the choice called tools. A value
 * not known here reads as 'stop' and is told to `unknown` (null, undefined and "" are no value).
 */
export function mapFinishReason(value: unknown, toolCalls: boolean, unknown?: (value: unknown) => void): FinishReason {
  if (typeof value === 'string' && FINISH_REASONS.has(value)) return value as FinishReason;
  // 'function_call' is the deprecated functions API's name for the same ending.
  if (value === 'function_call') return 'tool_calls';
  if (value === 'abort') throw new Retryable(new DomainError('upstream_error', msg.aborted), false);
  // TGI's end of the sequence.
  if (value === 'eos_token') return toolCalls ? 'tool_calls' : 'stop';
  if (value !== null && value !== undefined && value !== '') unknown?.(value);
  return 'stop';
}

/**
 * A token count an upstream reported, or undefined for none. 0 is none too: Ollama reports 0 for a
 * prompt it had cached, and no prompt or delivered text costs 0 (an empty answer is counted 0 all
 * the same).
 */
export function tokenCount(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isInteger(value) && value > 0 ? value : undefined;
}

export function sigmoid(x: number): number {
  return 1 / (1 + Math.exp(-x));
}

export function invalidResponse(): DomainError {
  return new DomainError('upstream_error', msg.invalid);
}

export function asRecord(value: unknown): Record<string, unknown> | undefined {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

/** Some servers answer base64 whatever encoding_format asked for. */
const BASE64_RE = /^[A-Za-z0-9+/]*={0,2}$/;

export function decodeEmbedding(value: unknown): number[] | undefined {
  if (Array.isArray(value)) return value as number[];
  if (typeof value === 'string') {
    // Node's decoder skips what is not base64: such a string is a broken answer, not floats.
    if (value.length % 4 !== 0 || !BASE64_RE.test(value)) return undefined;
    const buf = Buffer.from(value, 'base64');
    if (buf.byteLength % 4 !== 0) return undefined;
    return Array.from(new Float32Array(buf.buffer, buf.byteOffset, buf.byteLength >> 2));
  }
  return undefined;
}

/** Seconds from an upstream's Retry-After (delta-seconds or an HTTP date), clamped; 1 when absent or unreadable. */
export function retryAfterSeconds(header: string | string[] | undefined): number {
  const value = (Array.isArray(header) ? header[0] : header)?.trim();
  let seconds = Number.NaN;
  if (value && /^\d+$/.test(value)) seconds = Number(value);
  else if (value) seconds = Math.ceil((Date.parse(value) - Date.now()) / 1000);
  if (!Number.isFinite(seconds)) return 1;
  return Math.min(MAX_RETRY_AFTER_S, Math.max(1, seconds));
}

/**
 * The error to report when no base URL is left: an overloaded answer wins over the others (its
 * Retry-After is the advice worth passing on), the soonest Retry-After among them; else the latest.
 */
export function worthReporting(previous: DomainError | undefined, next: DomainError): DomainError {
  if (previous?.code !== 'model_overloaded') return next;
  if (next.code !== 'model_overloaded') return previous;
  return (next.retryAfter ?? 1) < (previous.retryAfter ?? 1) ? next : previous;
}

/** As undici's text(): a leading UTF-8 byte-order mark is not part of the text. */
export function withoutBom(body: Buffer): Buffer {
  return body.length >= 3 && body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf ? body.subarray(3) : body;
}

export interface StreamState {
  yielded: boolean;
  /** Everything streamed that costs output tokens (reasoning, content, tool calls), for usage the upstream leaves out. */
  content: string;
  finishReason: FinishReason | undefined;
  /** The indexes of the choices the upstream has ended (with a finish_reason). */
  finished: Set<number>;
  usage: Record<string, unknown> | undefined;
  done: boolean;
}

export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

export function truncate(text: string): string {
  return text.length > 500 ? `${text.slice(0, 500)}…` : text;
}

/** Reads at most ERROR_BODY_LIMIT characters of an error answer, for logs; never throws. */
export async function readErrorBody(res: ResponseData): Promise<string> {
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

/** The request field an input refusal names, by operation. */
function inputParam(op: string): string {
  if (op.startsWith('chat')) return 'messages';
  return op === 'rerank' ? 'documents' : 'input';
}

/**
 * What an upstream's error status becomes: busy (429, 503) and 5xx may be failed over; the rest not.
 * A refusal of the client's input is the client's error: an input too long for the model (400,
 * 413 or 422 saying so: CONTEXT_LENGTH_RE; llama.cpp's 500 TOO_LARGE_TO_PROCESS_RE) is, for a chat,
 * 400 context_length_exceeded and, for embeddings, rerank and moderation, 400 input_too_long (the
 * code tollgate's own count gives); any other 413 (TEI's batch over its limit) 413
 * request_too_large; any other 400 or 422 400 upstream_rejected_request with the upstream's reason
 * (the request is valid to tollgate, not to the model's server: not retried, not failed over);
 * other 4xx (401, 403, 404) the upstream's failure (502), its set-up being the operator's.
 */
export function statusError(
  status: number,
  detail: string,
  retryAfter: string | string[] | undefined,
  op: string,
): DomainError | Retryable {
  // Busy, not broken: passed on with its back-off once no other base URL can take the call.
  if (status === 429 || status === 503) {
    return new Retryable(new DomainError('model_overloaded', msg.overloaded, { retryAfter: retryAfterSeconds(retryAfter) }), false);
  }
  if (
    ((status === 400 || status === 413 || status === 422) && CONTEXT_LENGTH_RE.test(detail)) ||
    (status === 500 && TOO_LARGE_TO_PROCESS_RE.test(detail))
  ) {
    return op.startsWith('chat')
      ? new DomainError('context_length_exceeded', msg.contextLength, { param: inputParam(op) })
      : new DomainError('input_too_long', msg.inputTooLong, { param: inputParam(op) });
  }
  // TEI answers 424 (Failed Dependency) when its model failed to run the input: a server error, as a 5xx.
  if (status >= 500 || status === 424) return new Retryable(new DomainError('upstream_error', msg.status(status)), false);
  if (status === 413) return new DomainError('request_too_large', msg.refusedTooLarge, { param: inputParam(op) });
  // The upstream found the request itself invalid (vLLM's 400 for a JSON schema its grammar
  // engine cannot take, a value out of its range): the client's to change, with the upstream's
  // reason. A 502 here had the SDKs retry it (the openai SDK 3 times, LangChain 7 over 110 s).
  if (status === 400 || status === 422) return new DomainError('upstream_rejected_request', msg.rejected(status, upstreamReason(detail)));
  // 401, 403, 404 (Ollama's model not pulled)…: how the upstream is set up, the operator's to fix.
  return new DomainError('upstream_error', msg.status(status));
}

/** The longest part of an upstream's reason passed on to the client. */
const REASON_CHARS = 300;

/**
 * The reason in an upstream's error body, on one line and cut to REASON_CHARS: OpenAI's and
 * vLLM's `error.message`, `message`, FastAPI's `detail` (a string, or a list of `{msg}`), `error`
 * as a string (llama.cpp, Ollama), or a short plain-text body; null when there is none.
 */
export function upstreamReason(detail: string): string | null {
  let text: unknown = null;
  try {
    const body = JSON.parse(detail) as Record<string, unknown>;
    const error = body?.error;
    const detailField = body?.detail;
    text =
      (error && typeof error === 'object' ? (error as Record<string, unknown>).message : error) ??
      body?.message ??
      (Array.isArray(detailField) ? (detailField[0] as Record<string, unknown> | undefined)?.msg : detailField);
  } catch {
    // Not JSON: a short text body is its own reason; an HTML error page is not.
    text = detail.trimStart().startsWith('<') ? null : detail;
  }
  if (typeof text !== 'string') return null;
  const line = text.replace(/\s+/g, ' ').trim();
  if (!line) return null;
  return line.length > REASON_CHARS ? `${line.slice(0, REASON_CHARS - 1)}…` : line;
}

/** A header's value among raw headers (names and values alternating), by its lower-case name; the last, if sent twice. */
export function headerValue(rawHeaders: readonly Buffer[], name: string): string | undefined {
  let value: string | undefined;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    if (rawHeaders[i]!.toString('latin1').toLowerCase() === name) value = rawHeaders[i + 1]!.toString('latin1');
  }
  return value;
}

/** An answer read whole by requestWhole. */
export interface WholeAnswer {
  statusCode: number;
  /** The Retry-After header, if any. */
  retryAfter: string | undefined;
  /** Where a 3xx answer points (its Location header), for the log: upstreams are not followed. */
  location?: string;
  /**
   * A 2xx answer's raw headers (names and values alternating), kept unread: the log of an answer
   * that is not JSON looks up its Content-Encoding there (headerValue), the common answer pays nothing.
   */
  rawHeaders?: Buffer[];
  /** The body as text; of an error answer (not 2xx), at most ERROR_BODY_LIMIT bytes, cut to 500 characters. */
  text: string;
}

/**
 * Sends one request and reads its answer whole, through undici's dispatcher with a handler that
 * keeps the body's bytes: no stream, async resource or header object per response, as `request()`
 * makes for a body that is read whole anyway (a third of an upstream call's cost here). The
 * attempt aborts the request (with its reason, which the promise rejects with, as `request()`
 * does for its signal's); transport errors reject with undici's errors. The attempt hears when the
 * response head arrives (`headReceived`). An error answer's body is read up to ERROR_BODY_LIMIT
 * (then the request is aborted) and a failure while reading it keeps what arrived, as
 * readErrorBody does.
 */
export function requestWhole(
  pool: Dispatcher,
  opts: { path: string; headers: Record<string, string>; body: string; attempt: Attempt },
): Promise<WholeAnswer> {
  return new Promise<WholeAnswer>((resolve, reject) => {
    const handler = new WholeHandler(opts.attempt, resolve, reject);
    opts.attempt.watch(handler);
    if (handler.done) return;
    handler.dispatched = true;
    pool.dispatch({ method: 'POST', path: opts.path, headers: opts.headers, body: opts.body }, handler);
  });
}

/** A request an attempt can abort. */
export interface Abortable {
  abort(reason: unknown): void;
}

/** requestWhole's dispatch handler: one object per request, its callbacks on the prototype. */
class WholeHandler implements Dispatcher.DispatchHandler, Abortable {
  private abortRequest: ((reason: Error) => void) | undefined;
  private reason: unknown;
  private aborted = false;
  private statusCode = 0;
  private retryAfter: string | undefined;
  private location: string | undefined;
  private rawHeaders: Buffer[] | undefined;
  private chunks: Buffer[] = [];
  private size = 0;
  done = false;
  dispatched = false;

  constructor(
    private readonly attempt: Attempt,
    private readonly resolve: (answer: WholeAnswer) => void,
    private readonly reject: (err: unknown) => void,
  ) {}

  abort(reason: unknown): void {
    if (this.aborted || this.done) return;
    this.aborted = true;
    this.reason = reason;
    if (this.abortRequest) this.abortRequest(reason as Error);
    else if (!this.dispatched) {
      // Aborted before it was sent: refused at once, as request() does for an aborted signal. (A
      // request dispatched but not yet connected is aborted in onConnect.)
      this.finish();
      this.reject(reason);
    }
  }

  private finish(): void {
    this.done = true;
    this.attempt.watch(undefined);
  }

  private errorText(): string {
    return truncate(Buffer.concat(this.chunks).toString('utf8'));
  }

  onConnect(abortRequest: (reason: Error) => void): void {
    if (this.aborted) abortRequest(this.reason as Error);
    else this.abortRequest = abortRequest;
  }

  onHeaders(status: number, rawHeaders: Buffer[]): boolean {
    if (status < 200) return true; // informational: the answer is still to come
    this.statusCode = status;
    if (status >= 300) {
      this.retryAfter = headerValue(rawHeaders, 'retry-after');
      const location = headerValue(rawHeaders, 'location');
      if (location !== undefined) this.location = truncate(location);
    } else {
      this.rawHeaders = rawHeaders;
    }
    this.attempt.headReceived();
    return true;
  }

  onData(chunk: Buffer): boolean {
    if (this.done) return true;
    this.chunks.push(chunk);
    this.size += chunk.length;
    if (this.statusCode >= 300 && this.size > ERROR_BODY_LIMIT) {
      // Enough of an error answer to log: stop reading it.
      this.finish();
      this.resolve(this.answer(this.errorText()));
      this.abortRequest?.(new Error('error answer read far enough'));
    } else if (this.size > ANSWER_BODY_LIMIT) {
      this.finish();
      this.chunks = [];
      this.reject(new DomainError('upstream_error', msg.tooLarge));
      this.abortRequest?.(new Error('answer too large'));
    }
    return true;
  }

  onComplete(): void {
    if (this.done) return;
    this.finish();
    const { chunks, statusCode } = this;
    const body = withoutBom(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks));
    this.chunks = [];
    let text: string;
    try {
      text = statusCode >= 300 ? truncate(body.toString('utf8')) : body.toString('utf8');
    } catch {
      // A body no string can hold (the limit above keeps far below it): settled all the same.
      this.reject(invalidResponse());
      return;
    }
    this.resolve(this.answer(text));
  }

  private answer(text: string): WholeAnswer {
    const answer: WholeAnswer = { statusCode: this.statusCode, retryAfter: this.retryAfter, text };
    if (this.location !== undefined) answer.location = this.location;
    if (this.rawHeaders !== undefined) answer.rawHeaders = this.rawHeaders;
    return answer;
  }

  onError(err: Error): void {
    if (this.done) return;
    this.finish();
    // An error answer that breaks off is still that answer; anything else is the request's failure.
    if (this.statusCode >= 300) this.resolve(this.answer(this.errorText()));
    else this.reject(err);
  }
}
