// The inference use cases shared by both doors (GraphQL and /v1 compat): validate a request against
// the specification's rules and the catalog, run it on the model's engine, shape the result.
// Billing and rate limiting wrap these calls through the `Metering` hooks (./inference-types.ts).
import { newId } from '../ids.js';
import type { ChatModelConfig } from '../catalog/model.js';
import type { Catalog } from '../catalog/catalog.js';
import { DomainError } from '../errors.js';
import { countWithin, countWords, PIECE_CHARS, provablyOver } from './bounded-count.js';
import {
  type ChatOptions,
  chatMessages,
  chatOptions,
  checkUser,
  completionAtMost,
  logprobsWithin,
  outputText,
  refuseUnsupported,
  withinMaxTokens,
} from './chat-options.js';
import type { ContentFilter } from './content-filter.js';
import { checkDimensions, shorten } from './embedding-dimensions.js';
import { countTextTokensWithin, truncateTextTokens } from './tokenizer.js';
import {
  CALL_DEADLINE_MESSAGE,
  type ChatMessage,
  DEFAULT_MAX_DURATION_MS,
  type Engine,
  type EngineChatRequest,
  STREAM_DEADLINE_GRACE_MS,
  type EngineStreamEvent,
  type FinishReason,
  type ToolDefinition,
  type Usage,
} from './engine.js';
import {
  type CallOutcome,
  type Caller,
  type ChatChunk,
  type ChatCompletion,
  type ChatInput,
  DEFAULT_MAX_CHOICES,
  type Embeddings,
  type EmbeddingsInput,
  type EngineRegistry,
  LIMITS,
  MODERATION_CATEGORIES,
  type MeterRequest,
  type MeterTicket,
  type Metering,
  type ModerationInput,
  type ModerationResult,
  type RerankInput,
  type RerankResult,
  unmetered,
} from './inference-types.js';

export * from './inference-types.js';

/** Inputs up to this many characters are counted whole, exactly as the engine counts them. */
const EXACT_COUNT_CHARS = 4 * PIECE_CHARS;
/** Chat requests with more messages than this are counted in pieces too. */
const EXACT_COUNT_MESSAGES = 256;

/**
 * The prompt tokens of `messages`, or any number above `limit` when they cannot fit: exact for
 * ordinary requests; for long ones, the framing (the messages without their text) plus the text
 * counted in pieces, stopping past the limit (./bounded-count.ts).
 */
export function countPrompt(engine: Engine, messages: ChatMessage[], limit: number, tools?: ToolDefinition[]): number | Promise<number> {
  let chars = 0;
  for (const m of messages) chars += m.content.length;
  if (chars <= EXACT_COUNT_CHARS && messages.length <= EXACT_COUNT_MESSAGES) return engine.countChatTokens(messages, tools);
  return countLongPrompt(engine, messages, limit, chars, tools);
}

async function countLongPrompt(
  engine: Engine,
  messages: ChatMessage[],
  limit: number,
  chars: number,
  tools?: ToolDefinition[],
): Promise<number> {
  // Every chat template spends at least one token on each message.
  if (messages.length > limit || provablyOver(chars, limit)) return limit + 1;
  // More words than the limit: over it, before any text is tokenized (the framing's below included).
  if (
    countWords(
      messages.map((m) => m.content),
      limit,
    ) > limit
  )
    return limit + 1;
  // The framing includes the tool definitions and the tool calls (counted whole): the messages
  // rendered with the start of their content, less that start's own tokens. Not with no content:
  // a template may drop an empty turn whole (ChatML in node-llama-cpp does), which counted a
  // long conversation's framing at a few tokens instead of about 7 a turn and billed half of a
  // prompt of many short messages.
  const starts = messages.map((m) => m.content.slice(0, FRAMING_SAMPLE_CHARS));
  const framing = Math.max(
    0,
    (await engine.countChatTokens(
      messages.map((m, i) => ({ ...m, content: starts[i]! })),
      tools,
    )) - (await Promise.all(starts.map((start) => (start ? engine.countTokens(start) : 0)))).reduce((a, b) => a + b, 0),
  );
  return countWithin(
    messages.map((m) => m.content),
    limit,
    (piece) => engine.countTokens(piece),
    framing,
  );
}

/** A model's call deadline (engine.max_duration_ms). */
const callDeadlineMs = (model: ChatModelConfig): number => model.engine.max_duration_ms ?? DEFAULT_MAX_DURATION_MS;

/** How much of each message's content countLongPrompt renders to measure the chat template's framing. */
const FRAMING_SAMPLE_CHARS = 16;

/**
 * The tokens of one input text as the engine counts it, or any number above `limit` when it cannot
 * fit (as countPrompt). `framing`: the tokens the engine's count adds to any text (framingOf), which
 * the text has once however many pieces it is counted in.
 */
async function countInput(engine: Engine, text: string, limit: number, framing = 0): Promise<number> {
  if (text.length <= EXACT_COUNT_CHARS) return engine.countTokens(text);
  return countWithin([text], limit, async (piece) => (await engine.countTokens(piece)) - framing, framing);
}

/**
 * The tokens an engine's model reads around any text, which its count of a text includes: its count
 * of the empty text (an in-process embedding model's [CLS] and [SEP], a reranker's framing of a
 * query-document pair; none for a forwarded model). With it, admission counts what the engine
 * reads and bills: a long text counted in pieces has them once, a rerank pair once.
 */
