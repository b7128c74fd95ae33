// Mutation.createEmbeddings.
import type { Embeddings } from '../../domain/inference/inference-service.js';
import { builder } from '../builder.js';

const EmbeddingsInput = builder.inputType('EmbeddingsInput', {
  fields: (t) => ({
    model: t.string({ required: true }),
    input: t.stringList({ required: true, description: 'One string or up to 100.' }),
  }),
});

export const InputUsageRef = builder.objectRef<{ promptTokens: number; totalTokens: number }>('InputUsage').implement({
  fields: (t) => ({ promptTokens: t.exposeInt('promptTokens'), totalTokens: t.exposeInt('totalTokens') }),
});

const EmbeddingRef = builder.objectRef<Embeddings['data'][number]>('Embedding').implement({
  fields: (t) => ({
    object: t.exposeString('object'),
    index: t.exposeInt('index'),
    embedding: t.floatList({ resolve: (e) => e.embedding }),
  }),
});

const EmbeddingsRef = builder.objectRef<Embeddings>('Embeddings').implement({
  fields: (t) => ({
    object: t.exposeString('object'),
    model: t.exposeString('model'),
    data: t.field({ type: [EmbeddingRef], resolve: (e) => e.data }),
    usage: t.field({ type: InputUsageRef, resolve: (e) => e.usage }),
  }),
});

builder.mutationField('createEmbeddings', (t) =>
  t.field({
    type: EmbeddingsRef,
    args: { input: t.arg({ type: EmbeddingsInput, required: true }) },
    resolve: async (_root, { input }, ctx) => {
      const caller = await ctx.caller();
      return ctx.services.inference.createEmbeddings(caller, input, ctx.signal);
    },
  }),
);
