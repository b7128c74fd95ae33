// JSON with exact amounts: money (nanos in code, decimal strings from GraphQL) is written as a JSON
// number digit for digit ("12.5" → 12.5), never through a float that could round it. Used by the
// /v1 responses and the CLI's --json output.
import { randomBytes } from 'node:crypto';
import { formatDecimal } from './domain/billing/money.js';

const DECIMAL = /^-?\d+(\.\d+)?$/;
// Placeholders carry a per-process nonce, so no user text can be mistaken for one.
const NONCE = randomBytes(8).toString('hex');
const PLACEHOLDER = new RegExp(`"@exact:${NONCE}:(-?\\d+(?:\\.\\d+)?)"`, 'g');

/** An amount to be written as a JSON number with exactly these digits. */
export class ExactNumber {
  readonly text: string;
  constructor(text: string) {
    if (!DECIMAL.test(text)) throw new Error(`not a decimal amount: ${text}`);
    this.text = text;
  }
  toJSON(): string {
    return `@exact:${NONCE}:${this.text}`;
  }
}

/** A decimal string as an exact JSON number. */
export const exact = (decimal: string) => new ExactNumber(decimal);

/** Nanos as an exact JSON number of currency units. */
export const exactNanos = (nanos: bigint) => new ExactNumber(formatDecimal(nanos));

export function stringifyExact(value: unknown): string {
  return JSON.stringify(value).replace(PLACEHOLDER, '$1');
}
