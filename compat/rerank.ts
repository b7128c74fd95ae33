// POST /v1/rerank → Mutation.rerank. Documents may be strings or objects with `text`.
import type { Request, Response } from 'express';
import { z } from 'zod';
import { optionalInt, parseBody } from './body.js';
import type { GraphQLContext } from '../src/graphql/context.js';
import { documents, run } from './operations.js';
import { deprecationHeaders, setHeaders, usageWire } from './wire.js';
import type { CompatDoor } from './door.js';

export const body = z
  .object({
    model: z.string(),
    query: z.string(),
    documents: z.array(z.union([z.string(), z.object({ text: z.string() }).loose()])),
    top_n: optionalInt,
    return_documents: z.boolean().nullish(),
  })
  .loose();

export function rerank(door: CompatDoor) {
  return async (req: Request, res: Response, ctx: GraphQLContext) => {
    const b = parseBody(req, body);
    const returnDocuments = b.return_documents ?? true;
    const input = {
      model: b.model,
      query: b.query,
      documents: b.documents.map((d) => (typeof d === 'string' ? d : d.text)),
      topN: b.top_n ?? null,
      returnDocuments,
    };
    const data = await run(documents.rerank, { input }, ctx);
    const r = data.rerank;
    setHeaders(res, deprecationHeaders(door.model(b.model)));
    res.json({
      id: r.id,
      model: r.model,
      results: r.results.map((x) => ({
        index: x.index,
        relevance_score: x.relevanceScore,
        ...(returnDocuments && x.document ? { document: { text: x.document.text } } : {}),
      })),
      usage: usageWire(r.usage),
    });
  };
}
