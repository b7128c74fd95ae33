// The inference use cases' vocabulary: the callers, inputs and results of each call, the limits of
// the specification, and the Metering hooks through which billing and rate limits wrap a call.
import type { ModelConfig } from '../catalog/model.js';
import type { LimiterState } from '../ratelimit/types.js';
import type { ContentFilterVerdict, Engine, FinishReason, Role, TokenLogprob, ToolCall, Usage } from './engine.js';

export const LIMITS = {
  maxStopSequences: 4,
  /** The longest stop sequence (characters): each is searched for in the tail of every token's text. */
  maxStopLength: 1_000,
  maxEmbeddingInputs: 100,
  maxRerankDocuments: 100,
  maxModerationInputs: 100,
  maxTools: 128,
  maxTopLogprobs: 20,
  /** The longest `user` (end-user id) a request may carry; it is stored with the usage event. */
  maxUserLength: 256,
} as const;

/** The most choices (`n`) a chat call may ask for unless the operator sets another (`chat.max_choices`). */
export const DEFAULT_MAX_CHOICES = 4;

export const ROLES: readonly Role[] = ['system', 'user', 'assistant', 'tool'];
/** OpenAI's newer name for system instructions (o1 and later): read as `system`. */
export const ROLE_ALIASES: Readonly<Record<string, Role>> = { developer: 'system' };

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
  /** Hears that a call was admitted: its settlement is to come (the access line waits for it). */
  onAdmitted?: () => void;
  /** Hears what a call was settled at (its model and usage), for the door's access line. */
  onSettled?: (model: string, usage: Usage) => void;
}

export interface ChatInputMessage {
  role: string;
  /** null (or absent) only for an assistant message that calls tools. */
  content?: string | null;
  toolCalls?: { id: string; type?: string | null; function: { name: string; arguments: string } }[] | null;
  toolCallId?: string | null;
  /** The participant's name (OpenAI's `name`). */
  name?: string | null;
}

export interface ChatInput {
  model: string;
  messages: ChatInputMessage[];
  maxTokens?: number | null;
  temperature?: number | null;
  topP?: number | null;
  stop?: string[] | null;
  presencePenalty?: number | null;
  frequencyPenalty?: number | null;
  user?: string | null;
  tools?: { type: string; function: { name: string; description?: string | null; parameters?: unknown; strict?: boolean | null } }[] | null;
  /** 'auto', 'none', 'required', or the function the model must call. */
  toolChoice?: string | { type: 'function'; function: { name: string } } | null;
  parallelToolCalls?: boolean | null;
  responseFormat?: {
    type: string;
    jsonSchema?: { name: string; description?: string | null; schema?: unknown; strict?: boolean | null } | null;
  } | null;
  seed?: number | null;
  n?: number | null;
  logprobs?: boolean | null;
  topLogprobs?: number | null;
  /** How hard a reasoning model thinks: none, minimal, low, medium, high or xhigh (passed to the upstream). */
  reasoningEffort?: string | null;
  /** Sampling from the k most likely tokens only (0 or -1: off), as vLLM and llama.cpp take `top_k`. */
  topK?: number | null;
  /** Sampling from tokens at least this fraction as likely as the likeliest (0 to 1; 0: off). */
  minP?: number | null;
  /** A multiplicative penalty on tokens already in the prompt or answer (1: off), vLLM's `repetition_penalty`. */
  repetitionPenalty?: number | null;
  /** Variables for the upstream's chat template (e.g. `{"enable_thinking": false}`): an object, passed as given. */
  chatTemplateKwargs?: unknown;
}

/** A streamed piece of a tool call: id, type and name come with its first piece (OpenAI's shape). */
export interface ToolCallDelta {
  index: number;
  id?: string;
  type?: 'function';
  function: { name?: string; arguments: string };
}

