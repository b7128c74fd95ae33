// Mutation.moderate.
import type { ModerationResult } from '../../domain/inference/inference-service.js';
import { builder } from '../builder.js';
import { InputUsageRef } from './embeddings.js';

const ModerationInput = builder.inputType('ModerationInput', {
  fields: (t) => ({
    model: t.string({ required: false, description: "Left out: the catalog's first moderation model that is not deprecated." }),
    input: t.stringList({ required: true, description: 'One text, or up to 100.' }),
  }),
});

const CategoryRef = builder.objectRef<ModerationResult['results'][number]['categories'][number]>('ModerationCategory').implement({
  fields: (t) => ({
    name: t.exposeString('name', { description: 'hate, harassment, self-harm, sexual, violence, or another the model knows.' }),
    flagged: t.exposeBoolean('flagged'),
    score: t.exposeFloat('score'),
  }),
});

const ModerationItemRef = builder.objectRef<ModerationResult['results'][number]>('ModerationItem').implement({
  fields: (t) => ({
    flagged: t.exposeBoolean('flagged'),
    categories: t.field({ type: [CategoryRef], resolve: (r) => r.categories }),
  }),
});

const ModerationResultRef = builder.objectRef<ModerationResult>('ModerationResult').implement({
  fields: (t) => ({
    id: t.exposeID('id'),
    model: t.exposeString('model'),
    results: t.field({ type: [ModerationItemRef], resolve: (r) => r.results }),
    usage: t.field({ type: InputUsageRef, resolve: (r) => r.usage }),
  }),
});

builder.mutationField('moderate', (t) =>
  t.field({
    type: ModerationResultRef,
    args: { input: t.arg({ type: ModerationInput, required: true }) },
    resolve: async (_root, { input }, ctx) => {
      const caller = await ctx.caller();
      return ctx.services.inference.moderate(caller, input, ctx.signal);
    },
  }),
);
