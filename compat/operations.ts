// The GraphQL documents compat executes, in-process: parsed by codegen at build time, validated
// against the schema and compiled once, at start-up (never per request). Queries and mutations
// run compiled by graphql-jit (the same schema and resolvers, the operation turned into one
// function: variables coerced and fields walked without graphql-js's per-request interpretation,
// a large part of a /v1 call's CPU and allocation); a subscription's source stream is created by
// graphql-js, its events executed compiled (eventDocument).
import {
  astFromValue,
  createSourceEventStream,
  execute,
  Kind,
  typeFromAST,
  validate,
  visit,
  type DocumentNode,
  type ExecutionResult,
  type GraphQLError,
  type GraphQLInputType,
  type ValueNode,
  type VariableNode,
} from 'graphql';
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

/** The operations and the event documents (eventDocument), compiled by graphql-jit. */
const compiled = new Map<DocumentNode, CompiledQuery>();

/** Validates `doc` against the schema and, when `compile`, compiles it; `what` names it in the error. */
function prepare(doc: DocumentNode, what: string, compile: boolean): void {
  const errors = validate(schema, doc);
  if (errors.length) throw new Error(`${what} does not validate against the schema: ${errors.map((e) => e.message).join('; ')}`);
  if (!compile) return;
  const query = compileQuery(schema, doc, undefined, { disablingCapturingStackErrors: true });
  if (!isCompiledQuery(query)) throw new Error(`${what} does not compile: ${(query.errors ?? []).map((e) => e.message).join('; ')}`);
  compiled.set(doc, query);
}

// Subscriptions run through graphql-js: their events are executed with an event document (below).
const isSubscription = (doc: DocumentNode) =>
  doc.definitions.some((d) => d.kind === Kind.OPERATION_DEFINITION && d.operation === 'subscription');
for (const [name, doc] of Object.entries(documents))
  prepare(doc as DocumentNode, `compat operation ${name}`, !isSubscription(doc as DocumentNode));

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
  if (result.errors?.length) {
    // An error without a path came before any resolver ran: the variables did not coerce.
    // graphql-jit words those its own way (a scalar's reason dropped, a nested field named as a
    // variable); graphql-js, run again on the same input, gives the message the GraphQL door gives.
    if (!result.errors[0]!.path) {
      const again = (await execute({
        schema,
        document: doc,
        variableValues: variables as Record<string, unknown>,
        contextValue: context,
      })) as ExecutionResult<R>;
      if (again.errors?.length) throw new OperationError(again.errors[0]!);
    }
    throw new OperationError(result.errors[0]!);
  }
  return result.data as R;
}

/**
 * `doc` with `values` written into it as literals in place of its variables, which it no longer
 * declares: what each event of a subscription is executed with when its event fields take nothing
 * from the variables. graphql 16 coerces an operation's variables again for every event (its
 * subscribe() does too); a document without variables has none to coerce, so a token costs the
 * selection set's execution only. Built and validated once, at start-up.
 */
export function eventDocument<R, V>(doc: TypedDocumentNode<R, V>, values: V): TypedDocumentNode<R, Record<string, never>> {
  const literals = new Map<string, ValueNode>();
  for (const def of doc.definitions) {
    if (def.kind !== Kind.OPERATION_DEFINITION) continue;
    for (const v of def.variableDefinitions ?? []) {
      const name = v.variable.name.value;
      const literal = astFromValue((values as Record<string, unknown>)[name], typeFromAST(schema, v.type) as GraphQLInputType);
      if (!literal) throw new Error(`eventDocument: no literal for $${name}`);
      literals.set(name, literal);
    }
  }
  const out = visit(doc as DocumentNode, {
    [Kind.VARIABLE_DEFINITION]: () => null,
    [Kind.VARIABLE]: (node: VariableNode) => literals.get(node.name.value),
  });
  // Compiled too (graphql-jit): with no variables, each event is the selection set run on its payload.
  prepare(out, 'eventDocument', true);
  return out as TypedDocumentNode<R, Record<string, never>>;
}

/**
 * Starts a subscription; yields each event's data, throws the first error met. As graphql's
 * subscribe(): the source stream is created with `variables` (checked and coerced as ever), then
 * each event is executed against the operation's selection set with `perEvent` (./eventDocument),
 * compiled, so that the variables are not coerced again for every event.
 */
export async function* stream<R, V>(
  doc: TypedDocumentNode<R, V>,
  variables: V,
  context: GraphQLContext,
  perEvent: TypedDocumentNode<R, Record<string, never>>,
): AsyncGenerator<R> {
  const source = await createSourceEventStream({
    schema,
    document: doc,
    variableValues: variables as Record<string, unknown>,
    contextValue: context,
  });
  if (!(Symbol.asyncIterator in source)) {
    throw new OperationError((source as ExecutionResult).errors![0]!);
  }
  const events = source as AsyncGenerator<unknown>;
  const compiledEvent = compiled.get(perEvent as DocumentNode);
  if (!compiledEvent) throw new Error('compat streamed with an event document eventDocument did not build');
  try {
    for await (const payload of events) {
      const event = (await compiledEvent.query(payload, context, {})) as ExecutionResult<R>;
      if (event.errors?.length) throw new OperationError(event.errors[0]!);
      yield event.data as R;
    }
  } finally {
    await events.return?.(undefined);
  }
}
