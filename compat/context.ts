// The GraphQL context of one /v1 request: its key, its request id, and an abort signal that fires
// when the client goes away before the response is finished.
import type { Request, Response } from 'express';
import type { Services } from '../src/container.js';
import { createContext, type GraphQLContext } from '../src/graphql/context.js';

export function contextFor(services: Services, req: Request, res: Response): GraphQLContext {
  const controller = new AbortController();
  res.once('close', () => {
    if (!res.writableFinished) controller.abort(new Error('client disconnected'));
  });
  return createContext(services, { authorization: req.headers.authorization ?? null, requestId: req.requestId, signal: controller.signal });
}