const framingOf = async (engine: Engine): Promise<number> => Math.max(0, await engine.countTokens(''));

/**
 * A streamed chunk longer than this is counted with the tokenizer rather than taken for one token:
 * real servers send a token, or a few, a chunk; text this long in one is many tokens.
 */
const MULTI_TOKEN_CHUNK_CHARS = 64;
/** How many o200k tokens a long chunk may hold per token of the model's own (hex, code, other scripts). */
const TOKENIZER_SLACK = 4;

const zeroUsage = (promptTokens = 0): Usage => ({ promptTokens, completionTokens: 0, totalTokens: promptTokens });

/** A count an engine reported, kept within [0, max] (anything that is not a count is taken as 0). */
const within = (n: number, max: number) => (Number.isFinite(n) && n > 0 ? Math.min(Math.floor(n), max) : 0);

/** Whether an engine reported a count: 0 is none (Ollama reports 0 for a prompt it had cached). */
const isCount = (n: number) => Number.isFinite(n) && n >= 1;

/**
 * Prompt tokens an upstream may report beyond the admission count for its model's own chat
 * template (Llama 3's adds a system header of about 25 tokens, a tool-calling template hundreds),
 * besides PROMPT_SLACK times that count for its own tokenizer.
 */
const TEMPLATE_TOKENS = 1024;
/** How many times the admission's o200k count a model's own tokenizer may read in a prompt. */
const PROMPT_SLACK = 4;

/**
 * A chat call's usage as it is reported, billed and counted by the rate limiter: the engine's
 * figures clamped to what was possible and to what reached the client. Completion tokens: at
 * most `max_tokens` (the ticket's, every choice together), and at most the bytes of text
 * delivered plus one per choice (every token but the end-of-sequence one decodes to at least a
 * byte), so an upstream claiming output it never sent is not believed. Prompt tokens: the
 * engine's count (a forwarded model's tokenizer and chat template, which the o200k count at
 * admission does not see), up to the room the call's hold has left (the admission count and the
 * output tokens not used: within the hold's tokens, its charge stays within its money whenever
 * output costs at least what input does), and up to PROMPT_SLACK × the admission count +
 * TEMPLATE_TOKENS (an absurd count is not believed); the admission count when it reported none
 * (0). (A completion count of 0 for text delivered is replaced by the text's count before this:
 * billedUsage.)
 */
export function clampChatUsage(
  reported: Usage,
  limits: { promptTokens: number; maxTokens: number; delivered: string; choices?: number },
): Usage {
  // One end-of-sequence token per choice.
  const ends = limits.choices ?? 1;
  const completionTokens = within(
    reported.completionTokens,
    Math.min(limits.maxTokens, Buffer.byteLength(limits.delivered, 'utf8') + ends),
  );
  const room = limits.promptTokens + Math.max(0, limits.maxTokens - completionTokens);
  const plausible = PROMPT_SLACK * limits.promptTokens + TEMPLATE_TOKENS;
  const promptTokens = isCount(reported.promptTokens) ? within(reported.promptTokens, Math.min(room, plausible)) : limits.promptTokens;
  return { promptTokens, completionTokens, totalTokens: promptTokens + completionTokens };
}

/** Input tokens an engine reported for a non-chat call, at most the count admission held for (that count when it reported none). */
const clampInput = (reported: number, counted: number) => (isCount(reported) ? within(reported, counted) : counted);

const responseId = (prefix: string) => newId(prefix, '-');
const now = () => Math.floor(Date.now() / 1000);

function checkRange(value: number | null | undefined, min: number, max: number, param: string) {
  if (value === null || value === undefined) return;
  if (!Number.isFinite(value) || value < min || value > max) {
    throw new DomainError('invalid_value', `'${param}' must be a number from ${min} to ${max}; got ${value}.`, { param });
  }
}

/** What admission weighs for a chat call: the output figures cover every choice (n choices may produce n × max_tokens). */
function chatMeter(
  caller: Caller,
  p: { model: ChatModelConfig; request: EngineChatRequest; promptTokens: number; requestedOutputTokens: number | null },
  endUser: string | null | undefined,
): MeterRequest {
  const { model, request, promptTokens, requestedOutputTokens } = p;
  const choices = request.n ?? 1;
  return { caller, model, promptTokens, requestedOutputTokens, maxOutputTokens: request.maxTokens * choices, choices, endUser };
}

/** A chat call validated and counted (prepareChat): what the engine runs, and the figures admission weighs. */
export interface PreparedChatCall {
  model: ChatModelConfig;
  request: EngineChatRequest;
  engine: Engine;
  promptTokens: number;
  requestedOutputTokens: number | null;
}

export interface InferenceOptions {
  /** The most choices (`n`) a chat call may ask for; default DEFAULT_MAX_CHOICES. */
  maxChoices?: number;
  /**
   * Chat models with `safety` (./content-filter.ts); none: no model is filtered. `screen` gives
   * back the very call it was given (not a promise of it) when it has nothing to do.
   */
  contentFilter?: Pick<ContentFilter, 'screen'>;
}

/** What every chunk of a stream repeats. */
interface ChunkHead {
  id: string;
  created: number;
  model: string;
}

type ChunkChoice = ChatChunk['choices'][number];

/**
 * The call was aborted because its client went away: not by the server, whose own ends carry the
 * reason as a DomainError (shutting down; a key revoked or expired, a session ended, mid-stream).
 */
