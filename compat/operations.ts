// The GraphQL documents compat executes, in-process: parsed by codegen at build time, validated
// against the schema and compiled once, at start-up (never per request). Queries and mutations
// run compiled by graphql-jit (the same schema and resolvers, the operation turned into one
// function: variables coerced and fields walked without graphql-js's per-request interpretation,
// a large part of a /v1 call's CPU and allocation); subscriptions run through graphql-js.
import { createSourceEventStream, execute, validate, type DocumentNode, type ExecutionResult, type GraphQLError } from 'graphql';
import { type CompiledQuery, compileQuery, isCompiledQuery } from 'graphql-jit';
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

const compiled = new Map<DocumentNode, CompiledQuery>();

for (const [name, doc] of Object.entries(documents)) {
  const errors = validate(schema, doc as DocumentNode);
  if (errors.length)
    throw new Error(`compat operation ${name} does not validate against the schema: ${errors.map((e) => e.message).join('; ')}`);
  const isSubscription = (doc as DocumentNode).definitions.some((d) => d.kind === 'OperationDefinition' && d.operation === 'subscription');
  if (isSubscription) continue;
  const query = compileQuery(schema, doc as DocumentNode, undefined, { disablingCapturingStackErrors: true });
  if (!isCompiledQuery(query))
    throw new Error(`compat operation ${name} does not compile: ${(query.errors ?? []).map((e) => e.message).join('; ')}`);
  compiled.set(doc as DocumentNode, query);
}

/** Thrown with the operation's first (already public) error. */
export class OperationError extends Error {
  constructor(readonly error: GraphQLError) {
    super(error.message);
  }
}

export async function run<R, V>(doc: TypedDocumentNode<R, V>, variables: V, context: GraphQLContext): Promise<R> {
  const query = compiled.get(doc);
  if (!query) throw new Error('compat ran an operation that is not one of its compiled documents');
  const result = (await query.query(undefined, context, variables as Record<string, unknown>)) as ExecutionResult<R>;
  if (result.errors?.length) throw new OperationError(result.errors[0]!);
  return result.data as R;
}

/**
 * Starts a subscription; yields each event's data, throws the first error met. As graphql's
 * subscribe(): the source stream is created with `variables` (checked and coerced as ever), then
 * each event is executed against the operation's selection set. graphql 16 coerces the
 * operation's variables again for every event; `eventVariables`, when given, are what each event
 * is executed with instead: for an operation whose event fields take no arguments from the
 * variables (the chat stream's chunk resolver only unwraps its item), the smallest valid ones,
 * so that a long conversation is not coerced again per token.
 */
export async function* stream<R, V>(
  doc: TypedDocumentNode<R, V>,
  variables: V,
  context: GraphQLContext,
  eventVariables?: V,
): AsyncGenerator<R> {
  const args = { schema, document: doc, variableValues: variables as Record<string, unknown>, contextValue: context };
  const source = await createSourceEventStream(args);
  if (!(Symbol.asyncIterator in source)) {
    throw new OperationError((source as ExecutionResult).errors![0]!);
  }
  const events = source as AsyncGenerator<unknown>;
  const perEvent = { ...args, variableValues: (eventVariables ?? variables) as Record<string, unknown> };
  try {
    for await (const payload of events) {
      const event = (await execute({ ...perEvent, rootValue: payload })) as ExecutionResult<R>;
      if (event.errors?.length) throw new OperationError(event.errors[0]!);
      yield event.data as R;
    }
  } finally {
    await events.return?.(undefined);
  }
}
