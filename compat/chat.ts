// POST /v1/chat/completions → Mutation.createChatCompletion, or with `stream: true` the
// Subscription.chatCompletionStream as SSE.
import type { Request, Response } from 'express';
import { z } from 'zod';
import { DomainError } from '../src/domain/errors.js';
import type { ChatCompletionInput, ChatCompletionStreamSubscription, CreateChatCompletionMutation } from '../src/generated/graphql.js';
import { type ContentPart, contentPart, optionalInt, optionalNumber, parseBody, partTexts, stringOrList, toList } from './body.js';
import type { GraphQLContext } from '../src/graphql/context.js';
import { documents, eventDocument, run, stream } from './operations.js';
import { sendSse } from './sse.js';
import { deprecationHeaders, setHeaders, usageWire } from './wire.js';
import type { CompatDoor } from './door.js';

// OpenAI clients may send content as a list of parts; this server takes text parts only, and
// refuses any other (image_url, input_audio, file, …) by its type rather than dropping it.
const content = z.union([z.string(), z.array(contentPart)]);

// A schema's shape (an object, how deep) is the domain's rule, with its message; so is the format's type.
const jsonSchema = z.unknown();
const toolCall = z
  .object({
    id: z.string(),
    type: z.literal('function').optional(),
    function: z.object({ name: z.string(), arguments: z.string() }).loose(),
  })
  .loose();
const tool = z
  .object({
    type: z.literal('function'),
    function: z
      .object({ name: z.string(), description: z.string().nullish(), parameters: jsonSchema.nullish(), strict: z.boolean().nullish() })
      .loose(),
  })
  .loose();
const namedFunction = z.object({ type: z.literal('function'), function: z.object({ name: z.string() }).loose() }).loose();
// OpenAI's newer form: the model may call only these of the tools, freely (auto) or surely (required).
const allowedTools = z
  .object({
    type: z.literal('allowed_tools'),
    allowed_tools: z.object({ mode: z.enum(['auto', 'required']), tools: z.array(namedFunction).min(1) }).loose(),
  })
  .loose();
const toolChoice = z.union([
  z.enum(['auto', 'none', 'required']),
  namedFunction,
  allowedTools,
  // Any other kind (a custom tool's, say) gets a message naming it, not a type error.
  z.object({ type: z.string() }).loose(),
]);
const responseFormat = z
  .object({
    type: z.string(),
    json_schema: z
      .object({ name: z.string(), description: z.string().nullish(), schema: jsonSchema.optional(), strict: z.boolean().nullish() })
      .loose()
      .nullish(),
  })
  .loose();

function textOf(parts: ContentPart[], i: number, role: string): string {
  if (parts.length === 0) {
    throw new DomainError('invalid_value', `'messages[${i}].content' is an empty list: send at least one part, or a string.`, {
      param: `messages[${i}].content`,
    });
  }
  // An assistant's refusal in the history, as OpenAI returns it: its text is what was said.
  const refusal = (p: ContentPart) =>
    p.type === 'refusal' && role === 'assistant' && typeof p.refusal === 'string' ? p.refusal : undefined;
  // Parts on lines of their own, as vLLM joins them (and tollgate's moderation): glued together,
  // "Here is the file:" and the file's first line would run into one.
  return partTexts(parts, `messages[${i}].content`, ", which this server cannot take: content parts must be of type 'text'.", refusal).join(
    '\n',
  );
}

export const body = z
  .object({
    model: z.string(),
    messages: z.array(
      z
        .object({
          role: z.string(),
          content: content.nullish(),
          tool_calls: z.array(toolCall).nullish(),
          tool_call_id: z.string().nullish(),
          name: z.string().nullish(),
          /** An assistant's refusal in the history, as OpenAI returns it (`content` null). */
          refusal: z.string().nullish(),
        })
        .loose(),
    ),
    stream: z.boolean().nullish(),
    stream_options: z.object({ include_usage: z.boolean().nullish() }).loose().nullish(),
    max_tokens: optionalInt,
    max_completion_tokens: optionalInt,
    temperature: optionalNumber,
    top_p: optionalNumber,
    stop: stringOrList.nullish(),
    presence_penalty: optionalNumber,
    frequency_penalty: optionalNumber,
    user: z.string().nullish(),
    /** OpenAI's newer name for `user` (the end user, for usage reports and abuse detection). */
    safety_identifier: z.string().nullish(),
    n: optionalInt,
    tools: z.array(tool).nullish(),
    tool_choice: toolChoice.nullish(),
    parallel_tool_calls: z.boolean().nullish(),
    response_format: responseFormat.nullish(),
    seed: z.number().int().nullish(),
    logprobs: z.boolean().nullish(),
    top_logprobs: optionalInt,
    reasoning_effort: z.string().nullish(),
    top_k: optionalInt,
    min_p: z.number().nullish(),
    repetition_penalty: z.number().nullish(),
    chat_template_kwargs: z.record(z.string(), z.unknown()).nullish(),
    functions: z.array(z.unknown()).nullish(),
    function_call: z.unknown().optional(),
  })
  .loose();
