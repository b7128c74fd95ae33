// Model: the catalog's entries, with Query.models(category) and Query.model(id).
import type { ModelConfig } from '../../config.js';
import { MODEL_CATEGORIES } from '../../config.js';
import { builder } from '../builder.js';

export const ModelCategoryEnum = builder.enumType('ModelCategory', { values: MODEL_CATEGORIES });
const ModelStatusEnum = builder.enumType('ModelStatus', { values: ['active', 'beta', 'deprecated'] as const });

type Bag = Record<string, unknown>;
const num = (o: Bag, k: string) => (typeof o[k] === 'number' ? (o[k] as number) : null);
const bool = (o: Bag, k: string) => (typeof o[k] === 'boolean' ? (o[k] as boolean) : null);
const str = (o: Bag, k: string) => (typeof o[k] === 'string' ? (o[k] as string) : null);

// Capabilities, pricing and specifications differ by category; a key that the model's category
// does not have is null here (compat leaves it out of the /v1 JSON).
const Capabilities = builder.objectRef<Bag>('ModelCapabilities').implement({
  fields: (t) => ({
    chatCompletion: t.boolean({ nullable: true, resolve: (o) => bool(o, 'chat_completion') }),
    streaming: t.boolean({ nullable: true, resolve: (o) => bool(o, 'streaming') }),
    functionCalling: t.boolean({ nullable: true, resolve: (o) => bool(o, 'function_calling') }),
    embeddings: t.boolean({ nullable: true, resolve: (o) => bool(o, 'embeddings') }),
    rerank: t.boolean({ nullable: true, resolve: (o) => bool(o, 'rerank') }),
    moderation: t.boolean({ nullable: true, resolve: (o) => bool(o, 'moderation') }),
  }),
});

const Pricing = builder.objectRef<Bag>('ModelPricing').implement({
  description: 'Prices in currency units per million tokens.',
  fields: (t) => ({
    inputPricePerMillion: t.float({ nullable: true, resolve: (o) => num(o, 'input_price_per_million') }),
    outputPricePerMillion: t.float({ nullable: true, resolve: (o) => num(o, 'output_price_per_million') }),
    pricePerMillionTokens: t.float({ nullable: true, resolve: (o) => num(o, 'price_per_million_tokens') }),
    currency: t.string({ description: 'Lower case (usd), as the specification writes model pricing; wallet amounts carry the upper-case code (USD).', resolve: (o) => str(o, 'currency') ?? 'usd' }),
  }),
});

const Specifications = builder.objectRef<Bag>('ModelSpecifications').implement({
  fields: (t) => ({
    contextWindow: t.int({ nullable: true, resolve: (o) => num(o, 'context_window') }),
    maxOutputTokens: t.int({ nullable: true, resolve: (o) => num(o, 'max_output_tokens') }),
    trainingCutoff: t.string({ nullable: true, resolve: (o) => str(o, 'training_cutoff') }),
    maxTokens: t.int({ nullable: true, resolve: (o) => num(o, 'max_tokens') }),
    outputDimensions: t.int({ nullable: true, resolve: (o) => num(o, 'output_dimensions') }),
    maxDocuments: t.int({ nullable: true, resolve: (o) => num(o, 'max_documents') }),
  }),
});

export const ModelRef = builder.objectRef<ModelConfig>('Model').implement({
  fields: (t) => ({
    id: t.exposeID('id'),
    object: t.string({ resolve: () => 'model' }),
    created: t.exposeInt('created'),
    ownedBy: t.exposeString('owned_by'),
    category: t.field({ type: ModelCategoryEnum, resolve: (m) => m.category }),
    version: t.exposeString('version'),
    status: t.field({ type: ModelStatusEnum, description: "The catalog's lifecycle state (active, beta, deprecated); whether the model can serve now is `available`.", resolve: (m) => m.status }),
    available: t.boolean({
      description: 'Whether a call to this model can be served now (false, for example, when its in-process model file is missing or was refused; such calls answer 503 model_unavailable).',
      resolve: (m, _args, ctx) => ctx.services.engines.availability(m.id).available,
    }),
    unavailableReason: t.string({
      nullable: true,
      description: 'Why the model cannot serve now; null when it can.',
      resolve: (m, _args, ctx) => ctx.services.engines.availability(m.id).reason,
    }),
    sunset: t.field({
      type: 'DateTime',
      nullable: true,
      description: 'When a deprecated model is removed.',
      resolve: (m) => (m.sunset === undefined ? null : new Date(m.sunset)),
    }),
    capabilities: t.field({ type: Capabilities, resolve: (m) => m.capabilities as Bag }),
    pricing: t.field({ type: Pricing, resolve: (m) => m.pricing as Bag }),
    specifications: t.field({ type: Specifications, resolve: (m) => m.specifications as Bag }),
  }),
});

builder.queryFields((t) => ({
  models: t.field({
    type: [ModelRef],
    description: 'The catalog, optionally of one category. Needs no API key.',
    args: { category: t.arg({ type: ModelCategoryEnum, required: false }) },
    resolve: (_root, args, ctx) => ctx.services.catalog.list(args.category),
  }),
  model: t.field({
    type: ModelRef,
    nullable: true,
    description: 'One model by id, or null when there is none. Needs no API key.',
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, args, ctx) => ctx.services.catalog.find(String(args.id)) ?? null,
  }),
}));
