// compat's one error mapping: any error of a /v1 call becomes its HTTP status and the OpenAI-style
// body {error:{message,type,param,code}}. GraphQL errors arrive already public (src/graphql/errors.ts).
import type { Response } from 'express';
import { GraphQLError } from 'graphql';
import { toPublicGraphQLError } from '../src/graphql/errors.js';
import { OperationError } from './operations.js';

export interface ErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

export function errorResponse(thrown: unknown, log?: (err: unknown) => void): { status: number; body: ErrorBody; retryAfter?: number } {
  const err = thrown instanceof OperationError ? thrown.error : thrown;
  const pub = err instanceof GraphQLError && typeof err.extensions?.status === 'number' ? err : toPublicGraphQLError(err, log);
  const ext = pub.extensions as { code?: string; type?: string; status?: number; param?: string | null; retryAfter?: number };
  return {
    status: ext.status ?? 500,
    body: { error: { message: pub.message, type: ext.type ?? 'server_error', param: ext.param ?? null, code: ext.code ?? null } },
    retryAfter: ext.retryAfter,
  };
}

export function sendError(res: Response, err: unknown, log?: (err: unknown) => void): void {
  const { status, body, retryAfter } = errorResponse(err, log);
  if (res.headersSent) {
    res.end();
    return;
  }
  if (retryAfter) res.setHeader('Retry-After', String(retryAfter));
  res.status(status).json(body);
}
