// The one place where errors become GraphQL errors: a DomainError keeps its message and gets its
// stable code, type and HTTP status in `extensions`; anything unexpected is masked and logged.
import { GraphQLError } from 'graphql';
import { DomainError, ERROR_CODES } from '../domain/errors.js';

export interface PublicErrorExtensions {
  code: string;
  type: string;
  status: number;
  param: string | null;
  retryAfter?: number;
}

function domainErrorOf(error: unknown): DomainError | undefined {
  let e: unknown = error;
  for (let depth = 0; depth < 4 && e; depth++) {
    if (e instanceof DomainError) return e;
    e = (e as { originalError?: unknown }).originalError;
  }
  return undefined;
}

/** Maps any error met during an operation to the GraphQL error clients see. */
export function toPublicGraphQLError(error: unknown, log?: (err: unknown) => void): GraphQLError {
  const gql = error instanceof GraphQLError ? error : undefined;
  const domain = domainErrorOf(error);
  if (domain) {
    const extensions: Record<string, unknown> & PublicErrorExtensions = {
      code: domain.code,
      type: domain.type,
      status: domain.status,
      param: domain.param,
      http: { status: domain.status, ...(domain.retryAfter ? { headers: { 'Retry-After': String(domain.retryAfter) } } : {}) },
    };
    if (domain.retryAfter) extensions.retryAfter = domain.retryAfter;
    return new GraphQLError(domain.message, { nodes: gql?.nodes, path: gql?.path, extensions });
  }
  // Errors of GraphQL itself (syntax, validation, variable coercion) and of the armor plugins are
  // the client's: they keep their message.
  if (gql && !gql.originalError) {
    const code = typeof gql.extensions?.code === 'string' ? gql.extensions.code : 'invalid_request';
    return new GraphQLError(gql.message, {
      nodes: gql.nodes,
      path: gql.path,
      extensions: { ...gql.extensions, code, type: 'invalid_request_error', status: 400, http: { status: 400 } },
    });
  }
  log?.(error);
  const { status, type } = ERROR_CODES.internal_error;
  return new GraphQLError('The server had an unexpected error while processing the request.', {
    nodes: gql?.nodes,
    path: gql?.path,
    extensions: { code: 'internal_error', type, status, param: null, http: { status } },
  });
}
