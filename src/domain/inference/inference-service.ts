// The inference use cases shared by both doors (GraphQL and /v1 compat): validate a request against
// the specification's rules and the catalog, run it on the model's engine, shape the result.
// Billing and rate limiting wrap these calls through the `Metering` hooks.
import { randomBytes } from 'node:crypto';
import type { Catalog } from '../catalog/catalog.js';
import { DomainError } from '../errors.js';
import type { ChatMessage, Engine, EngineChatRequest, EngineStreamEvent, FinishReason, Role, Usage } from './engine.js';

export const LIMITS = {
  maxStopSequences: 4,
  maxEmbeddingInputs: 100,
  maxRerankDocuments: 100,
  maxModerationInputs: 100,
} as const;

const ROLES: readonly Role[] = ['system', 'user', 'assistant'];

export interface Caller {
  accountId: string;
  requestId: string;
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
  ) {}

  /** Validates a chat request and resolves what the engine runs: the messages and the effective max_tokens. */
  async prepareChat(input: ChatInput): Promise<{ model: ReturnType<Catalog['require']> & { category: 'chat' }; request: EngineChatRequest; engine: Engine; promptTokens: number }> {
    const model = this.catalog.require(input.model, 'chat');
    if (!Array.isArray(input.messages) || input.messages.length === 0) {
      throw new DomainError('invalid_value', "'messages' must be a non-empty array.", { param: 'messages' });
    }
    const messages: ChatMessage[] = input.messages.map((m, i) => {
      if (!ROLES.includes(m.role as Role)) {
        throw new DomainError('invalid_value', `'messages[${i}].role' must be one of system, user, assistant; got '${String(m.role).slice(0, 40)}'.`, {
          param: `messages[${i}].role`,
        });
      }
      return { role: m.role as Role, content: m.content };
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
    return { model, request, engine, promptTokens };
  }

  async createChatCompletion(_caller: Caller, input: ChatInput, signal: AbortSignal): Promise<ChatCompletion> {
    const { model, request, engine } = await this.prepareChat(input);
    const result = await engine.chat(request, signal);
    return {
      id: newId('chatcmpl'),
      object: 'chat.completion',
      created: now(),
      model: model.id,
      choices: [{ index: 0, message: { role: 'assistant', content: result.content }, finishReason: result.finishReason }],
      usage: result.usage,
    };
  }

  /**
   * A chat completion as chunks. Validation and the engine's first event happen before the first
   * chunk is yielded, so a caller that pulls once can still answer an error with a proper status.
   * The final chunk (no choices) carries the usage; doors decide whether to show it.
   */
  async *chatCompletionStream(_caller: Caller, input: ChatInput, signal: AbortSignal): AsyncGenerator<ChatChunk> {
    const { model, request, engine } = await this.prepareChat(input);
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
    const events = engine.chatStream(request, signal)[Symbol.asyncIterator]();
    try {
      let next: IteratorResult<EngineStreamEvent> = await events.next();
      yield chunk({ role: 'assistant', content: '' }, null);
      for (; !next.done; next = await events.next()) {
        const event = next.value;
        if (event.type === 'delta') {
          if (event.content) yield chunk({ content: event.content }, null);
          continue;
        }
        yield chunk({}, event.finishReason);
        yield { id, object: 'chat.completion.chunk', created, model: model.id, choices: [], usage: event.usage };
        return;
      }
      throw new DomainError('upstream_error', 'The model stopped without finishing its answer.');
    } finally {
      // Runs on normal end, on error and when the consumer stops early (client disconnect).
      await events.return?.();
    }
  }

  async createEmbeddings(_caller: Caller, input: EmbeddingsInput, signal: AbortSignal): Promise<Embeddings> {
    const model = this.catalog.require(input.model, 'embedding');
    if (input.input.length === 0) throw new DomainError('invalid_value', "'input' must not be empty.", { param: 'input' });
    if (input.input.length > LIMITS.maxEmbeddingInputs) {
      throw new DomainError('too_many_inputs', `'input' takes at most ${LIMITS.maxEmbeddingInputs} strings; got ${input.input.length}.`, { param: 'input' });
    }
    const engine = this.engines.get(model.id);
    const limit = model.specifications.max_tokens;
    for (let i = 0; i < input.input.length; i++) {
      const text = input.input[i]!;
      if (text.length === 0) throw new DomainError('invalid_value', `'input[${i}]' is an empty string.`, { param: 'input' });
      // A token is at least one character, so short strings need no count.
      if (text.length > limit) {
        const tokens = await engine.countTokens(text);
        if (tokens > limit) {
          throw new DomainError('input_too_long', `'input[${i}]' has ${tokens} tokens; the model '${model.id}' takes at most ${limit}.`, { param: 'input' });
        }
      }
    }
    const result = await engine.embed(input.input, signal);
    const dims = model.specifications.output_dimensions;
    if (result.embeddings.length !== input.input.length || result.embeddings.some((e) => e.length !== dims)) {
      throw new DomainError('upstream_error', `The model returned embeddings of the wrong count or dimensions (expected ${input.input.length} × ${dims}).`);
    }
    return {
      object: 'list',
      model: model.id,
      data: result.embeddings.map((embedding, index) => ({ object: 'embedding', index, embedding })),
      usage: { promptTokens: result.promptTokens, totalTokens: result.promptTokens },
    };
  }

  async rerank(_caller: Caller, input: RerankInput, signal: AbortSignal): Promise<RerankResult> {
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
    for (let i = 0; i < input.documents.length; i++) {
      const doc = input.documents[i]!;
      if (queryTokens + doc.length > limit) {
        const tokens = queryTokens + (await engine.countTokens(doc));
        if (tokens > limit) {
          throw new DomainError('input_too_long', `The query with 'documents[${i}]' has ${tokens} tokens; the model '${model.id}' takes at most ${limit}.`, {
            param: 'documents',
          });
        }
      }
    }
    const { scores, promptTokens } = await engine.rerank(input.query, input.documents, signal);
    const returnDocuments = input.returnDocuments ?? true;
    const ranked = scores
      .map((relevanceScore, index) => ({ index, relevanceScore, document: returnDocuments ? { text: input.documents[index]! } : null }))
      // Stable: equal scores keep input order.
      .sort((a, b) => b.relevanceScore - a.relevanceScore || a.index - b.index);
    return {
      id: newId('rerank'),
      model: model.id,
      results: ranked.slice(0, input.topN ?? ranked.length),
      usage: { promptTokens, totalTokens: promptTokens },
    };
  }

  async moderate(_caller: Caller, input: ModerationInput, signal: AbortSignal): Promise<ModerationResult> {
    const model = this.catalog.require(input.model, 'moderation');
    if (input.input.length === 0) throw new DomainError('invalid_value', "'input' must not be empty.", { param: 'input' });
    if (input.input.length > LIMITS.maxModerationInputs) {
      throw new DomainError('too_many_inputs', `'input' takes at most ${LIMITS.maxModerationInputs} strings; got ${input.input.length}.`, { param: 'input' });
    }
    const engine = this.engines.get(model.id);
    const limit = model.specifications.max_tokens;
    for (let i = 0; i < input.input.length; i++) {
      const text = input.input[i]!;
      if (text.length > limit) {
        const tokens = await engine.countTokens(text);
        if (tokens > limit) throw new DomainError('input_too_long', `'input' has ${tokens} tokens; the model '${model.id}' takes at most ${limit}.`, { param: 'input' });
      }
    }
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
    return { id: newId('modr'), model: model.id, results, usage: { promptTokens, totalTokens: promptTokens } };
  }
}
