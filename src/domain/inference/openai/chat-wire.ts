// The openai engine's chat wire format: the request it forwards (tools, response_format, seed, n,
// logprobs included) and how it reads answers and stream chunks (several choices, tool calls and
// their streamed pieces, log-probabilities, a reasoning model's reasoning) into the engine's vocabulary.
import type { ChatMessage, EngineChatRequest, EngineChoice, EngineStreamEvent, FinishReason, TokenLogprob, ToolCall } from '../engine.js';
import { randomBase62 } from '../../ids.js';
import { asRecord, invalidResponse, mapFinishReason } from './upstream.js';

function messageWire(m: ChatMessage): object {
  // A plain message is sent as it is: its JSON is the same ({role, content}).
  if (m.toolCalls === undefined && m.toolCallId === undefined && m.name === undefined) return m;
  const out: Record<string, unknown> = { role: m.role, content: m.content };
  if (m.toolCalls?.length) {
    // OpenAI's own form of an assistant turn that only called tools.
    if (m.content === '') out.content = null;
    out.tool_calls = m.toolCalls.map((c) => ({
      id: c.id,
      type: 'function',
      function: { name: c.function.name, arguments: c.function.arguments },
    }));
  }
  if (m.toolCallId !== undefined) out.tool_call_id = m.toolCallId;
  if (m.name !== undefined) out.name = m.name;
  return out;
}

/** The body sent upstream. */
export function chatPayload(
  model: string,
  req: EngineChatRequest,
  stream: boolean,
  maxTokensParam: 'max_tokens' | 'max_completion_tokens' = 'max_tokens',
): Record<string, unknown> {
  const p: Record<string, unknown> = { model, messages: req.messages.map(messageWire), [maxTokensParam]: req.maxTokens };
  if (req.temperature !== undefined) p.temperature = req.temperature;
  if (req.topP !== undefined) p.top_p = req.topP;
  if (req.stop !== undefined && req.stop.length > 0) p.stop = req.stop;
  if (req.presencePenalty !== undefined) p.presence_penalty = req.presencePenalty;
  if (req.frequencyPenalty !== undefined) p.frequency_penalty = req.frequencyPenalty;
  if (req.user !== undefined) p.user = req.user;
  if (req.reasoningEffort !== undefined) p.reasoning_effort = req.reasoningEffort;
  if (req.topK !== undefined) p.top_k = req.topK;
  if (req.minP !== undefined) p.min_p = req.minP;
  if (req.repetitionPenalty !== undefined) p.repetition_penalty = req.repetitionPenalty;
  if (req.chatTemplateKwargs !== undefined) p.chat_template_kwargs = req.chatTemplateKwargs;
  if (req.tools?.length) {
    p.tools = req.tools;
    if (req.toolChoice !== undefined) p.tool_choice = req.toolChoice;
    if (req.parallelToolCalls !== undefined) p.parallel_tool_calls = req.parallelToolCalls;
  }
  const format = req.responseFormat;
  if (format) {
    p.response_format =
      format.type === 'json_schema'
        ? {
            type: 'json_schema',
            json_schema: {
              name: format.jsonSchema.name,
              ...(format.jsonSchema.description !== undefined ? { description: format.jsonSchema.description } : {}),
              ...(format.jsonSchema.schema !== undefined ? { schema: format.jsonSchema.schema } : {}),
              ...(format.jsonSchema.strict !== undefined ? { strict: format.jsonSchema.strict } : {}),
            },
          }
        : { type: format.type };
  }
  if (req.seed !== undefined) p.seed = req.seed;
  if (req.n !== undefined && req.n > 1) p.n = req.n;
  if (req.logprobs) {
    p.logprobs = true;
    if (req.topLogprobs !== undefined) p.top_logprobs = req.topLogprobs;
  }
  if (stream) {
    p.stream = true;
    p.stream_options = { include_usage: true };
  }
  return p;
}

