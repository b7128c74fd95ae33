// What the server's wiring hands the /v1 door besides the GraphQL schema: the GraphQL context of a
// request, the early rate-limit check, the body limit, and the little /v1 needs to know about a
// model that GraphQL results do not carry (its Deprecation and Sunset headers, and whether tool
// calling is the model's or the server's limit). compat imports no service; src/server.ts builds this.
import type { Request, Response } from 'express';
import type { GraphQLContext } from '../src/graphql/context.js';

/** What /v1 shows about a model beyond GraphQL's results; undefined for an unknown id. */
export interface ModelNotice {
  deprecated: boolean;
  /** The sunset date as an HTTP date, for a deprecated model that has one. */
  sunset: string | null;
  /** For chat models: whether the model supports function calling; null for other categories. */
  functionCalling: boolean | null;
}

export interface CompatDoor {
  /** The GraphQL context of one /v1 request. */
  context(req: Request, res: Response): GraphQLContext;
  /** Refuses (429) an account already known to be over its RPM, before its body is read. */
  precheck(ctx: GraphQLContext): Promise<void>;
  /** The largest request body, e.g. "1mb". */
  bodyLimit: string;
  /** How long a stream's client may take none of what was written before it is disconnected. */
  stalledClientMs: number;
  /** Logs a stream's client disconnected for taking nothing (stalledClientMs). */
  stalled(req: Request): void;
  model(id: string): ModelNotice | undefined;
}
