// The GraphQL context of one /v1 request: its key, its request id, an abort signal that fires
// when the client goes away before the response is finished, and the rate-limit headers, set on
// the response as the limiter reports them (admission comes before the first byte, streams too).
import type { Request, Response } from 'express';
import type { Services } from '../src/container.js';
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
    onRateLimit: (headers) => setWhileUnsent(res, headers),
  });
}

/** Sets headers unless the response has started (a stream's later corrections are dropped). */
export function setWhileUnsent(res: Response, headers: Record<string, string>): void {
  if (res.headersSent) return;
  for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
}