/** OpenAI's `logprobs.content` of a choice, or undefined when there is none (or it is malformed). */
export function readLogprobs(value: unknown): TokenLogprob[] | undefined {
  const content = asRecord(value)?.content;
  if (!Array.isArray(content)) return undefined;
  const out: TokenLogprob[] = [];
  const one = (v: unknown) => {
    const r = asRecord(v);
    if (!r || typeof r.token !== 'string' || typeof r.logprob !== 'number') return undefined;
    const bytes = Array.isArray(r.bytes) && r.bytes.every((b) => Number.isInteger(b)) ? (r.bytes as number[]) : null;
    return { token: r.token, logprob: r.logprob, bytes };
  };
  for (const item of content) {
    const t = one(item);
    if (!t) return undefined;
    const top = Array.isArray(asRecord(item)?.top_logprobs) ? (asRecord(item)!.top_logprobs as unknown[]) : [];
    const topLogprobs = top.map(one).filter((x) => x !== undefined);
    out.push({ ...t, topLogprobs });
  }
  return out;
}

/** An id for a tool call its upstream sent without one (mlx_lm.server, older llama-cpp-python, older Ollama): OpenAI's form. */
export const newToolCallId = () => `call_${randomBase62(24)}`;

/** A tool call's id as sent: a non-empty string, or none. */
const callId = (value: unknown) => (typeof value === 'string' && value !== '' ? value : undefined);

function readToolCalls(value: unknown): ToolCall[] | undefined {
  if (!Array.isArray(value) || value.length === 0) return undefined;
  return value.map((v) => {
    const c = asRecord(v);
    const fn = asRecord(c?.function);
    if (!c || !fn || typeof fn.name !== 'string') throw invalidResponse();
    const args = typeof fn.arguments === 'string' ? fn.arguments : fn.arguments === undefined ? '{}' : JSON.stringify(fn.arguments);
    return { id: callId(c.id) ?? newToolCallId(), type: 'function', function: { name: fn.name, arguments: args } };
  });
}

/**
 * The reasoning a message or a delta carries apart from its content: `reasoning_content` (vLLM's
 * reasoning parsers, llama.cpp's server with --reasoning-format, DeepSeek's API), else `reasoning`
 * (newer vLLM, Ollama's OpenAI endpoint). Text or none ("" is none); anything else there is a broken
 * answer, as for content.
 */
function readReasoning(m: Record<string, unknown> | undefined): string | undefined {
  const raw = m?.reasoning_content ?? m?.reasoning;
  if (raw === null || raw === undefined) return undefined;
  if (typeof raw !== 'string') throw invalidResponse();
  return raw === '' ? undefined : raw;
}

/** A refusal (OpenAI's `refusal`, on a message or a delta): text or none; "" and anything else are none. */
function readRefusal(m: Record<string, unknown> | undefined): string | undefined {
  const raw = m?.refusal;
  return typeof raw === 'string' && raw !== '' ? raw : undefined;
}

/** Hears a finish reason the engine does not know (read as 'stop'). */
export type UnknownFinish = (value: unknown) => void;

/** The choices of a non-streamed answer, in index order; n of them. */
export function readChoices(data: Record<string, unknown>, n: number, unknown?: UnknownFinish): EngineChoice[] {
  if (!Array.isArray(data.choices) || data.choices.length < n) throw invalidResponse();
  const out: EngineChoice[] = new Array(n);
  const all: unknown[] = data.choices;
  for (let i = 0; i < all.length; i++) {
    const choice = asRecord(all[i]);
    if (!choice) throw invalidResponse();
    const index = typeof choice.index === 'number' ? choice.index : i;
    if (!Number.isInteger(index)) throw invalidResponse();
    if (index < 0 || index >= n) continue;
    const message = asRecord(choice.message);
    // A message's content is text or null (an answer that is only tool calls); a number or an
    // object there is a broken answer, not an empty one to be billed.
    const raw = message?.content;
    if (!message || (raw !== null && raw !== undefined && typeof raw !== 'string')) throw invalidResponse();
    const content = typeof raw === 'string' ? raw : '';
    const reasoning = readReasoning(message);
    const toolCalls = readToolCalls(message?.tool_calls);
    const one: EngineChoice = { content, finishReason: mapFinishReason(choice.finish_reason, toolCalls !== undefined, unknown) };
    if (reasoning !== undefined) one.reasoning = reasoning;
    const refusal = readRefusal(message);
    if (refusal !== undefined) one.refusal = refusal;
    if (toolCalls) one.toolCalls = toolCalls;
    const logprobs = readLogprobs(choice.logprobs);
    if (logprobs) one.logprobs = logprobs;
    out[index] = one;
  }
  for (let i = 0; i < n; i++) if (!out[i]) throw invalidResponse();
  return out;
}

