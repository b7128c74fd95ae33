// The Pothos SchemaBuilder, configured once; it defines no types (they live in ./types/).
import SchemaBuilder from '@pothos/core';
import DataloaderPlugin from '@pothos/plugin-dataloader';
import type { GraphQLContext } from './context.js';

export const builder = new SchemaBuilder<{
  Context: GraphQLContext;
  DefaultFieldNullability: false;
  Scalars: {
    DateTime: { Input: Date; Output: Date };
    /** Money: nanos in code, an exact decimal string on the wire (types/money.ts). */
    Decimal: { Input: bigint; Output: bigint };
    /** Counters that can pass 2^31 (monthly token sums). */
    SafeInt: { Input: number; Output: number };
    /** An embedding: a list of floats serialised as one value (types/embeddings.ts). */
    EmbeddingVector: { Input: number[]; Output: readonly number[] };
    /** Any JSON value (a tool's parameters, a response format's schema: types/chat-tools.ts). */
    JSON: { Input: unknown; Output: unknown };
  };
}>({
  plugins: [DataloaderPlugin],
  // The contract's fields are always there unless a type says otherwise.
  defaultFieldNullability: false,
});

builder.queryType({});
builder.mutationType({});
builder.subscriptionType({});

builder.scalarType('DateTime', {
  description: 'An ISO 8601 timestamp in UTC.',
  serialize: (d) => (d instanceof Date ? d : new Date(d as string)).toISOString(),
  parseValue: (v) => {
    const d = new Date(String(v));
    if (typeof v !== 'string' || Number.isNaN(d.getTime())) throw new TypeError('DateTime must be an ISO 8601 string');
    return d;
  },
});