function clientLeft(signal: AbortSignal): boolean {
  return signal.aborted && !(signal.reason instanceof DomainError);
}

/** One choice's chunk; `logprobs` and `contentFilter` are set only when given. */
function chunkOf(
  head: ChunkHead,
  index: number,
  delta: ChunkChoice['delta'],
  finishReason: FinishReason | null,
  logprobs?: ChunkChoice['logprobs'],
  contentFilter?: ChunkChoice['contentFilter'],
): ChatChunk {
  const choice: ChunkChoice = { index, delta, finishReason };
  if (logprobs !== undefined) choice.logprobs = logprobs;
  if (contentFilter) choice.contentFilter = contentFilter;
  return { id: head.id, object: 'chat.completion.chunk', created: head.created, model: head.model, choices: [choice], usage: null };
}

/** The final chunk: no choices, the usage. */
function usageChunkOf(head: ChunkHead, usage: Usage): ChatChunk {
  return { id: head.id, object: 'chat.completion.chunk', created: head.created, model: head.model, choices: [], usage };
}

/**
 * The output tokens of what each choice delivered (`delivered`: the text of each choice), as the
 * engine counts them, up to just past `limit` (the call's max_tokens, which billing keeps to
 * anyway): in pieces, as the input is (./bounded-count.ts), since an upstream decides its length.
 */
function countOutput(engine: Engine, delivered: readonly string[], limit: number): Promise<number> {
  return countWithin(
    delivered.filter((text) => text.length > 0),
    limit,
    (piece) => engine.countTokens(piece),
  );
}

/**
 * A chat call's usage as billed (clampChatUsage), from what the engine reported; a completion
 * count of 0 (none) for text that was delivered is replaced by the count of that text.
 */
async function billedUsage(
  engine: Engine,
  reported: Usage,
  limits: { promptTokens: number; maxTokens: number; delivered: readonly string[] },
): Promise<Usage> {
  let usage = reported;
  if (!isCount(usage.completionTokens) && limits.delivered.some(Boolean)) {
    const completionTokens = await countOutput(engine, limits.delivered, limits.maxTokens);
    usage = { promptTokens: usage.promptTokens, completionTokens, totalTokens: usage.promptTokens + completionTokens };
  }
  const { promptTokens, maxTokens, delivered } = limits;
  return clampChatUsage(usage, { promptTokens, maxTokens, delivered: delivered.join(''), choices: delivered.length });
}

/** A stream's usage counted from what it delivered (`delivered`: the text of each choice). */
function countDelivered(engine: Engine, delivered: string[], promptTokens: number, maxTokens: number): Promise<Usage> {
  return billedUsage(engine, { promptTokens, completionTokens: 0, totalTokens: promptTokens }, { promptTokens, maxTokens, delivered });
}

/** The request with the ticket's max_tokens; the request itself when they agree (no copy per call). */
function withMaxTokens(request: EngineChatRequest, maxTokens: number): EngineChatRequest {
  return maxTokens === request.maxTokens ? request : { ...request, maxTokens };
}

/** Each choice's share of the output tokens a ticket allows (every choice gets at least one). */
const perChoice = (ticketTokens: number, n: number) => Math.max(1, Math.floor(ticketTokens / n));

export class InferenceService {
  private readonly maxChoices: number;
  private readonly contentFilter: Pick<ContentFilter, 'screen'>;

  constructor(
    private readonly catalog: Catalog,
    private readonly engines: EngineRegistry,
    private readonly metering: Metering = unmetered,
    options: InferenceOptions = {},
  ) {
    this.maxChoices = options.maxChoices ?? DEFAULT_MAX_CHOICES;
    this.contentFilter = options.contentFilter ?? { screen: (_caller, prepared) => prepared };
  }

  /**
   * Runs a non-streamed call between admission and settlement: failures are charged nothing, and
   * so is a call whose client went away before the answer (the engine was stopped and nothing
   * was delivered); the latter is recorded as a disconnect, not as a failure.
   */
  private async metered<T>(
    req: MeterRequest,
    signal: AbortSignal,
    run: (ticket: MeterTicket) => Promise<{ value: T; usage: Usage }>,
  ): Promise<T> {
    const ticket = await this.metering.admit(req);
    let result: { value: T; usage: Usage };
    try {
      result = await run(ticket);
    } catch (err) {
      await ticket.settle(zeroUsage(), clientLeft(signal) ? 'client_disconnected' : 'failed');
      throw err;
    }
    // Charged only if its client is still there, asked as late as the settlement can: one that
    // left while the call was being settled (a slow database) gets nothing and pays nothing, as
    // one that left before the answer. A call the server ended (shutting down) is still answered
    // while its connection stays open, so it is charged as answered.
    await ticket.settle(result.usage, 'completed', () => (clientLeft(signal) ? 'client_disconnected' : null));
    return result.value;
  }

  /**
   * Refuses (429) a caller already known to be over its limits; doors may ask before reading a
   * request. Nothing to wait for (undefined) when the metering decides at once that it may go on.
   */
  precheck(caller: Caller): void | Promise<void> {
    return this.metering.precheck?.(caller);
  }

  /**
   * Runs a call's checks (its input against the specification and the model, tokens counted): a
   * caller already known to be over its limits is refused before any of that work, and an input
   * refused here still counts as a request against the caller's RPM.
   */
  private async screen<T>(caller: Caller, check: () => Promise<T>): Promise<T> {
    const pending = this.metering.precheck?.(caller);
    if (pending) await pending;
    try {
      return await check();
    } catch (err) {
      return this.refused(caller, err);
    }
  }

