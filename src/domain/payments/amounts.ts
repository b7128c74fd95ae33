// The rules of a top-up's amount (part of the API contract) and the bonus table (the
// specification's section 8): what a customer may pay by themselves, and what it is worth.
// Amounts are exact: a decimal with at most 2 places becomes integer nanos, never a float sum.
import { DomainError } from '../errors.js';
import { formatDecimal, NANOS_PER_UNIT, parseDecimal, WALLET_CURRENCY } from '../billing/money.js';

/** The smallest self-serve top-up, in currency units. */
export const MINIMUM_TOP_UP = 10;
/** From this amount on, top-ups are arranged with sales, not paid at a checkout. */
export const SALES_THRESHOLD = 500;
/** Cents: a card is charged in the currency's minor unit. */
export const MAX_DECIMALS = 2;

const NANOS_PER_CENT = NANOS_PER_UNIT / 100n;
const MINIMUM_NANOS = BigInt(MINIMUM_TOP_UP) * NANOS_PER_UNIT;
const SALES_NANOS = BigInt(SALES_THRESHOLD) * NANOS_PER_UNIT;

/**
 * Checks a requested top-up amount and returns it in nanos: a JSON number as the client sent it,
 * or nanos already (a GraphQL Decimal). Throws a DomainError naming `param`: not a number
 * (invalid_type), not a positive amount in cents (invalid_amount), under 10 (amount_too_small),
 * 500 or more (amount_requires_sales, whose message gives `salesContact` when the operator set one).
 */
export function parseTopUpAmount(value: unknown, param = 'amount', salesContact: string | null = null): bigint {
  if (value === undefined || value === null) {
    throw new DomainError('missing_required_parameter', `'${param}' is required: the amount to add, in ${WALLET_CURRENCY}.`, { param });
  }
  if (typeof value === 'bigint') return checkTopUpNanos(value, param, salesContact);
  if (typeof value !== 'number') {
    throw new DomainError(
      'invalid_type',
      `'${param}' must be a number (e.g. 25 or 49.99); got ${Array.isArray(value) ? 'array' : typeof value}.`,
      { param },
    );
  }
  let nanos: bigint;
  try {
    nanos = parseDecimal(value);
  } catch {
    throw new DomainError(
      'invalid_amount',
      `'${param}' must be a finite number of ${WALLET_CURRENCY} with at most ${MAX_DECIMALS} decimal places.`,
      { param },
    );
  }
  return checkTopUpNanos(nanos, param, salesContact);
}

function checkTopUpNanos(nanos: bigint, param: string, salesContact: string | null): bigint {
  const shown = formatDecimal(nanos);
  if (nanos % NANOS_PER_CENT !== 0n) {
    throw new DomainError('invalid_amount', `'${param}' must have at most ${MAX_DECIMALS} decimal places (cents); got ${shown}.`, {
      param,
    });
  }
  if (nanos <= 0n) throw new DomainError('invalid_amount', `'${param}' must be a positive amount; got ${shown}.`, { param });
  if (nanos < MINIMUM_NANOS) {
    throw new DomainError('amount_too_small', `The smallest top-up is ${MINIMUM_TOP_UP} ${WALLET_CURRENCY}; got ${shown}.`, { param });
  }
  if (nanos >= SALES_NANOS) {
    throw new DomainError(
      'amount_requires_sales',
      `Top-ups of ${SALES_THRESHOLD} ${WALLET_CURRENCY} and more are arranged with our sales team (with a larger bonus): ${salesContact ? `please contact sales at ${salesContact.replace(/^mailto:/, '')}` : 'please contact the operator of this service'}. Self-serve top-ups are ${MINIMUM_TOP_UP} to ${formatDecimal(SALES_NANOS - NANOS_PER_CENT)} ${WALLET_CURRENCY}.`,
      { param },
    );
  }
  return nanos;
}

/** The top-up rules a customer is shown before paying (the dashboard's form, `Query.topUpTerms`). */
export interface TopUpTerms {
  minimum: bigint;
  /** From this amount on, arranged with sales. */
  salesThreshold: bigint;
  currency: string;
  bonusTable: { minimum: bigint; percent: string }[];
  /** Where to arrange larger amounts (a mailto: or https: URL), or null when the operator gave none. */
  salesContact: string | null;
}

export function topUpTerms(table: BonusTable, salesContact: string | null): TopUpTerms {
  return { minimum: MINIMUM_NANOS, salesThreshold: SALES_NANOS, currency: WALLET_CURRENCY, bonusTable: table.rows, salesContact };
}

