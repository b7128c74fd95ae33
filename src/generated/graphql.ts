/* eslint-disable */
/** Internal type. DO NOT USE DIRECTLY. */
type Exact<T extends { [key: string]: unknown }> = { [K in keyof T]: T[K] };
/** Internal type. DO NOT USE DIRECTLY. */
export type Incremental<T> = T | { [P in keyof T]?: P extends ' $fragmentName' | '__typename' ? T[P] : never };
import type { TypedDocumentNode as DocumentNode } from '@graphql-typed-document-node/core';
/** A chat completion request: the model, the conversation so far, and how to sample the answer. */
export type ChatCompletionInput = {
  /** Variables for a forwarded model’s chat template (e.g. {"enable_thinking": false}), passed as chat_template_kwargs; refused by in-process models. */
  chatTemplateKwargs?: unknown;
  /** -2 to 2; default 0. */
  frequencyPenalty?: number | null | undefined;
  /** Return each output token's log-probability. */
  logprobs?: boolean | null | undefined;
  /** Output token cap; default: the model's maximum. */
  maxTokens?: number | null | undefined;
  messages: Array<ChatMessageInput>;
  /** Sample from tokens at least this fraction as likely as the likeliest: 0 to 1; 0: off (default). Upstream: min_p. */
  minP?: number | null | undefined;
  model: string;
  /** Choices to generate; default 1, at most the server’s chat.max_choices (4 unless set). */
  n?: number | null | undefined;
  /** Whether the model may call several tools in one answer; default true. */
  parallelToolCalls?: boolean | null | undefined;
  /** -2 to 2; default 0. */
  presencePenalty?: number | null | undefined;
  /** A reasoning model's effort: none, minimal, low, medium, high or xhigh, passed to its upstream server (vLLM, Ollama, an OpenAI-compatible API), which decides what it means for its model; refused by in-process (llama.cpp) models. */
  reasoningEffort?: string | null | undefined;
  /** Penalty on tokens already in the answer: above 0, at most 2; 1: none (default). Upstream: repetition_penalty. */
  repetitionPenalty?: number | null | undefined;
  responseFormat?: ResponseFormatInput | null | undefined;
  /** The same seed and settings give the same answer (best effort upstream). */
  seed?: number | null | undefined;
  /** Up to 4 stop sequences. */
  stop?: Array<string> | null | undefined;
  /** 0 to 2; default 1. */
  temperature?: number | null | undefined;
  /** Default: auto with tools, none without. */
  toolChoice?: ToolChoiceInput | null | undefined;
  /** Functions the model may call (models with function_calling). */
  tools?: Array<ToolInput> | null | undefined;
  /** Sample from the k most likely tokens only; 0 or -1: no limit (default). Passed upstream as top_k. */
  topK?: number | null | undefined;
  /** 0 to 20 most likely alternatives per token; needs logprobs. */
  topLogprobs?: number | null | undefined;
  /** 0 to 1; default 1. */
  topP?: number | null | undefined;
  /** End-user identifier for monitoring and abuse detection. */
  user?: string | null | undefined;
};

export type ChatMessageInput = {
  /** Required, except on an assistant message with toolCalls. */
  content?: string | null | undefined;
  /** The participant's name, to tell several apart (1 to 64 characters, no whitespace nor < | \ / >): passed to a forwarded model's upstream; in-process models' chat templates do not take it. */
  name?: string | null | undefined;
  /** system (or developer, read as system), user, assistant or tool */
  role: string;
  /** On a tool message: the id of the call whose result it carries. */
  toolCallId?: string | null | undefined;
  /** An assistant message's tool calls. */
  toolCalls?: Array<ToolCallInput> | null | undefined;
};

export type EmbeddingsInput = {
  /** Shorter vectors: one of the model's supportedDimensions (or its full size); the vectors are cut to it and L2-renormalised. */
  dimensions?: number | null | undefined;
  /** One string or up to 100. */
  input: Array<string>;
  model: string;
  /** End-user identifier for monitoring and abuse detection (stored with the usage). */
  user?: string | null | undefined;
};

export type FinishReason =
  | 'content_filter'
  | 'length'
  | 'stop'
  | 'tool_calls';

export type FunctionDefinitionInput = {
  description?: string | null | undefined;
  /** 1 to 64 letters, digits, underscores or dashes. */
  name: string;
  /** A JSON Schema of the arguments (an object). */
  parameters?: unknown;
  strict?: boolean | null | undefined;
};

export type JsonSchemaFormatInput = {
  description?: string | null | undefined;
  /** 1 to 64 letters, digits, underscores or dashes. */
  name: string;
  /** The JSON Schema the answer must validate against. */
  schema?: unknown;
  strict?: boolean | null | undefined;
};

/** What a model does, and so which endpoint serves it. */
export type ModelCategory =
  | 'chat'
  | 'embedding'
  | 'moderation'
  | 'reranking';

/** active: served and supported; beta: served, may change; deprecated: served until its sunset date, then removed. */
export type ModelStatus =
  | 'active'
  | 'beta'
  | 'deprecated';

export type ModerationInput = {
  /** One text, or up to 100. */
  input: Array<string>;
  /** Left out: the catalog's first moderation model that is not deprecated. */
  model?: string | null | undefined;
};