  /**
   * screen() of a chat call (its validation, token count and the content filter), without a
   * promise when none of them has to wait: the prepared call itself, or a promise of it.
   */
  private screenChat(caller: Caller, input: ChatInput, signal: AbortSignal): PreparedChatCall | Promise<PreparedChatCall> {
    const pending = this.metering.precheck?.(caller);
    if (pending) return pending.then(() => this.checkChat(caller, input, signal));
    return this.checkChat(caller, input, signal);
  }

  private checkChat(caller: Caller, input: ChatInput, signal: AbortSignal): PreparedChatCall | Promise<PreparedChatCall> {
    let screened: PreparedChatCall | Promise<PreparedChatCall>;
    try {
      const prepared = this.prepareChat(input);
      screened =
        prepared instanceof Promise
          ? prepared.then((p) => this.contentFilter.screen(caller, p, signal))
          : this.contentFilter.screen(caller, prepared, signal);
    } catch (err) {
      return this.refused(caller, err);
    }
    return screened instanceof Promise ? screened.catch((err: unknown) => this.refused(caller, err)) : screened;
  }

  /** An input refused by screen() or screenChat() still counts as a request against the caller's RPM. */
  private async refused(caller: Caller, err: unknown): Promise<never> {
    if (err instanceof DomainError && err.status < 500) await this.metering.countRefused?.(caller);
    throw err;
  }

  /**
   * Validates a chat request and resolves what the engine runs: the messages and the effective
   * max_tokens. At once when the engine counts the prompt at once; else a promise.
   */
  prepareChat(input: ChatInput): PreparedChatCall | Promise<PreparedChatCall> {
    const model = this.catalog.require(input.model, 'chat');
    const messages = chatMessages(input.messages);
    const options = chatOptions(input, model, this.maxChoices);
    checkRange(input.temperature, 0, 2, 'temperature');
    checkRange(input.topP, 0, 1, 'top_p');
    checkRange(input.presencePenalty, -2, 2, 'presence_penalty');
    checkRange(input.frequencyPenalty, -2, 2, 'frequency_penalty');
    checkUser(input.user);
    const stop = input.stop ?? undefined;
    if (stop && stop.length > LIMITS.maxStopSequences) {
      throw new DomainError('too_many_stop_sequences', `'stop' takes at most ${LIMITS.maxStopSequences} sequences; got ${stop.length}.`, {
        param: 'stop',
      });
    }
    if (stop?.some((s) => s.length === 0))
      throw new DomainError('invalid_value', "'stop' sequences must not be empty strings.", { param: 'stop' });
    const long = stop?.find((s) => s.length > LIMITS.maxStopLength);
    if (long !== undefined)
      throw new DomainError(
        'invalid_value',
        `'stop' sequences may be at most ${LIMITS.maxStopLength} characters long; got one of ${long.length}.`,
        { param: 'stop' },
      );
    const { max_output_tokens: modelMax, context_window: contextWindow } = model.specifications;
    if (input.maxTokens !== null && input.maxTokens !== undefined) {
      if (!Number.isInteger(input.maxTokens) || input.maxTokens < 1 || input.maxTokens > modelMax) {
        throw new DomainError(
          'invalid_value',
          `'max_tokens' must be an integer from 1 to ${modelMax} (the model's max_output_tokens); got ${input.maxTokens}.`,
          {
            param: 'max_tokens',
          },
        );
      }
    }
    const engine = this.engines.get(model.id);
    const counted = countPrompt(engine, messages, contextWindow - 1, options.tools);
    if (typeof counted === 'number') return this.preparedChat(input, model, engine, messages, options, stop, counted);
    return counted.then((promptTokens) => this.preparedChat(input, model, engine, messages, options, stop, promptTokens));
  }

  /** The rest of prepareChat, once the prompt is counted. */
  private preparedChat(
    input: ChatInput,
    model: ChatModelConfig,
    engine: Engine,
    messages: ChatMessage[],
    options: ChatOptions,
    stop: string[] | undefined,
    promptTokens: number,
  ): PreparedChatCall {
    const { max_output_tokens: modelMax, context_window: contextWindow } = model.specifications;
    if (promptTokens >= contextWindow) {
      // Counting stops once the window is passed: the figure is exact only up to it.
      const taken = `at least ${contextWindow} tokens`;
      throw new DomainError(
        'input_too_long',
        `The messages take ${taken}; the model's context window is ${contextWindow} tokens, output included.`,
        {
          param: 'messages',
        },
      );
    }
    const room = contextWindow - promptTokens;
    let maxTokens: number;
    if (input.maxTokens !== null && input.maxTokens !== undefined) {
      if (input.maxTokens > room) {
        throw new DomainError(
          'context_length_exceeded',
          `The messages take ${promptTokens} tokens and max_tokens asks for ${input.maxTokens}; together they exceed the model's context window of ${contextWindow} tokens.`,
          { param: 'max_tokens' },
        );
      }
      maxTokens = input.maxTokens;
    } else {
      maxTokens = Math.min(modelMax, room);
    }
    const request: EngineChatRequest = {
      messages,
      maxTokens,
      temperature: input.temperature ?? undefined,
      topP: input.topP ?? undefined,
      stop,
      presencePenalty: input.presencePenalty ?? undefined,
      frequencyPenalty: input.frequencyPenalty ?? undefined,
      user: input.user ?? undefined,
      ...options,
    };
    refuseUnsupported(engine, request, model.id);
    // The output figures cover every choice: n choices may produce n times max_tokens.
    const n = options.n ?? 1;
    const requestedOutputTokens = input.maxTokens === null || input.maxTokens === undefined ? null : input.maxTokens * n;
    return { model, request, engine, promptTokens, requestedOutputTokens };
  }

