// The GraphQL context of one /v1 request: its key, its request id, an abort signal that fires
// when the client goes away before the response is finished, and the rate-limit headers, sent with
// the response's head (admission comes before the first byte, streams too).
import type { ServerResponse } from 'node:http';
import type { Express, Request, Response } from 'express';
import type { Services } from '../src/container.js';
import { setRateLimitHeaders } from '../src/domain/ratelimit/types.js';
import type { Usage } from '../src/domain/inference/engine.js';
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
    path: req.originalUrl.split('?', 1)[0]!,
    signal: controller.signal,
    onRateLimit: rateLimitHeadersOn(res),
    onSettled: settledOn(res),
  });
}

const RATE_LIMIT_STATE = Symbol('tollgate.rateLimitState');
type WithRateLimit = ServerResponse & { [RATE_LIMIT_STATE]?: LimiterState };

/**
 * What hears a call's rate-limit states: the latest is kept on the response and sent as
 * X-RateLimit-* headers when its head is written (so a non-streamed call's headers include its
 * correction; a stream's head goes out after admission, and later corrections are not sent).
 */
export function rateLimitHeadersOn(res: ServerResponse): (state: LimiterState) => void {
  return (state) => {
    (res as WithRateLimit)[RATE_LIMIT_STATE] = state;
  };
}

/**
 * Makes every response of `app` write the headers of its call's latest rate-limit state with its
 * head, through express's `app.response` (the prototype of every `res`): one method for all
 * responses rather than a wrapper per response. Every head goes through `writeHead` (an implicit
 * one too), and headers set before it merge with any it is given.
 */
export function sendRateLimitHeaders(app: Express): void {
  const writeHead = app.response.writeHead;
  app.response.writeHead = function (this: WithRateLimit, ...args: Parameters<ServerResponse['writeHead']>) {
    const state = this[RATE_LIMIT_STATE];
    if (state && !this.headersSent) setRateLimitHeaders(this, state);
    return writeHead.apply(this, args);
  } as typeof writeHead;
}

/** What the calls of a response were settled at, for its access line: the model and tokens. */
export interface SettledUsage {
  model: string;
  promptTokens: number;
  completionTokens: number;
}

const SETTLED = Symbol('tollgate.settled');
type WithSettled = ServerResponse & { [SETTLED]?: SettledUsage };

/** Keeps the model and tokens of the response's metered call (the sum, should there be several). */
export function settledOn(res: ServerResponse): (model: string, usage: Usage) => void {
  return (model, usage) => {
    const r = res as WithSettled;
    const before = r[SETTLED];
    r[SETTLED] = {
      model: before && before.model !== model ? `${before.model},${model}` : model,
      promptTokens: (before?.promptTokens ?? 0) + usage.promptTokens,
      completionTokens: (before?.completionTokens ?? 0) + usage.completionTokens,
    };
  };
}

export function settledUsage(res: ServerResponse): SettledUsage | undefined {
  return (res as WithSettled)[SETTLED];
}
