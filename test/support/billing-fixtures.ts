// The billing settings and the chat model (1 USD per million input tokens, 2 per million output)
// that billing's domain and store tests run with.
import type { BillingSettings, ChatModelConfig } from '../../src/config.js';

export const SETTINGS: BillingSettings = { hold_expiry_seconds: 60, sweep_interval_seconds: 3600, instance_timeout_seconds: 90 };

export const MODEL = {
  id: 'chat-test',
  category: 'chat',
  owned_by: 'tests',
  created: 0,
  version: '1',
  status: 'active',
  capabilities: { chat_completion: true, streaming: true, function_calling: false },
  pricing: { input_price_per_million: 1, output_price_per_million: 2, currency: 'usd' },
  specifications: { context_window: 4096, max_output_tokens: 256, training_cutoff: '2024-10' },
  engine: { type: 'openai', base_url: 'http://127.0.0.1:1/v1', model: 'x', timeout_ms: 1000, rerank_path: '/rerank' },
} as ChatModelConfig;
