// Exact amounts in /v1 JSON bodies (see src/exact-json.ts).
import type { Response } from 'express';
import { stringifyExact } from '../src/exact-json.js';

export { exact } from '../src/exact-json.js';

export function sendExactJson(res: Response, value: unknown): void {
  res.type('application/json').send(stringifyExact(value));
}
