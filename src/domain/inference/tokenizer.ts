// Token counting for engines that cannot count themselves (OpenAI-compatible upstreams that omit
// usage) and for pre-flight checks: o200k_base, with OpenAI's chat framing overhead.
// It runs on the hot path, so it does no allocation beyond what the BPE encoder needs.
import { countTokens, decode, encode } from 'gpt-tokenizer/encoding/o200k_base';
import type { ChatMessage, ToolDefinition } from './engine.js';

// User text that happens to contain "<|endoftext|>" and the like is plain text to us: the default
// options would throw on it, and an upstream counts it as ordinary characters too.
const AS_PLAIN_TEXT = { disallowedSpecial: new Set<string>() };

/** OpenAI's chat formula: every message costs 3 framing tokens, the reply is primed with 3 more. */
const TOKENS_PER_MESSAGE = 3;
const REPLY_PRIMING_TOKENS = 3;

// Roles are few and fixed; counting them once saves an encoder pass per message.
const roleTokens = new Map<string, number>();

function countRole(role: string): number {
  let n = roleTokens.get(role);
  if (n === undefined) {
    n = countTokens(role, AS_PLAIN_TEXT);
    if (roleTokens.size < 16) roleTokens.set(role, n);
  }
  return n;
}

export function countTextTokens(text: string): number {
  return text.length === 0 ? 0 : countTokens(text, AS_PLAIN_TEXT);
}

/**
 * The tool definitions are counted as the JSON they are sent as (OpenAI renders them into the
 * system prompt in a form of about that size); each tool call as its name and arguments plus 3.
 */
export function countChatTokens(messages: ChatMessage[], tools?: ToolDefinition[]): number {
  let total = REPLY_PRIMING_TOKENS;
  for (const m of messages) {
    total += TOKENS_PER_MESSAGE + countRole(m.role) + countTextTokens(m.content);
    if (m.toolCalls) for (const c of m.toolCalls) total += 3 + countTextTokens(c.function.name) + countTextTokens(c.function.arguments);
    if (m.toolCallId) total += countTextTokens(m.toolCallId);
  }
  if (tools && tools.length > 0) total += TOKENS_PER_MESSAGE + countTextTokens(JSON.stringify(tools));
  return total;
}

/** The text's first `max` tokens (all of it when it has no more). */
export function truncateTextTokens(text: string, max: number): string {
  const tokens = encode(text, AS_PLAIN_TEXT);
  return tokens.length <= max ? text : decode(tokens.slice(0, max));
}
