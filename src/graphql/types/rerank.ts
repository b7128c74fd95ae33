// Mutation.rerank.
import type { RerankResult } from '../../domain/inference/inference-service.js';
import { builder } from '../builder.js';
import { InputUsageRef } from './embeddings.js';

const RerankInput = builder.inputType('RerankInput', {
  fields: (t) => ({
    model: t.string({ required: true }),
    query: t.string({ required: true }),
    documents: t.stringList({ required: true, description: 'Up to 100 document texts.' }),
    topN: t.int({ required: false, description: 'Return only the top N; default all.' }),
    returnDocuments: t.boolean({ required: false, description: 'Include the document text; default true.' }),
  }),
});

const RerankDocumentRef = builder.objectRef<{ text: string }>('RerankDocument').implement({
  fields: (t) => ({ text: t.exposeString('text') }),
});

const RerankItemRef = builder.objectRef<RerankResult['results'][number]>('RerankItem').implement({
  fields: (t) => ({
    index: t.exposeInt('index'),
    relevanceScore: t.exposeFloat('relevanceScore'),
    document: t.field({ type: RerankDocumentRef, nullable: true, resolve: (r) => r.document }),
  }),
});

const RerankResultRef = builder.objectRef<RerankResult>('RerankResult').implement({
  fields: (t) => ({
    id: t.exposeID('id'),
    model: t.exposeString('model'),
    results: t.field({ type: [RerankItemRef], resolve: (r) => r.results }),
    usage: t.field({ type: InputUsageRef, resolve: (r) => r.usage }),
  }),
});

builder.mutationField('rerank', (t) =>
  t.field({
    type: RerankResultRef,
    args: { input: t.arg({ type: RerankInput, required: true }) },
    resolve: async (_root, { input }, ctx) => {
      const caller = await ctx.caller();
      return ctx.services.inference.rerank(caller, input, ctx.signal);
    },
  }),
);
