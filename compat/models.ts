// GET /v1/models → Query.models and GET /v1/models/{id} → Query.model. No key needed; the listing
// is cacheable (Cache-Control public, max-age=300, a strong ETag, 304 on If-None-Match).
import { createHash } from 'node:crypto';
import type { Request, Response } from 'express';
import { DomainError } from '../src/domain/errors.js';
import type { ModelFieldsFragment } from '../src/generated/graphql.js';
import type { GraphQLContext } from '../src/graphql/context.js';
import { documents, run } from './operations.js';
import { deprecationHeaders, setHeaders, snakeWithoutNulls } from './wire.js';
import type { CompatDoor } from './door.js';

export const modelWire = (m: ModelFieldsFragment) => ({
  id: m.id,
  object: 'model',
  created: m.created,
  owned_by: m.ownedBy,
  category: m.category,
  version: m.version,
  capabilities: snakeWithoutNulls(m.capabilities),
  pricing: snakeWithoutNulls(m.pricing),
  specifications: snakeWithoutNulls(m.specifications),
  status: m.status,
  // Beyond section 2.4: whether the model can serve now (`status` is the catalog's lifecycle).
  available: m.available,
  unavailable_reason: m.unavailableReason ?? null,
});

/** The last body sent and its ETag: the catalog only changes with a restart, so it is hashed once. */
let lastTagged: { body: string; etag: string } | undefined;

function etagOf(body: string): string {
  if (lastTagged?.body !== body) lastTagged = { body, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"` };
  return lastTagged.etag;
}

function sendCacheable(req: Request, res: Response, payload: unknown) {
  const body = JSON.stringify(payload);
  const etag = etagOf(body);
  res.setHeader('Cache-Control', 'public, max-age=300');
  res.setHeader('ETag', etag);
  const ifNoneMatch = req.headers['if-none-match'];
  if (ifNoneMatch?.split(',').some((t) => t.trim().replace(/^W\//, '') === etag || t.trim() === '*')) {
    res.status(304).end();
    return;
  }
  res.type('application/json').send(body);
}

export function listModels() {
  return async (req: Request, res: Response, ctx: GraphQLContext) => {
    const data = await run(documents.listModels, {}, ctx);
    sendCacheable(req, res, { object: 'list', data: data.models.map(modelWire) });
  };
}

export function getModel(door: CompatDoor) {
  return async (req: Request, res: Response, ctx: GraphQLContext) => {
    const raw = (req.params as { id?: string | string[] }).id;
    const id = Array.isArray(raw) ? raw.join('/') : (raw ?? '');
    const data = await run(documents.getModel, { id }, ctx);
    if (!data.model) throw new DomainError('model_not_found', `The model '${id}' does not exist.`, { param: 'model' });
    setHeaders(res, deprecationHeaders(door.model(id)));
    sendCacheable(req, res, modelWire(data.model));
  };
}