/** Everything a choice produced that costs output tokens (its reasoning too), for usage an upstream left out. */
export const choiceText = (c: EngineChoice) =>
  (c.reasoning ?? '') + (c.refusal ?? '') + c.content + (c.toolCalls ?? []).map((t) => t.function.name + t.function.arguments).join('');

/**
 * One choice's streamed tool calls, numbered as they are relayed: by their ids, not by the
 * upstream's `index` alone. A new id is the next call, even on an index already used (Ollama and
 * older vLLM and SGLang parsers send every call on index 0, which SDKs would merge into one); a
 * piece without an id belongs to the call its index last stood for, or without an index (older
 * Ollama) to the current call; a call that never had an id gets one.
 */
interface ToolNumbering {
  /** The relayed index of each id seen. */
  byId: Map<string, number>;
  /** The relayed index each upstream index last stood for. */
  byIndex: Map<number, number>;
  /** The relayed index of the call the last piece belonged to. */
  current: number;
  /** The calls so far: the next call's index. */
  count: number;
}

/** What reading one stream needs across its chunks. */
export interface StreamReading {
  /** The choices asked for. */
  n: number;
  /** Per choice: its tool calls so far (none until it sends one). */
  tools: (ToolNumbering | undefined)[];
  unknownFinish?: UnknownFinish;
}

export function streamReading(n: number, unknownFinish?: UnknownFinish): StreamReading {
  return { n, tools: new Array<ToolNumbering | undefined>(n), unknownFinish };
}

/** The relayed index of one tool-call piece, and the id to relay with it (the upstream's, or one made for a new call without). */
function numberCall(t: ToolNumbering, index: unknown, sentId: string | undefined): { at: number; id: string | undefined } {
  const upstreamIndex = typeof index === 'number' && Number.isInteger(index) && index >= 0 ? index : undefined;
  let at: number | undefined;
  let id = sentId;
  if (sentId !== undefined) {
    at = t.byId.get(sentId);
    if (at === undefined) {
      at = t.count++;
      t.byId.set(sentId, at);
    }
  } else {
    at = upstreamIndex === undefined ? (t.count > 0 ? t.current : undefined) : t.byIndex.get(upstreamIndex);
    if (at === undefined) {
      at = t.count++;
      id = newToolCallId();
    }
  }
  if (upstreamIndex !== undefined) t.byIndex.set(upstreamIndex, at);
  t.current = at;
  return { at, id };
}

/**
 * The engine events one streamed chunk's choice carries, appended to `out`: its reasoning, its
 * content (with its log-probabilities), its tool-call pieces, and its end (`choice_finish`, with one choice too: the
 * client gets its finish reason when the upstream sends it, not with the usage and [DONE] that
 * follow). Returns how the choice finished, if it did in this chunk.
 */
