// The moderation model a call that names none gets: the catalog's first one not deprecated.
import { describe, expect, it } from 'vitest';
import { Catalog } from '../src/domain/catalog/catalog.js';
import type { ModelConfig } from '../src/domain/catalog/model.js';
import { DomainError } from '../src/domain/errors.js';

const moderation = (id: string, status: string) => ({ id, category: 'moderation', status }) as unknown as ModelConfig;
const chat = (id: string) => ({ id, category: 'chat', status: 'active' }) as unknown as ModelConfig;

describe('the default moderation model', () => {
  it('is the first moderation model not deprecated, else the first; none is a missing model', () => {
    expect(new Catalog([chat('c'), moderation('old', 'deprecated'), moderation('new', 'active')]).defaultModeration().id).toBe('new');
    expect(new Catalog([moderation('old', 'deprecated')]).defaultModeration().id).toBe('old');
    const none = (() => {
      try {
        new Catalog([chat('c')]).defaultModeration();
      } catch (e) {
        return e;
      }
    })();
    expect(none).toBeInstanceOf(DomainError);
    expect(none).toMatchObject({ code: 'missing_required_parameter', param: 'model' });
  });
});
