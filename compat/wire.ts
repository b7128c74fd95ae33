// Small helpers shared by the /v1 mappers.
import type { Response } from 'express';
import type { ModelNotice } from './door.js';

/** camelCase → snake_case, for the catalog's nested objects. */
export const snake = (key: string) => key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/** The object with snake_case keys and without the null ones (keys another category has). */
export function snakeWithoutNulls(o: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) if (v !== null && v !== undefined && k !== '__typename') out[snake(k)] = v;
  return out;
}

export const usageWire = (u: { promptTokens: number; completionTokens?: number; totalTokens: number }) =>
  u.completionTokens === undefined
    ? { prompt_tokens: u.promptTokens, total_tokens: u.totalTokens }
    : { prompt_tokens: u.promptTokens, completion_tokens: u.completionTokens, total_tokens: u.totalTokens };

/** Deprecation and Sunset headers for a deprecated model with a sunset date (at least 3 months' notice). */
export function deprecationHeaders(model: ModelNotice | undefined): Record<string, string> {
  if (!model?.deprecated) return {};
  return model.sunset ? { Deprecation: 'true', Sunset: model.sunset } : { Deprecation: 'true' };
}

export function setHeaders(res: Response, headers: Record<string, string>) {
  for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);
}
