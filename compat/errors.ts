// compat's one error mapping: any error of a /v1 call becomes its HTTP status and the OpenAI-style
// body {error:{message,type,param,code}}. GraphQL errors arrive already public (src/graphql/errors.ts).
import type { Response } from 'express';
import { type HttpErrorBody, httpError } from '../src/graphql/errors.js';
import { OperationError } from './operations.js';

export type ErrorBody = HttpErrorBody;

export function errorResponse(thrown: unknown, log?: (err: unknown) => void): { status: number; body: ErrorBody; retryAfter?: number } {
  return httpError(thrown instanceof OperationError ? thrown.error : thrown, log);
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
