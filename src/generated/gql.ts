/* eslint-disable */
import * as types from './graphql.js';
import type { TypedDocumentNode as DocumentNode } from '@graphql-typed-document-node/core';

/**
 * Map of all GraphQL operations in the project.
 *
 * This map has several performance disadvantages:
 * 1. It is not tree-shakeable, so it will include all operations in the project.
 * 2. It is not minifiable, so the string of a GraphQL query will be multiple times inside the bundle.
 * 3. It does not support dead code elimination, so it will add unused operations.
 *
 * Therefore it is highly recommended to use the babel or swc plugin for production.
 * Learn more about it here: https://the-guild.dev/graphql/codegen/plugins/presets/preset-client#reducing-bundle-size
 */
type Documents = {
    "query Viewer {\n  viewer {\n    id\n    email\n    tier\n    createdAt\n    apiKeys {\n      id\n      display\n      name\n      createdAt\n      expiresAt\n      revokedAt\n    }\n  }\n}\n\nmutation CreateAccount($email: String!, $tier: Tier!) {\n  createAccount(email: $email, tier: $tier) {\n    account {\n      id\n      email\n      tier\n    }\n    apiKey\n    keyId\n  }\n}\n\nmutation CreateApiKey($accountId: ID!, $name: String, $expiresAt: DateTime) {\n  createApiKey(accountId: $accountId, name: $name, expiresAt: $expiresAt) {\n    id\n    apiKey\n  }\n}\n\nmutation RevokeApiKey($id: ID!) {\n  revokeApiKey(id: $id)\n}": typeof types.ViewerDocument,
    "mutation CreateChatCompletion($input: ChatCompletionInput!) {\n  createChatCompletion(input: $input) {\n    id\n    object\n    created\n    model\n    choices {\n      index\n      message {\n        role\n        content\n      }\n      finishReason\n    }\n    usage {\n      promptTokens\n      completionTokens\n      totalTokens\n    }\n  }\n}\n\nsubscription ChatCompletionStream($input: ChatCompletionInput!) {\n  chatCompletionStream(input: $input) {\n    id\n    object\n    created\n    model\n    choices {\n      index\n      delta {\n        role\n        content\n      }\n      finishReason\n    }\n    usage {\n      promptTokens\n      completionTokens\n      totalTokens\n    }\n  }\n}": typeof types.CreateChatCompletionDocument,
    "mutation CreateEmbeddings($input: EmbeddingsInput!) {\n  createEmbeddings(input: $input) {\n    object\n    model\n    data {\n      object\n      index\n      embedding\n    }\n    usage {\n      promptTokens\n      totalTokens\n    }\n  }\n}": typeof types.CreateEmbeddingsDocument,
    "fragment ModelFields on Model {\n  id\n  object\n  created\n  ownedBy\n  category\n  version\n  status\n  capabilities {\n    chatCompletion\n    streaming\n    functionCalling\n    embeddings\n    rerank\n    moderation\n  }\n  pricing {\n    inputPricePerMillion\n    outputPricePerMillion\n    pricePerMillionTokens\n    currency\n  }\n  specifications {\n    contextWindow\n    maxOutputTokens\n    trainingCutoff\n    maxTokens\n    outputDimensions\n    maxDocuments\n  }\n}\n\nquery ListModels($category: ModelCategory) {\n  models(category: $category) {\n    ...ModelFields\n  }\n}\n\nquery GetModel($id: ID!) {\n  model(id: $id) {\n    ...ModelFields\n  }\n}": typeof types.ModelFieldsFragmentDoc,
    "mutation Moderate($input: ModerationInput!) {\n  moderate(input: $input) {\n    id\n    model\n    results {\n      flagged\n      categories {\n        name\n        flagged\n        score\n      }\n    }\n    usage {\n      promptTokens\n      totalTokens\n    }\n  }\n}": typeof types.ModerateDocument,
    "mutation Rerank($input: RerankInput!) {\n  rerank(input: $input) {\n    id\n    model\n    results {\n      index\n      relevanceScore\n      document {\n        text\n      }\n    }\n    usage {\n      promptTokens\n      totalTokens\n    }\n  }\n}": typeof types.RerankDocument,
};
const documents: Documents = {
    "query Viewer {\n  viewer {\n    id\n    email\n    tier\n    createdAt\n    apiKeys {\n      id\n      display\n      name\n      createdAt\n      expiresAt\n      revokedAt\n    }\n  }\n}\n\nmutation CreateAccount($email: String!, $tier: Tier!) {\n  createAccount(email: $email, tier: $tier) {\n    account {\n      id\n      email\n      tier\n    }\n    apiKey\n    keyId\n  }\n}\n\nmutation CreateApiKey($accountId: ID!, $name: String, $expiresAt: DateTime) {\n  createApiKey(accountId: $accountId, name: $name, expiresAt: $expiresAt) {\n    id\n    apiKey\n  }\n}\n\nmutation RevokeApiKey($id: ID!) {\n  revokeApiKey(id: $id)\n}": types.ViewerDocument,
    "mutation CreateChatCompletion($input: ChatCompletionInput!) {\n  createChatCompletion(input: $input) {\n    id\n    object\n    created\n    model\n    choices {\n      index\n      message {\n        role\n        content\n      }\n      finishReason\n    }\n    usage {\n      promptTokens\n      completionTokens\n      totalTokens\n    }\n  }\n}\n\nsubscription ChatCompletionStream($input: ChatCompletionInput!) {\n  chatCompletionStream(input: $input) {\n    id\n    object\n    created\n    model\n    choices {\n      index\n      delta {\n        role\n        content\n      }\n      finishReason\n    }\n    usage {\n      promptTokens\n      completionTokens\n      totalTokens\n    }\n  }\n}": types.CreateChatCompletionDocument,
    "mutation CreateEmbeddings($input: EmbeddingsInput!) {\n  createEmbeddings(input: $input) {\n    object\n    model\n    data {\n      object\n      index\n      embedding\n    }\n    usage {\n      promptTokens\n      totalTokens\n    }\n  }\n}": types.CreateEmbeddingsDocument,
    "fragment ModelFields on Model {\n  id\n  object\n  created\n  ownedBy\n  category\n  version\n  status\n  capabilities {\n    chatCompletion\n    streaming\n    functionCalling\n    embeddings\n    rerank\n    moderation\n  }\n  pricing {\n    inputPricePerMillion\n    outputPricePerMillion\n    pricePerMillionTokens\n    currency\n  }\n  specifications {\n    contextWindow\n    maxOutputTokens\n    trainingCutoff\n    maxTokens\n    outputDimensions\n    maxDocuments\n  }\n}\n\nquery ListModels($category: ModelCategory) {\n  models(category: $category) {\n    ...ModelFields\n  }\n}\n\nquery GetModel($id: ID!) {\n  model(id: $id) {\n    ...ModelFields\n  }\n}": types.ModelFieldsFragmentDoc,
    "mutation Moderate($input: ModerationInput!) {\n  moderate(input: $input) {\n    id\n    model\n    results {\n      flagged\n      categories {\n        name\n        flagged\n        score\n      }\n    }\n    usage {\n      promptTokens\n      totalTokens\n    }\n  }\n}": types.ModerateDocument,
    "mutation Rerank($input: RerankInput!) {\n  rerank(input: $input) {\n    id\n    model\n    results {\n      index\n      relevanceScore\n      document {\n        text\n      }\n    }\n    usage {\n      promptTokens\n      totalTokens\n    }\n  }\n}": types.RerankDocument,
};

