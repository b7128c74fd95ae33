// POST /v1/chat/completions → Mutation.createChatCompletion, or with `stream: true` the
// Subscription.chatCompletionStream as SSE.
import type { Request, Response } from 'express';
import { z } from 'zod';
import { DomainError } from '../src/domain/errors.js';
import type { ChatCompletionInput, ChatCompletionStreamSubscription, CreateChatCompletionMutation } from '../src/generated/graphql.js';
import { optionalInt, optionalNumber, parseBody, stringOrList, toList } from './body.js';
import type { GraphQLContext } from '../src/graphql/context.js';
import { documents, run, stream } from './operations.js';
import { sendSse } from './sse.js';
import { deprecationHeaders, setHeaders, usageWire } from './wire.js';
import type { CompatDoor } from './door.js';

// OpenAI clients may send content as a list of parts; this server takes text parts only, and
// refuses any other (image_url, input_audio, file, …) by its type rather than dropping it.
const part = z.object({ type: z.string(), text: z.unknown().optional() }).loose();
const content = z.union([z.string(), z.array(part)]);

function textOf(parts: z.infer<typeof part>[], i: number): string {
  return parts
    .map((p, j) => {
      if (p.type !== 'text') {
        throw new DomainError(
          'invalid_value',
          `'messages[${i}].content[${j}]' is a part of type '${p.type.slice(0, 40)}', which this server cannot take: content parts must be of type 'text'.`,
          {
            param: `messages[${i}].content[${j}].type`,
          },
        );
      }
      if (typeof p.text !== 'string') {
        throw new DomainError('invalid_type', `'messages[${i}].content[${j}].text' must be a string.`, {
          param: `messages[${i}].content[${j}].text`,
        });
      }
      return p.text;
    })
    .join('');
}

export const body = z
  .object({
    model: z.string(),
    messages: z.array(z.object({ role: z.string(), content }).loose()),
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
    n: optionalInt,
    tools: z.array(z.unknown()).nullish(),
    functions: z.array(z.unknown()).nullish(),
  })
  .loose();
type Body = z.infer<typeof body>;

/** Fields we ignore would silently change the result: refuse them instead. */
function refuseUnsupported(b: Body, door: CompatDoor) {
  if (b.n !== null && b.n !== undefined && b.n !== 1) {
    throw new DomainError('unsupported_parameter', `'n' = ${b.n} is not supported: this server returns one choice per request.`, {
      param: 'n',
    });
  }
  for (const param of ['tools', 'functions'] as const) {
    if (b[param] && b[param]!.length > 0) {
      const why =
        door.model(b.model)?.functionCalling === false
          ? `the model '${b.model}' does not support function calling`
          : 'tool calling is not supported by this server yet';
      throw new DomainError('unsupported_parameter', `'${param}' is not supported: ${why}.`, { param });
    }
  }
}

function toInput(b: Body): ChatCompletionInput {
  return {
    model: b.model,
    messages: b.messages.map((m, i) => ({ role: m.role, content: typeof m.content === 'string' ? m.content : textOf(m.content, i) })),
    maxTokens: b.max_tokens ?? b.max_completion_tokens ?? null,
    temperature: b.temperature ?? null,
    topP: b.top_p ?? null,
    stop: b.stop === null || b.stop === undefined ? null : toList(b.stop),
    presencePenalty: b.presence_penalty ?? null,
    frequencyPenalty: b.frequency_penalty ?? null,
    user: b.user ?? null,
  };
}

type Completion = CreateChatCompletionMutation['createChatCompletion'];
type Chunk = ChatCompletionStreamSubscription['chatCompletionStream'];

const completionWire = (c: Completion) => ({
  id: c.id,
  object: 'chat.completion',
  created: c.created,
  model: c.model,
  choices: c.choices.map((ch) => ({
    index: ch.index,
    message: { role: ch.message.role, content: ch.message.content, refusal: null },
    logprobs: null,
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
      const delta: Record<string, string> = {};
      if (ch.delta.role) delta.role = ch.delta.role;
      if (ch.delta.content !== null && ch.delta.content !== undefined && (ch.delta.content !== '' || ch.delta.role))
        delta.content = ch.delta.content;
      return { index: ch.index, delta, logprobs: null, finish_reason: ch.finishReason ?? null };
    }),
    ...(includeUsage ? { usage: null } : {}),
  };
}

/** What each chunk of a stream is executed with (./operations.ts stream): its fields take no arguments. */
const CHUNK_VARIABLES = { input: { model: '', messages: [] } };

export function chatCompletions(door: CompatDoor, log: (req: Request, err: unknown) => void) {
  return async (req: Request, res: Response, ctx: GraphQLContext) => {
    const b = parseBody(req, body);
    refuseUnsupported(b, door);
    const variables = { input: toInput(b) };
    const headers = deprecationHeaders(door.model(b.model));
    if (b.stream) {
      const includeUsage = b.stream_options?.include_usage === true;
      const events = stream(documents.chatCompletionStream, variables, ctx, CHUNK_VARIABLES);
      await sendSse(res, events, (e) => chunkWire(e.chatCompletionStream, includeUsage), {
        headers,
        log: (err) => log(req, err),
      });
      return;
    }
    const data = await run(documents.createChatCompletion, variables, ctx);
    setHeaders(res, headers);
    res.json(completionWire(data.createChatCompletion));
  };
}
