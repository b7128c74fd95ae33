// The inference use cases shared by both doors (GraphQL and /v1 compat): validate a request against
// the specification's rules and the catalog, run it on the model's engine, shape the result.
// Billing and rate limiting wrap these calls through the `Metering` hooks.
import { randomBytes } from 'node:crypto';
import type { ChatModelConfig, ModelConfig } from '../../config.js';
import type { Catalog } from '../catalog/catalog.js';
import { DomainError } from '../errors.js';
import type { LimiterState } from '../ratelimit/types.js';
import type { ChatMessage, Engine, EngineChatRequest, EngineStreamEvent, FinishReason, Role, Usage } from './engine.js';

export const LIMITS = {
  maxStopSequences: 4,
  maxEmbeddingInputs: 100,
  maxRerankDocuments: 100,
  maxModerationInputs: 100,
} as const;

const ROLES: readonly Role[] = ['system', 'user', 'assistant'];
/** OpenAI's newer name for system instructions (o1 and later): read as `system`. */
const ROLE_ALIASES: Readonly<Record<string, Role>> = { developer: 'system' };

export interface Caller {
  accountId: string;
  /** The API key of the call, for usage events; null for callers without one (tests, tools). */
  keyId?: string | null;
  requestId: string;
  /**
   * The account's tier and the operator's rate-limit override, as read with the key; rate limits
   * look them up when absent (callers without a key).
   */
  rateLimitProfile?: { tier: string; rpm: number | null; tpm: number | null };
  /**
   * Hears the call's rate-limit state when it is admitted or refused (before the engine runs) and
   * again when its token count is corrected; a door sends the latest as X-RateLimit-* headers with
   * its response's head.
   */
  onRateLimit?: (state: LimiterState) => void;
}

export interface ChatInput {
  model: string;
  messages: { role: string; content: string }[];
  maxTokens?: number | null;
  temperature?: number | null;
  topP?: number | null;
  stop?: string[] | null;
  presencePenalty?: number | null;
  frequencyPenalty?: number | null;
  user?: string | null;
}

export interface ChatCompletion {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  choices: { index: number; message: { role: 'assistant'; content: string }; finishReason: FinishReason }[];
  usage: Usage;
}

export interface ChatChunk {
  id: string;
  object: 'chat.completion.chunk';
  created: number;
  model: string;
  choices: { index: number; delta: { role?: 'assistant'; content?: string }; finishReason: FinishReason | null }[];
  /** Only on the last chunk, which has no choices (as OpenAI's `stream_options.include_usage`). */
  usage: Usage | null;
}

export interface EmbeddingsInput {
  model: string;
  input: string[];
}
export interface Embeddings {
  object: 'list';
  model: string;
  data: { object: 'embedding'; index: number; embedding: number[] }[];
  usage: { promptTokens: number; totalTokens: number };
}

export interface RerankInput {
  model: string;
  query: string;
  documents: string[];
  topN?: number | null;
  returnDocuments?: boolean | null;
}
export interface RerankResult {
  id: string;
  model: string;
  results: { index: number; relevanceScore: number; document: { text: string } | null }[];
  usage: { promptTokens: number; totalTokens: number };
}

export interface ModerationInput {
  model: string;
  input: string[];
}
export interface ModerationResult {
  id: string;
  model: string;
  results: { flagged: boolean; categories: { name: string; flagged: boolean; score: number }[] }[];
  usage: { promptTokens: number; totalTokens: number };
}

/** The categories of section 2.7 that every moderation result carries, whatever the engine says. */
export const MODERATION_CATEGORIES = ['hate', 'harassment', 'self-harm', 'sexual', 'violence'] as const;

export interface EngineRegistry {
  get(modelId: string): Engine;
}

