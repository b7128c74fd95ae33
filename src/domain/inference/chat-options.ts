// A chat request's messages and its features beyond plain text (tools, JSON output, seed, several
// choices, log-probabilities), checked against the specification and the catalog entry and turned
// into what the engine runs. Anything a model or its engine cannot do is refused with 400
// unsupported_parameter naming the parameter and the model, never silently dropped.
import type { ChatModelConfig } from '../catalog/model.js';
import { DomainError } from '../errors.js';
import type {
  ChatMessage,
  EngineChatRequest,
  EngineChoice,
  ResponseFormat,
  Role,
  TokenLogprob,
  ToolCall,
  ToolChoice,
  ToolDefinition,
  Usage,
} from './engine.js';
import { type ChatInput, type ChatInputMessage, LIMITS, ROLE_ALIASES, ROLES } from './inference-types.js';
import { countTextTokens, truncateTextTokens } from './tokenizer.js';
import { UNPAIRED_SURROGATE } from '../text.js';

/** OpenAI's rule for function and schema names. */
const NAME_RE = /^[a-zA-Z0-9_-]{1,64}$/;

const invalid = (param: string, message: string) => new DomainError('invalid_value', message, { param });

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function toolCallsOf(calls: NonNullable<ChatInputMessage['toolCalls']>, i: number): ToolCall[] {
  return calls.map((c, j) => {
    const param = `messages[${i}].tool_calls[${j}]`;
    if (!isObject(c) || typeof c.id !== 'string' || c.id.length === 0)
      throw invalid(`${param}.id`, `'${param}.id' must be a non-empty string.`);
    // Left out (null from a door that maps an absent field so) is the only kind there is: 'function'.
    if (c.type != null && c.type !== 'function')
      throw invalid(`${param}.type`, `'${param}.type' must be 'function'; got '${String(c.type).slice(0, 40)}'.`);
    const fn = c.function;
    if (!isObject(fn) || typeof fn.name !== 'string' || fn.name.length === 0)
      throw invalid(`${param}.function.name`, `'${param}.function.name' must be a non-empty string.`);
    if (typeof fn.arguments !== 'string')
      throw invalid(`${param}.function.arguments`, `'${param}.function.arguments' must be a string (the arguments' JSON).`);
    return { id: c.id, type: 'function', function: { name: fn.name, arguments: fn.arguments } };
  });
}

/** The request's `user` (an end-user id, stored with the usage event): at most LIMITS.maxUserLength characters of text. */
export function checkUser(user: string | null | undefined) {
  if (user && user.length > LIMITS.maxUserLength)
    throw new DomainError('invalid_value', `'user' takes at most ${LIMITS.maxUserLength} characters; got ${user.length}.`, {
      param: 'user',
    });
  // Stored as text on both databases: a lone surrogate or a NUL is not text PostgreSQL takes.
  if (user && (UNPAIRED_SURROGATE.test(user) || user.includes('\0')))
    throw new DomainError('invalid_value', "'user' must be text without NUL characters or unpaired surrogates.", { param: 'user' });
}

/** A message's `name`, as OpenAI takes it. */
const NAME = /^[^\s<|\\/>]{1,64}$/;

