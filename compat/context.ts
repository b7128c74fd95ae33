// The GraphQL context of one /v1 request: its key, its request id, an abort signal that fires
// when the client goes away before the response is finished, and the rate-limit headers, sent with
// the response's head (admission comes before the first byte, streams too).
import type { ServerResponse } from 'node:http';
import type { Request, Response } from 'express';
import onHeaders from 'on-headers';
import type { Services } from '../src/container.js';
import { setRateLimitHeaders } from '../src/domain/ratelimit/types.js';
import type { LimiterState } from '../src/domain/ratelimit/types.js';
import { createContext, type GraphQLContext } from '../src/graphql/context.js';

export function contextFor(services: Services, req: Request, res: Response): GraphQLContext {
  const controller = new AbortController();
  res.once('close', () => {
    if (!res.writableFinished) controller.abort(new Error('client disconnected'));
  });
  return createContext(services, {
    authorization: req.headers.authorization ?? null,
    requestId: req.requestId,
    signal: controller.signal,
    onRateLimit: rateLimitHeadersOn(res),
  });
}

/**
 * What hears a call's rate-limit states and sends the latest as X-RateLimit-* headers, once, when
 * the response's head is written (so a non-streamed call's headers include its correction; a
 * stream's head goes out after admission, and later corrections are not sent).
 */
export function rateLimitHeadersOn(res: ServerResponse): (state: LimiterState) => void {
  let latest: LimiterState | undefined;
  return (state) => {
    if (res.headersSent) return;
    if (!latest) onHeaders(res, () => setRateLimitHeaders(res, latest!));
    latest = state;
  };
}