type Body = z.infer<typeof body>;

/**
 * OpenAI fields this server does not serve and that would change the answer if ignored: refused
 * (400 unsupported_parameter) when they ask for anything, accepted when they ask for nothing
 * (`logit_bias: {}`, `modalities: ["text"]`), so clients that always send their defaults work.
 */
const UNSERVED: readonly [param: string, asksForNothing: (v: unknown) => boolean, why: string][] = [
  ['logit_bias', (v) => typeof v === 'object' && v !== null && Object.keys(v).length === 0, 'token biases are not applied by this server'],
  ['modalities', (v) => Array.isArray(v) && v.every((m) => m === 'text'), 'answers are text only'],
  ['audio', () => false, 'answers are text only'],
  ['web_search_options', () => false, 'this server does not search the web'],
  // The deprecated forerunners of tools and tool_choice, pointing at their successors.
  ['functions', (v) => Array.isArray(v) && v.length === 0, "it is deprecated; send 'tools' instead"],
  ['function_call', (v) => v === 'none', "it is deprecated; send 'tool_choice' instead"],
];

/** Fields we ignore would silently change the result: refuse them instead. */
function refuseUnsupported(b: Body) {
  const given = b as Record<string, unknown>;
  for (const [param, asksForNothing, why] of UNSERVED) {
    const value = given[param];
    if (value === undefined || value === null || asksForNothing(value)) continue;
    throw new DomainError('unsupported_parameter', `'${param}' is not supported: ${why}.`, { param });
  }
}

/** The end user: `user`, or OpenAI's newer `safety_identifier`; two different values are refused. */
function endUserOf(b: Body): string | null {
  const { user, safety_identifier: id } = b;
  if (user != null && id != null && user !== id) {
    throw new DomainError('invalid_value', "'user' and 'safety_identifier' name the end user twice, differently: send one of them.", {
      param: 'safety_identifier',
    });
  }
  return user ?? id ?? null;
}

function toInput(b: Body): ChatCompletionInput {
  const choice = readToolChoice(b.tool_choice);
  // Both names of the output limit: they may come together (clients that send both for older
  // servers), but not disagree.
  if (b.max_tokens !== null && b.max_tokens !== undefined && b.max_completion_tokens != null && b.max_tokens !== b.max_completion_tokens) {
    throw new DomainError(
      'invalid_value',
      "'max_tokens' and 'max_completion_tokens' are two names for one limit: send one, or the same value in both.",
      {
        param: 'max_completion_tokens',
      },
    );
  }
  return {
    model: b.model,
    messages: b.messages.map((m, i) => ({
      role: m.role,
      content:
        m.content === null || m.content === undefined
          ? // What an assistant refused with is what it said.
            m.role === 'assistant' && typeof m.refusal === 'string'
            ? m.refusal
            : null
          : typeof m.content === 'string'
            ? m.content
            : textOf(m.content, i, m.role),
      toolCalls: m.tool_calls?.map(toolCallInput) ?? null,
      toolCallId: m.tool_call_id ?? null,
      name: m.name ?? null,
    })),
    maxTokens: b.max_tokens ?? b.max_completion_tokens ?? null,
    temperature: b.temperature ?? null,
    topP: b.top_p ?? null,
    stop: b.stop === null || b.stop === undefined ? null : toList(b.stop),
    presencePenalty: b.presence_penalty ?? null,
    frequencyPenalty: b.frequency_penalty ?? null,
    user: endUserOf(b),
    tools:
      toolsOf(b, choice.allowed)?.map((t) => ({
        type: t.type,
        function: {
          name: t.function.name,
          description: t.function.description ?? null,
          parameters: t.function.parameters ?? null,
          strict: t.function.strict ?? null,
        },
      })) ?? null,
    toolChoice: choice.input,
    parallelToolCalls: b.parallel_tool_calls ?? null,
    responseFormat: b.response_format
      ? {
          type: b.response_format.type,
          jsonSchema:
            b.response_format.type === 'json_schema' && b.response_format.json_schema ? jsonSchemaOf(b.response_format.json_schema) : null,
        }
      : null,
    seed: b.seed ?? null,
    n: b.n ?? null,
    logprobs: b.logprobs ?? null,
    reasoningEffort: b.reasoning_effort ?? null,
    topK: b.top_k ?? null,
    minP: b.min_p ?? null,
    repetitionPenalty: b.repetition_penalty ?? null,
    chatTemplateKwargs: b.chat_template_kwargs ?? null,
    topLogprobs: b.top_logprobs ?? null,
  };
}