/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 *
 *
 * @example
 * ```ts
 * const query = graphql(`query GetUser($id: ID!) { user(id: $id) { name } }`);
 * ```
 *
 * The query argument is unknown!
 * Please regenerate the types.
 */
export function graphql(source: string): unknown;

/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "query Viewer {\n  viewer {\n    id\n    email\n    tier\n    createdAt\n    apiKeys {\n      id\n      display\n      name\n      createdAt\n      expiresAt\n      revokedAt\n    }\n  }\n}\n\nmutation CreateAccount($email: String!, $tier: Tier!) {\n  createAccount(email: $email, tier: $tier) {\n    account {\n      id\n      email\n      tier\n    }\n    apiKey\n    keyId\n  }\n}\n\nmutation CreateApiKey($accountId: ID!, $name: String, $expiresAt: DateTime) {\n  createApiKey(accountId: $accountId, name: $name, expiresAt: $expiresAt) {\n    id\n    apiKey\n  }\n}\n\nmutation RevokeApiKey($id: ID!) {\n  revokeApiKey(id: $id)\n}"): (typeof documents)["query Viewer {\n  viewer {\n    id\n    email\n    tier\n    createdAt\n    apiKeys {\n      id\n      display\n      name\n      createdAt\n      expiresAt\n      revokedAt\n    }\n  }\n}\n\nmutation CreateAccount($email: String!, $tier: Tier!) {\n  createAccount(email: $email, tier: $tier) {\n    account {\n      id\n      email\n      tier\n    }\n    apiKey\n    keyId\n  }\n}\n\nmutation CreateApiKey($accountId: ID!, $name: String, $expiresAt: DateTime) {\n  createApiKey(accountId: $accountId, name: $name, expiresAt: $expiresAt) {\n    id\n    apiKey\n  }\n}\n\nmutation RevokeApiKey($id: ID!) {\n  revokeApiKey(id: $id)\n}"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "mutation CreateChatCompletion($input: ChatCompletionInput!) {\n  createChatCompletion(input: $input) {\n    id\n    object\n    created\n    model\n    choices {\n      index\n      message {\n        role\n        content\n      }\n      finishReason\n    }\n    usage {\n      promptTokens\n      completionTokens\n      totalTokens\n    }\n  }\n}\n\nsubscription ChatCompletionStream($input: ChatCompletionInput!) {\n  chatCompletionStream(input: $input) {\n    id\n    object\n    created\n    model\n    choices {\n      index\n      delta {\n        role\n        content\n      }\n      finishReason\n    }\n    usage {\n      promptTokens\n      completionTokens\n      totalTokens\n    }\n  }\n}"): (typeof documents)["mutation CreateChatCompletion($input: ChatCompletionInput!) {\n  createChatCompletion(input: $input) {\n    id\n    object\n    created\n    model\n    choices {\n      index\n      message {\n        role\n        content\n      }\n      finishReason\n    }\n    usage {\n      promptTokens\n      completionTokens\n      totalTokens\n    }\n  }\n}\n\nsubscription ChatCompletionStream($input: ChatCompletionInput!) {\n  chatCompletionStream(input: $input) {\n    id\n    object\n    created\n    model\n    choices {\n      index\n      delta {\n        role\n        content\n      }\n      finishReason\n    }\n    usage {\n      promptTokens\n      completionTokens\n      totalTokens\n    }\n  }\n}"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "mutation CreateEmbeddings($input: EmbeddingsInput!) {\n  createEmbeddings(input: $input) {\n    object\n    model\n    data {\n      object\n      index\n      embedding\n    }\n    usage {\n      promptTokens\n      totalTokens\n    }\n  }\n}"): (typeof documents)["mutation CreateEmbeddings($input: EmbeddingsInput!) {\n  createEmbeddings(input: $input) {\n    object\n    model\n    data {\n      object\n      index\n      embedding\n    }\n    usage {\n      promptTokens\n      totalTokens\n    }\n  }\n}"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "fragment ModelFields on Model {\n  id\n  object\n  created\n  ownedBy\n  category\n  version\n  status\n  capabilities {\n    chatCompletion\n    streaming\n    functionCalling\n    embeddings\n    rerank\n    moderation\n  }\n  pricing {\n    inputPricePerMillion\n    outputPricePerMillion\n    pricePerMillionTokens\n    currency\n  }\n  specifications {\n    contextWindow\n    maxOutputTokens\n    trainingCutoff\n    maxTokens\n    outputDimensions\n    maxDocuments\n  }\n}\n\nquery ListModels($category: ModelCategory) {\n  models(category: $category) {\n    ...ModelFields\n  }\n}\n\nquery GetModel($id: ID!) {\n  model(id: $id) {\n    ...ModelFields\n  }\n}"): (typeof documents)["fragment ModelFields on Model {\n  id\n  object\n  created\n  ownedBy\n  category\n  version\n  status\n  capabilities {\n    chatCompletion\n    streaming\n    functionCalling\n    embeddings\n    rerank\n    moderation\n  }\n  pricing {\n    inputPricePerMillion\n    outputPricePerMillion\n    pricePerMillionTokens\n    currency\n  }\n  specifications {\n    contextWindow\n    maxOutputTokens\n    trainingCutoff\n    maxTokens\n    outputDimensions\n    maxDocuments\n  }\n}\n\nquery ListModels($category: ModelCategory) {\n  models(category: $category) {\n    ...ModelFields\n  }\n}\n\nquery GetModel($id: ID!) {\n  model(id: $id) {\n    ...ModelFields\n  }\n}"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "mutation Moderate($input: ModerationInput!) {\n  moderate(input: $input) {\n    id\n    model\n    results {\n      flagged\n      categories {\n        name\n        flagged\n        score\n      }\n    }\n    usage {\n      promptTokens\n      totalTokens\n    }\n  }\n}"): (typeof documents)["mutation Moderate($input: ModerationInput!) {\n  moderate(input: $input) {\n    id\n    model\n    results {\n      flagged\n      categories {\n        name\n        flagged\n        score\n      }\n    }\n    usage {\n      promptTokens\n      totalTokens\n    }\n  }\n}"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "mutation Rerank($input: RerankInput!) {\n  rerank(input: $input) {\n    id\n    model\n    results {\n      index\n      relevanceScore\n      document {\n        text\n      }\n    }\n    usage {\n      promptTokens\n      totalTokens\n    }\n  }\n}"): (typeof documents)["mutation Rerank($input: RerankInput!) {\n  rerank(input: $input) {\n    id\n    model\n    results {\n      index\n      relevanceScore\n      document {\n        text\n      }\n    }\n    usage {\n      promptTokens\n      totalTokens\n    }\n  }\n}"];

export function graphql(source: string) {
  return (documents as any)[source] ?? {};
}

export type DocumentType<TDocumentNode extends DocumentNode<any, any>> = TDocumentNode extends DocumentNode<  infer TType,  any>  ? TType  : never;