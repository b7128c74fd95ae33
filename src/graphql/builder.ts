// The Pothos SchemaBuilder, configured once; it defines no types (they live in ./types/).
import { parseIsoDateTime } from '../domain/iso-date.js';
import SchemaBuilder from '@pothos/core';
import DataloaderPlugin from '@pothos/plugin-dataloader';
import { Kind, print } from 'graphql';
import type { GraphQLContext } from './context.js';
import { invalidScalarValue } from './errors.js';

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

const NOT_A_DATE_TIME = 'DateTime must be an ISO 8601 string such as "2030-01-31T00:00:00Z"';

/** `written`: a literal as the document has it (a variable's value is quoted by graphql-js's own message). */
function toDate(value: unknown, written?: string): Date {
  const d = typeof value === 'string' ? parseIsoDateTime(value) : null;
  if (!d) throw invalidScalarValue(written ? `${NOT_A_DATE_TIME}; got ${written.slice(0, 40)}.` : `${NOT_A_DATE_TIME}.`);
  return d;
}

builder.scalarType('DateTime', {
  description: 'An ISO 8601 timestamp in UTC.',
  serialize: (d) => (d instanceof Date ? d : new Date(d as string)).toISOString(),
  parseValue: (v) => toDate(v),
  // Without its own parseLiteral a bad literal reached parseValue's error through graphql-js's
  // default, which the error mapping could not tell from a server fault (a masked internal_error).
  parseLiteral: (ast) => toDate(ast.kind === Kind.STRING ? ast.value : undefined, print(ast)),
});