  async createChatCompletion(caller: Caller, input: ChatInput, signal: AbortSignal): Promise<ChatCompletion> {
    const screened = this.screenChat(caller, input, signal);
    const prepared = screened instanceof Promise ? await screened : screened;
    const { model, request, engine, promptTokens } = prepared;
    const n = request.n ?? 1;
    return this.metered(chatMeter(caller, prepared, input.user), signal, async (ticket) => {
      const maxTokens = perChoice(ticket.maxOutputTokens, n);
      const result = await engine.chat(withMaxTokens(request, maxTokens), signal);
      const all = result.choices ?? [result];
      const choices = all.length > n ? all.slice(0, n) : all;
      if (choices.length !== n) throw new DomainError('upstream_error', `The model returned ${choices.length} choices instead of ${n}.`);
      const overran = result.usage.completionTokens > maxTokens * n;
      const delivered: string[] = [];
      const value: ChatCompletion = {
        id: responseId('chatcmpl'),
        object: 'chat.completion',
        created: now(),
        model: model.id,
        choices: choices.map((made, index) => {
          // The engine produced more than max_tokens (an upstream that ignores it): the client gets
          // the first max_tokens of each choice, its reasoning included.
          const choice = overran ? withinMaxTokens(made, maxTokens) : made;
          const { content, finishReason } = choice;
          const toolCalls = choice.toolCalls?.length ? choice.toolCalls : null;
          // The reasoning is output too, billed whether it is relayed or withheld (a content filter's).
          const reasoning = choice.reasoning ?? '';
          // A refusal is output too; with one and no content, content is null (OpenAI's shape).
          const refusal = choice.refusal ?? '';
          delivered.push(reasoning + refusal + (toolCalls ? outputText({ content, toolCalls }) : content));
          const message: ChatCompletion['choices'][number]['message'] = {
            role: 'assistant',
            content: (toolCalls || refusal) && !content ? null : content,
            toolCalls,
          };
          if (reasoning && !choice.reasoningWithheld) message.reasoningContent = reasoning;
          if (refusal) message.refusal = refusal;
          return {
            index,
            message,
            finishReason,
            logprobs: request.logprobs ? (choice.logprobs ?? []) : null,
            contentFilter: choice.contentFilter ?? null,
          };
        }),
        usage: zeroUsage(),
      };
      // An answer that overran is billed for what is left of it, counted (the upstream's figure
      // covers text nobody gets), as a stream cut at max_tokens is.
      const reported = overran ? { ...result.usage, completionTokens: 0, totalTokens: result.usage.promptTokens } : result.usage;
      value.usage = await billedUsage(engine, reported, { promptTokens, maxTokens: maxTokens * n, delivered });
      return { value, usage: value.usage };
    });
  }

