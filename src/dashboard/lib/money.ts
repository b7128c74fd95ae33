// Money in the dashboard: the one helper that formats amounts. The API sends exact decimal
// strings ("52.5", "-0.000123456"); the dashboard shows two decimals (half away from zero), with
// thousands separators, computed on the digits (never through a float), so 0.005 shows as 0.01.

/** "52.5" → "52.50"; "1234567.891" → "1,234,567.89"; "-0.004" → "0.00"; invalid → "—". */
export function formatMoney(value: string | number | null | undefined, opts: { currency?: string; sign?: boolean } = {}): string {
  if (value === null || value === undefined || value === '') return '—';
  const text = typeof value === 'number' ? value.toFixed(9) : value.trim();
  const m = /^([+-]?)(\d*)(?:\.(\d*))?$/.exec(text);
  if (!m || (m[2] === '' && (m[3] ?? '') === '')) return '—';
  const negative = m[1] === '-';
  // Exact, as the API and the CLI show it: at least two decimals, more only when the amount has
  // them (usage is charged in fractions of a cent). Rounding to cents showed a balance of 9.998624
  // as 10.00, money the wallet does not have, and every small usage charge as 0.00.
  const whole = BigInt(m[2] || '0');
  const frac = (m[3] ?? '').slice(0, 9).replace(/0+$/, '').padEnd(2, '0');
  const zero = whole === 0n && /^0*$/.test(frac);
  const units = whole.toString().replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  const prefix = negative && !zero ? '-' : opts.sign && !zero ? '+' : '';
  return `${prefix}${units}.${frac}${opts.currency ? ` ${opts.currency}` : ''}`;
}

/** Token counts with thousands separators: 1234567 → "1,234,567". */
export function formatTokens(n: number | null | undefined): string {
  if (n === null || n === undefined) return '—';
  return Math.round(n)
    .toString()
    .replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

/** A decimal string as a number, for charts and ratios only (never for display of amounts). */
export function toNumber(value: string | null | undefined): number {
  const n = Number(value ?? 0);
  return Number.isFinite(n) ? n : 0;
}

/**
 * A decimal amount as the API sends it ("52.5", "-0.000123456", "12") in nanos, exactly; digits
 * past the ninth decimal are dropped (the API never sends them). Anything else → null. The one
 * decimal reader of the dashboard: prices, sums and the spending-limit note all go through it.
 */
export function decimalNanos(value: string): bigint | null {
  const m = /^([+-]?)(\d*)(?:\.(\d*))?$/.exec(value.trim());
  if (!m || (m[2] === '' && (m[3] ?? '') === '')) return null;
  const n = BigInt(m[2] || '0') * 1_000_000_000n + BigInt((m[3] ?? '').slice(0, 9).padEnd(9, '0'));
  return m[1] === '-' ? -n : n;
}

/** Nanos as the API writes a decimal: "1.5", "-0.000123456", "12" (no trailing zeros). */
export function nanosDecimal(nanos: bigint): string {
  const neg = nanos < 0n;
  const abs = neg ? -nanos : nanos;
  const frac = (abs % 1_000_000_000n).toString().padStart(9, '0').replace(/0+$/, '');
  return `${neg ? '-' : ''}${abs / 1_000_000_000n}${frac ? `.${frac}` : ''}`;
}

/**
 * A catalog price (a number of currency units per million tokens, as GraphQL sends it) in nanos,
 * exactly as the server reads it (src/domain/billing/money.ts, parseDecimal of a number): through
 * its shortest decimal form, never `price * 1e9` (a float product can land a nano off).
 */
export function priceNanos(price: number): bigint {
  if (!Number.isFinite(price)) return 0n;
  let text = String(price);
  const e = /^(-)?(\d)(?:\.(\d+))?e([+-]\d+)$/.exec(text);
  if (e) {
    const [, sign = '', lead, rest = '', exp] = e;
    const digits = lead! + rest;
    const point = 1 + Number(exp);
    text =
      point <= 0
        ? `${sign}0.${'0'.repeat(-point)}${digits}`
        : point >= digits.length
          ? `${sign}${digits}${'0'.repeat(point - digits.length)}`
          : `${sign}${digits.slice(0, point)}.${digits.slice(point)}`;
  }
  return decimalNanos(text) ?? 0n;
}

/**
 * Cost of a call at list prices (per million tokens), as a decimal string with 9 places: the rule
 * billing charges by (costNanos in src/domain/billing/money.ts, which the dashboard may not import,
 * so it is mirrored here and a test checks the two agree): the exact product of tokens and prices,
 * rounded UP to the next whole nano, once per call.
 */
export function listPriceCost(promptTokens: number, completionTokens: number, inputPerMillion: number, outputPerMillion: number): string {
  const scaled = BigInt(promptTokens) * priceNanos(inputPerMillion) + BigInt(completionTokens) * priceNanos(outputPerMillion);
  const nanos = scaled <= 0n ? 0n : (scaled + 1_000_000n - 1n) / 1_000_000n;
  const whole = nanos / 1_000_000_000n;
  const frac = (nanos % 1_000_000_000n).toString().padStart(9, '0');
  return `${whole}.${frac}`;
}

/** An amount whose commas separate thousands (1,250.50): the only commas an amount may have. */
export const THOUSANDS = /^\d{1,3}(,\d{3})+(\.\d+)?$/;

/**
 * An amount as typed, without what every amount field accepts around it: the spaces before and
 * after, and a leading $ with or without a space after it ("$50", "$ 50"). The top-up form's
 * checks and the settings forms (normalizeAmount) both start here, so they accept the same forms.
 */
export function stripAmount(text: string): string {
  return text.trim().replace(/^\$\s*/, '');
}

/**
 * An amount as a person types it, as the server reads it: spaces and a leading $ dropped, and
 * commas that separate thousands (1,250.50); anything else is sent as typed, for the server to
 * refuse with its reason (a decimal comma, "12,5", is never read as 125).
 */
export function normalizeAmount(text: string): string {
  const t = stripAmount(text);
  return THOUSANDS.test(t) ? t.replace(/,/g, '') : t;
}