export function choiceEvents(choice: Record<string, unknown>, reading: StreamReading, out: EngineStreamEvent[]): FinishReason | undefined {
  const { n } = reading;
  // A choice the request did not ask for, or content that is not text, is a broken stream.
  if (typeof choice.index === 'number' && !(Number.isInteger(choice.index) && choice.index >= 0 && choice.index < n))
    throw invalidResponse();
  const index = typeof choice.index === 'number' ? choice.index : 0;
  const delta = asRecord(choice.delta);
  const content = delta?.content;
  if (content !== null && content !== undefined && typeof content !== 'string') throw invalidResponse();
  const reasoning = readReasoning(delta);
  if (reasoning !== undefined) out.push({ type: 'reasoning_delta', content: reasoning, ...(n > 1 ? { choice: index } : {}) });
  const refusal = readRefusal(delta);
  if (refusal !== undefined) out.push({ type: 'delta', content: refusal, refusal: true, ...(n > 1 ? { choice: index } : {}) });
  if (typeof content === 'string' && content.length > 0) {
    const event: EngineStreamEvent = { type: 'delta', content };
    if (n > 1) event.choice = index;
    if (choice.logprobs !== undefined && choice.logprobs !== null) {
      const logprobs = readLogprobs(choice.logprobs);
      if (logprobs) event.logprobs = logprobs;
    }
    out.push(event);
  }
  if (Array.isArray(delta?.tool_calls)) {
    for (const raw of delta.tool_calls) {
      const call = asRecord(raw);
      if (!call) throw invalidResponse();
      const fn = asRecord(call.function);
      reading.tools[index] ??= { byId: new Map(), byIndex: new Map(), current: 0, count: 0 };
      const { at, id } = numberCall(reading.tools[index], call.index, callId(call.id));
      const piece: EngineStreamEvent = {
        type: 'tool_call',
        ...(n > 1 ? { choice: index } : {}),
        index: at,
        arguments: streamedArguments(fn?.arguments),
      };
      if (id !== undefined) piece.id = id;
      if (typeof fn?.name === 'string') piece.name = fn.name;
      out.push(piece);
    }
  }
  // "" is not an ending: SGLang 0.4.3 and older Ollama send it on every chunk, where others send null.
  if (choice.finish_reason === null || choice.finish_reason === undefined || choice.finish_reason === '') return undefined;
  const finish = mapFinishReason(choice.finish_reason, reading.tools[index] !== undefined, reading.unknownFinish);
  out.push({ type: 'choice_finish', choice: index, finishReason: finish });
  return finish;
}

/** A word with the whitespace before it (at most 64 characters of it), or whitespace at the end. */
const STREAM_PIECE = /\s*\S{1,64}|\s+/gu;

/**
 * A text cut into the pieces a model streaming it would have sent, about a word each: the relay
 * counts a stream towards max_tokens piece by piece (each at least a token), so a whole answer
 * replayed in one piece would pass max_tokens unseen.
 */
export const streamPieces = (text: string): string[] => text.match(STREAM_PIECE) ?? [];

/**
 * A whole answer replayed as stream events (a server that ignored `stream: true`): its reasoning and
 * its content in word-sized pieces, as a stream would have brought them (content with
 * log-probabilities in one piece, with them), then its tool calls and its end.
 */
export function answerEvents(choices: EngineChoice[]): EngineStreamEvent[] {
  const n = choices.length;
  const events: EngineStreamEvent[] = [];
  choices.forEach((c, i) => {
    const at = n > 1 ? { choice: i } : {};
    if (c.reasoning) for (const piece of streamPieces(c.reasoning)) events.push({ type: 'reasoning_delta', content: piece, ...at });
    if (c.refusal) for (const piece of streamPieces(c.refusal)) events.push({ type: 'delta', content: piece, refusal: true, ...at });
    if (c.content && c.logprobs) events.push({ type: 'delta', content: c.content, ...at, logprobs: c.logprobs });
    else if (c.content) for (const piece of streamPieces(c.content)) events.push({ type: 'delta', content: piece, ...at });
    c.toolCalls?.forEach((t, index) => {
      events.push({ type: 'tool_call', ...at, index, id: t.id, name: t.function.name, arguments: t.function.arguments });
    });
    events.push({ type: 'choice_finish', choice: i, finishReason: c.finishReason });
  });
  return events;
}

/**
 * A streamed tool call's arguments: a piece of JSON text, as OpenAI sends it; the whole arguments
 * as a JSON value (TGI, some Ollama versions) are written as text, as in a plain answer.
 */
function streamedArguments(value: unknown): string {
  if (typeof value === 'string') return value;
  return value === undefined || value === null ? '' : JSON.stringify(value);
}
