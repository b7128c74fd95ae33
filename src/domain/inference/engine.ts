// The one interface every inference engine implements (openai forwarding today, llama.cpp in-process later).
// Engines know nothing of accounts, billing or HTTP: they run one call and report exact usage.

export type Role = 'system' | 'user' | 'assistant' | 'tool';

/** A call of one of the request's tools, as the model made it: `arguments` is its JSON text. */
export interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export interface ChatMessage {
  role: Role;
  /** The text ('' for an assistant message that only calls tools). */
  content: string;
  /** An assistant message's tool calls. */
  toolCalls?: ToolCall[];
  /** A tool message: the call it answers. */
  toolCallId?: string;
  /** The participant's name (OpenAI's `name`): forwarded; in-process templates do not take it. */
  name?: string;
}

/** A JSON Schema, as the client sent it (checked by the engine that uses it). */
export type JsonSchema = Record<string, unknown>;

/** A tool the model may call (OpenAI's `{type: 'function', function: {...}}`). */
export interface ToolDefinition {
  type: 'function';
  function: { name: string; description?: string; parameters?: JsonSchema; strict?: boolean };
}

export type ToolChoice = 'auto' | 'none' | 'required' | { type: 'function'; function: { name: string } };

export type ResponseFormat =
  | { type: 'text' }
  | { type: 'json_object' }
  | { type: 'json_schema'; jsonSchema: { name: string; description?: string; schema?: JsonSchema; strict?: boolean } };

/** One output token's log-probability, with the most likely alternatives (OpenAI's shape). */
export interface TokenLogprob {
  token: string;
  logprob: number;
  bytes: number[] | null;
  topLogprobs: { token: string; logprob: number; bytes: number[] | null }[];
}

export type FinishReason = 'stop' | 'length' | 'content_filter' | 'tool_calls';

export interface Usage {
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
}

export interface EngineChatRequest {
  messages: ChatMessage[];
  /** Already resolved: the client's max_tokens or the model's maximum. */
  maxTokens: number;
  temperature?: number;
  topP?: number;
  stop?: string[];
  presencePenalty?: number;
  frequencyPenalty?: number;
  user?: string;
  tools?: ToolDefinition[];
  toolChoice?: ToolChoice;
  parallelToolCalls?: boolean;
  responseFormat?: ResponseFormat;
  seed?: number;
  /** Choices to generate (default 1). */
  n?: number;
  /** Return each output token's log-probability, with `topLogprobs` alternatives (0 to 20). */
  logprobs?: boolean;
  topLogprobs?: number;
  /** A reasoning model's effort (REASONING_EFFORTS), passed to an upstream as `reasoning_effort`. */
  reasoningEffort?: string;
  /** Sampling from the k most likely tokens (upstream: `top_k`; 0 or -1: off). */
  topK?: number;
  /** Sampling from tokens at least this fraction as likely as the likeliest (upstream: `min_p`). */
  minP?: number;
  /** A multiplicative penalty on tokens already seen (upstream: `repetition_penalty`; 1: off). */
  repetitionPenalty?: number;
  /** Variables for the upstream's chat template (upstream: `chat_template_kwargs`), passed as given. */
  chatTemplateKwargs?: Record<string, unknown>;
}

/** What a model's content filter said of its answer (./content-filter.ts): the categories that fired. */
export interface ContentFilterVerdict {
  flagged: boolean;
  categories: string[];
}

/** One generated choice. */
export interface EngineChoice {
  content: string;
  /**
   * The model's reasoning before its answer, when its upstream sends it apart (`reasoning_content`
   * or `reasoning`): output the call is billed for, relayed beside the answer.
   */
  reasoning?: string;
  /** Set by an output content filter: the reasoning is counted as output but not relayed (./content-filter.ts). */
  reasoningWithheld?: boolean;
  /**
   * The model's refusal, as OpenAI's models give it (`message.refusal`, content null): output the
   * call is billed for, relayed as `refusal` so that clients tell a refusal from an empty answer.
   */
  refusal?: string;
  toolCalls?: ToolCall[];
  finishReason: FinishReason;
  logprobs?: TokenLogprob[];
  /** Set when the answer went through a content filter (./content-filter.ts). */
  contentFilter?: ContentFilterVerdict;
}

