// The dashboard's pieces with logic, without a browser: money formatting, the top-up form's rules
// and bonus preview, the usage chart's data shaping, and the CSV export.
import { describe, expect, it } from 'vitest';
import { toCsv } from '../src/dashboard/lib/csv.js';
import { errorText } from '../src/dashboard/lib/error-text.js';
import { describeUserAgent } from '../src/dashboard/lib/user-agent.js';
import { formatMoney, formatTokens, listPriceCost, normalizeAmount } from '../src/dashboard/lib/money.js';
import { checkTopUpAmount, previewLines } from '../src/dashboard/lib/top-up-amount.js';
import { dailySeries, modelTotals, monthRange, seriesModels, sumDecimals } from '../src/dashboard/lib/usage-shape.js';

describe('formatMoney', () => {
  it('shows the amount exactly (as the API does), with at least two decimals and separators', () => {
    expect(formatMoney('52.5')).toBe('52.50');
    expect(formatMoney('52.5', { currency: 'USD' })).toBe('52.50 USD');
    expect(formatMoney('0')).toBe('0.00');
    expect(formatMoney('0.005')).toBe('0.005'); // exact: never more, nor less, than there is
    expect(formatMoney('0.004999999')).toBe('0.004999999');
    expect(formatMoney('9.998624000')).toBe('9.998624');
    expect(formatMoney('1234567.891')).toBe('1,234,567.891');
    expect(formatMoney('-12.345')).toBe('-12.345');
    expect(formatMoney('-0.000034', { currency: 'USD' })).toBe('-0.000034 USD');
    expect(formatMoney('-0.000')).toBe('0.00');
    expect(formatMoney('2.5', { sign: true })).toBe('+2.50');
    expect(formatMoney('-2.5', { sign: true })).toBe('-2.50');
    expect(formatMoney('99999999999999999.999')).toBe('99,999,999,999,999,999.999');
    expect(formatMoney(null)).toBe('—');
    expect(formatMoney('abc')).toBe('—');
    expect(formatMoney(3.1)).toBe('3.10');
  });
  it('formats tokens and list-price costs exactly', () => {
    expect(formatTokens(1234567)).toBe('1,234,567');
    expect(listPriceCost(1000, 500, 1, 2)).toBe('0.002000000');
    expect(listPriceCost(3, 7, 0.5, 1.5)).toBe('0.000012000');
  });
});

describe('what a form sends and what it says when refused', () => {
  it('sends an amount as the server reads it: thousands separators and a $ dropped, anything else as typed', () => {
    expect(normalizeAmount(' $1,250.50 ')).toBe('1250.50');
    expect(normalizeAmount('1,000')).toBe('1000');
    expect(normalizeAmount('12,5')).toBe('12,5'); // refused by the server, never read as 125
    expect(normalizeAmount('abc')).toBe('abc');
  });
  it("turns GraphQL's refusal of a variable into the field and what to type; the server's own messages stay", () => {
    expect(errorText('Variable "$input" got invalid value "abc" at "input.monthlyLimit"; Decimal: not a decimal number: "abc".')).toBe(
      'Monthly limit: "abc" is not an amount. Enter a number such as 25 or 25.50, with a point for decimals.',
    );
    expect(errorText('Variable "$threshold" got invalid value "1.0000000001"; Decimal: more than 9 decimal places.')).toBe(
      'Threshold: "1.0000000001" has too many decimal places.',
    );
    // The server's own words stay, with the field named as people read it.
    expect(errorText('monthlyLimit must be zero or a positive amount.')).toBe('Monthly limit must be zero or a positive amount.');
    expect(errorText("'extraRecipients' must hold e-mail addresses.")).toBe('Extra recipients must hold e-mail addresses.');
    expect(errorText("'threshold' is required to turn automatic top-up on.")).toBe('Threshold is required to turn automatic top-up on.');
    const plain = 'Top-ups are paid in USD, the currency of the wallet.';
    expect(errorText(plain)).toBe(plain);
  });
});

