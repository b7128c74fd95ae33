// POST /v1/moderate (and /v1/moderations, the path OpenAI clients call) → Mutation.moderate.
// `input` is a string or, as OpenAI accepts, a list of up to 100 strings (one result each), or a
// list of text parts (one result).
import type { Request, Response } from 'express';
import { z } from 'zod';
import { type ContentPart, contentPart, parseBody, partTexts, stringOrList, toList } from './body.js';
import type { GraphQLContext } from '../src/graphql/context.js';
import { documents, run } from './operations.js';
import { deprecationHeaders, setHeaders } from './wire.js';
import type { CompatDoor } from './door.js';

// OpenAI's multimodal form: a list of parts, read as one input. Text parts only: this server's
// moderation models read text, and an image is refused by its part's type rather than dropped.
export const body = z.object({ model: z.string().optional(), input: z.union([stringOrList, z.array(contentPart).min(1)]) }).loose();

function inputsOf(input: z.infer<typeof body>['input']): string[] {
  if (typeof input === 'string' || input.every((p) => typeof p === 'string')) return toList(input as string | string[]);
  return [partTexts(input as ContentPart[], 'input', ': this server moderates text only.').join('\n')];
}

const TEXT_ONLY = ['text'] as const;
const NOT_APPLIED = [] as const;

/**
 * Every category OpenAI's moderation result carries (its schema requires all 13, and typed clients
 * read them as fields): those the model does not judge are there too, unflagged, scored 0 and
 * applied to no input type. A model's own further categories (Llama Guard's `privacy`, …) follow.
 */
const OPENAI_CATEGORIES = [
  'harassment',
  'harassment/threatening',
  'hate',
  'hate/threatening',
  'illicit',
  'illicit/violent',
  'self-harm',
  'self-harm/instructions',
  'self-harm/intent',
  'sexual',
  'sexual/minors',
  'violence',
  'violence/graphic',
] as const;

type Categories = { name: string; flagged: boolean; score: number }[];

function byCategory<T>(judged: Categories, of: (c: Categories[number]) => T, missing: T): Record<string, T> {
  const out: Record<string, T> = {};
  for (const name of OPENAI_CATEGORIES) out[name] = missing;
  for (const c of judged) out[c.name] = of(c);
  return out;
}

export function moderate(door: CompatDoor) {
  return async (req: Request, res: Response, ctx: GraphQLContext) => {
    const b = parseBody(req, body);
    const data = await run(documents.moderate, { input: { model: b.model ?? null, input: inputsOf(b.input) } }, ctx);
    const m = data.moderate;
    setHeaders(res, deprecationHeaders(door.model(m.model)));
    res.json({
      id: m.id,
      model: m.model,
      results: m.results.map((r) => ({
        flagged: r.flagged,
        categories: byCategory(r.categories, (c) => c.flagged, false),
        category_scores: byCategory(r.categories, (c) => c.score, 0),
        // OpenAI's field (required by its schema): this server moderates text only.
        category_applied_input_types: byCategory<readonly string[]>(r.categories, () => TEXT_ONLY, NOT_APPLIED),
      })),
    });
  };
}