/** The tool choice as GraphQL takes it, and with `allowed_tools` the names the model may call. */
const NO_TOOL_CHOICE = { input: null, allowed: null } as const;

function readToolChoice(choice: Body['tool_choice']): { input: ChatCompletionInput['toolChoice']; allowed: string[] | null } {
  if (choice === null || choice === undefined) return NO_TOOL_CHOICE;
  if (typeof choice === 'string') return { input: { mode: choice }, allowed: null };
  const named = namedFunction.safeParse(choice);
  if (named.success) return { input: { functionName: named.data.function.name }, allowed: null };
  const allowed = allowedTools.safeParse(choice);
  if (allowed.success) {
    const { mode, tools } = allowed.data.allowed_tools;
    return { input: { mode }, allowed: tools.map((t) => t.function.name) };
  }
  const shapes: Record<string, string> = {
    function: '{"type":"function","function":{"name":…}}',
    allowed_tools:
      '{"type":"allowed_tools","allowed_tools":{"mode":"auto" or "required","tools":[{"type":"function","function":{"name":…}},…]}}',
  };
  const shape = Object.hasOwn(shapes, choice.type) ? shapes[choice.type] : undefined;
  if (shape)
    throw new DomainError('invalid_value', `Invalid value for 'tool_choice': a choice of type '${choice.type}' is ${shape}.`, {
      param: 'tool_choice',
    });
  throw new DomainError(
    'unsupported_parameter',
    `'tool_choice' of type '${choice.type.slice(0, 40)}' is not supported: send 'auto', 'none', 'required', ${shapes.function} or allowed_tools.`,
    { param: 'tool_choice' },
  );
}

/** The tools the model may call: with `allowed_tools`, those it names (each must be one of `tools`). */
function toolsOf(b: Body, allowed: string[] | null): Body['tools'] {
  if (!allowed) return b.tools;
  for (const [i, name] of allowed.entries()) {
    if (!b.tools?.some((tool) => tool.function.name === name)) {
      throw new DomainError(
        'invalid_value',
        `'tool_choice.allowed_tools.tools[${i}]' names '${name.slice(0, 64)}', which is not among 'tools'.`,
        {
          param: `tool_choice.allowed_tools.tools[${i}].function.name`,
        },
      );
    }
  }
  return b.tools!.filter((t) => allowed.includes(t.function.name));
}

/**
 * A tool call of the history, by the fields it has in a request: anything else (the `index` a
 * client keeps from the streamed pieces it assembled, a vendor's extra key) is left out, as a
 * message's unknown keys are.
 */
const toolCallInput = (c: z.infer<typeof toolCall>) => ({
  id: c.id,
  type: c.type ?? null,
  function: { name: c.function.name, arguments: c.function.arguments },
});

const jsonSchemaOf = (s: { name: string; description?: string | null; schema?: unknown; strict?: boolean | null }) => ({
  name: s.name,
  description: s.description ?? null,
  schema: s.schema ?? null,
  strict: s.strict ?? null,
});

type Logprobs = Completion['choices'][number]['logprobs'];

