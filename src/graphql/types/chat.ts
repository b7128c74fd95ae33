// Chat completions: Mutation.createChatCompletion and Subscription.chatCompletionStream.
import type { ChatChunk, ChatCompletion, ChatInput } from '../../domain/inference/inference-service.js';
import type { Usage } from '../../domain/inference/engine.js';
import { builder } from '../builder.js';
import { ContentFilterResultRef } from './content-filter.js';
import { type StreamItem, untilKeyInvalid, unwrapStreamItem } from '../key-guard.js';
import { SafeIntScalar } from './money.js';
import {
  JsonScalar,
  ResponseFormatInput,
  TokenLogprobRef,
  ToolCallDeltaRef,
  ToolCallInput,
  ToolCallRef,
  ToolChoiceInput,
  ToolInput,
  toolChoiceOf,
} from './chat-tools.js';

export const FinishReasonEnum = builder.enumType('FinishReason', { values: ['stop', 'length', 'content_filter', 'tool_calls'] as const });

const ChatMessageInput = builder.inputType('ChatMessageInput', {
  fields: (t) => ({
    role: t.string({ required: true, description: 'system (or developer, read as system), user, assistant or tool' }),
    content: t.string({ required: false, description: 'Required, except on an assistant message with toolCalls.' }),
    toolCalls: t.field({ type: [ToolCallInput], required: false, description: "An assistant message's tool calls." }),
    toolCallId: t.string({ required: false, description: 'On a tool message: the id of the call whose result it carries.' }),
    name: t.string({
      required: false,
      description:
        "The participant's name, to tell several apart (1 to 64 characters, no whitespace nor < | \\ / >): passed to a forwarded model's upstream; in-process models' chat templates do not take it.",
    }),
  }),
});

export const ChatCompletionInput = builder.inputType('ChatCompletionInput', {
  description: 'A chat completion request: the model, the conversation so far, and how to sample the answer.',
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
    tools: t.field({ type: [ToolInput], required: false, description: 'Functions the model may call (models with function_calling).' }),
    toolChoice: t.field({ type: ToolChoiceInput, required: false, description: 'Default: auto with tools, none without.' }),
    parallelToolCalls: t.boolean({ required: false, description: 'Whether the model may call several tools in one answer; default true.' }),
    responseFormat: t.field({ type: ResponseFormatInput, required: false }),
    seed: t.field({
      type: SafeIntScalar,
      required: false,
      description: 'The same seed and settings give the same answer (best effort upstream).',
    }),
    n: t.int({ required: false, description: 'Choices to generate; default 1, at most the server’s chat.max_choices (4 unless set).' }),
    logprobs: t.boolean({ required: false, description: "Return each output token's log-probability." }),
    topLogprobs: t.int({ required: false, description: '0 to 20 most likely alternatives per token; needs logprobs.' }),
    reasoningEffort: t.string({
      required: false,
      description:
        "A reasoning model's effort: none, minimal, low, medium, high or xhigh, passed to its upstream server (vLLM, Ollama, an OpenAI-compatible API), which decides what it means for its model; refused by in-process (llama.cpp) models.",
    }),
    topK: t.int({
      required: false,
      description: 'Sample from the k most likely tokens only; 0 or -1: no limit (default). Passed upstream as top_k.',
    }),
    minP: t.float({
      required: false,
      description: 'Sample from tokens at least this fraction as likely as the likeliest: 0 to 1; 0: off (default). Upstream: min_p.',
    }),
    repetitionPenalty: t.float({
      required: false,
      description: 'Penalty on tokens already in the answer: above 0, at most 2; 1: none (default). Upstream: repetition_penalty.',
    }),
    chatTemplateKwargs: t.field({
      type: JsonScalar,
      required: false,
      description:
        'Variables for a forwarded model’s chat template (e.g. {"enable_thinking": false}), passed as chat_template_kwargs; refused by in-process models.',
    }),
  }),
});

type GraphQLChatInput = typeof ChatCompletionInput.$inferInput;

/**
 * The GraphQL input as the domain reads it (the tool choice is an input object here): without a
 * tool choice, the input itself (the fields are the same), not a copy for every call.
 */
const chatInput = (input: GraphQLChatInput): ChatInput =>
  input.toolChoice === null || input.toolChoice === undefined
    ? (input as Omit<GraphQLChatInput, 'toolChoice'> as ChatInput)
    : { ...input, toolChoice: toolChoiceOf(input.toolChoice) };

export const UsageRef = builder.objectRef<Usage>('Usage').implement({
  fields: (t) => ({
    promptTokens: t.exposeInt('promptTokens'),
    completionTokens: t.exposeInt('completionTokens'),
    totalTokens: t.exposeInt('totalTokens', { description: 'The billed quantity.' }),
  }),
});

