// The rules of a top-up that need no server: the amount rules of POST /v1/wallet/top-up, the bonus
// table, and the moves between checkout states.
import { describe, expect, it } from 'vitest';
import { DomainError } from '../src/domain/errors.js';
import { BonusTable, DEFAULT_BONUS_TABLE, formatMoney, parseTopUpAmount, quoteTopUp, toCents } from '../src/domain/payments/amounts.js';
import { canMove, TOP_UP_STATES, type TopUpState } from '../src/domain/payments/checkout-state.js';

const units = (n: number | string) => BigInt(Math.round(Number(n) * 100)) * 10_000_000n;

function refusal(value: unknown): DomainError {
  try {
    parseTopUpAmount(value);
  } catch (e) {
    expect(e).toBeInstanceOf(DomainError);
    return e as DomainError;
  }
  throw new Error(`expected ${String(value)} to be refused`);
}

describe('top-up amount rules', () => {
  it('accepts 10, 10.5, 49.99 and 499.99 exactly, in nanos', () => {
    expect(parseTopUpAmount(10)).toBe(10_000_000_000n);
    expect(parseTopUpAmount(10.5)).toBe(10_500_000_000n);
    expect(parseTopUpAmount(49.99)).toBe(49_990_000_000n);
    expect(parseTopUpAmount(499.99)).toBe(499_990_000_000n);
    expect(toCents(parseTopUpAmount(499.99))).toBe(49_999);
  });

  it('refuses amounts under 10 with amount_too_small', () => {
    for (const value of [9.99, 1, 0.01]) {
      const e = refusal(value);
      expect(e.code).toBe('amount_too_small');
      expect(e.status).toBe(400);
      expect(e.param).toBe('amount');
      expect(e.message).toContain('10');
    }
  });

  it('refuses 500 and more with amount_requires_sales and a message to contact sales', () => {
    for (const value of [500, 500.01, 1000, 1e9]) {
      const e = refusal(value);
      expect(e.code).toBe('amount_requires_sales');
      expect(e.status).toBe(400);
      expect(e.type).toBe('invalid_request_error');
      expect(e.message).toMatch(/arranged with our sales team .*please contact the operator of this service/i);
    }
    // With the operator's sales contact, the message names it.
    let named: unknown;
    try {
      parseTopUpAmount(600, 'amount', 'mailto:sales@acme.example');
    } catch (err) {
      named = err;
    }
    expect((named as Error).message).toContain('please contact sales at sales@acme.example');
  });

  it('refuses more than 2 decimal places, zero, negatives and non-finite numbers with invalid_amount', () => {
    for (const value of [10.001, 25.999, 0, -10, -0.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(refusal(value).code).toBe('invalid_amount');
    }
  });

  it('refuses strings, booleans and objects with invalid_type, and a missing amount with missing_required_parameter', () => {
    for (const value of ['25', true, {}, [25]]) expect(refusal(value).code).toBe('invalid_type');
    expect(refusal(undefined).code).toBe('missing_required_parameter');
    expect(refusal(null).code).toBe('missing_required_parameter');
  });

  it('formats money with two decimals', () => {
    expect(formatMoney(units(110))).toBe('110.00');
    expect(formatMoney(units(5.25))).toBe('5.25');
    expect(formatMoney(12_345_000_000n)).toBe('12.345');
  });
});

describe('bonus table', () => {
  const table = new BonusTable();

  it('gives the specification table by default: 10 and 25 none, 50 → 52.50, 100 → 110.00, 250 → 287.50', () => {
    const credits = (n: number) => formatMoney(quoteTopUp(units(n), table).credits);
    expect(credits(10)).toBe('10.00');
    expect(credits(25)).toBe('25.00');
    expect(credits(50)).toBe('52.50');
    expect(credits(100)).toBe('110.00');
    expect(credits(250)).toBe('287.50');
  });

  it('applies the highest threshold reached: 49.99 gets nothing, 120 gets 10%, 499.99 gets 15%', () => {
    expect(quoteTopUp(units(49.99), table).bonus).toBe(0n);
    const q120 = quoteTopUp(units(120), table);
    expect(q120.bonusBasisPoints).toBe(1000n);
    expect(q120.bonus).toBe(units(12));
    expect(q120.credits).toBe(units(132));
    expect(quoteTopUp(units(499.99), table).bonus).toBe(74_998_500_000n);
  });

  it('computes the bonus of amounts in cents exactly, and rounds any fraction of a nano down', () => {
    const odd = new BonusTable([{ min_amount: 10, percent: 3.33 }]);
    // 10.01 × 3.33% = 0.333333 and 10.01 × 0.01% = 0.001001: exact in nanos.
    expect(odd.bonusFor(units(10.01)).bonus).toBe(333_333_000n);
    expect(new BonusTable([{ min_amount: 10, percent: 0.01 }]).bonusFor(units(10.01)).bonus).toBe(1_001_000n);
    // 3 nanos at 50% is 1.5 nanos: 1 is given, never 2.
    expect(new BonusTable([{ min_amount: 0.000000001, percent: 50 }]).bonusFor(3n).bonus).toBe(1n);
  });

  it('takes the defaults of the configuration as given, and refuses unordered or out-of-range rows', () => {
    expect(DEFAULT_BONUS_TABLE.map((r) => [r.min_amount, r.percent])).toEqual([
      [50, 5],
      [100, 10],
      [250, 15],
    ]);
    expect(
      () =>
        new BonusTable([
          { min_amount: 100, percent: 10 },
          { min_amount: 50, percent: 5 },
        ]),
    ).toThrow(/increasing order/);
    expect(() => new BonusTable([{ min_amount: 50, percent: 101 }])).toThrow(/0 to 100/);
    expect(() => new BonusTable([{ min_amount: 50, percent: 1.234 }])).toThrow(/2 decimal places/);
    expect(() => new BonusTable([{ min_amount: 0, percent: 5 }])).toThrow(/positive/);
    expect(new BonusTable([]).bonusFor(units(400)).bonus).toBe(0n);
  });
});

describe('checkout states', () => {
  it('moves an open checkout to paid (on a confirmed payment), expired, canceled or failed', () => {
    expect(canMove('open', 'paid', 'confirmed_payment')).toBe(true);
    expect(canMove('open', 'expired')).toBe(true);
    expect(canMove('open', 'canceled')).toBe(true);
    expect(canMove('open', 'failed')).toBe(true);
  });

  it('never leaves paid, and never reaches paid without a confirmed payment', () => {
    for (const to of TOP_UP_STATES) {
      expect(canMove('paid', to, 'confirmed_payment')).toBe(false);
      expect(canMove('paid', to)).toBe(false);
    }
    for (const from of TOP_UP_STATES) expect(canMove(from, 'paid')).toBe(false);
  });

  it('keeps expired, canceled and failed final, except that money the processor received is credited', () => {
    const finals: TopUpState[] = ['expired', 'canceled', 'failed'];
    for (const from of finals) {
      for (const to of TOP_UP_STATES) {
        expect(canMove(from, to)).toBe(false);
        expect(canMove(from, to, 'confirmed_payment')).toBe(to === 'paid');
      }
    }
  });

  it('has no move back to open', () => {
    for (const from of TOP_UP_STATES) expect(canMove(from, 'open', 'confirmed_payment')).toBe(false);
  });
});

describe('top-up amounts given as nanos (GraphQL Decimal)', () => {
  it('follows the same rules as numbers', () => {
    expect(parseTopUpAmount(25_000_000_000n)).toBe(25_000_000_000n);
    expect(refusal(9_990_000_000n).code).toBe('amount_too_small');
    expect(refusal(500_000_000_000n).code).toBe('amount_requires_sales');
    expect(refusal(10_001_000_000n).code).toBe('invalid_amount');
    expect(refusal(-10_000_000_000n).code).toBe('invalid_amount');
  });
});
