// The one place where errors become GraphQL errors: a DomainError keeps its message and gets its
// stable code, type and HTTP status in `extensions`; anything unexpected is masked and logged.
import { GraphQLError } from 'graphql';
import { ClientDisconnected, DomainError, ERROR_CODES } from '../domain/errors.js';
import { isNulRefused, nulRefused } from '../db/nul.js';
import { isConnectionLost, isDatabaseUnavailable } from '../db/unavailable.js';

export interface PublicErrorExtensions {
  code: string;
  type: string;
  status: number;
  param: string | null;
  retryAfter?: number;
}

function originalOf<T>(error: unknown, type: new (...args: never[]) => T): T | undefined {
  let e: unknown = error;
  for (let depth = 0; depth < 4 && e; depth++) {
    if (e instanceof type) return e;
    e = (e as { originalError?: unknown }).originalError;
  }
  return undefined;
}

/**
 * The DomainError an error is or wraps; a NUL in a value the database was given (the client's
 * text, refused: nothing was written) is one too, whoever's error carries it (src/db/nul.ts).
 */
const domainErrorOf = (error: unknown) => originalOf(error, DomainError) ?? (isNulRefused(error) ? nulRefused() : undefined);

/**
 * graphql-js's variable coercion errors, a value the client sent for a variable: 'Variable "$f" got
 * invalid value …', '… of required type "X" was not provided.', '… of non-null type "X" must not
 * be null.' Not its validation errors about variables ('is never used', 'is not defined', 'used in
 * position expecting …'): those are the document's, invalid_request.
 */
const VARIABLE_ERROR =
  /^Variable "\$([_A-Za-z][_0-9A-Za-z]*)" (?:got invalid value|of required type "[^"]*" was not provided|of non-null type "[^"]*" must not be null)/;

/**
 * graphql-js's validation error for a literal that a scalar refused with an error other than a
 * GraphQLError (in parseLiteral, or in parseValue through graphql-js's default parseLiteral):
 * 'Expected value of type "DateTime", found "tomorrow"; …', with that error as its original error.
 * The value written in the document is wrong, not the server.
 */
const LITERAL_ERROR = /^Expected value of type "[^"]+", found /;
const isRefusedLiteral = (gql: GraphQLError) => Boolean(gql.originalError) && LITERAL_ERROR.test(gql.message);

/**
 * A custom scalar's refusal of an input value (a variable's or a literal's), with the code its
 * literal keeps (a variable's gets invalid_value and the variable's name from VARIABLE_ERROR).
 */
export function invalidScalarValue(message: string): GraphQLError {
  return new GraphQLError(message, { extensions: { code: 'invalid_value' } });
}

/**
 * A mistake of the request rather than of the server: GraphQL's own errors before execution
 * (syntax, validation, the armor's limits: no original error), variable coercion (the value a
 * client sent for a variable) and a literal a scalar refused. An error with a path was raised
 * while executing a field.
 */
function isRequestError(gql: GraphQLError): boolean {
  if (gql.path) return false;
  return !gql.originalError || VARIABLE_ERROR.test(gql.message) || isRefusedLiteral(gql);
}

/** How long a client is asked to wait after database_unavailable. */
const DATABASE_RETRY_AFTER_S = 1;

/** True for errors masked as internal_error: neither a DomainError, nor a mistake of the request, nor a client that left. */
export function isUnexpectedError(error: unknown): boolean {
  // The database away for a moment is no bug: its 503 shows on the access line, and the
  // background loops say it (once every 30 s), not each request with a stack.
  if (domainErrorOf(error) || originalOf(error, ClientDisconnected) || isConnectionLost(error)) return false;
  return !(error instanceof GraphQLError && isRequestError(error));
}

/** graphql-js's suggestions: `Did you mean "x" or "y"?`, `Did you mean the enum value "chat"?`. */
const SUGGESTION = /Did you mean [^?]*\?/g;

/**
 * The error without graphql-js's suggestions of names, for a server with introspection off (they
 * would tell the schema's fields, types and enum values all the same); the same mask as the armor's.
 */
export function withoutSuggestions(error: GraphQLError): GraphQLError {
  if (!error.message.includes('Did you mean ')) return error;
  return new GraphQLError(error.message.replace(SUGGESTION, '[Suggestion hidden]'), {
    nodes: error.nodes,
    source: error.source,
    positions: error.positions,
    path: error.path,
    originalError: error.originalError,
    extensions: error.extensions,
  });
}