/** The conversation as the engine takes it: roles resolved, tool calls and results checked. */
export function chatMessages(input: ChatInputMessage[]): ChatMessage[] {
  if (!Array.isArray(input) || input.length === 0) throw invalid('messages', "'messages' must be a non-empty array.");
  return input.map((m, i) => {
    const role = ROLE_ALIASES[m.role] ?? m.role;
    if (!ROLES.includes(role as Role)) {
      throw invalid(
        `messages[${i}].role`,
        `'messages[${i}].role' must be one of system (or developer), user, assistant, tool; got '${String(m.role).slice(0, 40)}'.`,
      );
    }
    const toolCalls = m.toolCalls && m.toolCalls.length > 0 ? m.toolCalls : undefined;
    if (toolCalls && role !== 'assistant')
      throw invalid(`messages[${i}].tool_calls`, `'messages[${i}].tool_calls' is only allowed on assistant messages.`);
    const content = m.content ?? null;
    if (content === null && !toolCalls) {
      throw invalid(
        `messages[${i}].content`,
        `'messages[${i}].content' is required (it may be null only on an assistant message with tool_calls).`,
      );
    }
    const message: ChatMessage = { role: role as Role, content: content ?? '' };
    if (toolCalls) message.toolCalls = toolCallsOf(toolCalls, i);
    if (role === 'tool') {
      if (typeof m.toolCallId !== 'string' || m.toolCallId.length === 0)
        throw invalid(
          `messages[${i}].tool_call_id`,
          `'messages[${i}].tool_call_id' is required on a tool message: the id of the call it answers.`,
        );
      message.toolCallId = m.toolCallId;
    }
    if (m.name !== null && m.name !== undefined) {
      if (!NAME.test(m.name))
        throw invalid(
          `messages[${i}].name`,
          `'messages[${i}].name' must be 1 to 64 characters without whitespace nor < | \\ / > (as OpenAI takes it); got '${m.name.slice(0, 64)}'.`,
        );
      message.name = m.name;
    }
    return message;
  });
}

/** The deepest a tool's parameters or a response format's schema may nest (objects and arrays). */
export const MAX_SCHEMA_DEPTH = 64;

/**
 * Whether `value` (parsed JSON) nests at most `max` levels of objects and arrays, walked without
 * recursion: a schema nested thousands deep would overflow the stack of whatever reads it next
 * (the tokenizer's and the upstream request's JSON.stringify) and hold the event loop meanwhile.
 */
export function nestsWithin(value: unknown, max: number): boolean {
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (typeof v !== 'object' || v === null) continue;
    if (depth > max) return false;
    for (const child of Array.isArray(v) ? v : Object.values(v))
      if (typeof child === 'object' && child !== null) stack.push([child, depth + 1]);
  }
  return true;
}

function schemaWithin(schema: unknown, param: string): void {
  if (!nestsWithin(schema, MAX_SCHEMA_DEPTH))
    throw invalid(param, `'${param}' nests deeper than ${MAX_SCHEMA_DEPTH} levels of objects and arrays.`);
}

function toolsOf(input: NonNullable<ChatInput['tools']>): ToolDefinition[] {
  if (input.length > LIMITS.maxTools) throw invalid('tools', `'tools' takes at most ${LIMITS.maxTools} tools; got ${input.length}.`);
  const names = new Set<string>();
  return input.map((t, i) => {
    if (t.type !== 'function')
      throw invalid(`tools[${i}].type`, `'tools[${i}].type' must be 'function'; got '${String(t.type).slice(0, 40)}'.`);
    const fn = t.function;
    if (!isObject(fn) || typeof fn.name !== 'string' || !NAME_RE.test(fn.name)) {
      throw invalid(`tools[${i}].function.name`, `'tools[${i}].function.name' must be 1 to 64 letters, digits, underscores or dashes.`);
    }
    if (names.has(fn.name)) throw invalid(`tools[${i}].function.name`, `'tools' names the function '${fn.name}' twice.`);
    names.add(fn.name);
    if (fn.parameters !== null && fn.parameters !== undefined && !isObject(fn.parameters)) {
      throw invalid(`tools[${i}].function.parameters`, `'tools[${i}].function.parameters' must be a JSON Schema object.`);
    }
    schemaWithin(fn.parameters, `tools[${i}].function.parameters`);
    const out: ToolDefinition = { type: 'function', function: { name: fn.name } };
    if (typeof fn.description === 'string') out.function.description = fn.description;
    if (isObject(fn.parameters)) out.function.parameters = fn.parameters;
    if (typeof fn.strict === 'boolean') out.function.strict = fn.strict;
    return out;
  });
}