  /**
   * A chat completion as chunks. Validation, admission and the engine's acceptance of the call (its
   * `started` event, or its first event) come before the first chunk, so a caller that pulls once
   * can still answer those errors with a proper status; the first chunks (the role of each choice)
   * come before the first token, so the door can send its head at once. At most max_tokens
   * reasoning, content or tool-call chunks are relayed per choice (a chunk carries at least one
   * token; withheld reasoning counts too): beyond that the choice ends with finish reason `length`,
   * and once every choice has, the engine is stopped. The final chunk (no choices) carries the
   * usage; doors decide whether to show it.
   */
  async *chatCompletionStream(caller: Caller, input: ChatInput, signal: AbortSignal): AsyncGenerator<ChatChunk> {
    const prepared = await this.screenChat(caller, input, signal);
    const { model, request, engine, promptTokens } = prepared;
    const n = request.n ?? 1;
    const ticket = await this.metering.admit(chatMeter(caller, prepared, input.user));
    const maxTokens = perChoice(ticket.maxOutputTokens, n);
    const head: ChunkHead = { id: responseId('chatcmpl'), created: now(), model: model.id };
    // What was handed to the client so far, per choice: a stream that does not finish is billed
    // from it, and a stream that delivered none of its answer is billed nothing. Reasoning a content
    // filter withheld is output the model produced: billed with the rest however the stream ends.
    const delivered: string[] = new Array(n).fill('');
    const withheld: string[] = new Array(n).fill('');
    const produced = () => delivered.map((text, i) => withheld[i] + text);
    const chunks: number[] = new Array(n).fill(0);
    const ended: boolean[] = new Array(n).fill(false);
    /** A choice was ended here at max_tokens: the engine's count covers text the client did not get. */
    let cutShort = false;
    // The tokens the engine says it generated for what was delivered, while every piece says so
    // (the in-process engine): a stream cut short is billed at most that.
    let generated = 0;
    let everyPieceCounted = true;
    let settled: { usage: Usage; outcome: CallOutcome } | undefined;
    let failure: unknown;
    const events = engine.chatStream(withMaxTokens(request, maxTokens), signal)[Symbol.asyncIterator]();
    /** What was delivered, billed once, however the stream ends (here, or by the watchdog). */
    const settleDelivered = async (left: boolean): Promise<void> => {
      if (!settled) {
        // Reasoning a content filter withheld counts as delivered: the model produced it for the client.
        const output = produced();
        if (!output.some(Boolean)) settled = { usage: zeroUsage(), outcome: left ? 'client_disconnected' : 'failed' };
        else {
          const counted = await countDelivered(engine, output, promptTokens, maxTokens * n);
          settled = {
            usage: everyPieceCounted ? completionAtMost(counted, generated) : counted,
            outcome: left ? 'client_disconnected' : 'failed_mid_stream',
          };
        }
      }
      await ticket.settle(settled.usage, settled.outcome);
    };
    // The engine's deadline cannot reach a stream its consumer stopped pulling (a client that reads
    // nothing, on a door that waits for it): the generator sits at a yield. Past the deadline and a
    // grace, the call is settled for what was delivered (the client's leaving) and the engine is
    // stopped, before the hold could expire; a consumer that pulls again gets the deadline's error.
    let overdue = false;
    const watchdog = setTimeout(() => {
      overdue = true;
      void events.return?.();
      // A settlement that fails is retried and logged by the settlement itself.
      settleDelivered(true).catch(() => {});
    }, callDeadlineMs(model) + STREAM_DEADLINE_GRACE_MS);
    const pull = async (): Promise<IteratorResult<EngineStreamEvent>> => {
      const next = await events.next();
      if (overdue) throw new DomainError('upstream_timeout', CALL_DEADLINE_MESSAGE);
      return next;
    };
    // The role chunk: with content "" as OpenAI's of a text answer; without content when the model
    // may call tools, as OpenAI's of a call (clients such as the AI SDK open a text part for "").
    const roleDelta: ChunkChoice['delta'] =
      request.tools?.length && request.toolChoice !== 'none' ? { role: 'assistant' } : { role: 'assistant', content: '' };
    try {
      let headSent = false;
      for (let next: IteratorResult<EngineStreamEvent> = await pull(); !next.done; next = await pull()) {
        const event = next.value;
        if (!headSent) {
          headSent = true;
          for (let i = 0; i < n; i++) yield chunkOf(head, i, roleDelta, null);
        }
        if (event.type === 'started') continue;
        if (event.type === 'delta' || event.type === 'reasoning_delta' || event.type === 'tool_call') {
          const c = event.choice ?? 0;
          const piece = event.type === 'tool_call' ? (event.name ?? '') + event.arguments : event.content;
          if (!piece || c < 0 || c >= n || ended[c]) continue;
          if (chunks[c]! >= maxTokens) {
            // This choice went on past max_tokens: it ends there, as a model that stopped would have.
            ended[c] = true;
            cutShort = true;
            yield chunkOf(head, c, {}, 'length');
            if (ended.every(Boolean)) break;
            continue;
          }
          // A chunk is about a token. A long one (an upstream that sends many tokens at once) is
          // weighed by the tokens the o200k tokenizer finds in it, divided by TOKENIZER_SLACK (the
          // model's own tokenizer may need fewer: a compliant upstream must never be cut), and an
          // upstream that goes on past max_tokens is cut inside the chunk that passes it.
          let text = event.type === 'tool_call' ? event.arguments : event.content;
          let full = false;
          if (piece.length <= MULTI_TOKEN_CHUNK_CHARS) chunks[c]!++;
          else {
            const room = maxTokens - chunks[c]!;
            const tokens = countTextTokensWithin(piece, room * TOKENIZER_SLACK);
            const weight = Math.max(1, Math.ceil(tokens / TOKENIZER_SLACK));
            if (weight > room) {
              const kept = truncateTextTokens(piece, room * TOKENIZER_SLACK);
              text = event.type === 'tool_call' ? kept.slice((event.name ?? '').length) : kept;
              full = true;
            }
            chunks[c]! += Math.min(weight, room);
          }
          if (full) cutShort = true;
          if (event.type === 'delta' && event.tokens !== undefined && !full) generated += event.tokens;
          else everyPieceCounted = false;
          if (event.type === 'reasoning_delta' && event.withheld) {
            withheld[c] += text;
          } else if (event.type === 'reasoning_delta') {
            delivered[c] += text;
            yield chunkOf(head, c, { reasoningContent: text }, null);
          } else if (event.type === 'delta' && event.refusal) {
            delivered[c] += text;
            yield chunkOf(head, c, { refusal: text }, null);
          } else if (event.type === 'delta') {
            delivered[c] += text;
            const logprobs = request.logprobs ? (full ? logprobsWithin(event.logprobs, text.length) : event.logprobs) : undefined;
            yield chunkOf(head, c, { content: text }, null, request.logprobs ? (logprobs ?? []) : undefined);
          } else {
            delivered[c] += (event.name ?? '') + text;
            const fn = event.name === undefined ? { arguments: text } : { name: event.name, arguments: text };
            yield chunkOf(
              head,
              c,
              { toolCalls: [{ index: event.index, ...(event.id ? { id: event.id, type: 'function' as const } : {}), function: fn }] },
              null,
            );
          }
          if (full) {
            ended[c] = true;
            yield chunkOf(head, c, {}, 'length');
            if (ended.every(Boolean)) break;
          }
          continue;
        }
        if (event.type === 'choice_finish') {
          if (event.choice >= 0 && event.choice < n && !ended[event.choice]) {
            ended[event.choice] = true;
            yield chunkOf(head, event.choice, {}, event.finishReason, undefined, event.contentFilter);
          }
          continue;
        }
        // As for a plain answer: a count past max_tokens, or of an answer cut here, covers text
        // nobody got; what was sent is counted (cut here, at most the engine's count of it all).
        const overran = event.usage.completionTokens > maxTokens * n;
        const reported = cutShort || overran ? { ...event.usage, completionTokens: 0, totalTokens: event.usage.promptTokens } : event.usage;
        let usage = await billedUsage(engine, reported, { promptTokens, maxTokens: maxTokens * n, delivered: produced() });
        if (cutShort && !overran && isCount(event.usage.completionTokens)) usage = completionAtMost(usage, event.usage.completionTokens);
        settled = { usage, outcome: 'completed' };
        for (let i = 0; i < n; i++) if (!ended[i]) yield chunkOf(head, i, {}, event.finishReason);
        yield usageChunkOf(head, settled.usage);
        return;
      }
      if (overdue) throw new DomainError('upstream_timeout', CALL_DEADLINE_MESSAGE);
      if (ended.every(Boolean)) {
        // The engine went on past max_tokens: stop it (closing the upstream request).
        await events.return?.();
        settled = { usage: await countDelivered(engine, produced(), promptTokens, maxTokens * n), outcome: 'completed' };
        yield usageChunkOf(head, settled.usage);
        return;
      }
      throw new DomainError('upstream_error', 'The model stopped without finishing its answer.');
    } catch (err) {
      failure = err;
      throw err;
    } finally {
      // Runs on normal end, on error and when the consumer stops early (client disconnect).
      clearTimeout(watchdog);
      await events.return?.();
      // Stopped early with the signal aborted: by whom the reason says (the server's ends, a
      // revoked key or a shutdown, are not the client's leaving); without it, by the consumer.
      // Settled by the watchdog already: nothing more.
      if (!overdue) await settleDelivered(signal.aborted ? clientLeft(signal) : failure === undefined);
    }
  }

