// Model: the catalog's entries, with Query.models(category) and Query.model(id).
import {
  type ChatModelConfig,
  type EmbeddingModelConfig,
  MODEL_CATEGORIES,
  type ModelConfig,
  type ModerationModelConfig,
  type RerankModelConfig,
} from '../../domain/catalog/model.js';
import { builder } from '../builder.js';

export const ModelCategoryEnum = builder.enumType('ModelCategory', {
  description: 'What a model does, and so which endpoint serves it.',
  values: MODEL_CATEGORIES,
});
const ModelStatusEnum = builder.enumType('ModelStatus', {
  description: 'active: served and supported; beta: served, may change; deprecated: served until its sunset date, then removed.',
  values: ['active', 'beta', 'deprecated'] as const,
});

type Each<K extends 'capabilities' | 'pricing' | 'specifications'> = Partial<
  ChatModelConfig[K] & EmbeddingModelConfig[K] & RerankModelConfig[K] & ModerationModelConfig[K]
>;
type Capabilities = Each<'capabilities'>;
type Pricing = Each<'pricing'>;
type Specifications = Each<'specifications'>;

// Capabilities, pricing and specifications differ by category; a key that the model's category
// does not have is null here (compat leaves it out of the /v1 JSON).
const Capabilities = builder.objectRef<Capabilities>('ModelCapabilities').implement({
  description: "What the model can do; a capability of another category's models is null.",
  fields: (t) => ({
    chatCompletion: t.boolean({ nullable: true, resolve: (o) => o.chat_completion ?? null }),
    streaming: t.boolean({ nullable: true, resolve: (o) => o.streaming ?? null }),
    functionCalling: t.boolean({ nullable: true, resolve: (o) => o.function_calling ?? null }),
    embeddings: t.boolean({ nullable: true, resolve: (o) => o.embeddings ?? null }),
    rerank: t.boolean({ nullable: true, resolve: (o) => o.rerank ?? null }),
    moderation: t.boolean({ nullable: true, resolve: (o) => o.moderation ?? null }),
  }),
});

const Pricing = builder.objectRef<Pricing>('ModelPricing').implement({
  description: 'Prices in currency units per million tokens.',
  fields: (t) => ({
    inputPricePerMillion: t.float({ nullable: true, resolve: (o) => o.input_price_per_million ?? null }),
    outputPricePerMillion: t.float({ nullable: true, resolve: (o) => o.output_price_per_million ?? null }),
    pricePerMillionTokens: t.float({ nullable: true, resolve: (o) => o.price_per_million_tokens ?? null }),
    currency: t.string({
      description: 'Lower case (usd), as the specification writes model pricing; wallet amounts carry the upper-case code (USD).',
      resolve: (o) => o.currency ?? 'usd',
    }),
  }),
});

const Specifications = builder.objectRef<Specifications>('ModelSpecifications').implement({
  description: "The model's limits; a limit of another category's models is null.",
  fields: (t) => ({
    contextWindow: t.int({ nullable: true, resolve: (o) => o.context_window ?? null }),
    maxOutputTokens: t.int({ nullable: true, resolve: (o) => o.max_output_tokens ?? null }),
    trainingCutoff: t.string({ nullable: true, resolve: (o) => o.training_cutoff ?? null }),
    maxTokens: t.int({ nullable: true, resolve: (o) => o.max_tokens ?? null }),
    outputDimensions: t.int({ nullable: true, resolve: (o) => o.output_dimensions ?? null }),
    supportedDimensions: t.intList({
      nullable: true,
      description: 'Embeddings: the shorter sizes `dimensions` may ask for (the full outputDimensions is always allowed).',
      resolve: (o) => o.supported_dimensions ?? null,
    }),
    maxDocuments: t.int({ nullable: true, resolve: (o) => o.max_documents ?? null }),
  }),
});

export const ModelRef = builder.objectRef<ModelConfig>('Model').implement({
  description: 'A model of the catalog, as GET /v1/models lists it.',
  fields: (t) => ({
    id: t.exposeID('id'),
    object: t.string({ resolve: () => 'model' }),
    created: t.exposeInt('created'),
    ownedBy: t.exposeString('owned_by'),
    category: t.field({ type: ModelCategoryEnum, resolve: (m) => m.category }),
    version: t.exposeString('version'),
    status: t.field({
      type: ModelStatusEnum,
      description: "The catalog's lifecycle state (active, beta, deprecated); whether the model can serve now is `available`.",
      resolve: (m) => m.status,
    }),
    available: t.boolean({
      description:
        'Whether a call to this model can be served now (false, for example, when its in-process model file is missing or was refused; such calls answer 503 model_unavailable).',
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
    capabilities: t.field({ type: Capabilities, resolve: (m) => m.capabilities }),
    pricing: t.field({ type: Pricing, resolve: (m) => m.pricing }),
    specifications: t.field({ type: Specifications, resolve: (m) => m.specifications }),
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