export type RerankInput = {
  /** Up to 100 document texts. */
  documents: Array<string>;
  model: string;
  query: string;
  /** Include the document text; default true. */
  returnDocuments?: boolean | null | undefined;
  /** Return only the top N; default all. */
  topN?: number | null | undefined;
};

/** The answer's format: text (the default), json_object, or json_schema with `jsonSchema`. */
export type ResponseFormatInput = {
  jsonSchema?: JsonSchemaFormatInput | null | undefined;
  type: string;
};

/** asc: oldest first; desc: newest first. */
export type SortOrder =
  | 'asc'
  | 'desc';

/** An account's pricing tier: its monthly token allocation, whether usage beyond it is paid from the wallet, any monthly fee, and its rate limits. */
export type Tier =
  | 'developer'
  | 'enterprise'
  | 'free'
  | 'startup';

export type ToolCallFunctionInput = {
  /** The arguments, as the JSON text the model wrote. */
  arguments: string;
  name: string;
};

/** A tool call an assistant message made (to send the conversation back with the tool results). */
export type ToolCallInput = {
  function: ToolCallFunctionInput;
  id: string;
  /** 'function' (the default). */
  type?: string | null | undefined;
};

/** Whether the model calls tools: a mode, or the name of the function it must call (one of the two). */
export type ToolChoiceInput = {
  functionName?: string | null | undefined;
  mode?: ToolChoiceMode | null | undefined;
};

export type ToolChoiceMode =
  | 'auto'
  | 'none'
  | 'required';

/** A tool the model may call. */
export type ToolInput = {
  function: FunctionDefinitionInput;
  /** 'function'. */
  type: string;
};

/** open → paid | expired | canceled | failed. A top-up credits at most once, when it becomes paid. */
export type TopUpStatus =
  | 'canceled'
  | 'expired'
  | 'failed'
  | 'open'
  | 'paid';

/** topup: credits bought; usage: charged for API calls; refund: credits given back; subscription: a monthly fee; bonus: promotional credits. */
export type TransactionType =
  | 'bonus'
  | 'refund'
  | 'subscription'
  | 'topup'
  | 'usage';

/** What usage rows are summed by, beside the day: model; user (the requests' `user` field, the customer's end-user id); key (the API key). */
export type UsageGroupBy =
  | 'key'
  | 'model'
  | 'user';

export type ViewerQueryVariables = Exact<{ [key: string]: never; }>;


export type ViewerQuery = { viewer: { id: string, email: string, tier: Tier, createdAt: string, apiKeys: Array<{ id: string, display: string, name: string | null, createdAt: string, expiresAt: string | null, revokedAt: string | null }> } };

export type CreateAccountMutationVariables = Exact<{
  email: string;
  tier: Tier;
}>;


export type CreateAccountMutation = { createAccount: { apiKey: string, keyId: string, account: { id: string, email: string, tier: Tier } } };

export type CreateApiKeyMutationVariables = Exact<{
  accountId: string | number;
  name?: string | null | undefined;
  expiresAt?: string | null | undefined;
}>;


export type CreateApiKeyMutation = { createApiKey: { id: string, apiKey: string } };

export type RevokeApiKeyMutationVariables = Exact<{
  id: string | number;
}>;


export type RevokeApiKeyMutation = { revokeApiKey: boolean };

export type CreateChatCompletionMutationVariables = Exact<{
  input: ChatCompletionInput;
}>;


export type CreateChatCompletionMutation = { createChatCompletion: { id: string, object: string, created: number, model: string, choices: Array<{ index: number, finishReason: FinishReason, message: { role: string, content: string | null, reasoningContent: string | null, refusal: string | null, toolCalls: Array<{ id: string, type: string, function: { name: string, arguments: string } }> | null }, logprobs: Array<{ token: string, logprob: number, bytes: Array<number> | null, topLogprobs: Array<{ token: string, logprob: number, bytes: Array<number> | null }> }> | null }>, usage: { promptTokens: number, completionTokens: number, totalTokens: number } } };

export type ChatCompletionStreamSubscriptionVariables = Exact<{
  input: ChatCompletionInput;
}>;


export type ChatCompletionStreamSubscription = { chatCompletionStream: { id: string, object: string, created: number, model: string, choices: Array<{ index: number, finishReason: FinishReason | null, delta: { role: string | null, content: string | null, reasoningContent: string | null, refusal: string | null, toolCalls: Array<{ index: number, id: string | null, type: string | null, function: { name: string | null, arguments: string } }> | null }, logprobs: Array<{ token: string, logprob: number, bytes: Array<number> | null, topLogprobs: Array<{ token: string, logprob: number, bytes: Array<number> | null }> }> | null }>, usage: { promptTokens: number, completionTokens: number, totalTokens: number } | null } };

export type CreateEmbeddingsMutationVariables = Exact<{
  input: EmbeddingsInput;
}>;


export type CreateEmbeddingsMutation = { createEmbeddings: { object: string, model: string, data: Array<{ object: string, index: number, embedding: number[] }>, usage: { promptTokens: number, totalTokens: number } } };