  async createEmbeddings(caller: Caller, input: EmbeddingsInput, signal: AbortSignal): Promise<Embeddings> {
    const { model, engine, promptTokens, dimensions } = await this.screen(caller, () => this.checkEmbeddings(input));
    const meter: MeterRequest = { caller, model, promptTokens, requestedOutputTokens: null, maxOutputTokens: 0, endUser: input.user };
    return this.metered(meter, signal, async () => {
      const result = await engine.embed(input.input, signal);
      const tokens = clampInput(result.promptTokens, promptTokens);
      const dims = model.specifications.output_dimensions;
      if (result.embeddings.length !== input.input.length || result.embeddings.some((e) => e.length !== dims)) {
        throw new DomainError(
          'upstream_error',
          `The model returned embeddings of the wrong count or dimensions (expected ${input.input.length} × ${dims}).`,
        );
      }
      const value: Embeddings = {
        object: 'list',
        model: model.id,
        data: result.embeddings.map((e, index) => ({ object: 'embedding', index, embedding: dimensions ? shorten(e, dimensions) : e })),
        usage: { promptTokens: tokens, totalTokens: tokens },
      };
      return { value, usage: zeroUsage(tokens) };
    });
  }

  private async checkEmbeddings(input: EmbeddingsInput) {
    const model = this.catalog.require(input.model, 'embedding');
    if (input.input.length === 0) throw new DomainError('invalid_value', "'input' must not be empty.", { param: 'input' });
    checkUser(input.user);
    const dimensions = checkDimensions(model, input.dimensions);
    if (input.input.length > LIMITS.maxEmbeddingInputs) {
      // Clients batch by their own defaults (LangChain's OpenAIEmbeddings 512, the AI SDK 2,048):
      // the message says what to set.
      throw new DomainError(
        'too_many_inputs',
        `'input' takes at most ${LIMITS.maxEmbeddingInputs} strings; got ${input.input.length}. Send them in requests of at most ${LIMITS.maxEmbeddingInputs} (LangChain's OpenAIEmbeddings: batchSize: ${LIMITS.maxEmbeddingInputs}; the AI SDK's embedMany, which sends up to 2,048: call it on slices of ${LIMITS.maxEmbeddingInputs}).`,
        { param: 'input' },
      );
    }
    const engine = this.engines.get(model.id);
    const limit = model.specifications.max_tokens;
    const framing = await framingOf(engine);
    let promptTokens = 0;
    for (let i = 0; i < input.input.length; i++) {
      const text = input.input[i]!;
      if (text.length === 0) throw new DomainError('invalid_value', `'input[${i}]' is an empty string.`, { param: 'input' });
      const tokens = await countInput(engine, text, limit, framing);
      if (tokens === 0) {
        // Only whitespace, or characters the tokenizer drops, for a model that adds no tokens of its own.
        throw new DomainError('invalid_value', `'input[${i}]' has no tokens for the model '${model.id}' to read.`, { param: 'input' });
      }
      if (tokens > limit) {
        throw new DomainError('input_too_long', `'input[${i}]' has more than ${limit} tokens, the most the model '${model.id}' takes.`, {
          param: 'input',
        });
      }
      promptTokens += tokens;
    }
    return { model, engine, promptTokens, dimensions };
  }

