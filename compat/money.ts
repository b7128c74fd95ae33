// JSON bodies with exact amounts: money arrives from GraphQL as decimal strings ("12.5") and leaves
// as JSON numbers written digit for digit (12.5), never through a float that could round it.
import { randomBytes } from 'node:crypto';
import type { Response } from 'express';

const DECIMAL = /^-?\d+(\.\d+)?$/;
// Placeholders carry a per-process nonce, so no user text can be mistaken for one.
const NONCE = randomBytes(8).toString('hex');
const PLACEHOLDER = new RegExp(`"@money:${NONCE}:(-?\\d+(?:\\.\\d+)?)"`, 'g');

/** An amount to be written as a JSON number with exactly these digits. */
export class ExactNumber {
  constructor(readonly text: string) {
    if (!DECIMAL.test(text)) throw new Error(`not a decimal amount: ${text}`);
  }
  toJSON(): string {
    return `@money:${NONCE}:${this.text}`;
  }
}

export const exact = (decimal: string) => new ExactNumber(decimal);

export function stringifyExact(value: unknown): string {
  return JSON.stringify(value).replace(PLACEHOLDER, '$1');
}

export function sendExactJson(res: Response, value: unknown): void {
  res.type('application/json').send(stringifyExact(value));
}
