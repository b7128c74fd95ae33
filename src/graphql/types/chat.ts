// Chat completions: Mutation.createChatCompletion and Subscription.chatCompletionStream.
import type { ChatChunk, ChatCompletion, ChatInput } from '../../domain/inference/inference-service.js';
import type { Usage } from '../../domain/inference/engine.js';
import { DomainError } from '../../domain/errors.js';
import { builder } from '../builder.js';
import type { GraphQLContext } from '../context.js';

export const FinishReasonEnum = builder.enumType('FinishReason', { values: ['stop', 'length', 'content_filter'] as const });

const ChatMessageInput = builder.inputType('ChatMessageInput', {
  fields: (t) => ({
    role: t.string({ required: true, description: 'system (or developer, read as system), user or assistant' }),
    content: t.string({ required: true }),
  }),
});

export const ChatCompletionInput = builder.inputType('ChatCompletionInput', {
  fields: (t) => ({
    model: t.string({ required: true }),
    messages: t.field({ type: [ChatMessageInput], required: true }),
    maxTokens: t.int({ required: false, description: "Output token cap; default: the model's maximum." }),
    temperature: t.float({ required: false, description: '0 to 2; default 1.' }),
    topP: t.float({ required: false, description: '0 to 1; default 1.' }),
    stop: t.stringList({ required: false, description: 'Up to 4 stop sequences.' }),
    presencePenalty: t.float({ required: false, description: '-2 to 2; default 0.' }),
    frequencyPenalty: t.float({ required: false, description: '-2 to 2; default 0.' }),
    user: t.string({ required: false, description: 'End-user identifier for monitoring and abuse detection.' }),
  }),
});

export const UsageRef = builder.objectRef<Usage>('Usage').implement({
  fields: (t) => ({
    promptTokens: t.exposeInt('promptTokens'),
    completionTokens: t.exposeInt('completionTokens'),
    totalTokens: t.exposeInt('totalTokens', { description: 'The billed quantity.' }),
  }),
});

const ChatMessageRef = builder.objectRef<{ role: string; content: string }>('ChatMessage').implement({
  fields: (t) => ({ role: t.exposeString('role'), content: t.exposeString('content') }),
});

const ChatChoiceRef = builder.objectRef<ChatCompletion['choices'][number]>('ChatChoice').implement({
  fields: (t) => ({
    index: t.exposeInt('index'),
    message: t.field({ type: ChatMessageRef, resolve: (c) => c.message }),
    finishReason: t.field({ type: FinishReasonEnum, resolve: (c) => c.finishReason }),
  }),
});

const ChatCompletionRef = builder.objectRef<ChatCompletion>('ChatCompletion').implement({
  fields: (t) => ({
    id: t.exposeID('id'),
    object: t.exposeString('object'),
    created: t.exposeInt('created'),
    model: t.exposeString('model'),
    choices: t.field({ type: [ChatChoiceRef], resolve: (c) => c.choices }),
    usage: t.field({ type: UsageRef, resolve: (c) => c.usage }),
  }),
});

const ChatDeltaRef = builder.objectRef<ChatChunk['choices'][number]['delta']>('ChatDelta').implement({
  fields: (t) => ({
    role: t.string({ nullable: true, resolve: (d) => d.role ?? null }),
    content: t.string({ nullable: true, resolve: (d) => d.content ?? null }),
  }),
});

const ChunkChoiceRef = builder.objectRef<ChatChunk['choices'][number]>('ChatChunkChoice').implement({
  fields: (t) => ({
    index: t.exposeInt('index'),
    delta: t.field({ type: ChatDeltaRef, resolve: (c) => c.delta }),
    finishReason: t.field({ type: FinishReasonEnum, nullable: true, resolve: (c) => c.finishReason }),
  }),
});

const ChatChunkRef = builder.objectRef<ChatChunk>('ChatCompletionChunk').implement({
  description:
    'One event of a streamed completion: the first carries the role, content chunks carry text, the last with choices carries the finish reason, and a final chunk with no choices carries the usage.',
  fields: (t) => ({
    id: t.exposeID('id'),
    object: t.exposeString('object'),
    created: t.exposeInt('created'),
    model: t.exposeString('model'),
    choices: t.field({ type: [ChunkChoiceRef], resolve: (c) => c.choices }),
    usage: t.field({ type: UsageRef, nullable: true, resolve: (c) => c.usage }),
  }),
});

/** What the subscription's source yields: a chunk, or the error that ends the stream. */
type StreamItem = ChatChunk | { streamError: unknown };

async function* streamWithErrorsAsItems(ctx: GraphQLContext, input: ChatInput): AsyncGenerator<StreamItem> {
  // The stream has its own abort: ending the subscription (client gone) stops the engine at once.
  const controller = new AbortController();
  const onAbort = () => controller.abort(ctx.signal.reason);
  ctx.signal.addEventListener('abort', onAbort, { once: true });
  try {
    const caller = await ctx.caller();
    yield* ctx.services.inference.chatCompletionStream(caller, input, controller.signal);
  } catch (streamError) {
    // Yielded, not thrown: graphql-ws would otherwise close the whole socket instead of ending
    // this one operation with a GraphQL error.
    yield { streamError };
  } finally {
    ctx.signal.removeEventListener('abort', onAbort);
    controller.abort();
  }
}

builder.mutationField('createChatCompletion', (t) =>
  t.field({
    type: ChatCompletionRef,
    args: { input: t.arg({ type: ChatCompletionInput, required: true }) },
    resolve: async (_root, { input }, ctx) => {
      const caller = await ctx.caller();
      return ctx.services.inference.createChatCompletion(caller, input, ctx.signal);
    },
  }),
);

builder.subscriptionField('chatCompletionStream', (t) =>
  t.field({
    type: ChatChunkRef,
    args: { input: t.arg({ type: ChatCompletionInput, required: true }) },
    subscribe: (_root, { input }, ctx) => streamWithErrorsAsItems(ctx, input) as AsyncIterable<unknown> as AsyncIterable<ChatChunk>,
    resolve: (item) => {
      const i = item as StreamItem;
      if ('streamError' in i) throw i.streamError instanceof Error ? i.streamError : new DomainError('internal_error', 'The stream failed.');
      return i;
    },
  }),
);
