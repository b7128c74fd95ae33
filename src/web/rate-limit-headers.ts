// The X-RateLimit-* headers of every HTTP response of a metered call (/v1 and /graphql alike):
// the latest limiter state a call reports is kept on its response and written with the head.
import type { ServerResponse } from 'node:http';
import type { Express } from 'express';
import type { LimiterState } from '../domain/ratelimit/types.js';

/** Sets the contract's headers on a response whose head is not written. */
export function setRateLimitHeaders(res: { setHeader(name: string, value: string): unknown }, state: LimiterState): void {
  res.setHeader('X-RateLimit-Limit-RPM', String(state.rpm.limit));
  res.setHeader('X-RateLimit-Limit-TPM', String(state.tpm.limit));
  res.setHeader('X-RateLimit-Remaining-RPM', String(state.rpm.remaining));
  res.setHeader('X-RateLimit-Remaining-TPM', String(state.tpm.remaining));
  res.setHeader('X-RateLimit-Reset-RPM', String(state.rpm.reset));
  res.setHeader('X-RateLimit-Reset-TPM', String(state.tpm.reset));
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