/** How a metered call ended; billing charges by this written policy (README, "Billing policy"). */
export type CallOutcome =
  /** The engine answered in full. */
  | 'completed'
  /** The engine failed before any output: nothing is charged. */
  | 'failed'
  /**
   * The client went away: mid-stream, prompt plus the tokens generated until the engine stopped;
   * before a non-streamed answer, nothing (the engine is stopped and nothing was delivered).
   */
  | 'client_disconnected'
  /** The engine failed mid-stream: prompt plus the tokens generated until then. */
  | 'failed_mid_stream';

export interface MeterRequest {
  caller: Caller;
  model: ModelConfig;
  /** Input tokens as counted before the call (the engine's tokenizer). */
  promptTokens: number;
  /** The client's max_tokens (chat), or null when it gave none (billing may lower the maximum). */
  requestedOutputTokens: number | null;
  /** The most output the model may produce for this prompt (0 for non-chat calls). */
  maxOutputTokens: number;
}

export interface MeterTicket {
  /** Output tokens the call may produce: the client's max_tokens, or what the account can pay for. */
  maxOutputTokens: number;
  /** Records the real usage and how the call ended; runs exactly once per admitted call. */
  settle(usage: Usage, outcome: CallOutcome): Promise<void>;
}

/**
 * Admission before the engine runs and settlement after (billing, rate limits). `admit` refuses
 * by throwing a DomainError (402, 429) and then places nothing.
 */
export interface Metering {
  admit(req: MeterRequest): Promise<MeterTicket>;
}

/** No billing, no limits: every call runs. */
export const unmetered: Metering = {
  async admit(req) {
    return { maxOutputTokens: req.requestedOutputTokens ?? req.maxOutputTokens, settle: async () => {} };
  },
};

const zeroUsage = (promptTokens = 0): Usage => ({ promptTokens, completionTokens: 0, totalTokens: promptTokens });

const newId = (prefix: string) => `${prefix}-${randomBytes(15).toString('base64url')}`;
const now = () => Math.floor(Date.now() / 1000);

function checkRange(value: number | null | undefined, min: number, max: number, param: string) {
  if (value === null || value === undefined) return;
  if (!Number.isFinite(value) || value < min || value > max) {
    throw new DomainError('invalid_value', `'${param}' must be a number from ${min} to ${max}; got ${value}.`, { param });
  }
}

export class InferenceService {
  constructor(
    private readonly catalog: Catalog,
    private readonly engines: EngineRegistry,
    private readonly metering: Metering = unmetered,
  ) {}

  /**
   * Runs a non-streamed call between admission and settlement: failures are charged nothing, and
   * so is a call whose client went away before the answer (the engine was stopped and nothing
   * was delivered); the latter is recorded as a disconnect, not as a failure.
   */
  private async metered<T>(req: MeterRequest, signal: AbortSignal, run: (ticket: MeterTicket) => Promise<{ value: T; usage: Usage }>): Promise<T> {
    const ticket = await this.metering.admit(req);
    let result: { value: T; usage: Usage };
    try {
      result = await run(ticket);
    } catch (err) {
      await ticket.settle(zeroUsage(), signal.aborted ? 'client_disconnected' : 'failed');
      throw err;
    }
    await ticket.settle(result.usage, 'completed');
    return result.value;
  }