function toolChoiceOf(input: ChatInput['toolChoice'], tools: ToolDefinition[] | undefined): ToolChoice | undefined {
  if (input === null || input === undefined) return undefined;
  if (typeof input === 'string') {
    if (input !== 'auto' && input !== 'none' && input !== 'required') {
      throw invalid('tool_choice', `'tool_choice' must be 'auto', 'none', 'required' or a named function; got '${input.slice(0, 40)}'.`);
    }
    if (!tools && input !== 'none') throw invalid('tool_choice', `'tool_choice' '${input}' needs 'tools'.`);
    return input;
  }
  const name = isObject(input) && isObject(input.function) ? input.function.name : undefined;
  if (!isObject(input) || (input.type !== undefined && input.type !== 'function') || typeof name !== 'string') {
    throw invalid('tool_choice', "'tool_choice' must be 'auto', 'none', 'required' or {type: 'function', function: {name}}.");
  }
  if (!tools?.some((t) => t.function.name === name)) {
    throw invalid('tool_choice', `'tool_choice' names the function '${name.slice(0, 64)}', which is not among 'tools'.`);
  }
  return { type: 'function', function: { name } };
}

function responseFormatOf(input: ChatInput['responseFormat']): ResponseFormat | undefined {
  if (input === null || input === undefined) return undefined;
  switch (input.type) {
    case 'text':
      return undefined;
    case 'json_object':
      return { type: 'json_object' };
    case 'json_schema': {
      const js = input.jsonSchema;
      if (!isObject(js))
        throw invalid('response_format.json_schema', "'response_format.json_schema' is required when its type is 'json_schema'.");
      if (typeof js.name !== 'string' || !NAME_RE.test(js.name)) {
        throw invalid(
          'response_format.json_schema.name',
          "'response_format.json_schema.name' must be 1 to 64 letters, digits, underscores or dashes.",
        );
      }
      if (js.schema !== null && js.schema !== undefined && !isObject(js.schema)) {
        throw invalid('response_format.json_schema.schema', "'response_format.json_schema.schema' must be a JSON Schema object.");
      }
      schemaWithin(js.schema, 'response_format.json_schema.schema');
      const out: ResponseFormat = { type: 'json_schema', jsonSchema: { name: js.name } };
      if (typeof js.description === 'string') out.jsonSchema.description = js.description;
      if (isObject(js.schema)) out.jsonSchema.schema = js.schema;
      if (typeof js.strict === 'boolean') out.jsonSchema.strict = js.strict;
      return out;
    }
    default:
      throw invalid(
        'response_format.type',
        `'response_format.type' must be 'text', 'json_object' or 'json_schema'; got '${String(input.type).slice(0, 40)}'.`,
      );
  }
}

export type ChatOptions = Pick<
  EngineChatRequest,
  | 'tools'
  | 'toolChoice'
  | 'parallelToolCalls'
  | 'responseFormat'
  | 'seed'
  | 'n'
  | 'logprobs'
  | 'topLogprobs'
  | 'reasoningEffort'
  | 'topK'
  | 'minP'
  | 'repetitionPenalty'
  | 'chatTemplateKwargs'
>;

/** OpenAI's values of `reasoning_effort`; the upstream decides what its model makes of each. */
export const REASONING_EFFORTS = ['none', 'minimal', 'low', 'medium', 'high', 'xhigh'] as const;