const ChatMessageRef = builder.objectRef<ChatCompletion['choices'][number]['message']>('ChatMessage').implement({
  fields: (t) => ({
    role: t.exposeString('role'),
    content: t.exposeString('content', { nullable: true, description: 'null when the answer is only tool calls.' }),
    reasoningContent: t.exposeString('reasoningContent', {
      nullable: true,
      description:
        "A reasoning model's reasoning before its answer, when its upstream sends it apart; null otherwise, and when an output content filter withholds it.",
    }),
    refusal: t.exposeString('refusal', {
      nullable: true,
      description: "The model's refusal, when it refused (OpenAI's models say why; content is then null); null otherwise.",
    }),
    toolCalls: t.expose('toolCalls', { type: [ToolCallRef], nullable: true }),
  }),
});

const ChatChoiceRef = builder.objectRef<ChatCompletion['choices'][number]>('ChatChoice').implement({
  fields: (t) => ({
    index: t.exposeInt('index'),
    message: t.expose('message', { type: ChatMessageRef }),
    finishReason: t.expose('finishReason', { type: FinishReasonEnum }),
    logprobs: t.expose('logprobs', { type: [TokenLogprobRef], nullable: true, description: 'With logprobs: true.' }),
    contentFilter: t.expose('contentFilter', {
      type: ContentFilterResultRef,
      nullable: true,
      description: 'Null unless the model has an output content filter (its catalog entry names a moderation model).',
    }),
  }),
});

const ChatCompletionRef = builder.objectRef<ChatCompletion>('ChatCompletion').implement({
  fields: (t) => ({
    id: t.exposeID('id'),
    object: t.exposeString('object'),
    created: t.exposeInt('created'),
    model: t.exposeString('model'),
    choices: t.expose('choices', { type: [ChatChoiceRef] }),
    usage: t.expose('usage', { type: UsageRef }),
  }),
});

const ChatDeltaRef = builder.objectRef<ChatChunk['choices'][number]['delta']>('ChatDelta').implement({
  fields: (t) => ({
    role: t.exposeString('role', { nullable: true }),
    content: t.exposeString('content', { nullable: true }),
    reasoningContent: t.exposeString('reasoningContent', {
      nullable: true,
      description: "A piece of a reasoning model's reasoning; its pieces come before the answer's content, each in a chunk of its own.",
    }),
    refusal: t.exposeString('refusal', { nullable: true, description: "A piece of the model's refusal, when it refused." }),
    toolCalls: t.expose('toolCalls', { type: [ToolCallDeltaRef], nullable: true }),
  }),
});

const ChunkChoiceRef = builder.objectRef<ChatChunk['choices'][number]>('ChatChunkChoice').implement({
  fields: (t) => ({
    index: t.exposeInt('index'),
    delta: t.expose('delta', { type: ChatDeltaRef }),
    finishReason: t.expose('finishReason', { type: FinishReasonEnum, nullable: true }),
    logprobs: t.expose('logprobs', { type: [TokenLogprobRef], nullable: true, description: 'With logprobs: true.' }),
    contentFilter: t.expose('contentFilter', {
      type: ContentFilterResultRef,
      nullable: true,
      description: 'On the chunk with the finish reason, when the model has an output content filter.',
    }),
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
    choices: t.expose('choices', { type: [ChunkChoiceRef] }),
    usage: t.expose('usage', { type: UsageRef, nullable: true }),
  }),
});

builder.mutationField('createChatCompletion', (t) =>
  t.field({
    type: ChatCompletionRef,
    args: { input: t.arg({ type: ChatCompletionInput, required: true }) },
    resolve: async (_root, { input }, ctx) => {
      const caller = await ctx.caller();
      return ctx.services.inference.createChatCompletion(caller, chatInput(input), ctx.signal);
    },
  }),
);

builder.subscriptionField('chatCompletionStream', (t) =>
  t.field({
    type: ChatChunkRef,
    args: { input: t.arg({ type: ChatCompletionInput, required: true }) },
    // The stream ends when the client goes, the operation completes, or the key is revoked or expires.
    // Its errors become items (../key-guard.ts says why), the service's stream taken as it is: a
    // generator around it would add one more step to every chunk.
    subscribe: (_root, { input }, ctx) =>
      untilKeyInvalid<ChatChunk>(
        ctx,
        async (signal) => ctx.services.inference.chatCompletionStream(await ctx.caller(), chatInput(input), signal),
        { errorsAsItems: true },
      ) as AsyncIterable<unknown> as AsyncIterable<ChatChunk>,
    resolve: (item) => unwrapStreamItem(item as StreamItem<ChatChunk>),
  }),
);
