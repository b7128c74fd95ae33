// POST /v1/moderate (and /v1/moderations, the path OpenAI clients call) → Mutation.moderate.
// `input` is a string or, as OpenAI accepts, a list of up to 100 strings: one result each.
import type { Request, Response } from 'express';
import { z } from 'zod';
import { parseBody, stringOrList, toList } from './body.js';
import type { GraphQLContext } from '../src/graphql/context.js';
import { documents, run } from './operations.js';
import { deprecationHeaders, setHeaders } from './wire.js';
import type { CompatDoor } from './door.js';

export const body = z.object({ model: z.string(), input: stringOrList }).loose();

export function moderate(door: CompatDoor) {
  return async (req: Request, res: Response, ctx: GraphQLContext) => {
    const b = parseBody(req, body);
    const data = await run(documents.moderate, { input: { model: b.model, input: toList(b.input) } }, ctx);
    const m = data.moderate;
    setHeaders(res, deprecationHeaders(door.model(b.model)));
    res.json({
      id: m.id,
      model: m.model,
      results: m.results.map((r) => ({
        flagged: r.flagged,
        categories: Object.fromEntries(r.categories.map((c) => [c.name, c.flagged])),
        category_scores: Object.fromEntries(r.categories.map((c) => [c.name, c.score])),
      })),
    });
  };
}
