// Reading /v1 request bodies: JSON type checks with zod, turned into the specification's 400s.
// Range rules (temperature 0–2, max_tokens, …) are the domain's, shared with GraphQL.
import type { Request } from 'express';
import { z } from 'zod';
import { DomainError } from '../src/domain/errors.js';

function paramOf(path: PropertyKey[]): string {
  return path.reduce<string>((acc, k) => (typeof k === 'number' ? `${acc}[${k}]` : acc ? `${acc}.${String(k)}` : String(k)), '');
}

function describe(issue: z.core.$ZodIssue): DomainError {
  const param = paramOf(issue.path);
  // A union (input: a string or a list) reports a missing field as invalid_union: missing too.
  if ((issue.code === 'invalid_type' || issue.code === 'invalid_union') && issue.input === undefined) {
    return new DomainError('missing_required_parameter', `Missing required parameter: '${param}'.`, { param });
  }
  if (issue.code === 'invalid_type' || issue.code === 'invalid_union') {
    const expected = issue.code === 'invalid_type' ? issue.expected : 'one of the allowed types';
    return new DomainError('invalid_type', `Invalid type for '${param}': expected ${expected}.`, { param: param || null });
  }
  return new DomainError('invalid_value', `Invalid value for '${param}': ${issue.message}.`, { param: param || null });
}

/** Parses the JSON body (already read by express.json) against `schema`; unknown fields are kept, not refused. */
export function parseBody<S extends z.ZodType>(req: Request, schema: S): z.infer<S> {
  const body: unknown = req.body;
  if (body === undefined || body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new DomainError('invalid_json', "The request body must be a JSON object (send 'Content-Type: application/json').");
  }
  const parsed = schema.safeParse(body, { reportInput: true });
  if (!parsed.success) throw describe(parsed.error.issues[0]!);
  return parsed.data;
}

/** A content part as OpenAI clients send it (chat messages, multimodal moderation input). */
export const contentPart = z.object({ type: z.string(), text: z.unknown().optional() }).loose();
export type ContentPart = z.infer<typeof contentPart>;

/**
 * The texts of the parts listed at `at` ("messages[0].content", "input"). Only text parts are
 * taken: a part of another type is refused by its type, `why` saying why, never dropped; `other`
 * may read such a part first (an assistant's refusal in a chat history).
 */
export function partTexts(parts: ContentPart[], at: string, why: string, other?: (p: ContentPart) => string | undefined): string[] {
  return parts.map((p, j) => {
    const read = other?.(p);
    if (read !== undefined) return read;
    if (p.type !== 'text')
      throw new DomainError('invalid_value', `'${at}[${j}]' is a part of type '${p.type.slice(0, 40)}'${why}`, {
        param: `${at}[${j}].type`,
      });
    if (typeof p.text !== 'string')
      throw new DomainError('invalid_type', `'${at}[${j}].text' must be a string.`, { param: `${at}[${j}].text` });
    return p.text;
  });
}

/**
 * The JSON text a request's body was parsed from, decoded, for the one route that reads a field
 * exactly (top-up's amount): the body readers keep it only when the route asked (`wantRawBody`).
 */
const RAW = Symbol('raw body');
type WithRaw = Request & { [RAW]?: string | null };
export function wantRawBody(req: Request): void {
  (req as WithRaw)[RAW] = null;
}
export function wantsRawBody(req: Request): boolean {
  return (req as WithRaw)[RAW] === null;
}
export function keepRawBody(req: Request, text: string): void {
  if (wantsRawBody(req)) (req as WithRaw)[RAW] = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}
export function rawBodyOf(req: Request): string | null {
  return (req as WithRaw)[RAW] ?? null;
}

/** A number field that may also be null (clients send null for "default"). */
export const optionalNumber = z.number().nullish();
/**
 * An integer field that may also be null. GraphQL's Int, which these values travel in, is 32-bit:
 * anything outside it is refused here, naming the parameter (every limit it meets is far lower).
 */
export const optionalInt = z
  .number()
  .int()
  .min(-(2 ** 31))
  .max(2 ** 31 - 1)
  .nullish();
export const stringOrList = z.union([z.string(), z.array(z.string())]);
export const toList = (v: string | string[]) => (Array.isArray(v) ? v : [v]);
