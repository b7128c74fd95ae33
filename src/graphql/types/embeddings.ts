// Mutation.createEmbeddings, and the EmbeddingVector scalar its vectors travel in.
import { GraphQLError, Kind, type ValueNode } from 'graphql';
import type { Embeddings } from '../../domain/inference/inference-service.js';
import { builder } from '../builder.js';
import { invalidScalarValue } from '../errors.js';

const NOT_A_VECTOR = 'EmbeddingVector must be a list of finite numbers.';

function finiteNumbers(value: unknown): value is number[] {
  if (!Array.isArray(value)) return false;
  for (const x of value) if (typeof x !== 'number' || !Number.isFinite(x)) return false;
  return true;
}

function literalNumber(node: ValueNode): number {
  if (node.kind !== Kind.FLOAT && node.kind !== Kind.INT) throw invalidScalarValue(NOT_A_VECTOR);
  return Number(node.value);
}

// A `[Float!]!` list is completed and serialised element by element (100 inputs of 1024 dimensions:
// over 100 000 completion steps per request), most of what the GraphQL door cost an embeddings
// call. As one scalar, a vector is checked in one pass and handed over as it is; on the wire it is
// the same JSON array of numbers.
export const EmbeddingVectorScalar = builder.scalarType('EmbeddingVector', {
  description: 'An embedding: a list of floats, written as a JSON array of numbers (the shape of `[Float!]!`, serialised as one value).',
  serialize: (value) => {
    if (!finiteNumbers(value)) throw new GraphQLError(NOT_A_VECTOR);
    return value;
  },
  parseValue: (value) => {
    if (!finiteNumbers(value)) throw invalidScalarValue(NOT_A_VECTOR);
    return value;
  },
  parseLiteral: (ast) => {
    if (ast.kind !== Kind.LIST) throw invalidScalarValue(NOT_A_VECTOR);
    return ast.values.map(literalNumber);
  },
});

const EmbeddingsInput = builder.inputType('EmbeddingsInput', {
  fields: (t) => ({
    model: t.string({ required: true }),
    input: t.stringList({ required: true, description: 'One string or up to 100.' }),
    dimensions: t.int({
      required: false,
      description:
        "Shorter vectors: one of the model's supportedDimensions (or its full size); the vectors are cut to it and L2-renormalised.",
    }),
    user: t.string({ required: false, description: 'End-user identifier for monitoring and abuse detection (stored with the usage).' }),
  }),
});

export const InputUsageRef = builder.objectRef<{ promptTokens: number; totalTokens: number }>('InputUsage').implement({
  fields: (t) => ({ promptTokens: t.exposeInt('promptTokens'), totalTokens: t.exposeInt('totalTokens') }),
});

const EmbeddingRef = builder.objectRef<Embeddings['data'][number]>('Embedding').implement({
  fields: (t) => ({
    object: t.exposeString('object'),
    index: t.exposeInt('index'),
    embedding: t.field({ type: EmbeddingVectorScalar, resolve: (e) => e.embedding }),
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