export interface ChatCompletion {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  choices: {
    index: number;
    /**
     * content is null when the answer is only tool calls; reasoningContent is the model's reasoning,
     * when its upstream sent it and no content filter withholds it.
     */
    message: { role: 'assistant'; content: string | null; reasoningContent?: string; refusal?: string; toolCalls: ToolCall[] | null };
    finishReason: FinishReason;
    logprobs: TokenLogprob[] | null;
    /** Null unless the model has an output content filter. */
    contentFilter?: ContentFilterVerdict | null;
  }[];
  usage: Usage;
}

export interface ChatChunk {
  id: string;
  object: 'chat.completion.chunk';
  created: number;
  model: string;
  choices: {
    index: number;
    delta: { role?: 'assistant'; content?: string; reasoningContent?: string; refusal?: string; toolCalls?: ToolCallDelta[] };
    finishReason: FinishReason | null;
    logprobs?: TokenLogprob[] | null;
    /** On the chunk with the finish reason, when the model has an output content filter. */
    contentFilter?: ContentFilterVerdict | null;
  }[];
  /** Only on the last chunk, which has no choices (as OpenAI's `stream_options.include_usage`). */
  usage: Usage | null;
}

export interface EmbeddingsInput {
  model: string;
  input: string[];
  /** Vectors cut to this size and L2-renormalised (one of the model's supported_dimensions; its full size changes nothing). */
  dimensions?: number | null;
  user?: string | null;
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
  /** Left out: the catalog's default moderation model (Catalog.defaultModeration). */
  model?: string | null;
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
  /** The engine failed before any output reached the client: nothing is charged. */
  | 'failed'
  /**
   * The client went away: mid-stream, prompt plus the tokens delivered until then; before any of
   * the answer was delivered (streamed or not), nothing.
   */
  | 'client_disconnected'
  /** The engine failed (or ran out of time) mid-stream: prompt plus the tokens delivered until then. */
  | 'failed_mid_stream';

export interface MeterRequest {
  caller: Caller;
  model: ModelConfig;
  /** Input tokens as counted before the call (the engine's tokenizer). */
  promptTokens: number;
  /**
   * The client's max_tokens (chat) times the choices asked for, or null when it gave none (billing
   * may lower the maximum).
   */
  requestedOutputTokens: number | null;
  /** The most output the model may produce for this prompt, every choice together (0 for non-chat calls). */
  maxOutputTokens: number;
  /** The choices a chat call asks for (`n`); 1 when absent. The output figures above cover all of them. */
  choices?: number;
  /** The request's `user` (the customer's end-user id), stored with the usage event. */
  endUser?: string | null;
}

export interface MeterTicket {
  /** Output tokens the call may produce: the client's max_tokens, or what the account can pay for. */
  maxOutputTokens: number;
  /**
   * Records the real usage and how the call ended; runs exactly once per admitted call.
   * `undelivered` is asked as late as the settlement can (inside its transaction, before the
   * commit): an outcome there means the answer will not reach its client (it left, or the server
   * ends the call), and the call is settled at that outcome charging nothing.
   */
  settle(usage: Usage, outcome: CallOutcome, undelivered?: Undelivered): Promise<void>;
}

/** Whether a finished call's answer can still be delivered: null if so, else the outcome to record. */
export type Undelivered = () => CallOutcome | null;

/**
 * Admission before the engine runs and settlement after (billing, rate limits). `admit` refuses
 * by throwing a DomainError (402, 429) and then places nothing.
 */
export interface Metering {
  admit(req: MeterRequest): Promise<MeterTicket>;
  /**
   * Before any work on a call: refuses at once (429) a caller already known to be over a limit, so
   * a key that is refused costs the server next to nothing.
   */
  precheck?(caller: Caller): void | Promise<void>;
  /**
   * A call refused before admission (its input, 4xx): counted as one request against the caller's
   * RPM, so refusals are not free.
   */
  countRefused?(caller: Caller): Promise<void>;
}

/** No billing, no limits: every call runs. */
export const unmetered: Metering = {
  async admit(req) {
    return { maxOutputTokens: req.requestedOutputTokens ?? req.maxOutputTokens, settle: async () => {} };
  },
};