  /** Validates a chat request and resolves what the engine runs: the messages and the effective max_tokens. */
  async prepareChat(input: ChatInput): Promise<{ model: ChatModelConfig; request: EngineChatRequest; engine: Engine; promptTokens: number; requestedOutputTokens: number | null }> {
    const model = this.catalog.require(input.model, 'chat');
    if (!Array.isArray(input.messages) || input.messages.length === 0) {
      throw new DomainError('invalid_value', "'messages' must be a non-empty array.", { param: 'messages' });
    }
    const messages: ChatMessage[] = input.messages.map((m, i) => {
      const role = ROLE_ALIASES[m.role] ?? m.role;
      if (!ROLES.includes(role as Role)) {
        throw new DomainError('invalid_value', `'messages[${i}].role' must be one of system (or developer), user, assistant; got '${String(m.role).slice(0, 40)}'.`, {
          param: `messages[${i}].role`,
        });
      }
      return { role: role as Role, content: m.content };
    });
    checkRange(input.temperature, 0, 2, 'temperature');
    checkRange(input.topP, 0, 1, 'top_p');
    checkRange(input.presencePenalty, -2, 2, 'presence_penalty');
    checkRange(input.frequencyPenalty, -2, 2, 'frequency_penalty');
    const stop = input.stop ?? undefined;
    if (stop && stop.length > LIMITS.maxStopSequences) {
      throw new DomainError('too_many_stop_sequences', `'stop' takes at most ${LIMITS.maxStopSequences} sequences; got ${stop.length}.`, { param: 'stop' });
    }
    if (stop?.some((s) => s.length === 0)) throw new DomainError('invalid_value', "'stop' sequences must not be empty strings.", { param: 'stop' });
    const { max_output_tokens: modelMax, context_window: contextWindow } = model.specifications;
    if (input.maxTokens !== null && input.maxTokens !== undefined) {
      if (!Number.isInteger(input.maxTokens) || input.maxTokens < 1 || input.maxTokens > modelMax) {
        throw new DomainError('invalid_value', `'max_tokens' must be an integer from 1 to ${modelMax} (the model's max_output_tokens); got ${input.maxTokens}.`, {
          param: 'max_tokens',
        });
      }
    }
    const engine = this.engines.get(model.id);
    const promptTokens = await engine.countChatTokens(messages);
    if (promptTokens >= contextWindow) {
      throw new DomainError('input_too_long', `The messages take ${promptTokens} tokens; the model's context window is ${contextWindow} tokens, output included.`, {
        param: 'messages',
      });
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
    };
    return { model, request, engine, promptTokens, requestedOutputTokens: input.maxTokens ?? null };
  }

  async createChatCompletion(caller: Caller, input: ChatInput, signal: AbortSignal): Promise<ChatCompletion> {
    const { model, request, engine, promptTokens, requestedOutputTokens } = await this.prepareChat(input);
    const meter: MeterRequest = { caller, model, promptTokens, requestedOutputTokens, maxOutputTokens: request.maxTokens };
    return this.metered(meter, signal, async (ticket) => {
      const result = await engine.chat({ ...request, maxTokens: ticket.maxOutputTokens }, signal);
      const value: ChatCompletion = {
        id: newId('chatcmpl'),
        object: 'chat.completion',
        created: now(),
        model: model.id,
        choices: [{ index: 0, message: { role: 'assistant', content: result.content }, finishReason: result.finishReason }],
        usage: result.usage,
      };
      return { value, usage: result.usage };
    });
  }

