// The model catalog: the configured models, looked up by id and by category. The doors render
// them (GraphQL's Model type; /v1 maps that onto OpenAI's model object).
import type { ModelCategory, ModelConfig } from './model.js';
import { DomainError } from '../errors.js';

export type { ModelConfig, ModelCategory };

const ENDPOINT_OF: Record<ModelCategory, string> = {
  chat: 'chat completions',
  embedding: 'embeddings',
  reranking: 'rerank',
  moderation: 'moderation',
};

/** The Sunset date of a deprecated model as an HTTP date, or null. */
export function sunsetOf(m: ModelConfig): string | null {
  if (m.status !== 'deprecated' || m.sunset === undefined) return null;
  const d = m.sunset instanceof Date ? m.sunset : new Date(m.sunset);
  return Number.isNaN(d.getTime()) ? null : d.toUTCString();
}

export class Catalog {
  private readonly byId: Map<string, ModelConfig>;

  constructor(readonly models: ModelConfig[]) {
    this.byId = new Map(models.map((m) => [m.id, m]));
  }

  list(category?: ModelCategory | null): ModelConfig[] {
    return category ? this.models.filter((m) => m.category === category) : this.models;
  }

  find(id: string): ModelConfig | undefined {
    return this.byId.get(id);
  }

  /**
   * The moderation model a call that names none gets (OpenAI's API, and its SDKs, make `model`
   * optional there): the catalog's first one not deprecated, else its first; none: the call must
   * name one (`missing_required_parameter`).
   */
  defaultModeration(): Extract<ModelConfig, { category: 'moderation' }> {
    const all = this.models.filter((m) => m.category === 'moderation');
    const m = all.find((x) => x.status !== 'deprecated') ?? all[0];
    if (!m)
      throw new DomainError('missing_required_parameter', "'model' is required: this server has no moderation model to default to.", {
        param: 'model',
      });
    return m as Extract<ModelConfig, { category: 'moderation' }>;
  }

  /** The model for an endpoint of `category`; unknown ids and models of another category are `invalid_model`. */
  require<C extends ModelCategory>(id: string, category: C): Extract<ModelConfig, { category: C }> {
    const m = this.byId.get(id);
    if (!m) throw new DomainError('invalid_model', `The model '${id}' does not exist.`, { param: 'model' });
    if (m.category !== category) {
      throw new DomainError(
        'invalid_model',
        `The model '${id}' is ${/^[aeiou]/.test(m.category) ? 'an' : 'a'} ${m.category} model and cannot be used for ${ENDPOINT_OF[category]}.`,
        { param: 'model' },
      );
    }
    return m as Extract<ModelConfig, { category: C }>;
  }
}
