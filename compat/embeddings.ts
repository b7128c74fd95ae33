// POST /v1/embeddings → Mutation.createEmbeddings. `encoding_format: "base64"` (the openai SDK's
// default) sends each vector as its little-endian float32 bytes in base64. `dimensions` (OpenAI's
// name; `output_dimensions` is read the same) asks for shorter vectors; `user` is stored with the
// usage event.
import type { Request, Response } from 'express';
import { z } from 'zod';
import { DomainError } from '../src/domain/errors.js';
import { optionalInt, parseBody, stringOrList, toList } from './body.js';
import type { GraphQLContext } from '../src/graphql/context.js';
import { documents, run } from './operations.js';
import { deprecationHeaders, setHeaders, usageWire } from './wire.js';
import type { CompatDoor } from './door.js';

export const body = z
  .object({
    model: z.string(),
    input: stringOrList,
    encoding_format: z.enum(['float', 'base64']).nullish(),
    dimensions: optionalInt,
    output_dimensions: optionalInt,
    user: z.string().nullish(),
  })
  .loose();

/** `dimensions`, or `output_dimensions` (the same request under another provider's name); both must agree. */
function dimensionsOf(b: z.infer<typeof body>): number | null {
  const given = b.dimensions ?? null;
  const other = b.output_dimensions ?? null;
  if (given !== null && other !== null && given !== other) {
    throw new DomainError('invalid_value', `'dimensions' (${given}) and 'output_dimensions' (${other}) disagree; give one of them.`, {
      param: 'dimensions',
    });
  }
  return given ?? other;
}

/**
 * OpenAI also takes `input` as token ids (a list of numbers, or of such lists; LangChain's
 * OpenAIEmbeddings sends them by default). Ids mean nothing to another model's tokenizer, so they
 * are refused with a message that says what to send instead.
 */
function refuseTokenIds(given: unknown): void {
  const input = (given as { input?: unknown } | null | undefined)?.input;
  const ids = (x: unknown) => typeof x === 'number' || (Array.isArray(x) && x.some((y) => typeof y === 'number'));
  if (!Array.isArray(input) || !input.some(ids)) return;
  throw new DomainError(
    'invalid_type',
    "'input' holds token ids, which this server does not take: send the text, as a string or a list of strings (with Python LangChain's OpenAIEmbeddings, set check_embedding_ctx_length=False).",
    { param: 'input' },
  );
}

export function float32Base64(vector: number[]): string {
  const buf = Buffer.allocUnsafe(vector.length * 4);
  for (let i = 0; i < vector.length; i++) buf.writeFloatLE(vector[i]!, i * 4);
  return buf.toString('base64');
}

export function embeddings(door: CompatDoor) {
  return async (req: Request, res: Response, ctx: GraphQLContext) => {
    refuseTokenIds(req.body);
    const b = parseBody(req, body);
    const input = { model: b.model, input: toList(b.input), dimensions: dimensionsOf(b), user: b.user ?? null };
    const data = await run(documents.createEmbeddings, { input }, ctx);
    const e = data.createEmbeddings;
    const base64 = b.encoding_format === 'base64';
    setHeaders(res, deprecationHeaders(door.model(b.model)));
    res.json({
      object: 'list',
      data: e.data.map((d) => ({ object: 'embedding', index: d.index, embedding: base64 ? float32Base64(d.embedding) : d.embedding })),
      model: e.model,
      usage: usageWire(e.usage),
    });
  };
}
