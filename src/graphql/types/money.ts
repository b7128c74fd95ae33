// The scalars of money and large counters. Decimal carries an exact amount: nanos (BigInt) in
// code, a decimal string on the wire ("12.5", never a float), so no client or JSON parser rounds it.
// A number is taken only as a literal of the document, whose digits the scalar sees as written.
import { GraphQLError, Kind } from 'graphql';
import { formatDecimal, MoneyFormatError, parseDecimal } from '../../domain/billing/money.js';
import { builder } from '../builder.js';
import { invalidScalarValue } from '../errors.js';

function toNanos(value: string): bigint {
  try {
    return parseDecimal(value);
  } catch (e) {
    throw invalidScalarValue(`Decimal: ${e instanceof MoneyFormatError ? e.message : 'not a decimal number'}.`);
  }
}

export const DecimalScalar = builder.scalarType('Decimal', {
  description:
    'An exact amount of money in currency units, written as a decimal string with at most 9 decimal places, e.g. "12.5". A number is accepted only written in the document itself (amount: 12.5); in variables, send a string.',
  serialize: (nanos) => formatDecimal(BigInt(nanos as bigint)),
  // A variable's JSON number has been through the JSON parser's float already (49.99999999999999999
  // arrives as 50): refused rather than read as whatever the float says, as /v1 refuses it.
  parseValue: (value) => {
    if (typeof value === 'number')
      throw invalidScalarValue(
        'Decimal amounts in variables must be strings such as "12.50": a JSON number may already have been rounded.',
      );
    if (typeof value !== 'string') throw invalidScalarValue('Decimal must be a string such as "12.50".');
    return toNanos(value);
  },
  // A literal keeps the digits of the document's text: a number there is read exactly.
  parseLiteral: (ast) => {
    if (ast.kind === Kind.STRING || ast.kind === Kind.FLOAT || ast.kind === Kind.INT) return toNanos(ast.value);
    throw invalidScalarValue('Decimal must be a string such as "12.50" (or, in the document itself, a number).');
  },
});

export const SafeIntScalar = builder.scalarType('SafeInt', {
  description: 'A whole number from -(2^53 - 1) to 2^53 - 1, e.g. a monthly token count.',
  serialize: (n) => {
    if (!Number.isSafeInteger(n)) throw new GraphQLError('SafeInt cannot represent a non-integer or unsafe value.');
    return n;
  },
  parseValue: (v) => {
    if (typeof v !== 'number' || !Number.isSafeInteger(v))
      throw invalidScalarValue('SafeInt must be a whole number from -(2^53 - 1) to 2^53 - 1.');
    return v;
  },
  parseLiteral: (ast) => {
    if (ast.kind !== Kind.INT || !Number.isSafeInteger(Number(ast.value)))
      throw invalidScalarValue('SafeInt must be a whole number from -(2^53 - 1) to 2^53 - 1.');
    return Number(ast.value);
  },
});