/** OpenAI's `logprobs` object of a choice: null unless the client asked for them. */
const logprobsWire = (l: Logprobs | undefined) =>
  l
    ? {
        content: l.map((t) => ({
          token: t.token,
          logprob: t.logprob,
          bytes: t.bytes ?? null,
          top_logprobs: t.topLogprobs.map((a) => ({ token: a.token, logprob: a.logprob, bytes: a.bytes ?? null })),
        })),
        refusal: null,
      }
    : null;

type Completion = CreateChatCompletionMutation['createChatCompletion'];
type Chunk = ChatCompletionStreamSubscription['chatCompletionStream'];

const completionWire = (c: Completion) => ({
  id: c.id,
  object: 'chat.completion',
  created: c.created,
  model: c.model,
  choices: c.choices.map((ch) => ({
    index: ch.index,
    message: {
      role: ch.message.role,
      content: ch.message.content ?? null,
      // Only from a reasoning model: other answers stay as OpenAI's.
      ...(ch.message.reasoningContent ? { reasoning_content: ch.message.reasoningContent } : {}),
      refusal: ch.message.refusal ?? null,
      ...(ch.message.toolCalls?.length
        ? {
            tool_calls: ch.message.toolCalls.map((c) => ({
              id: c.id,
              type: c.type,
              function: { name: c.function.name, arguments: c.function.arguments },
            })),
          }
        : {}),
    },
    logprobs: logprobsWire(ch.logprobs),
    finish_reason: ch.finishReason,
  })),
  usage: usageWire(c.usage),
});

function chunkWire(c: Chunk, includeUsage: boolean) {
  const head = { id: c.id, object: 'chat.completion.chunk', created: c.created, model: c.model };
  if (c.choices.length === 0) return includeUsage && c.usage ? { ...head, choices: [], usage: usageWire(c.usage) } : undefined;
  return {
    ...head,
    choices: c.choices.map((ch) => {
      const delta: Record<string, unknown> = {};
      if (ch.delta.role) delta.role = ch.delta.role;
      if (ch.delta.content !== null && ch.delta.content !== undefined && (ch.delta.content !== '' || ch.delta.role))
        delta.content = ch.delta.content;
      // The role chunk of a call that may be a tool call: `content: null`, as OpenAI's.
      else if (ch.delta.role) delta.content = null;
      if (ch.delta.reasoningContent) delta.reasoning_content = ch.delta.reasoningContent;
      if (ch.delta.refusal) delta.refusal = ch.delta.refusal;
      if (ch.delta.toolCalls?.length) {
        delta.tool_calls = ch.delta.toolCalls.map((c) => {
          const fn: Record<string, string> = {};
          if (c.function.name !== null && c.function.name !== undefined) fn.name = c.function.name;
          fn.arguments = c.function.arguments;
          return { index: c.index, ...(c.id ? { id: c.id, type: c.type ?? 'function' } : {}), function: fn };
        });
      }
      return { index: ch.index, delta, logprobs: logprobsWire(ch.logprobs), finish_reason: ch.finishReason ?? null };
    }),
    ...(includeUsage ? { usage: null } : {}),
  };
}

/**
 * What each chunk of a stream is executed with (./operations.ts eventDocument): the chunk's fields
 * take nothing from the input, so it is written in as the smallest valid literal.
 */
const CHUNK_DOCUMENT = eventDocument(documents.chatCompletionStream, { input: { model: '', messages: [] } });

export function chatCompletions(door: CompatDoor, log: (req: Request, err: unknown) => void) {
  return async (req: Request, res: Response, ctx: GraphQLContext) => {
    const b = parseBody(req, body);
    refuseUnsupported(b);
    const variables = { input: toInput(b) };
    const headers = deprecationHeaders(door.model(b.model));
    if (b.stream) {
      const includeUsage = b.stream_options?.include_usage === true;
      const events = stream(documents.chatCompletionStream, variables, ctx, CHUNK_DOCUMENT);
      await sendSse(res, events, (e) => chunkWire(e.chatCompletionStream, includeUsage), {
        headers,
        log: (err) => log(req, err),
        stalledMs: door.stalledClientMs,
        onStalled: () => door.stalled(req),
      });
      return;
    }
    const data = await run(documents.createChatCompletion, variables, ctx);
    setHeaders(res, headers);
    res.json(completionWire(data.createChatCompletion));
  };
}
