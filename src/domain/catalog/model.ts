// What the domain knows about a model: its catalog entry (category, capabilities, pricing,
// specifications) and the engine that serves it. The config (src/config.ts) reads the YAML onto
// these types; keys keep the catalog's snake_case, which is also how /v1 shows them.

export const MODEL_CATEGORIES = ['chat', 'embedding', 'moderation', 'reranking'] as const;
export type ModelCategory = (typeof MODEL_CATEGORIES)[number];
export type ModelStatus = 'active' | 'beta' | 'deprecated';

/** An OpenAI-compatible upstream (vLLM, llama.cpp's server, Infinity, OpenAI itself). */
export interface OpenAIEngineConfig {
  type: 'openai';
  base_url?: string;
  base_urls?: string[];
  model: string;
  api_key_env?: string;
  /** The longest wait for the upstream's answer to start, and between two events of a stream. */
  timeout_ms: number;
  /** Total deadline of one call, failover included. */
  max_duration_ms: number;
  connect_timeout_ms: number;
  first_byte_timeout_ms?: number;
  circuit_breaker: { failure_threshold: number; cooldown_ms: number };
  rerank_path: string;
  /** logits: every score through a sigmoid; probabilities: as given; auto: guessed per request. */
  rerank_scores?: 'auto' | 'probabilities' | 'logits';
  /** The name the output limit is sent under (OpenAI's reasoning models take max_completion_tokens only). */
  max_tokens_param?: 'max_tokens' | 'max_completion_tokens';
}

/** In-process inference with llama.cpp on a GGUF file (src/domain/inference/llamacpp/). */
export interface LlamaCppEngineConfig {
  type: 'llamacpp';
  file: string;
  source?: string;
  threads?: number;
  parallel: number;
  context_size?: number;
  batch_size?: number;
  queue: { max_depth: number; max_wait_ms: number };
  /** Total deadline of one call: its wait in the queue, the generation and the consumer's pauses. */
  max_duration_ms: number;
  load: 'eager' | 'lazy';
  /** Layers offloaded to the GPU (with a GPU build): 'auto' (all that fit, the default), 'max', or a count. */
  gpu_layers?: 'auto' | 'max' | number;
}

export type EngineConfig = OpenAIEngineConfig | LlamaCppEngineConfig;

interface ModelBase {
  id: string;
  owned_by: string;
  created: number;
  version: string;
  status: ModelStatus;
  /** ISO date after which a deprecated model is removed. */
  sunset?: string | Date;
  engine: EngineConfig;
}

/**
 * Content filtering of a chat model (src/domain/inference/content-filter.ts): its input and/or
 * output checked by a moderation model of the catalog; output in windows of `window_chars`.
 */
export interface SafetyConfig {
  moderation_model: string;
  input: boolean;
  output: boolean;
  window_chars: number;
}

export interface ChatModelConfig extends ModelBase {
  category: 'chat';
  capabilities: { chat_completion: boolean; streaming: boolean; function_calling: boolean };
  pricing: { input_price_per_million: number; output_price_per_million: number; currency: string };
  specifications: { context_window: number; max_output_tokens: number; training_cutoff: string };
  safety?: SafetyConfig;
}

export interface EmbeddingModelConfig extends ModelBase {
  category: 'embedding';
  capabilities: { embeddings: boolean };
  pricing: { price_per_million_tokens: number; currency: string };
  /**
   * supported_dimensions: shorter sizes a request may ask for with `dimensions` (a
   * Matryoshka-trained model's), each below output_dimensions.
   */
  specifications: { max_tokens: number; output_dimensions: number; supported_dimensions?: number[] };
}

export interface RerankModelConfig extends ModelBase {
  category: 'reranking';
  capabilities: { rerank: boolean };
  pricing: { price_per_million_tokens: number; currency: string };
  specifications: { max_tokens: number; max_documents: number };
}

export interface ModerationModelConfig extends ModelBase {
  category: 'moderation';
  capabilities: { moderation: boolean };
  pricing: { price_per_million_tokens: number; currency: string };
  specifications: { max_tokens: number };
}

export type ModelConfig = ChatModelConfig | EmbeddingModelConfig | RerankModelConfig | ModerationModelConfig;
