// Money as integer nanos (1e-9 of the currency unit, as google.type.Money), BigInt in code and
// 64-bit integer columns in the database; never a float. This module is the one place that turns
// decimals into nanos and back, and the one place that rounds (`costNanos`).

export const NANOS_PER_UNIT = 1_000_000_000n;
/** Prices are quoted per million tokens. */
export const TOKENS_PER_PRICE_UNIT = 1_000_000n;
/** The wallet's currency, shown upper case (section 2.9). */
export const WALLET_CURRENCY = 'USD';
/** The largest amount a wallet or a transaction may hold: what a signed 64-bit column stores. */
export const MAX_NANOS = 2n ** 63n - 1n;

const DECIMAL = /^(-)?(\d+)(?:\.(\d+))?$/;

export class MoneyFormatError extends Error {}

/**
 * Parses a decimal amount ("12.5", "0.000000001", 12.5) into nanos, exactly. More than nine
 * decimal places is an error, never rounded away. Numbers go through their shortest decimal form
 * (JavaScript's `String(n)`), so `12.5` and `"12.5"` agree; exponent forms are expanded first.
 */
export function parseDecimal(value: string | number | bigint): bigint {
  if (typeof value === 'bigint') return value * NANOS_PER_UNIT;
  let text: string;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new MoneyFormatError(`not a finite number: ${value}`);
    text = expandExponent(String(value));
  } else {
    text = value.trim();
  }
  const m = DECIMAL.exec(text);
  if (!m) throw new MoneyFormatError(`not a decimal number: "${String(value).slice(0, 40)}"`);
  const [, sign, whole, fraction = ''] = m;
  if (fraction.length > 9) throw new MoneyFormatError(`more than 9 decimal places: ${text}`);
  const nanos = BigInt(whole!) * NANOS_PER_UNIT + BigInt(fraction.padEnd(9, '0') || '0');
  if (nanos > MAX_NANOS) throw new MoneyFormatError(`too large: ${text}`);
  return sign ? -nanos : nanos;
}

/**
 * For config schemas (zod's superRefine): an amount parseDecimal does not take, said as why (more
 * than 9 decimal places, or more than a wallet holds).
 */
export function refineAmount(n: number, ctx: { addIssue(issue: { code: 'custom'; message: string }): void }): void {
  if (!Number.isFinite(n)) return; // zod's own number check says so
  try {
    parseDecimal(n);
  } catch (e) {
    const tooLarge = e instanceof MoneyFormatError && e.message.startsWith('too large');
    ctx.addIssue({
      code: 'custom',
      message: tooLarge ? `at most ${formatDecimal(MAX_NANOS)} (the largest amount a wallet holds)` : 'at most 9 decimal places',
    });
  }
}

/** "1e-7" → "0.0000001", "1.5e+21" → "1500000000000000000000": String(number) uses exponents outside 1e-7..1e21. */
function expandExponent(text: string): string {
  const m = /^(-)?(\d)(?:\.(\d+))?e([+-]\d+)$/.exec(text);
  if (!m) return text;
  const [, sign = '', lead, rest = '', exp] = m;
  const digits = lead! + rest;
  const point = 1 + Number(exp);
  if (point <= 0) return `${sign}0.${'0'.repeat(-point)}${digits}`;
  if (point >= digits.length) return `${sign}${digits}${'0'.repeat(point - digits.length)}`;
  return `${sign}${digits.slice(0, point)}.${digits.slice(point)}`;
}

/** Nanos as the shortest exact decimal: 12500000000n → "12.5", 1n → "0.000000001", 0n → "0". */
export function formatDecimal(nanos: bigint): string {
  const negative = nanos < 0n;
  const abs = negative ? -nanos : nanos;
  const whole = abs / NANOS_PER_UNIT;
  const fraction = (abs % NANOS_PER_UNIT).toString().padStart(9, '0').replace(/0+$/, '');
  return `${negative ? '-' : ''}${whole}${fraction ? `.${fraction}` : ''}`;
}

/** A model's prices in nanos per million tokens; non-chat models price every token as input. */
export interface Prices {
  inputPerMillion: bigint;
  outputPerMillion: bigint;
}

export const FREE: Prices = { inputPerMillion: 0n, outputPerMillion: 0n };

/**
 * The rounding rule, the only one: the cost of a call (or of the part of it paid from the wallet)
 * is the exact product of tokens and prices, rounded UP to the next whole nano, once per call.
 * Rounding up, never down, means a call is never free by rounding; it is monotonic in the token
 * counts, so the cost of the real usage never exceeds the cost of the worst case it was held for.
 */
export function costNanos(promptTokens: number, completionTokens: number, prices: Prices): bigint {
  const scaled = BigInt(promptTokens) * prices.inputPerMillion + BigInt(completionTokens) * prices.outputPerMillion;
  return ceilDiv(scaled, TOKENS_PER_PRICE_UNIT);
}

/**
 * The most completion tokens that `budgetNanos` pays for after `promptTokens`, under the rounding
 * of `costNanos`: the largest c with costNanos(p, c) ≤ budget, i.e. p·in + c·out ≤ budget·1e6.
 * Returns null when output is free (no limit), and -1 when the prompt alone is over budget.
 */
export function affordableCompletionTokens(promptTokens: number, budgetNanos: bigint, prices: Prices): number | null {
  const room = budgetNanos * TOKENS_PER_PRICE_UNIT - BigInt(promptTokens) * prices.inputPerMillion;
  if (room < 0n) return -1;
  if (prices.outputPerMillion === 0n) return null;
  const tokens = room / prices.outputPerMillion;
  return tokens > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(tokens);
}

function ceilDiv(a: bigint, b: bigint): bigint {
  return a <= 0n ? 0n : (a + b - 1n) / b;
}

/** A catalog price (a number of currency units per million tokens) in nanos, exactly; throws beyond 9 places. */
export function priceToNanos(price: number): bigint {
  return parseDecimal(price);
}
