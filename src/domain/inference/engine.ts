// The one interface every inference engine implements (openai forwarding today, llama.cpp in-process later).
// Engines know nothing of accounts, billing or HTTP: they run one call and report exact usage.

export type Role = 'system' | 'user' | 'assistant';
export interface ChatMessage {
  role: Role;
  content: string;
}

export type FinishReason = 'stop' | 'length' | 'content_filter';

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
}

/** What a model's content filter said of its answer (./content-filter.ts): the categories that fired. */
export interface ContentFilterVerdict {
  flagged: boolean;
  categories: string[];
}

export interface EngineChatResult {
  content: string;
  finishReason: FinishReason;
  usage: Usage;
  /** Set when the answer went through a content filter. */
  contentFilter?: ContentFilterVerdict;
}

/**
 * A stream yields content deltas, then exactly one `finish` event; anything else ends it by throwing.
 * An engine may first yield `started` when the call is accepted (an upstream answered 2xx): the
 * door can send its response head then, before the first token.
 */
export type EngineStreamEvent =
  | { type: 'started' }
  | { type: 'delta'; content: string }
  | { type: 'finish'; finishReason: FinishReason; usage: Usage; contentFilter?: ContentFilterVerdict };

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

export interface Engine {
  chat(req: EngineChatRequest, signal: AbortSignal): Promise<EngineChatResult>;
  /** The iterator's `return()` (or the signal) stops generation upstream at once. */
  chatStream(req: EngineChatRequest, signal: AbortSignal): AsyncIterable<EngineStreamEvent>;
  embed(input: string[], signal: AbortSignal): Promise<EngineEmbedResult>;
  rerank(query: string, documents: string[], signal: AbortSignal): Promise<EngineRerankResult>;
  moderate(input: string, signal: AbortSignal): Promise<EngineModerationResult>;
  /** Prompt tokens of a chat request, as the model will count them (or a close upper estimate). */
  countChatTokens(messages: ChatMessage[]): number | Promise<number>;
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