/** The first choice, and with n > 1 every choice in `choices`; `usage` sums their output tokens. */
export interface EngineChatResult extends EngineChoice {
  usage: Usage;
  choices?: EngineChoice[];
}

/**
 * A stream yields reasoning and content deltas and tool-call fragments, then exactly one `finish`
 * event; anything else ends it by throwing. An engine may first yield `started` when the call is accepted (an
 * upstream answered 2xx): the door can send its head then, before the first token. `choice` (default
 * 0) says which choice an event belongs to when n > 1; a choice may end early with `choice_finish`,
 * and `finish` ends every choice not ended yet.
 */
export type EngineStreamEvent =
  | { type: 'started' }
  /**
   * A piece of the answer. `tokens`: how many tokens the engine generated for it, when it knows
   * (the in-process engine): a stream cut short is then billed at most that, not at a re-count of
   * the text (which can be more: text that is not valid UTF-8 decodes to replacement characters).
   */
  | {
      type: 'delta';
      content: string;
      choice?: number;
      logprobs?: TokenLogprob[];
      tokens?: number;
      /** A piece of the model's refusal (OpenAI's `delta.refusal`) rather than of its content: counted and filtered as content, relayed as `refusal`. */
      refusal?: true;
    }
  /** A piece of the model's reasoning (before its answer); `withheld`: counted as output, not relayed (./content-filter.ts). */
  | { type: 'reasoning_delta'; content: string; choice?: number; withheld?: boolean }
  | {
      /** A piece of the `index`th tool call: its id and name come with the first piece. */
      type: 'tool_call';
      choice?: number;
      index: number;
      id?: string;
      name?: string;
      arguments: string;
    }
  | { type: 'choice_finish'; choice: number; finishReason: FinishReason; contentFilter?: ContentFilterVerdict }
  | { type: 'finish'; finishReason: FinishReason; usage: Usage };

export interface EngineEmbedResult {
  embeddings: number[][];
  promptTokens: number;
}

export interface EngineRerankResult {
  /** Relevance score in [0, 1] for each document, in input order. */
  scores: number[];
  promptTokens: number;
}

export interface EngineModerationResult {
  flagged: boolean;
  categories: Record<string, boolean>;
  categoryScores: Record<string, number>;
  promptTokens: number;
}

/** engine.max_duration_ms when the config gives none: 5 minutes, well inside the default hold expiry of 15. */
export const DEFAULT_MAX_DURATION_MS = 300_000;

/**
 * How long after a model's call deadline (engine.max_duration_ms) a stream its consumer stopped
 * pulling is settled without it (the engine's own deadline ends every call that is pulled first):
 * a call's hold must outlast both.
 */
export const STREAM_DEADLINE_GRACE_MS = 2_000;

/** What a call past its engine.max_duration_ms is told (504 upstream_timeout, or a stream's error event). */
export const CALL_DEADLINE_MESSAGE = 'The call ran past its time limit and was ended.';

export interface Engine {
  chat(req: EngineChatRequest, signal: AbortSignal): Promise<EngineChatResult>;
  /** The iterator's `return()` (or the signal) stops generation upstream at once. */
  chatStream(req: EngineChatRequest, signal: AbortSignal): AsyncIterable<EngineStreamEvent>;
  embed(input: string[], signal: AbortSignal): Promise<EngineEmbedResult>;
  rerank(query: string, documents: string[], signal: AbortSignal): Promise<EngineRerankResult>;
  /** One result per input, in order (one upstream call for all of them where the engine forwards). */
  moderate(inputs: string[], signal: AbortSignal): Promise<EngineModerationResult[]>;
  /**
   * Prompt tokens of a chat request, as the model will count them (or a close upper estimate); the
   * tool definitions, when given, are part of the prompt.
   */
  countChatTokens(messages: ChatMessage[], tools?: ToolDefinition[]): number | Promise<number>;
  /**
   * Which of the request's features this engine cannot serve for this model: the request is refused
   * with 400 unsupported_parameter naming it (the first), never silently ignored.
   */
  unsupported?(req: EngineChatRequest): { param: string; reason: string } | undefined;
  countTokens(text: string): number | Promise<number>;
  close?(): Promise<void>;
}

/**
 * Whether a model can serve a call now (GET /v1/models, GraphQL Model.available). The reason is
 * shown to clients: it names no file or address.
 */
export interface ModelAvailability {
  available: boolean;
  reason: string | null;
}