export type ModelFieldsFragment = { id: string, object: string, created: number, ownedBy: string, category: ModelCategory, version: string, status: ModelStatus, available: boolean, unavailableReason: string | null, capabilities: { chatCompletion: boolean | null, streaming: boolean | null, functionCalling: boolean | null, embeddings: boolean | null, rerank: boolean | null, moderation: boolean | null }, pricing: { inputPricePerMillion: number | null, outputPricePerMillion: number | null, pricePerMillionTokens: number | null, currency: string }, specifications: { contextWindow: number | null, maxOutputTokens: number | null, trainingCutoff: string | null, maxTokens: number | null, outputDimensions: number | null, supportedDimensions: Array<number> | null, maxDocuments: number | null } };

export type ListModelsQueryVariables = Exact<{
  category?: ModelCategory | null | undefined;
}>;


export type ListModelsQuery = { models: Array<{ id: string, object: string, created: number, ownedBy: string, category: ModelCategory, version: string, status: ModelStatus, available: boolean, unavailableReason: string | null, capabilities: { chatCompletion: boolean | null, streaming: boolean | null, functionCalling: boolean | null, embeddings: boolean | null, rerank: boolean | null, moderation: boolean | null }, pricing: { inputPricePerMillion: number | null, outputPricePerMillion: number | null, pricePerMillionTokens: number | null, currency: string }, specifications: { contextWindow: number | null, maxOutputTokens: number | null, trainingCutoff: string | null, maxTokens: number | null, outputDimensions: number | null, supportedDimensions: Array<number> | null, maxDocuments: number | null } }> };

export type GetModelQueryVariables = Exact<{
  id: string | number;
}>;


export type GetModelQuery = { model: { id: string, object: string, created: number, ownedBy: string, category: ModelCategory, version: string, status: ModelStatus, available: boolean, unavailableReason: string | null, capabilities: { chatCompletion: boolean | null, streaming: boolean | null, functionCalling: boolean | null, embeddings: boolean | null, rerank: boolean | null, moderation: boolean | null }, pricing: { inputPricePerMillion: number | null, outputPricePerMillion: number | null, pricePerMillionTokens: number | null, currency: string }, specifications: { contextWindow: number | null, maxOutputTokens: number | null, trainingCutoff: string | null, maxTokens: number | null, outputDimensions: number | null, supportedDimensions: Array<number> | null, maxDocuments: number | null } } | null };

export type ModerateMutationVariables = Exact<{
  input: ModerationInput;
}>;


export type ModerateMutation = { moderate: { id: string, model: string, results: Array<{ flagged: boolean, categories: Array<{ name: string, flagged: boolean, score: number }> }>, usage: { promptTokens: number, totalTokens: number } } };

export type RerankMutationVariables = Exact<{
  input: RerankInput;
}>;


export type RerankMutation = { rerank: { id: string, model: string, results: Array<{ index: number, relevanceScore: number, document: { text: string } | null }>, usage: { promptTokens: number, totalTokens: number } } };

export type TopUpMutationVariables = Exact<{
  amount: string;
  currency?: string | null | undefined;
  idempotencyKey?: string | null | undefined;
}>;


export type TopUpMutation = { topUp: { id: string, status: TopUpStatus, amount: string, bonus: string, credits: string, currency: string, checkoutUrl: string | null, expiresAt: string | null } };

export type WalletBalanceQueryVariables = Exact<{ [key: string]: never; }>;


export type WalletBalanceQuery = { viewer: { wallet: { balance: string, currency: string } } };

export type WalletTransactionsQueryVariables = Exact<{
  first?: number | null | undefined;
  after?: string | null | undefined;
  order?: SortOrder | null | undefined;
  type?: TransactionType | null | undefined;
}>;


export type WalletTransactionsQuery = { viewer: { wallet: { transactions: { nodes: Array<{ id: string, type: TransactionType, amount: string, balanceAfter: string, createdAt: string, description: string }>, pageInfo: { hasNextPage: boolean } } } } };

export type UsageQueryVariables = Exact<{
  start?: string | null | undefined;
  end?: string | null | undefined;
  groupBy?: UsageGroupBy | null | undefined;
}>;


export type UsageQuery = { viewer: { usage: { start: string, end: string, groupBy: UsageGroupBy, allocation: { monthlyTokens: number | null, used: number, remaining: number | null }, data: Array<{ date: string, model: string | null, user: string | null, keyId: string | null, requests: number, promptTokens: number, completionTokens: number, totalTokens: number, cost: string }> } } };

