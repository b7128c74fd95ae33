// The scalars of money and large counters. Decimal carries an exact amount: nanos (BigInt) in
// code, a decimal string on the wire ("12.5", never a float), so no client or JSON parser rounds it.
import { GraphQLError, Kind } from 'graphql';
import { formatDecimal, MoneyFormatError, parseDecimal } from '../../domain/billing/money.js';
import { builder } from '../builder.js';

function toNanos(value: unknown): bigint {
  if (typeof value !== 'string' && typeof value !== 'number')
    throw new GraphQLError('Decimal must be a string such as "12.5" (or a number).');
  try {
    return parseDecimal(value);
  } catch (e) {
    throw new GraphQLError(`Decimal: ${e instanceof MoneyFormatError ? e.message : 'not a decimal number'}.`);
  }
}

export const DecimalScalar = builder.scalarType('Decimal', {
  description:
    'An exact amount of money in currency units, written as a decimal string with at most 9 decimal places, e.g. "12.5". Inputs also accept a number.',
  serialize: (nanos) => formatDecimal(BigInt(nanos as bigint)),
  parseValue: toNanos,
  parseLiteral: (ast) => {
    if (ast.kind === Kind.STRING || ast.kind === Kind.FLOAT || ast.kind === Kind.INT) return toNanos(ast.value);
    throw new GraphQLError('Decimal must be a string such as "12.5" (or a number).');
  },
});

export const SafeIntScalar = builder.scalarType('SafeInt', {
  description: 'A whole number from -(2^53 - 1) to 2^53 - 1, e.g. a monthly token count.',
  serialize: (n) => {
    if (!Number.isSafeInteger(n)) throw new GraphQLError('SafeInt cannot represent a non-integer or unsafe value.');
    return n;
  },
  parseValue: (v) => {
    if (typeof v !== 'number' || !Number.isSafeInteger(v)) throw new GraphQLError('SafeInt must be a whole number.');
    return v;
  },
  parseLiteral: (ast) => {
    if (ast.kind !== Kind.INT || !Number.isSafeInteger(Number(ast.value))) throw new GraphQLError('SafeInt must be a whole number.');
    return Number(ast.value);
  },
});
