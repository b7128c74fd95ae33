// What this server asks of a GraphQL document beyond the specification's own rules: one mutation
// field per document, and a clear answer when the request does not say which operation to run.
import type { Plugin } from 'graphql-yoga';
import {
  getOperationAST,
  GraphQLError,
  Kind,
  type DocumentNode,
  type SelectionSetNode,
  type ValidationContext,
  type ValidationRule,
} from 'graphql';

/**
 * A mutation operation selects one root field. Every field is non-null (builder.ts), mutations
 * included, so in a document of several a failing one would make `data` null for all of them,
 * though those before it ran (a chat charged, a key created whose secret is shown once): refused
 * before anything runs, as the specification refuses a subscription of several root fields.
 */
const OneMutationFieldRule: ValidationRule = (context) => ({
  OperationDefinition(operation) {
    if (operation.operation !== 'mutation') return;
    const keys = [...responseKeys(context, operation.selectionSet, new Set())];
    if (keys.length <= 1) return;
    const name = operation.name ? `Mutation '${operation.name.value}'` : 'This mutation';
    context.reportError(
      new GraphQLError(
        `${name} selects ${keys.length} fields (${keys.join(', ')}); a document may run one mutation. Send each in a request of its own: the results of those that ran would otherwise be lost when a later one fails.`,
        { nodes: operation },
      ),
    );
  },
});

/** The response keys (alias or name) a selection set gives at its level, fragments included. */
function responseKeys(
  context: ValidationContext,
  selectionSet: SelectionSetNode,
  seen: Set<string>,
  keys = new Set<string>(),
): Set<string> {
  for (const selection of selectionSet.selections) {
    // `__typename` runs nothing: `mutation { createMyApiKey { … } __typename }` is one mutation.
    if (selection.kind === Kind.FIELD) {
      if (selection.name.value !== '__typename') keys.add((selection.alias ?? selection.name).value);
    } else if (selection.kind === Kind.INLINE_FRAGMENT) responseKeys(context, selection.selectionSet, seen, keys);
    else if (!seen.has(selection.name.value)) {
      seen.add(selection.name.value);
      const fragment = context.getFragment(selection.name.value);
      if (fragment) responseKeys(context, fragment.selectionSet, seen, keys);
    }
  }
  return keys;
}

/** The rules above, as a Yoga plugin: the validation rule (HTTP and WebSocket) and the operation's choice (HTTP). */
export function useDocumentRules(): Plugin {
  return {
    onValidate: ({ addValidationRule }) => addValidationRule(OneMutationFieldRule),
    ...useOperationChoice(),
  };
}

/**
 * Over HTTP, a document whose operation cannot be picked (an operationName it does not have, or
 * several operations and none named) is refused saying which names it has; Yoga's own answer,
 * "Could not determine what operation to execute.", says neither. (A WebSocket's onSubscribe
 * words its own.) Runs before Yoga's check, which would throw first.
 */
function useOperationChoice(): Plugin {
  return {
    onParse:
      () =>
      ({ result, context }) => {
        const { request, params } = context as { request?: unknown; params?: { operationName?: unknown } };
        if (!request || result instanceof Error || !result) return;
        const operationName = typeof params?.operationName === 'string' && params.operationName ? params.operationName : undefined;
        if (getOperationAST(result as DocumentNode, operationName)) return;
        throw operationNotChosen(result as DocumentNode, operationName);
      },
  };
}

function operationNotChosen(document: DocumentNode, operationName: string | undefined): GraphQLError {
  const operations = document.definitions.filter((d) => d.kind === Kind.OPERATION_DEFINITION);
  const names = operations.flatMap((o) => (o.name ? [`'${o.name.value}'`] : []));
  const unnamed = operations.length - names.length;
  const named = `named ${names.join(', ')}${unnamed ? ` (and ${unnamed} without a name)` : ''}`;
  let message: string;
  if (operations.length === 0) message = 'The document has no operation to run, only fragments.';
  else if (!operationName) message = `The document has ${operations.length} operations, ${named}: operationName must name the one to run.`;
  else if (names.length === 0)
    message =
      operations.length === 1
        ? `The document has no operation named '${operationName}': its operation has no name. Leave operationName out, or give the operation that name.`
        : `The document has no operation named '${operationName}': none of its ${operations.length} operations has a name. Name them, and the one to run in operationName.`;
  else
    message = `The document has no operation named '${operationName}': its operation${operations.length === 1 ? ' is' : 's are'} ${named}. operationName must name one of them.`;
  return new GraphQLError(message, { extensions: { http: { status: 400 } } });
}