/** An error as a response body lists it: message and the public extensions (no `http`, no stack). */
export function publicErrorBody(error: GraphQLError): { message: string; extensions: PublicErrorExtensions } {
  const { http: _http, ...extensions } = error.extensions as unknown as PublicErrorExtensions & { http?: unknown };
  return { message: error.message, extensions };
}

/** A DomainError as clients see it: its code, type, status and param, and its Retry-After. */
function fromDomainError(domain: DomainError, gql: GraphQLError | undefined): GraphQLError {
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

/** Maps any error met during an operation to the GraphQL error clients see. */
export function toPublicGraphQLError(error: unknown, log?: (err: unknown) => void): GraphQLError {
  const gql = error instanceof GraphQLError ? error : undefined;
  const domain = domainErrorOf(error);
  if (domain) return fromDomainError(domain, gql);
  // Errors of GraphQL itself (syntax, validation, variable coercion), of Yoga's request handling
  // and of the armor plugins are the client's: they keep their message (never a stack) and get a
  // 400-class status (Yoga's own, e.g. 405 with its Allow header for a mutation over GET).
  if (gql && isRequestError(gql)) {
    const variable = VARIABLE_ERROR.exec(gql.message)?.[1];
    const http = gql.extensions?.http as { status?: unknown; headers?: Record<string, string> } | undefined;
    const status = typeof http?.status === 'number' && http.status >= 400 && http.status < 500 ? http.status : 400;
    // Only this project's codes reach clients: Yoga's and graphql-js's own (BAD_REQUEST for no
    // query, invalid JSON, batching or a mutation over GET; OPERATION_RESOLUTION_FAILURE for an
    // unknown operationName; GRAPHQL_PARSE_FAILED for a syntax error) are invalid_request.
    const given = gql.extensions?.code;
    const code =
      variable || isRefusedLiteral(gql)
        ? 'invalid_value'
        : typeof given === 'string' && Object.hasOwn(ERROR_CODES, given)
          ? given
          : 'invalid_request';
    // `spec: false`: Yoga would otherwise answer validation errors 200 to application/json clients
    // (the GraphQL-over-HTTP spec's legacy rule); this server answers every mistake with its 4xx.
    const extensions: Record<string, unknown> & PublicErrorExtensions = {
      code,
      type: 'invalid_request_error',
      status,
      param: variable ?? null,
      http: { status, spec: false, ...(http?.headers ? { headers: http.headers } : {}) },
    };
    return new GraphQLError(gql.message, { nodes: gql.nodes, path: gql.path, extensions });
  }
  // A client that left is no fault of the server's: not logged as one (nobody reads the answer).
  if (originalOf(error, ClientDisconnected)) {
    const { status, type } = ERROR_CODES.client_disconnected;
    return new GraphQLError(new ClientDisconnected().message, {
      nodes: gql?.nodes,
      path: gql?.path,
      extensions: { code: 'client_disconnected', type, status, param: null, http: { status } },
    });
  }
  // The database away for a moment (a dropped connection, a restart): no bug, and worth a retry.
  // A pool that gave no connection is answered so too, but logged: it may be a bug's doing.
  if (isDatabaseUnavailable(error)) {
    if (!isConnectionLost(error)) log?.(error);
    const unavailable = new DomainError(
      'database_unavailable',
      'The database did not answer for a moment; retry after the time given in Retry-After.',
      {
        retryAfter: DATABASE_RETRY_AFTER_S,
      },
    );
    return fromDomainError(unavailable, gql);
  }
  log?.(error);
  const { status, type } = ERROR_CODES.internal_error;
  return new GraphQLError('The server had an unexpected error while processing the request.', {
    nodes: gql?.nodes,
    path: gql?.path,
    extensions: { code: 'internal_error', type, status, param: null, http: { status } },
  });
}

/** The OpenAI-style error body that the HTTP routes (/v1, the payment pages and webhooks) send. */
export interface HttpErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

/** Any error as an HTTP status and the OpenAI-style body (unexpected errors masked and logged). */
export function httpError(thrown: unknown, log?: (err: unknown) => void): { status: number; body: HttpErrorBody; retryAfter?: number } {
  const pub = thrown instanceof GraphQLError && typeof thrown.extensions?.status === 'number' ? thrown : toPublicGraphQLError(thrown, log);
  const ext = pub.extensions as { code?: string; type?: string; status?: number; param?: string | null; retryAfter?: number };
  return {
    status: ext.status ?? 500,
    body: { error: { message: pub.message, type: ext.type ?? 'server_error', param: ext.param ?? null, code: ext.code ?? null } },
    retryAfter: ext.retryAfter,
  };
}
