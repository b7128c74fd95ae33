// Query-string parameters of GET routes: one value each, or a 400 naming the parameter.
import type { Request } from 'express';
import { isEnumType } from 'graphql';
import { DomainError } from '../src/domain/errors.js';
import { schema } from '../src/graphql/schema.js';

/** The parameter's value, or null when absent (or empty). Repeated parameters are refused. */
export function queryParam(req: Request, name: string): string | null {
  const value = (req.query as Record<string, unknown>)[name];
  if (value === undefined || value === '') return null;
  if (typeof value !== 'string') throw new DomainError('invalid_value', `'${name}' must be given once, as a plain value.`, { param: name });
  return value;
}

/**
 * The parameter's value when it names a value of the schema's enum `typeName` (what the GraphQL
 * door takes), or null when absent; another is a 400 listing the values, in /v1's words rather
 * than GraphQL's variable-coercion message.
 */
export function enumParam(req: Request, name: string, typeName: string): string | null {
  const value = queryParam(req, name);
  const type = schema.getType(typeName);
  if (value === null || !isEnumType(type)) return value;
  const values = type.getValues().map((v) => v.name);
  if (!values.includes(value))
    throw new DomainError('invalid_value', `'${name}' must be one of ${values.join(', ')}; got '${value.slice(0, 40)}'.`, { param: name });
  return value;
}
