// The GraphQL documents compat executes, in-process: parsed by codegen at build time and validated
// against the schema once, at start-up (never per request).
import { execute, subscribe, validate, type DocumentNode, type ExecutionResult, type GraphQLError } from 'graphql';
import type { TypedDocumentNode } from '@graphql-typed-document-node/core';
import {
  ChatCompletionStreamDocument,
  CreateChatCompletionDocument,
  CreateEmbeddingsDocument,
  GetModelDocument,
  ListModelsDocument,
  ModerateDocument,
  RerankDocument,
  TopUpDocument,
  UsageDocument,
  WalletBalanceDocument,
  WalletTransactionsDocument,
} from '../src/generated/graphql.js';
import type { GraphQLContext } from '../src/graphql/context.js';
import { schema } from '../src/graphql/schema.js';

export const documents = {
  listModels: ListModelsDocument,
  getModel: GetModelDocument,
  createChatCompletion: CreateChatCompletionDocument,
  chatCompletionStream: ChatCompletionStreamDocument,
  createEmbeddings: CreateEmbeddingsDocument,
  rerank: RerankDocument,
  moderate: ModerateDocument,
  walletBalance: WalletBalanceDocument,
  walletTransactions: WalletTransactionsDocument,
  usage: UsageDocument,
  topUp: TopUpDocument,
};

for (const [name, doc] of Object.entries(documents)) {
  const errors = validate(schema, doc as DocumentNode);
  if (errors.length)
    throw new Error(`compat operation ${name} does not validate against the schema: ${errors.map((e) => e.message).join('; ')}`);
}

/** Thrown with the operation's first (already public) error. */
export class OperationError extends Error {
  constructor(readonly error: GraphQLError) {
    super(error.message);
  }
}

export async function run<R, V>(doc: TypedDocumentNode<R, V>, variables: V, context: GraphQLContext): Promise<R> {
  const result = (await execute({
    schema,
    document: doc,
    variableValues: variables as Record<string, unknown>,
    contextValue: context,
  })) as ExecutionResult<R>;
  if (result.errors?.length) throw new OperationError(result.errors[0]!);
  return result.data as R;
}

/** Starts a subscription; yields each event's data, throws the first error met. */
export async function* stream<R, V>(doc: TypedDocumentNode<R, V>, variables: V, context: GraphQLContext): AsyncGenerator<R> {
  const result = await subscribe({ schema, document: doc, variableValues: variables as Record<string, unknown>, contextValue: context });
  if (!(Symbol.asyncIterator in result)) {
    throw new OperationError((result as ExecutionResult).errors![0]!);
  }
  const events = result as AsyncGenerator<ExecutionResult<R>>;
  try {
    for await (const event of events) {
      if (event.errors?.length) throw new OperationError(event.errors[0]!);
      yield event.data as R;
    }
  } finally {
    await events.return?.(undefined);
  }
}
