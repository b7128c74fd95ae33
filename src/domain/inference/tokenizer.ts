// Token counting for engines that cannot count themselves (OpenAI-compatible upstreams that omit
// usage) and for pre-flight checks: o200k_base, with OpenAI's chat framing overhead.
// It runs on the hot path, so it does no allocation beyond what the BPE encoder needs.
//
// BPE time grows with the square of a pre-token's length, and o200k's pre-tokenizer keeps a run of
// whitespace, or of non-whitespace, in one pre-token or nearly: 64,000 characters without a space
// took seconds, 1 MB would take hours. A run longer than RUN_CHARS is therefore counted in pieces of
// that length (a token or so more per cut, the same for the run of one letter), which keeps the
// work linear in the text; text without such runs is counted whole, exactly as before. Output, whose
// length an upstream decides, is counted within a limit as well (countTextTokensWithin).
import { countTokens, decode, encode } from 'gpt-tokenizer/encoding/o200k_base';
import { countWords, PIECE_CHARS, pieceEnd, provablyOver } from './bounded-count.js';
import type { ChatMessage, ToolDefinition } from './engine.js';

/** The longest run of whitespace, or of anything else, counted in one piece. */
const RUN_CHARS = 256;

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

/** Whitespace as the pre-tokenizer's `\s` (JavaScript's) has it. */
function isSpace(c: number): boolean {
  return (
    c === 32 ||
    (c >= 9 && c <= 13) ||
    (c >= 0x2000 && c <= 0x200a) ||
    c === 0xa0 ||
    c === 0x1680 ||
    c === 0x2028 ||
    c === 0x2029 ||
    c === 0x202f ||
    c === 0x205f ||
    c === 0x3000 ||
    c === 0xfeff
  );
}

/** The tokens of `text`, in time linear in its length: exact unless it has runs over RUN_CHARS (see above). */
export function countTextTokens(text: string): number {
  if (text.length <= RUN_CHARS) return text.length === 0 ? 0 : countTokens(text, AS_PLAIN_TEXT);
  let total = 0;
  let start = 0;
  let runStart = 0;
  let runSpace = isSpace(text.charCodeAt(0));
  for (let i = 1; i < text.length; i++) {
    const space = isSpace(text.charCodeAt(i));
    if (space !== runSpace) {
      runSpace = space;
      runStart = i;
    } else if (i - runStart >= RUN_CHARS) {
      // The run reached RUN_CHARS characters before i: the piece ends there (before a surrogate
      // pair's second half, never between the two).
      let cut = i;
      const c = text.charCodeAt(cut - 1);
      if (c >= 0xd800 && c <= 0xdbff) cut--;
      total += countTokens(text.slice(start, cut), AS_PLAIN_TEXT);
      start = runStart = cut;
    }
  }
  return start === 0 ? countTokens(text, AS_PLAIN_TEXT) : total + countTokens(text.slice(start), AS_PLAIN_TEXT);
}

/**
 * The tokens of `text` (output an upstream sent, of any length), or any number above `limit` once
 * they are more: exact up to the limit (as countTextTokens), the work bounded by the limit rather
 * than by the text (as bounded-count.ts's countWithin, without yielding: for callers that cannot wait).
 */
export function countTextTokensWithin(text: string, limit: number): number {
  if (text.length <= PIECE_CHARS) return countTextTokens(text);
  if (provablyOver(text.length, limit) || countWords([text], limit) > limit) return limit + 1;
  let total = 0;
  for (let start = 0; start < text.length; ) {
    const end = pieceEnd(text, start);
    total += countTextTokens(text.slice(start, end));
    if (total > limit) return total;
    start = end;
  }
  return total;
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
    if (m.name) total += countTextTokens(m.name);
  }
  if (tools && tools.length > 0) total += TOKENS_PER_MESSAGE + countTextTokens(JSON.stringify(tools));
  return total;
}

/**
 * The text's first `max` tokens (all of it when it has no more). A long text is encoded in pieces
 * cut at whitespace (./bounded-count.ts pieceEnd), only until `max` tokens are in hand.
 */
export function truncateTextTokens(text: string, max: number): string {
  let used = 0;
  for (let start = 0; start < text.length; ) {
    const end = text.length <= PIECE_CHARS ? text.length : pieceEnd(text, start);
    const tokens = encode(start === 0 && end === text.length ? text : text.slice(start, end), AS_PLAIN_TEXT);
    if (used + tokens.length > max) return text.slice(0, start) + decode(tokens.slice(0, max - used));
    used += tokens.length;
    start = end;
  }
  return text;
}