  /**
   * A chat completion as chunks. Validation and the engine's first event happen before the first
   * chunk is yielded, so a caller that pulls once can still answer an error with a proper status.
   * The final chunk (no choices) carries the usage; doors decide whether to show it.
   */
  async *chatCompletionStream(caller: Caller, input: ChatInput, signal: AbortSignal): AsyncGenerator<ChatChunk> {
    const { model, request, engine, promptTokens, requestedOutputTokens } = await this.prepareChat(input);
    const ticket = await this.metering.admit({ caller, model, promptTokens, requestedOutputTokens, maxOutputTokens: request.maxTokens });
    const id = newId('chatcmpl');
    const created = now();
    const chunk = (delta: ChatChunk['choices'][0]['delta'], finishReason: FinishReason | null): ChatChunk => ({
      id,
      object: 'chat.completion.chunk',
      created,
      model: model.id,
      choices: [{ index: 0, delta, finishReason }],
      usage: null,
    });
    // What the engine produced so far: a stream that does not finish is billed from it, never as zero.
    let produced = '';
    let settled: { usage: Usage; outcome: CallOutcome } | undefined;
    let failure: unknown;
    const events = engine.chatStream({ ...request, maxTokens: ticket.maxOutputTokens }, signal)[Symbol.asyncIterator]();
    try {
      let next: IteratorResult<EngineStreamEvent> = await events.next();
      yield chunk({ role: 'assistant', content: '' }, null);
      for (; !next.done; next = await events.next()) {
        const event = next.value;
        if (event.type === 'delta') {
          produced += event.content;
          if (event.content) yield chunk({ content: event.content }, null);
          continue;
        }
        settled = { usage: event.usage, outcome: 'completed' };
        yield chunk({}, event.finishReason);
        yield { id, object: 'chat.completion.chunk', created, model: model.id, choices: [], usage: event.usage };
        return;
      }
      throw new DomainError('upstream_error', 'The model stopped without finishing its answer.');
    } catch (err) {
      failure = err;
      throw err;
    } finally {
      // Runs on normal end, on error and when the consumer stops early (client disconnect).
      await events.return?.();
      if (!settled) {
        const outcome: CallOutcome = failure === undefined || signal.aborted ? 'client_disconnected' : produced ? 'failed_mid_stream' : 'failed';
        if (outcome === 'failed') {
          settled = { usage: zeroUsage(), outcome };
        } else {
          const completionTokens = produced ? await engine.countTokens(produced) : 0;
          settled = { usage: { promptTokens, completionTokens, totalTokens: promptTokens + completionTokens }, outcome };
        }
      }
      await ticket.settle(settled.usage, settled.outcome);
    }
  }

  async createEmbeddings(caller: Caller, input: EmbeddingsInput, signal: AbortSignal): Promise<Embeddings> {
    const model = this.catalog.require(input.model, 'embedding');
    if (input.input.length === 0) throw new DomainError('invalid_value', "'input' must not be empty.", { param: 'input' });
    if (input.input.length > LIMITS.maxEmbeddingInputs) {
      throw new DomainError('too_many_inputs', `'input' takes at most ${LIMITS.maxEmbeddingInputs} strings; got ${input.input.length}.`, { param: 'input' });
    }
    const engine = this.engines.get(model.id);
    const limit = model.specifications.max_tokens;
    let promptTokens = 0;
    for (let i = 0; i < input.input.length; i++) {
      const text = input.input[i]!;
      if (text.length === 0) throw new DomainError('invalid_value', `'input[${i}]' is an empty string.`, { param: 'input' });
      const tokens = await engine.countTokens(text);
      if (tokens > limit) {
        throw new DomainError('input_too_long', `'input[${i}]' has ${tokens} tokens; the model '${model.id}' takes at most ${limit}.`, { param: 'input' });
      }
      promptTokens += tokens;
    }
    return this.metered({ caller, model, promptTokens, requestedOutputTokens: null, maxOutputTokens: 0 }, signal, async () => {
      const result = await engine.embed(input.input, signal);
      const dims = model.specifications.output_dimensions;
      if (result.embeddings.length !== input.input.length || result.embeddings.some((e) => e.length !== dims)) {
        throw new DomainError('upstream_error', `The model returned embeddings of the wrong count or dimensions (expected ${input.input.length} × ${dims}).`);
      }
      const value: Embeddings = {
        object: 'list',
        model: model.id,
        data: result.embeddings.map((embedding, index) => ({ object: 'embedding', index, embedding })),
        usage: { promptTokens: result.promptTokens, totalTokens: result.promptTokens },
      };
      return { value, usage: zeroUsage(result.promptTokens) };
    });
  }

