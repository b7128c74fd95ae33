// Query-string parameters of GET routes: one value each, or a 400 naming the parameter.
import type { Request } from 'express';
import { DomainError } from '../src/domain/errors.js';

/** The parameter's value, or null when absent (or empty). Repeated parameters are refused. */
export function queryParam(req: Request, name: string): string | null {
  const value = (req.query as Record<string, unknown>)[name];
  if (value === undefined || value === '') return null;
  if (typeof value !== 'string') throw new DomainError('invalid_value', `'${name}' must be given once, as a plain value.`, { param: name });
  return value;
}