/** Nanos as whole cents, for a processor's API (the amount rules make it exact). */
export function toCents(nanos: bigint): number {
  if (nanos % NANOS_PER_CENT !== 0n) throw new Error(`not a whole number of cents: ${formatDecimal(nanos)}`);
  return Number(nanos / NANOS_PER_CENT);
}

export function fromCents(cents: number): bigint {
  return BigInt(cents) * NANOS_PER_CENT;
}

// ------------------------------------------------------------------------------------------------
// The bonus table.

/** One row of the table as configured: from `min_amount` on (currency units), `percent` more credits. */
export interface BonusTierConfig {
  min_amount: number;
  percent: number;
}

/** The specification's table (section 8): 50 → 5%, 100 → 10%, 250 → 15%. */
export const DEFAULT_BONUS_TABLE: readonly BonusTierConfig[] = [
  { min_amount: 50, percent: 5 },
  { min_amount: 100, percent: 10 },
  { min_amount: 250, percent: 15 },
];

/** A tier in exact units: the threshold in nanos and the rate in basis points (1% = 100). */
export interface BonusTier {
  minimum: bigint;
  basisPoints: bigint;
}

export class BonusTable {
  private readonly tiers: BonusTier[];

  /** Throws (an Error naming the row) on a negative, unordered or over-precise row. */
  constructor(rows: readonly BonusTierConfig[] = DEFAULT_BONUS_TABLE) {
    this.tiers = rows.map((row, i) => {
      const where = `bonus_table[${i}]`;
      let minimum: bigint;
      let hundredths: bigint;
      try {
        minimum = parseDecimal(row.min_amount);
        hundredths = parseDecimal(row.percent) / (NANOS_PER_UNIT / 100n);
        if (parseDecimal(row.percent) % (NANOS_PER_UNIT / 100n) !== 0n) throw new Error();
      } catch {
        throw new Error(`${where}: min_amount must be a number and percent a number with at most 2 decimal places`);
      }
      if (minimum <= 0n) throw new Error(`${where}.min_amount: must be positive`);
      if (hundredths < 0n || hundredths > 100n * 100n) throw new Error(`${where}.percent: must be from 0 to 100`);
      return { minimum, basisPoints: hundredths };
    });
    for (let i = 1; i < this.tiers.length; i++) {
      if (this.tiers[i]!.minimum <= this.tiers[i - 1]!.minimum)
        throw new Error(`bonus_table[${i}].min_amount: rows must be in increasing order of min_amount`);
    }
  }

  /**
   * The bonus of an amount: the rate of the highest tier whose threshold the amount reaches
   * (120 gets the 100 tier's 10%), rounded down to the nano so no more is given than the table says.
   */
  bonusFor(amount: bigint): { basisPoints: bigint; bonus: bigint } {
    let basisPoints = 0n;
    for (const tier of this.tiers) if (amount >= tier.minimum) basisPoints = tier.basisPoints;
    return { basisPoints, bonus: (amount * basisPoints) / 10_000n };
  }

  /** The table as configured, for the page and GraphQL. */
  get rows(): { minimum: bigint; percent: string }[] {
    return this.tiers.map((t) => ({ minimum: t.minimum, percent: percentText(t.basisPoints) }));
  }
}

/** 1000 basis points → "10", 1250 → "12.5". */
export function percentText(basisPoints: bigint): string {
  return formatDecimal(basisPoints * (NANOS_PER_UNIT / 100n));
}

/** What a top-up of `amount` is worth, shown before paying. */
export interface TopUpQuote {
  amount: bigint;
  bonus: bigint;
  /** Bonus rate in basis points (1% = 100). */
  bonusBasisPoints: bigint;
  /** amount + bonus: what the wallet receives. */
  credits: bigint;
  currency: string;
}

export function quoteTopUp(amount: bigint, table: BonusTable): TopUpQuote {
  const { basisPoints, bonus } = table.bonusFor(amount);
  return { amount, bonus, bonusBasisPoints: basisPoints, credits: amount + bonus, currency: WALLET_CURRENCY };
}

/** Nanos as currency text with at least 2 decimals: 100000000000n → "100.00", 5250000000n → "5.25". */
export function formatMoney(nanos: bigint): string {
  const text = formatDecimal(nanos);
  const [whole, fraction = ''] = text.split('.');
  return `${whole}.${fraction.padEnd(2, '0')}`;
}