export const ModelFieldsFragmentDoc = {"kind":"Document","definitions":[{"kind":"FragmentDefinition","name":{"kind":"Name","value":"ModelFields"},"typeCondition":{"kind":"NamedType","name":{"kind":"Name","value":"Model"}},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"id"}},{"kind":"Field","name":{"kind":"Name","value":"object"}},{"kind":"Field","name":{"kind":"Name","value":"created"}},{"kind":"Field","name":{"kind":"Name","value":"ownedBy"}},{"kind":"Field","name":{"kind":"Name","value":"category"}},{"kind":"Field","name":{"kind":"Name","value":"version"}},{"kind":"Field","name":{"kind":"Name","value":"status"}},{"kind":"Field","name":{"kind":"Name","value":"available"}},{"kind":"Field","name":{"kind":"Name","value":"unavailableReason"}},{"kind":"Field","name":{"kind":"Name","value":"capabilities"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"chatCompletion"}},{"kind":"Field","name":{"kind":"Name","value":"streaming"}},{"kind":"Field","name":{"kind":"Name","value":"functionCalling"}},{"kind":"Field","name":{"kind":"Name","value":"embeddings"}},{"kind":"Field","name":{"kind":"Name","value":"rerank"}},{"kind":"Field","name":{"kind":"Name","value":"moderation"}}]}},{"kind":"Field","name":{"kind":"Name","value":"pricing"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"inputPricePerMillion"}},{"kind":"Field","name":{"kind":"Name","value":"outputPricePerMillion"}},{"kind":"Field","name":{"kind":"Name","value":"pricePerMillionTokens"}},{"kind":"Field","name":{"kind":"Name","value":"currency"}}]}},{"kind":"Field","name":{"kind":"Name","value":"specifications"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"contextWindow"}},{"kind":"Field","name":{"kind":"Name","value":"maxOutputTokens"}},{"kind":"Field","name":{"kind":"Name","value":"trainingCutoff"}},{"kind":"Field","name":{"kind":"Name","value":"maxTokens"}},{"kind":"Field","name":{"kind":"Name","value":"outputDimensions"}},{"kind":"Field","name":{"kind":"Name","value":"supportedDimensions"}},{"kind":"Field","name":{"kind":"Name","value":"maxDocuments"}}]}}]}}]} as unknown as DocumentNode<ModelFieldsFragment, unknown>;
export const ViewerDocument = {"kind":"Document","definitions":[{"kind":"OperationDefinition","operation":"query","name":{"kind":"Name","value":"Viewer"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"viewer"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"id"}},{"kind":"Field","name":{"kind":"Name","value":"email"}},{"kind":"Field","name":{"kind":"Name","value":"tier"}},{"kind":"Field","name":{"kind":"Name","value":"createdAt"}},{"kind":"Field","name":{"kind":"Name","value":"apiKeys"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"id"}},{"kind":"Field","name":{"kind":"Name","value":"display"}},{"kind":"Field","name":{"kind":"Name","value":"name"}},{"kind":"Field","name":{"kind":"Name","value":"createdAt"}},{"kind":"Field","name":{"kind":"Name","value":"expiresAt"}},{"kind":"Field","name":{"kind":"Name","value":"revokedAt"}}]}}]}}]}}]} as unknown as DocumentNode<ViewerQuery, ViewerQueryVariables>;
export const CreateAccountDocument = {"kind":"Document","definitions":[{"kind":"OperationDefinition","operation":"mutation","name":{"kind":"Name","value":"CreateAccount"},"variableDefinitions":[{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"email"}},"type":{"kind":"NonNullType","type":{"kind":"NamedType","name":{"kind":"Name","value":"String"}}}},{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"tier"}},"type":{"kind":"NonNullType","type":{"kind":"NamedType","name":{"kind":"Name","value":"Tier"}}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"createAccount"},"arguments":[{"kind":"Argument","name":{"kind":"Name","value":"email"},"value":{"kind":"Variable","name":{"kind":"Name","value":"email"}}},{"kind":"Argument","name":{"kind":"Name","value":"tier"},"value":{"kind":"Variable","name":{"kind":"Name","value":"tier"}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"account"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"id"}},{"kind":"Field","name":{"kind":"Name","value":"email"}},{"kind":"Field","name":{"kind":"Name","value":"tier"}}]}},{"kind":"Field","name":{"kind":"Name","value":"apiKey"}},{"kind":"Field","name":{"kind":"Name","value":"keyId"}}]}}]}}]} as unknown as DocumentNode<CreateAccountMutation, CreateAccountMutationVariables>;
export const CreateApiKeyDocument = {"kind":"Document","definitions":[{"kind":"OperationDefinition","operation":"mutation","name":{"kind":"Name","value":"CreateApiKey"},"variableDefinitions":[{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"accountId"}},"type":{"kind":"NonNullType","type":{"kind":"NamedType","name":{"kind":"Name","value":"ID"}}}},{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"name"}},"type":{"kind":"NamedType","name":{"kind":"Name","value":"String"}}},{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"expiresAt"}},"type":{"kind":"NamedType","name":{"kind":"Name","value":"DateTime"}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"createApiKey"},"arguments":[{"kind":"Argument","name":{"kind":"Name","value":"accountId"},"value":{"kind":"Variable","name":{"kind":"Name","value":"accountId"}}},{"kind":"Argument","name":{"kind":"Name","value":"name"},"value":{"kind":"Variable","name":{"kind":"Name","value":"name"}}},{"kind":"Argument","name":{"kind":"Name","value":"expiresAt"},"value":{"kind":"Variable","name":{"kind":"Name","value":"expiresAt"}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"id"}},{"kind":"Field","name":{"kind":"Name","value":"apiKey"}}]}}]}}]} as unknown as DocumentNode<CreateApiKeyMutation, CreateApiKeyMutationVariables>;
export const RevokeApiKeyDocument = {"kind":"Document","definitions":[{"kind":"OperationDefinition","operation":"mutation","name":{"kind":"Name","value":"RevokeApiKey"},"variableDefinitions":[{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"id"}},"type":{"kind":"NonNullType","type":{"kind":"NamedType","name":{"kind":"Name","value":"ID"}}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"revokeApiKey"},"arguments":[{"kind":"Argument","name":{"kind":"Name","value":"id"},"value":{"kind":"Variable","name":{"kind":"Name","value":"id"}}}]}]}}]} as unknown as DocumentNode<RevokeApiKeyMutation, RevokeApiKeyMutationVariables>;
export const CreateChatCompletionDocument = {"kind":"Document","definitions":[{"kind":"OperationDefinition","operation":"mutation","name":{"kind":"Name","value":"CreateChatCompletion"},"variableDefinitions":[{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"input"}},"type":{"kind":"NonNullType","type":{"kind":"NamedType","name":{"kind":"Name","value":"ChatCompletionInput"}}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"createChatCompletion"},"arguments":[{"kind":"Argument","name":{"kind":"Name","value":"input"},"value":{"kind":"Variable","name":{"kind":"Name","value":"input"}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"id"}},{"kind":"Field","name":{"kind":"Name","value":"object"}},{"kind":"Field","name":{"kind":"Name","value":"created"}},{"kind":"Field","name":{"kind":"Name","value":"model"}},{"kind":"Field","name":{"kind":"Name","value":"choices"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"index"}},{"kind":"Field","name":{"kind":"Name","value":"message"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"role"}},{"kind":"Field","name":{"kind":"Name","value":"content"}},{"kind":"Field","name":{"kind":"Name","value":"reasoningContent"}},{"kind":"Field","name":{"kind":"Name","value":"refusal"}},{"kind":"Field","name":{"kind":"Name","value":"toolCalls"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"id"}},{"kind":"Field","name":{"kind":"Name","value":"type"}},{"kind":"Field","name":{"kind":"Name","value":"function"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"name"}},{"kind":"Field","name":{"kind":"Name","value":"arguments"}}]}}]}}]}},{"kind":"Field","name":{"kind":"Name","value":"finishReason"}},{"kind":"Field","name":{"kind":"Name","value":"logprobs"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"token"}},{"kind":"Field","name":{"kind":"Name","value":"logprob"}},{"kind":"Field","name":{"kind":"Name","value":"bytes"}},{"kind":"Field","name":{"kind":"Name","value":"topLogprobs"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"token"}},{"kind":"Field","name":{"kind":"Name","value":"logprob"}},{"kind":"Field","name":{"kind":"Name","value":"bytes"}}]}}]}}]}},{"kind":"Field","name":{"kind":"Name","value":"usage"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"promptTokens"}},{"kind":"Field","name":{"kind":"Name","value":"completionTokens"}},{"kind":"Field","name":{"kind":"Name","value":"totalTokens"}}]}}]}}]}}]} as unknown as DocumentNode<CreateChatCompletionMutation, CreateChatCompletionMutationVariables>;
export const ChatCompletionStreamDocument = {"kind":"Document","definitions":[{"kind":"OperationDefinition","operation":"subscription","name":{"kind":"Name","value":"ChatCompletionStream"},"variableDefinitions":[{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"input"}},"type":{"kind":"NonNullType","type":{"kind":"NamedType","name":{"kind":"Name","value":"ChatCompletionInput"}}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"chatCompletionStream"},"arguments":[{"kind":"Argument","name":{"kind":"Name","value":"input"},"value":{"kind":"Variable","name":{"kind":"Name","value":"input"}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"id"}},{"kind":"Field","name":{"kind":"Name","value":"object"}},{"kind":"Field","name":{"kind":"Name","value":"created"}},{"kind":"Field","name":{"kind":"Name","value":"model"}},{"kind":"Field","name":{"kind":"Name","value":"choices"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"index"}},{"kind":"Field","name":{"kind":"Name","value":"delta"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"role"}},{"kind":"Field","name":{"kind":"Name","value":"content"}},{"kind":"Field","name":{"kind":"Name","value":"reasoningContent"}},{"kind":"Field","name":{"kind":"Name","value":"refusal"}},{"kind":"Field","name":{"kind":"Name","value":"toolCalls"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"index"}},{"kind":"Field","name":{"kind":"Name","value":"id"}},{"kind":"Field","name":{"kind":"Name","value":"type"}},{"kind":"Field","name":{"kind":"Name","value":"function"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"name"}},{"kind":"Field","name":{"kind":"Name","value":"arguments"}}]}}]}}]}},{"kind":"Field","name":{"kind":"Name","value":"finishReason"}},{"kind":"Field","name":{"kind":"Name","value":"logprobs"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"token"}},{"kind":"Field","name":{"kind":"Name","value":"logprob"}},{"kind":"Field","name":{"kind":"Name","value":"bytes"}},{"kind":"Field","name":{"kind":"Name","value":"topLogprobs"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"token"}},{"kind":"Field","name":{"kind":"Name","value":"logprob"}},{"kind":"Field","name":{"kind":"Name","value":"bytes"}}]}}]}}]}},{"kind":"Field","name":{"kind":"Name","value":"usage"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"promptTokens"}},{"kind":"Field","name":{"kind":"Name","value":"completionTokens"}},{"kind":"Field","name":{"kind":"Name","value":"totalTokens"}}]}}]}}]}}]} as unknown as DocumentNode<ChatCompletionStreamSubscription, ChatCompletionStreamSubscriptionVariables>;
export const CreateEmbeddingsDocument = {"kind":"Document","definitions":[{"kind":"OperationDefinition","operation":"mutation","name":{"kind":"Name","value":"CreateEmbeddings"},"variableDefinitions":[{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"input"}},"type":{"kind":"NonNullType","type":{"kind":"NamedType","name":{"kind":"Name","value":"EmbeddingsInput"}}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"createEmbeddings"},"arguments":[{"kind":"Argument","name":{"kind":"Name","value":"input"},"value":{"kind":"Variable","name":{"kind":"Name","value":"input"}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"object"}},{"kind":"Field","name":{"kind":"Name","value":"model"}},{"kind":"Field","name":{"kind":"Name","value":"data"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"object"}},{"kind":"Field","name":{"kind":"Name","value":"index"}},{"kind":"Field","name":{"kind":"Name","value":"embedding"}}]}},{"kind":"Field","name":{"kind":"Name","value":"usage"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"promptTokens"}},{"kind":"Field","name":{"kind":"Name","value":"totalTokens"}}]}}]}}]}}]} as unknown as DocumentNode<CreateEmbeddingsMutation, CreateEmbeddingsMutationVariables>;
export const ListModelsDocument = {"kind":"Document","definitions":[{"kind":"OperationDefinition","operation":"query","name":{"kind":"Name","value":"ListModels"},"variableDefinitions":[{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"category"}},"type":{"kind":"NamedType","name":{"kind":"Name","value":"ModelCategory"}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"models"},"arguments":[{"kind":"Argument","name":{"kind":"Name","value":"category"},"value":{"kind":"Variable","name":{"kind":"Name","value":"category"}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"FragmentSpread","name":{"kind":"Name","value":"ModelFields"}}]}}]}},{"kind":"FragmentDefinition","name":{"kind":"Name","value":"ModelFields"},"typeCondition":{"kind":"NamedType","name":{"kind":"Name","value":"Model"}},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"id"}},{"kind":"Field","name":{"kind":"Name","value":"object"}},{"kind":"Field","name":{"kind":"Name","value":"created"}},{"kind":"Field","name":{"kind":"Name","value":"ownedBy"}},{"kind":"Field","name":{"kind":"Name","value":"category"}},{"kind":"Field","name":{"kind":"Name","value":"version"}},{"kind":"Field","name":{"kind":"Name","value":"status"}},{"kind":"Field","name":{"kind":"Name","value":"available"}},{"kind":"Field","name":{"kind":"Name","value":"unavailableReason"}},{"kind":"Field","name":{"kind":"Name","value":"capabilities"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"chatCompletion"}},{"kind":"Field","name":{"kind":"Name","value":"streaming"}},{"kind":"Field","name":{"kind":"Name","value":"functionCalling"}},{"kind":"Field","name":{"kind":"Name","value":"embeddings"}},{"kind":"Field","name":{"kind":"Name","value":"rerank"}},{"kind":"Field","name":{"kind":"Name","value":"moderation"}}]}},{"kind":"Field","name":{"kind":"Name","value":"pricing"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"inputPricePerMillion"}},{"kind":"Field","name":{"kind":"Name","value":"outputPricePerMillion"}},{"kind":"Field","name":{"kind":"Name","value":"pricePerMillionTokens"}},{"kind":"Field","name":{"kind":"Name","value":"currency"}}]}},{"kind":"Field","name":{"kind":"Name","value":"specifications"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"contextWindow"}},{"kind":"Field","name":{"kind":"Name","value":"maxOutputTokens"}},{"kind":"Field","name":{"kind":"Name","value":"trainingCutoff"}},{"kind":"Field","name":{"kind":"Name","value":"maxTokens"}},{"kind":"Field","name":{"kind":"Name","value":"outputDimensions"}},{"kind":"Field","name":{"kind":"Name","value":"supportedDimensions"}},{"kind":"Field","name":{"kind":"Name","value":"maxDocuments"}}]}}]}}]} as unknown as DocumentNode<ListModelsQuery, ListModelsQueryVariables>;
export const GetModelDocument = {"kind":"Document","definitions":[{"kind":"OperationDefinition","operation":"query","name":{"kind":"Name","value":"GetModel"},"variableDefinitions":[{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"id"}},"type":{"kind":"NonNullType","type":{"kind":"NamedType","name":{"kind":"Name","value":"ID"}}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"model"},"arguments":[{"kind":"Argument","name":{"kind":"Name","value":"id"},"value":{"kind":"Variable","name":{"kind":"Name","value":"id"}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"FragmentSpread","name":{"kind":"Name","value":"ModelFields"}}]}}]}},{"kind":"FragmentDefinition","name":{"kind":"Name","value":"ModelFields"},"typeCondition":{"kind":"NamedType","name":{"kind":"Name","value":"Model"}},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"id"}},{"kind":"Field","name":{"kind":"Name","value":"object"}},{"kind":"Field","name":{"kind":"Name","value":"created"}},{"kind":"Field","name":{"kind":"Name","value":"ownedBy"}},{"kind":"Field","name":{"kind":"Name","value":"category"}},{"kind":"Field","name":{"kind":"Name","value":"version"}},{"kind":"Field","name":{"kind":"Name","value":"status"}},{"kind":"Field","name":{"kind":"Name","value":"available"}},{"kind":"Field","name":{"kind":"Name","value":"unavailableReason"}},{"kind":"Field","name":{"kind":"Name","value":"capabilities"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"chatCompletion"}},{"kind":"Field","name":{"kind":"Name","value":"streaming"}},{"kind":"Field","name":{"kind":"Name","value":"functionCalling"}},{"kind":"Field","name":{"kind":"Name","value":"embeddings"}},{"kind":"Field","name":{"kind":"Name","value":"rerank"}},{"kind":"Field","name":{"kind":"Name","value":"moderation"}}]}},{"kind":"Field","name":{"kind":"Name","value":"pricing"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"inputPricePerMillion"}},{"kind":"Field","name":{"kind":"Name","value":"outputPricePerMillion"}},{"kind":"Field","name":{"kind":"Name","value":"pricePerMillionTokens"}},{"kind":"Field","name":{"kind":"Name","value":"currency"}}]}},{"kind":"Field","name":{"kind":"Name","value":"specifications"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"contextWindow"}},{"kind":"Field","name":{"kind":"Name","value":"maxOutputTokens"}},{"kind":"Field","name":{"kind":"Name","value":"trainingCutoff"}},{"kind":"Field","name":{"kind":"Name","value":"maxTokens"}},{"kind":"Field","name":{"kind":"Name","value":"outputDimensions"}},{"kind":"Field","name":{"kind":"Name","value":"supportedDimensions"}},{"kind":"Field","name":{"kind":"Name","value":"maxDocuments"}}]}}]}}]} as unknown as DocumentNode<GetModelQuery, GetModelQueryVariables>;
export const ModerateDocument = {"kind":"Document","definitions":[{"kind":"OperationDefinition","operation":"mutation","name":{"kind":"Name","value":"Moderate"},"variableDefinitions":[{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"input"}},"type":{"kind":"NonNullType","type":{"kind":"NamedType","name":{"kind":"Name","value":"ModerationInput"}}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"moderate"},"arguments":[{"kind":"Argument","name":{"kind":"Name","value":"input"},"value":{"kind":"Variable","name":{"kind":"Name","value":"input"}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"id"}},{"kind":"Field","name":{"kind":"Name","value":"model"}},{"kind":"Field","name":{"kind":"Name","value":"results"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"flagged"}},{"kind":"Field","name":{"kind":"Name","value":"categories"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"name"}},{"kind":"Field","name":{"kind":"Name","value":"flagged"}},{"kind":"Field","name":{"kind":"Name","value":"score"}}]}}]}},{"kind":"Field","name":{"kind":"Name","value":"usage"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"promptTokens"}},{"kind":"Field","name":{"kind":"Name","value":"totalTokens"}}]}}]}}]}}]} as unknown as DocumentNode<ModerateMutation, ModerateMutationVariables>;
export const RerankDocument = {"kind":"Document","definitions":[{"kind":"OperationDefinition","operation":"mutation","name":{"kind":"Name","value":"Rerank"},"variableDefinitions":[{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"input"}},"type":{"kind":"NonNullType","type":{"kind":"NamedType","name":{"kind":"Name","value":"RerankInput"}}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"rerank"},"arguments":[{"kind":"Argument","name":{"kind":"Name","value":"input"},"value":{"kind":"Variable","name":{"kind":"Name","value":"input"}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"id"}},{"kind":"Field","name":{"kind":"Name","value":"model"}},{"kind":"Field","name":{"kind":"Name","value":"results"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"index"}},{"kind":"Field","name":{"kind":"Name","value":"relevanceScore"}},{"kind":"Field","name":{"kind":"Name","value":"document"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"text"}}]}}]}},{"kind":"Field","name":{"kind":"Name","value":"usage"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"promptTokens"}},{"kind":"Field","name":{"kind":"Name","value":"totalTokens"}}]}}]}}]}}]} as unknown as DocumentNode<RerankMutation, RerankMutationVariables>;
export const TopUpDocument = {"kind":"Document","definitions":[{"kind":"OperationDefinition","operation":"mutation","name":{"kind":"Name","value":"TopUp"},"variableDefinitions":[{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"amount"}},"type":{"kind":"NonNullType","type":{"kind":"NamedType","name":{"kind":"Name","value":"Decimal"}}}},{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"currency"}},"type":{"kind":"NamedType","name":{"kind":"Name","value":"String"}}},{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"idempotencyKey"}},"type":{"kind":"NamedType","name":{"kind":"Name","value":"String"}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"topUp"},"arguments":[{"kind":"Argument","name":{"kind":"Name","value":"amount"},"value":{"kind":"Variable","name":{"kind":"Name","value":"amount"}}},{"kind":"Argument","name":{"kind":"Name","value":"currency"},"value":{"kind":"Variable","name":{"kind":"Name","value":"currency"}}},{"kind":"Argument","name":{"kind":"Name","value":"idempotencyKey"},"value":{"kind":"Variable","name":{"kind":"Name","value":"idempotencyKey"}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"id"}},{"kind":"Field","name":{"kind":"Name","value":"status"}},{"kind":"Field","name":{"kind":"Name","value":"amount"}},{"kind":"Field","name":{"kind":"Name","value":"bonus"}},{"kind":"Field","name":{"kind":"Name","value":"credits"}},{"kind":"Field","name":{"kind":"Name","value":"currency"}},{"kind":"Field","name":{"kind":"Name","value":"checkoutUrl"}},{"kind":"Field","name":{"kind":"Name","value":"expiresAt"}}]}}]}}]} as unknown as DocumentNode<TopUpMutation, TopUpMutationVariables>;
export const WalletBalanceDocument = {"kind":"Document","definitions":[{"kind":"OperationDefinition","operation":"query","name":{"kind":"Name","value":"WalletBalance"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"viewer"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"wallet"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"balance"}},{"kind":"Field","name":{"kind":"Name","value":"currency"}}]}}]}}]}}]} as unknown as DocumentNode<WalletBalanceQuery, WalletBalanceQueryVariables>;
export const WalletTransactionsDocument = {"kind":"Document","definitions":[{"kind":"OperationDefinition","operation":"query","name":{"kind":"Name","value":"WalletTransactions"},"variableDefinitions":[{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"first"}},"type":{"kind":"NamedType","name":{"kind":"Name","value":"Int"}}},{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"after"}},"type":{"kind":"NamedType","name":{"kind":"Name","value":"String"}}},{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"order"}},"type":{"kind":"NamedType","name":{"kind":"Name","value":"SortOrder"}}},{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"type"}},"type":{"kind":"NamedType","name":{"kind":"Name","value":"TransactionType"}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"viewer"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"wallet"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"transactions"},"arguments":[{"kind":"Argument","name":{"kind":"Name","value":"first"},"value":{"kind":"Variable","name":{"kind":"Name","value":"first"}}},{"kind":"Argument","name":{"kind":"Name","value":"after"},"value":{"kind":"Variable","name":{"kind":"Name","value":"after"}}},{"kind":"Argument","name":{"kind":"Name","value":"order"},"value":{"kind":"Variable","name":{"kind":"Name","value":"order"}}},{"kind":"Argument","name":{"kind":"Name","value":"type"},"value":{"kind":"Variable","name":{"kind":"Name","value":"type"}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"nodes"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"id"}},{"kind":"Field","name":{"kind":"Name","value":"type"}},{"kind":"Field","name":{"kind":"Name","value":"amount"}},{"kind":"Field","name":{"kind":"Name","value":"balanceAfter"}},{"kind":"Field","name":{"kind":"Name","value":"createdAt"}},{"kind":"Field","name":{"kind":"Name","value":"description"}}]}},{"kind":"Field","name":{"kind":"Name","value":"pageInfo"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"hasNextPage"}}]}}]}}]}}]}}]}}]} as unknown as DocumentNode<WalletTransactionsQuery, WalletTransactionsQueryVariables>;
export const UsageDocument = {"kind":"Document","definitions":[{"kind":"OperationDefinition","operation":"query","name":{"kind":"Name","value":"Usage"},"variableDefinitions":[{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"start"}},"type":{"kind":"NamedType","name":{"kind":"Name","value":"String"}}},{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"end"}},"type":{"kind":"NamedType","name":{"kind":"Name","value":"String"}}},{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"groupBy"}},"type":{"kind":"NamedType","name":{"kind":"Name","value":"UsageGroupBy"}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"viewer"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"usage"},"arguments":[{"kind":"Argument","name":{"kind":"Name","value":"start"},"value":{"kind":"Variable","name":{"kind":"Name","value":"start"}}},{"kind":"Argument","name":{"kind":"Name","value":"end"},"value":{"kind":"Variable","name":{"kind":"Name","value":"end"}}},{"kind":"Argument","name":{"kind":"Name","value":"groupBy"},"value":{"kind":"Variable","name":{"kind":"Name","value":"groupBy"}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"start"}},{"kind":"Field","name":{"kind":"Name","value":"end"}},{"kind":"Field","name":{"kind":"Name","value":"groupBy"}},{"kind":"Field","name":{"kind":"Name","value":"allocation"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"monthlyTokens"}},{"kind":"Field","name":{"kind":"Name","value":"used"}},{"kind":"Field","name":{"kind":"Name","value":"remaining"}}]}},{"kind":"Field","name":{"kind":"Name","value":"data"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"date"}},{"kind":"Field","name":{"kind":"Name","value":"model"}},{"kind":"Field","name":{"kind":"Name","value":"user"}},{"kind":"Field","name":{"kind":"Name","value":"keyId"}},{"kind":"Field","name":{"kind":"Name","value":"requests"}},{"kind":"Field","name":{"kind":"Name","value":"promptTokens"}},{"kind":"Field","name":{"kind":"Name","value":"completionTokens"}},{"kind":"Field","name":{"kind":"Name","value":"totalTokens"}},{"kind":"Field","name":{"kind":"Name","value":"cost"}}]}}]}}]}}]}}]} as unknown as DocumentNode<UsageQuery, UsageQueryVariables>;