/** The request's tools, output format, seed, choices and log-probabilities, checked. */
export function chatOptions(input: ChatInput, model: ChatModelConfig, maxChoices: number): ChatOptions {
  const out: ChatOptions = {};
  if (input.tools && input.tools.length > 0) {
    if (!model.capabilities.function_calling) {
      throw new DomainError(
        'unsupported_parameter',
        `'tools' is not supported: the model '${model.id}' does not support function calling.`,
        {
          param: 'tools',
        },
      );
    }
    out.tools = toolsOf(input.tools);
  }
  out.toolChoice = toolChoiceOf(input.toolChoice, out.tools);
  // Without tools, 'none' asks for what happens anyway.
  if (!out.tools) out.toolChoice = undefined;
  if (input.parallelToolCalls !== null && input.parallelToolCalls !== undefined && out.tools)
    out.parallelToolCalls = input.parallelToolCalls;
  out.responseFormat = responseFormatOf(input.responseFormat);
  if (input.seed !== null && input.seed !== undefined) {
    if (!Number.isSafeInteger(input.seed)) throw invalid('seed', `'seed' must be an integer; got ${input.seed}.`);
    out.seed = input.seed;
  }
  if (input.n !== null && input.n !== undefined) {
    if (!Number.isInteger(input.n) || input.n < 1 || input.n > maxChoices) {
      throw invalid('n', `'n' must be an integer from 1 to ${maxChoices} (this server's most choices per request); got ${input.n}.`);
    }
    if (input.n > 1) out.n = input.n;
  }
  if (input.logprobs) out.logprobs = true;
  if (input.topLogprobs !== null && input.topLogprobs !== undefined) {
    if (!Number.isInteger(input.topLogprobs) || input.topLogprobs < 0 || input.topLogprobs > LIMITS.maxTopLogprobs) {
      throw invalid('top_logprobs', `'top_logprobs' must be an integer from 0 to ${LIMITS.maxTopLogprobs}; got ${input.topLogprobs}.`);
    }
    // 0 alternatives asks for nothing, with log-probabilities or without.
    if (!out.logprobs && input.topLogprobs > 0) throw invalid('top_logprobs', "'top_logprobs' needs 'logprobs': true.");
    if (out.logprobs) out.topLogprobs = input.topLogprobs;
  }
  if (input.reasoningEffort !== null && input.reasoningEffort !== undefined) {
    if (!(REASONING_EFFORTS as readonly string[]).includes(input.reasoningEffort))
      throw invalid(
        'reasoning_effort',
        `'reasoning_effort' must be one of ${REASONING_EFFORTS.join(', ')}; got '${String(input.reasoningEffort).slice(0, 40)}'.`,
      );
    out.reasoningEffort = input.reasoningEffort;
  }
  Object.assign(out, samplingExtras(input));
  return out;
}

/** The highest `repetition_penalty` taken (vLLM takes any positive value; past 2 answers fall apart). */
export const MAX_REPETITION_PENALTY = 2;

/**
 * The sampling parameters of self-hosted servers beyond OpenAI's (vLLM's, llama.cpp's, SGLang's
 * names): `top_k`, `min_p`, `repetition_penalty`, and `chat_template_kwargs` for the upstream's chat
 * template. A value that asks for nothing (top_k 0 or -1, min_p 0, repetition_penalty 1, an empty
 * object) is dropped, so clients that always send their defaults reach every engine.
 */
function samplingExtras(input: ChatInput): Pick<ChatOptions, 'topK' | 'minP' | 'repetitionPenalty' | 'chatTemplateKwargs'> {
  const out: Pick<ChatOptions, 'topK' | 'minP' | 'repetitionPenalty' | 'chatTemplateKwargs'> = {};
  const { topK, minP, repetitionPenalty: penalty, chatTemplateKwargs: kwargs } = input;
  if (topK !== null && topK !== undefined) {
    if (!Number.isSafeInteger(topK) || topK < -1)
      throw invalid('top_k', `'top_k' must be a whole number of tokens (0 or -1: no limit); got ${topK}.`);
    if (topK > 0) out.topK = topK;
  }
  if (minP !== null && minP !== undefined) {
    if (!Number.isFinite(minP) || minP < 0 || minP > 1) throw invalid('min_p', `'min_p' must be a number from 0 to 1; got ${minP}.`);
    if (minP > 0) out.minP = minP;
  }
  if (penalty !== null && penalty !== undefined) {
    if (!Number.isFinite(penalty) || penalty <= 0 || penalty > MAX_REPETITION_PENALTY)
      throw invalid(
        'repetition_penalty',
        `'repetition_penalty' must be a number above 0 and at most ${MAX_REPETITION_PENALTY} (1: no penalty); got ${penalty}.`,
      );
    if (penalty !== 1) out.repetitionPenalty = penalty;
  }
  if (kwargs !== null && kwargs !== undefined) {
    if (!isObject(kwargs))
      throw invalid('chat_template_kwargs', "'chat_template_kwargs' must be an object of the chat template's variables.");
    if (!nestsWithin(kwargs, MAX_SCHEMA_DEPTH))
      throw invalid('chat_template_kwargs', `'chat_template_kwargs' nests deeper than ${MAX_SCHEMA_DEPTH} levels of objects and arrays.`);
    if (Object.keys(kwargs).length > 0) out.chatTemplateKwargs = kwargs;
  }
  return out;
}