  async rerank(caller: Caller, input: RerankInput, signal: AbortSignal): Promise<RerankResult> {
    const { model, engine, estimate } = await this.screen(caller, () => this.checkRerank(input));
    return this.metered({ caller, model, promptTokens: estimate, requestedOutputTokens: null, maxOutputTokens: 0 }, signal, async () => {
      const { scores, promptTokens: reported } = await engine.rerank(input.query, input.documents, signal);
      const promptTokens = clampInput(reported, estimate);
      const returnDocuments = input.returnDocuments ?? true;
      const ranked = scores
        .map((relevanceScore, index) => ({ index, relevanceScore, document: returnDocuments ? { text: input.documents[index]! } : null }))
        // Stable: equal scores keep input order.
        .sort((a, b) => b.relevanceScore - a.relevanceScore || a.index - b.index);
      const value: RerankResult = {
        id: responseId('rerank'),
        model: model.id,
        results: ranked.slice(0, input.topN ?? ranked.length),
        usage: { promptTokens, totalTokens: promptTokens },
      };
      return { value, usage: zeroUsage(promptTokens) };
    });
  }

  private async checkRerank(input: RerankInput) {
    const model = this.catalog.require(input.model, 'reranking');
    if (input.query.trim().length === 0) throw new DomainError('empty_query', "'query' must not be empty.", { param: 'query' });
    const maxDocs = model.specifications.max_documents;
    if (input.documents.length > Math.min(maxDocs, LIMITS.maxRerankDocuments)) {
      throw new DomainError(
        'too_many_documents',
        `'documents' takes at most ${Math.min(maxDocs, LIMITS.maxRerankDocuments)} documents; got ${input.documents.length}.`,
        {
          param: 'documents',
        },
      );
    }
    if (input.documents.length === 0) throw new DomainError('invalid_value', "'documents' must not be empty.", { param: 'documents' });
    if (input.topN !== null && input.topN !== undefined && (!Number.isInteger(input.topN) || input.topN < 1)) {
      throw new DomainError('invalid_value', `'top_n' must be a positive integer; got ${input.topN}.`, { param: 'top_n' });
    }
    const engine = this.engines.get(model.id);
    const limit = model.specifications.max_tokens;
    // Each document is scored with the query: that pair, with its framing once, is what the model reads.
    const framing = await framingOf(engine);
    const queryTokens = (await countInput(engine, input.query, limit, framing)) - framing;
    if (queryTokens + framing > limit) {
      throw new DomainError('input_too_long', `'query' has more than ${limit} tokens, the most the model '${model.id}' takes.`, {
        param: 'query',
      });
    }
    let estimate = 0;
    for (let i = 0; i < input.documents.length; i++) {
      const tokens = queryTokens + (await countInput(engine, input.documents[i]!, limit - queryTokens, framing));
      if (tokens > limit) {
        throw new DomainError(
          'input_too_long',
          `The query with 'documents[${i}]' has more than ${limit} tokens, the most the model '${model.id}' takes.`,
          {
            param: 'documents',
          },
        );
      }
      estimate += tokens;
    }
    return { model, engine, estimate };
  }

  async moderate(caller: Caller, input: ModerationInput, signal: AbortSignal): Promise<ModerationResult> {
    const { model, engine, estimate } = await this.screen(caller, () => this.checkModeration(input));
    return this.metered({ caller, model, promptTokens: estimate, requestedOutputTokens: null, maxOutputTokens: 0 }, signal, async () => {
      let promptTokens = 0;
      const results: ModerationResult['results'] = [];
      for (const r of await engine.moderate(input.input, signal)) {
        promptTokens += r.promptTokens;
        const names = [...new Set([...MODERATION_CATEGORIES, ...Object.keys(r.categories), ...Object.keys(r.categoryScores)])];
        results.push({
          flagged: r.flagged,
          categories: names.map((name) => ({ name, flagged: r.categories[name] ?? false, score: r.categoryScores[name] ?? 0 })),
        });
      }
      promptTokens = clampInput(promptTokens, estimate);
      const value: ModerationResult = {
        id: responseId('modr'),
        model: model.id,
        results,
        usage: { promptTokens, totalTokens: promptTokens },
      };
      return { value, usage: zeroUsage(promptTokens) };
    });
  }

  private async checkModeration(input: ModerationInput) {
    const model = input.model == null ? this.catalog.defaultModeration() : this.catalog.require(input.model, 'moderation');
    if (input.input.length === 0) throw new DomainError('invalid_value', "'input' must not be empty.", { param: 'input' });
    if (input.input.length > LIMITS.maxModerationInputs) {
      throw new DomainError('too_many_inputs', `'input' takes at most ${LIMITS.maxModerationInputs} strings; got ${input.input.length}.`, {
        param: 'input',
      });
    }
    const engine = this.engines.get(model.id);
    const limit = model.specifications.max_tokens;
    let estimate = 0;
    for (let i = 0; i < input.input.length; i++) {
      // As for embeddings: an empty string is billed nothing, yet a guard model would still run on it.
      if (input.input[i]!.length === 0) throw new DomainError('invalid_value', `'input[${i}]' is an empty string.`, { param: 'input' });
      const tokens = await countInput(engine, input.input[i]!, limit);
      if (tokens > limit)
        throw new DomainError('input_too_long', `'input[${i}]' has more than ${limit} tokens, the most the model '${model.id}' takes.`, {
          param: 'input',
        });
      estimate += tokens;
    }
    return { model, engine, estimate };
  }
}
