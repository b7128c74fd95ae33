// The model catalog: the configured models, looked up by id and category, and rendered exactly as
// section 2.4 of the specification shows them.
import { createHash } from 'node:crypto';
import type { ModelCategory, ModelConfig } from './model.js';
import { DomainError } from '../errors.js';

export type { ModelConfig, ModelCategory };

export interface ModelView {
  id: string;
  object: 'model';
  created: number;
  owned_by: string;
  category: ModelCategory;
  version: string;
  capabilities: Record<string, boolean>;
  pricing: Record<string, number | string>;
  specifications: Record<string, number | string>;
  status: 'active' | 'beta' | 'deprecated';
}

const ENDPOINT_OF: Record<ModelCategory, string> = {
  chat: 'chat completions',
  embedding: 'embeddings',
  reranking: 'rerank',
  moderation: 'moderation',
};

export function renderModel(m: ModelConfig): ModelView {
  return {
    id: m.id,
    object: 'model',
    created: m.created,
    owned_by: m.owned_by,
    category: m.category,
    version: m.version,
    capabilities: { ...m.capabilities },
    pricing: { ...m.pricing },
    specifications: { ...m.specifications },
    status: m.status,
  };
}

/** The Sunset date of a deprecated model as an HTTP date, or null. */
export function sunsetOf(m: ModelConfig): string | null {
  if (m.status !== 'deprecated' || m.sunset === undefined) return null;
  const d = m.sunset instanceof Date ? m.sunset : new Date(m.sunset);
  return Number.isNaN(d.getTime()) ? null : d.toUTCString();
}

export class Catalog {
  private readonly byId: Map<string, ModelConfig>;
  readonly listing: { object: 'list'; data: ModelView[] };
  /** Strong ETag of the listing: the catalog only changes with a restart. */
  readonly etag: string;

  constructor(readonly models: ModelConfig[]) {
    this.byId = new Map(models.map((m) => [m.id, m]));
    this.listing = { object: 'list', data: models.map(renderModel) };
    this.etag = `"${createHash('sha256').update(JSON.stringify(this.listing)).digest('base64url').slice(0, 27)}"`;
  }

  list(category?: ModelCategory | null): ModelConfig[] {
    return category ? this.models.filter((m) => m.category === category) : this.models;
  }

  find(id: string): ModelConfig | undefined {
    return this.byId.get(id);
  }

  /** The model for an endpoint of `category`; unknown ids and models of another category are `invalid_model`. */
  require<C extends ModelCategory>(id: string, category: C): Extract<ModelConfig, { category: C }> {
    const m = this.byId.get(id);
    if (!m) throw new DomainError('invalid_model', `The model '${id}' does not exist.`, { param: 'model' });
    if (m.category !== category) {
      throw new DomainError(
        'invalid_model',
        `The model '${id}' is a ${m.category} model and cannot be used for ${ENDPOINT_OF[category]}.`,
        { param: 'model' },
      );
    }
    return m as Extract<ModelConfig, { category: C }>;
  }
}