  async rerank(caller: Caller, input: RerankInput, signal: AbortSignal): Promise<RerankResult> {
    const model = this.catalog.require(input.model, 'reranking');
    if (input.query.trim().length === 0) throw new DomainError('empty_query', "'query' must not be empty.", { param: 'query' });
    const maxDocs = model.specifications.max_documents;
    if (input.documents.length > Math.min(maxDocs, LIMITS.maxRerankDocuments)) {
      throw new DomainError('too_many_documents', `'documents' takes at most ${Math.min(maxDocs, LIMITS.maxRerankDocuments)} documents; got ${input.documents.length}.`, {
        param: 'documents',
      });
    }
    if (input.documents.length === 0) throw new DomainError('invalid_value', "'documents' must not be empty.", { param: 'documents' });
    if (input.topN !== null && input.topN !== undefined && (!Number.isInteger(input.topN) || input.topN < 1)) {
      throw new DomainError('invalid_value', `'top_n' must be a positive integer; got ${input.topN}.`, { param: 'top_n' });
    }
    const engine = this.engines.get(model.id);
    const limit = model.specifications.max_tokens;
    const queryTokens = await engine.countTokens(input.query);
    // Each document is scored with the query: that pair is what the model reads.
    let estimate = 0;
    for (let i = 0; i < input.documents.length; i++) {
      const tokens = queryTokens + (await engine.countTokens(input.documents[i]!));
      if (tokens > limit) {
        throw new DomainError('input_too_long', `The query with 'documents[${i}]' has ${tokens} tokens; the model '${model.id}' takes at most ${limit}.`, {
          param: 'documents',
        });
      }
      estimate += tokens;
    }
    return this.metered({ caller, model, promptTokens: estimate, requestedOutputTokens: null, maxOutputTokens: 0 }, signal, async () => {
      const { scores, promptTokens } = await engine.rerank(input.query, input.documents, signal);
      const returnDocuments = input.returnDocuments ?? true;
      const ranked = scores
        .map((relevanceScore, index) => ({ index, relevanceScore, document: returnDocuments ? { text: input.documents[index]! } : null }))
        // Stable: equal scores keep input order.
        .sort((a, b) => b.relevanceScore - a.relevanceScore || a.index - b.index);
      const value: RerankResult = {
        id: newId('rerank'),
        model: model.id,
        results: ranked.slice(0, input.topN ?? ranked.length),
        usage: { promptTokens, totalTokens: promptTokens },
      };
      return { value, usage: zeroUsage(promptTokens) };
    });
  }

  async moderate(caller: Caller, input: ModerationInput, signal: AbortSignal): Promise<ModerationResult> {
    const model = this.catalog.require(input.model, 'moderation');
    if (input.input.length === 0) throw new DomainError('invalid_value', "'input' must not be empty.", { param: 'input' });
    if (input.input.length > LIMITS.maxModerationInputs) {
      throw new DomainError('too_many_inputs', `'input' takes at most ${LIMITS.maxModerationInputs} strings; got ${input.input.length}.`, { param: 'input' });
    }
    const engine = this.engines.get(model.id);
    const limit = model.specifications.max_tokens;
    let estimate = 0;
    for (let i = 0; i < input.input.length; i++) {
      const tokens = await engine.countTokens(input.input[i]!);
      if (tokens > limit) throw new DomainError('input_too_long', `'input[${i}]' has ${tokens} tokens; the model '${model.id}' takes at most ${limit}.`, { param: 'input' });
      estimate += tokens;
    }
    return this.metered({ caller, model, promptTokens: estimate, requestedOutputTokens: null, maxOutputTokens: 0 }, signal, async () => {
      let promptTokens = 0;
      const results: ModerationResult['results'] = [];
      for (const text of input.input) {
        const r = await engine.moderate(text, signal);
        promptTokens += r.promptTokens;
        const names = [...new Set([...MODERATION_CATEGORIES, ...Object.keys(r.categories), ...Object.keys(r.categoryScores)])];
        results.push({
          flagged: r.flagged,
          categories: names.map((name) => ({ name, flagged: r.categories[name] ?? false, score: r.categoryScores[name] ?? 0 })),
        });
      }
      const value: ModerationResult = { id: newId('modr'), model: model.id, results, usage: { promptTokens, totalTokens: promptTokens } };
      return { value, usage: zeroUsage(promptTokens) };
    });
  }
}