describe('the top-up amount and bonus preview', () => {
  it('checks the rules as the person types', () => {
    expect(checkTopUpAmount('')).toEqual({ kind: 'empty' });
    expect(checkTopUpAmount('50')).toEqual({ kind: 'ok', amount: '50' });
    expect(checkTopUpAmount(' $100.50 ')).toEqual({ kind: 'ok', amount: '100.50' });
    // A comma separates thousands and nothing else: a decimal comma is refused, never read as a bigger amount.
    expect(checkTopUpAmount('1,250').kind).toBe('sales');
    expect(checkTopUpAmount('1,250.50').kind).toBe('sales');
    for (const t of ['12,5', '12,50', '1,00.50', '50,5', '1,2345']) {
      expect(checkTopUpAmount(t), t).toMatchObject({ kind: 'invalid', message: expect.stringContaining('Use a point for decimals') });
    }
    expect(checkTopUpAmount('050')).toEqual({ kind: 'ok', amount: '50' });
    expect(checkTopUpAmount('9.99').kind).toBe('too_small');
    expect(checkTopUpAmount('10').kind).toBe('ok');
    expect(checkTopUpAmount('499.99').kind).toBe('ok');
    expect(checkTopUpAmount('500').kind).toBe('sales');
    expect(checkTopUpAmount('12.345').kind).toBe('invalid');
    expect(checkTopUpAmount('-5').kind).toBe('invalid');
    expect(checkTopUpAmount('1e3').kind).toBe('invalid');
  });
  it('previews the bonus and the credits of a quote', () => {
    expect(previewLines({ amount: '50', bonus: '2.5', bonusPercent: 5, credits: '52.5', currency: 'USD' }, formatMoney)).toEqual({
      amount: '50.00 USD',
      bonus: '+2.50 USD (5%)',
      credits: '52.50 USD',
    });
    expect(previewLines({ amount: '10', bonus: '0', bonusPercent: 0, credits: '10', currency: 'USD' }, formatMoney)).toEqual({
      amount: '10.00 USD',
      bonus: 'No bonus at this amount',
      credits: '10.00 USD',
    });
    expect(previewLines({ amount: '250', bonus: '37.5', bonusPercent: 15, credits: '287.5', currency: 'USD' }, formatMoney).bonus).toBe(
      '+37.50 USD (15%)',
    );
  });
});

describe('the usage chart data', () => {
  const rows = [
    { date: '2026-02-03', model: 'a', requests: 2, promptTokens: 10, completionTokens: 5, totalTokens: 15, cost: '0.1' },
    { date: '2026-02-03', model: 'b', requests: 1, promptTokens: 100, completionTokens: 50, totalTokens: 150, cost: '0.000000001' },
    { date: '2026-02-28', model: 'a', requests: 1, promptTokens: 1, completionTokens: 1, totalTokens: 2, cost: '0.2' },
    { date: '2026-03-01', model: 'a', requests: 1, promptTokens: 1, completionTokens: 1, totalTokens: 2, cost: '9' },
  ];
  it('has one point per day of the month, zero where nothing was used', () => {
    expect(monthRange('2026-02')).toEqual({ start: '2026-02-01', end: '2026-02-28' });
    expect(monthRange('2028-02').end).toBe('2028-02-29');
    const days = dailySeries(rows, '2026-02');
    expect(days).toHaveLength(28);
    expect(days[0]).toEqual({ date: '2026-02-01', label: '1', totalTokens: 0, cost: 0, byModel: {} });
    expect(days[2]).toMatchObject({ totalTokens: 165, byModel: { a: 15, b: 150 } });
    expect(days[27]!.byModel).toEqual({ a: 2 });
  });
  it('totals per model exactly, largest first', () => {
    expect(modelTotals(rows)).toEqual([
      { model: 'b', requests: 1, totalTokens: 150, cost: '0.000000001' },
      { model: 'a', requests: 4, totalTokens: 19, cost: '9.3' },
    ]);
    expect(seriesModels(rows)).toEqual(['b', 'a']);
    expect(sumDecimals(['0.1', '0.2'])).toBe('0.3');
    expect(sumDecimals(['-1.5', '0.25'])).toBe('-1.25');
  });
});

describe('the CSV export', () => {
  it('quotes what needs it and defuses spreadsheet formulas', () => {
    expect(
      toCsv(
        ['a', 'b'],
        [
          ['x,y', 'say "hi"'],
          ['=SUM(A1)', '-2.5'],
          [null, 3],
        ],
      ),
    ).toBe('a,b\r\n"x,y","say ""hi"""\r\n\'=SUM(A1),-2.5\r\n,3\r\n');
  });
});

describe('signed-in browsers', () => {
  it('are told apart by browser, version and system, not by the first 60 characters of their User-Agent', () => {
    const chrome = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/156.0.8078.73 Safari/537.36';
    expect(describeUserAgent(chrome)).toBe('Chrome 156 on Linux');
    expect(
      describeUserAgent(
        'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36 Edg/120.0',
      ),
    ).toBe('Edge 120 on Windows');
    expect(describeUserAgent('Mozilla/5.0 (Macintosh; Intel Mac OS X 14.1; rv:121.0) Gecko/20100101 Firefox/121.0')).toBe(
      'Firefox 121 on macOS',
    );
    expect(
      describeUserAgent(
        'Mozilla/5.0 (iPhone; CPU iPhone OS 17_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1 Mobile/15E148 Safari/604.1',
      ),
    ).toBe('Safari 17 on iOS');
    expect(describeUserAgent('curl/8.5.0')).toBe('curl/8.5.0');
    expect(describeUserAgent(null)).toBe('Unknown browser');
  });
});