/** Refuses (400 unsupported_parameter) what the model's engine cannot do with this request. */
export function refuseUnsupported(
  engine: { unsupported?(req: EngineChatRequest): { param: string; reason: string } | undefined },
  req: EngineChatRequest,
  modelId: string,
) {
  const refusal = engine.unsupported?.(req);
  if (refusal) {
    throw new DomainError('unsupported_parameter', `'${refusal.param}' is not supported by the model '${modelId}': ${refusal.reason}.`, {
      param: refusal.param,
    });
  }
}

/** Everything a choice delivered that costs output tokens: its text and its tool calls. */
export function outputText(choice: { content: string; toolCalls?: ToolCall[] }): string {
  if (!choice.toolCalls?.length) return choice.content;
  let text = choice.content;
  for (const c of choice.toolCalls) text += c.function.name + c.function.arguments;
  return text;
}

/**
 * A choice of an answer that went on past max_tokens (an upstream that ignores it) cut to its
 * first `maxTokens` tokens, as a model that stopped there would have answered: the reasoning first,
 * then the content, then each tool call's name and arguments in what is left (a call whose name
 * does not fit is left out, arguments are cut as a stream cut there would have sent them), with
 * finish reason `length` when anything was cut.
 */
export function withinMaxTokens(choice: EngineChoice, maxTokens: number): EngineChoice {
  const reasoning = choice.reasoning ? truncateTextTokens(choice.reasoning, maxTokens) : '';
  let left = maxTokens - (reasoning ? countTextTokens(reasoning) : 0);
  const content = left > 0 ? truncateTextTokens(choice.content, left) : '';
  let toolCalls = choice.toolCalls;
  let callsCut = false;
  if (toolCalls?.length) {
    left -= content ? countTextTokens(content) : 0;
    const kept: ToolCall[] = [];
    for (const call of toolCalls) {
      const name = countTextTokens(call.function.name);
      if (name > left) {
        callsCut = true;
        break;
      }
      left -= name;
      const args = truncateTextTokens(call.function.arguments, Math.max(0, left));
      left -= countTextTokens(args);
      if (args === call.function.arguments) kept.push(call);
      else {
        kept.push({ ...call, function: { ...call.function, arguments: args } });
        callsCut = true;
        break;
      }
    }
    toolCalls = kept;
  }
  if (content === choice.content && reasoning === (choice.reasoning ?? '') && !callsCut) return choice;
  const cut: EngineChoice = { ...choice, content, finishReason: 'length' };
  if (reasoning) cut.reasoning = reasoning;
  else delete cut.reasoning;
  if (toolCalls?.length) cut.toolCalls = toolCalls;
  else delete cut.toolCalls;
  if (choice.logprobs) cut.logprobs = logprobsWithin(choice.logprobs, content.length);
  return cut;
}

/**
 * `usage` with at most `cap` completion tokens (an engine's count of the whole answer): a count of
 * the part of an answer that was sent never bills more than the whole.
 */
export function completionAtMost(usage: Usage, cap: number): Usage {
  if (usage.completionTokens <= cap) return usage;
  return { promptTokens: usage.promptTokens, completionTokens: cap, totalTokens: usage.promptTokens + cap };
}

/** The log-probabilities of the tokens that make up the first `chars` characters. */
export function logprobsWithin(logprobs: TokenLogprob[] | undefined, chars: number): TokenLogprob[] | undefined {
  if (!logprobs) return undefined;
  let used = 0;
  let i = 0;
  while (i < logprobs.length && used + logprobs[i]!.token.length <= chars) used += logprobs[i++]!.token.length;
  return logprobs.slice(0, i);
}
