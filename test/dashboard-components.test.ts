// The dashboard's pieces with logic, without a browser: money formatting (and the playground's
// cost, rounded as billing rounds), the top-up form's rules and bonus preview, what a refused or
// failed request says, where sign-in returns to, the usage chart's data shaping, and the CSV export.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { toCsv } from '../src/dashboard/lib/csv.js';
import { errorCode, errorText, failureText } from '../src/dashboard/lib/error-text.js';
import { loginPathFor, safeReturnPath } from '../src/dashboard/lib/return-to.js';
import { costNanos, formatDecimal, parseDecimal, priceToNanos } from '../src/domain/billing/money.js';
import { describeUserAgent } from '../src/dashboard/lib/user-agent.js';
import { formatUtcDateTime } from '../src/dashboard/lib/utc-time.js';
import {
  decimalNanos,
  formatMoney,
  formatTokens,
  listPriceCost,
  nanosDecimal,
  normalizeAmount,
  priceNanos,
  stripAmount,
} from '../src/dashboard/lib/money.js';
import { feeNotice } from '../src/dashboard/lib/plan-fee.js';
import { monthParam, oneOfParam, withParam } from '../src/dashboard/lib/search-params.js';
import { spendingLimitNote } from '../src/dashboard/lib/spending-limit.js';
import { checkTopUpAmount, previewLines } from '../src/dashboard/lib/top-up-amount.js';
import { disputeText, shownFailureReason } from '../src/dashboard/lib/top-up-outcome.js';
import { currentUtcMonth, dailySeries, modelTotals, monthRange, seriesModels, sumDecimals } from '../src/dashboard/lib/usage-shape.js';

describe('the Plan page before a switch', () => {
  it("says a fee is charged only when this month's fee for that tier is not paid already", () => {
    expect(feeNotice('startup', '15', null)).toBe('The fee of 15.00 USD is charged from your wallet now.');
    expect(feeNotice('startup', '15', 'enterprise')).toBe('The fee of 15.00 USD is charged from your wallet now.');
    expect(feeNotice('startup', '15', 'startup')).toBe("This month's fee for startup is paid already: nothing is charged now.");
    expect(feeNotice('developer', '0', null)).toBe('No fee is charged.');
  });
});

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
  it("shows the playground's cost as billing charges it: rounded up to the nano, never truncated", () => {
    // 3 × 0.3333333 per million = 0.0000009999999: billing charges 0.000001, not 0.000000999.
    expect(listPriceCost(3, 0, 0.3333333, 0)).toBe('0.000001000');
    expect(listPriceCost(1, 0, 0.0000015, 0)).toBe('0.000000001');
    expect(listPriceCost(0, 0, 1, 2)).toBe('0.000000000');
    // The catalog's prices are read as the server reads them (their decimal form, not price × 1e9).
    for (const p of [0.15, 0.1, 1e-7, 3.3, 0.000000001, 123.456789]) expect(priceNanos(p), String(p)).toBe(priceToNanos(p));
    const price = fc.integer({ min: 0, max: 100_000_000_000 }).map((nanos) => Number(formatDecimal(BigInt(nanos))));
    fc.assert(
      fc.property(fc.nat(2_000_000), fc.nat(2_000_000), price, price, (prompt, completion, input, output) => {
        const billed = costNanos(prompt, completion, { inputPerMillion: priceToNanos(input), outputPerMillion: priceToNanos(output) });
        expect(parseDecimal(listPriceCost(prompt, completion, input, output))).toBe(billed);
      }),
      { numRuns: 2000 },
    );
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
  it("names the fields in the form's words, and an empty amount as required, not as an amount it is not", () => {
    const names = { threshold: 'the balance to top up at', amount: 'the top-up amount' };
    expect(
      errorText("'threshold' (60.00) must be below 'amount' (25.00): a top-up has to lift the balance above the threshold.", names),
    ).toBe(
      'The balance to top up at (60.00) must be below the top-up amount (25.00): a top-up has to lift the balance above the threshold.',
    );
    expect(errorText("'threshold' is required to turn automatic top-up on.", names)).toBe(
      'The balance to top up at is required to turn automatic top-up on.',
    );
    // Without the form's words, no API name in quotes is left either.
    expect(errorText("'threshold' (60.00) must be below 'amount' (25.00).")).toBe('Threshold (60.00) must be below amount (25.00).');
    expect(errorText('Variable "$input" got invalid value "" at "input.monthlyLimit"; Decimal: not a decimal number: "".')).toBe(
      'Monthly limit is required: enter an amount such as 25 or 25.50.',
    );
    expect(errorText('expires_at must be in the future.', { expires_at: 'the expiry date' })).toBe(
      'The expiry date must be in the future.',
    );
  });
  it('tells a server that failed from one that could not be reached', () => {
    const network = new Error('Failed to fetch');
    expect(failureText({ message: '[Network] Failed to fetch', graphQLErrors: [], networkError: network })).toBe(
      'The server could not be reached. Check your connection and try again.',
    );
    expect(
      failureText({ message: '[Network] Internal Server Error', graphQLErrors: [], networkError: network, response: { status: 500 } }),
    ).toBe('The server had an error (HTTP 500). Try again in a moment; if it goes on, tell the operator.');
    expect(failureText({ message: '[Network] Bad Gateway', graphQLErrors: [], networkError: network, response: { status: 502 } })).toMatch(
      /^The server had an error \(HTTP 502\)/,
    );
    expect(failureText({ message: 'x', graphQLErrors: [{ message: 'monthlyLimit must be zero or a positive amount.' }] })).toBe(
      'Monthly limit must be zero or a positive amount.',
    );
  });
});

describe('where sign-in returns to', () => {
  it('takes a page of this dashboard only, never another site or a sign-in page', () => {
    for (const ok of ['/settings', '/top-up/return?top_up=tu_abc123', '/usage', '/api-keys', '/']) expect(safeReturnPath(ok), ok).toBe(ok);
    for (const bad of [
      '//evil.example/x',
      'https://evil.example',
      '/\\evil.example',
      'evil.example',
      '/settings/../../x',
      '/login',
      '/login?next=/settings',
      '/signup',
      '/reset-password?token=tgr_x',
      '/x#frag',
      '/%2F%2Fevil.example',
      'javascript:alert(1)',
      '',
      null,
      undefined,
    ])
      expect(safeReturnPath(bad as string | null | undefined), String(bad)).toBeNull();
  });
  it("puts the page (and its query) in the sign-in page's address", () => {
    expect(loginPathFor('/settings', '', { session: 'ended' })).toBe('/login?session=ended&next=%2Fsettings');
    expect(loginPathFor('/top-up/return', '?top_up=tu_1')).toBe('/login?next=%2Ftop-up%2Freturn%3Ftop_up%3Dtu_1');
    expect(loginPathFor('/', '', { session: 'ended' })).toBe('/login?session=ended');
    expect(loginPathFor('/login', '')).toBe('/login');
  });
});

describe("the top-up result page's words", () => {
  it('shows a failure reason only beside a failed or expired top-up, never beside "Credits added"', () => {
    const reason = "The payment received (0.01 USD) is not the top-up's 100.00 USD; nothing was credited. Please contact support.";
    expect(shownFailureReason({ status: 'failed', failureReason: reason })).toBe(reason);
    expect(shownFailureReason({ status: 'expired', failureReason: reason })).toBe(reason);
    for (const status of ['paid', 'open', 'canceled']) expect(shownFailureReason({ status, failureReason: reason }), status).toBeNull();
    expect(shownFailureReason({ status: 'failed', failureReason: null })).toBeNull();
  });

  it('does not promise credits given back for a dispute won before its funds were withdrawn here', () => {
    expect(disputeText('withdrawn')).toBe('Funds withdrawn: credits taken back');
    expect(disputeText('reinstated')).not.toMatch(/credits given back/);
  });
});

describe('the top-up amount and bonus preview', () => {
  it('accepts an amount written as the settings forms accept it: "$ 50" as "$50" and "50"', () => {
    for (const typed of ['50', '$50', '$ 50', ' $  50 ', '\t$50.00']) {
      const check = checkTopUpAmount(typed);
      expect(check, JSON.stringify(typed)).toMatchObject({ kind: 'ok' });
      // The amount the top-up form sends is what the settings forms send for the same text.
      expect(check.kind === 'ok' && check.amount, JSON.stringify(typed)).toBe(normalizeAmount(typed));
    }
    expect(checkTopUpAmount('$ 1,250').kind).toBe('sales');
    expect(checkTopUpAmount('$ 12,5').kind).toBe('invalid');
    expect(stripAmount(' $ 1,250.50 ')).toBe('1,250.50');
  });
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

describe("the dashboard's one decimal reader", () => {
  it('reads and writes every amount the API sends as the server does', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: -(10n ** 18n), max: 10n ** 18n }), (nanos) => {
        const text = formatDecimal(nanos);
        expect(decimalNanos(text)).toBe(nanos);
        expect(decimalNanos(text)).toBe(parseDecimal(text));
        expect(nanosDecimal(nanos)).toBe(text);
      }),
    );
    expect(decimalNanos(' 12.50 ')).toBe(12_500_000_000n);
    expect(decimalNanos('.5')).toBe(500_000_000n);
    expect(decimalNanos('+3')).toBe(3_000_000_000n);
    for (const bad of ['', '.', '-', '1e3', '12,5', 'abc', '1.2.3']) expect(decimalNanos(bad), bad).toBeNull();
    // A malformed figure counts for nothing in a sum, and never makes a limit look reached.
    expect(sumDecimals(['1.5', 'oops', '0.25'])).toBe('1.75');
    expect(spendingLimitNote('block', 'oops', '0.003')).toBe('calls that would pass it are refused');
  });
});

describe('the usage chart data', () => {
  const rows = [
    { date: '2026-02-03', model: 'a', requests: 2, promptTokens: 10, completionTokens: 5, totalTokens: 15, cost: '0.1' },
    { date: '2026-02-03', model: 'b', requests: 1, promptTokens: 100, completionTokens: 50, totalTokens: 150, cost: '0.000000001' },
    { date: '2026-02-28', model: 'a', requests: 1, promptTokens: 1, completionTokens: 1, totalTokens: 2, cost: '0.2' },
    { date: '2026-03-01', model: 'a', requests: 1, promptTokens: 1, completionTokens: 1, totalTokens: 2, cost: '9' },
  ];
  it("opens on the month the server is counting: UTC's, whatever the browser's time zone", () => {
    // 20:00 on 31 January in California is 04:00 on 1 February in UTC.
    expect(currentUtcMonth(new Date('2026-01-31T20:00:00-08:00'))).toBe('2026-02');
    expect(currentUtcMonth(new Date('2026-03-01T00:30:00+02:00'))).toBe('2026-02');
  });
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

describe('times in UTC', () => {
  it('shows an instant in UTC to the minute, labelled, whatever the time zone', () => {
    expect(formatUtcDateTime('2026-12-15T00:00:00.000Z')).toBe('15 Dec 2026, 00:00 UTC');
    expect(formatUtcDateTime('2026-01-03T23:59:59.999Z')).toBe('3 Jan 2026, 23:59 UTC');
    expect(formatUtcDateTime('2026-06-30T20:05:00-04:00')).toBe('1 Jul 2026, 00:05 UTC');
    expect(formatUtcDateTime('not a time')).toBe('—');
  });
});

describe('times everywhere in the dashboard', () => {
  it("are shown by the one UTC formatter: no page formats a time in the browser's zone, unlabelled", () => {
    const root = path.resolve(import.meta.dirname, '../src/dashboard');
    const files = readdirSync(root, { recursive: true, encoding: 'utf8' }).filter((f) => /\.tsx?$/.test(f) && !f.startsWith('gql'));
    const local = files.filter((f) => /\.toLocale(Date|Time)?String\(/.test(readFileSync(path.join(root, f), 'utf8')));
    expect(local).toEqual([]);
    expect(files.length).toBeGreaterThan(20);
  });
});

describe("a page's choices in its address", () => {
  it('reads a month or a type from the query string, and anything it does not know as the default', () => {
    expect(monthParam('2026-02')).toBe('2026-02');
    for (const bad of ['2026-13', '2026-00', '2026-2', '26-02', '2026-02-01', '0001-01', '', null, 'x'])
      expect(monthParam(bad), String(bad)).toBeNull();
    const types = ['topup', 'usage'] as const;
    expect(oneOfParam('usage', types)).toBe('usage');
    expect(oneOfParam('USAGE', types)).toBeNull();
    expect(oneOfParam('toString', types)).toBeNull();
    expect(oneOfParam(null, types)).toBeNull();
  });
  it('writes a choice into the address, keeping the others, and drops it when cleared', () => {
    expect(withParam('/usage', new URLSearchParams(''), 'month', '2026-02')).toBe('/usage?month=2026-02');
    expect(withParam('/transactions', new URLSearchParams('a=1&type=usage'), 'type', 'bonus')).toBe('/transactions?a=1&type=bonus');
    expect(withParam('/transactions', new URLSearchParams('type=usage'), 'type', null)).toBe('/transactions');
  });
});

describe('the overview beside a blocking spending limit', () => {
  it('says calls that would pass it are refused, and that it is reached once the spend is at it', () => {
    expect(spendingLimitNote('block', '0.002931', '0.003')).toBe('calls that would pass it are refused');
    expect(spendingLimitNote('block', '0.003', '0.003000000')).toBe('reached: calls are refused');
    expect(spendingLimitNote('block', '0.003000001', '0.003')).toBe('reached: calls are refused');
    // Compared exactly, not as floats.
    expect(spendingLimitNote('block', '12345678.999999999', '12345679')).toBe('calls that would pass it are refused');
    expect(spendingLimitNote('alert', '5', '3')).toBe('an alert past it');
  });
});

describe("a refusal's code", () => {
  it("is read from the server's answer, for the page to offer the way on", () => {
    expect(errorCode({ message: 'x', graphQLErrors: [{ message: 'An account…', extensions: { code: 'email_taken' } }] })).toBe(
      'email_taken',
    );
    expect(errorCode({ message: 'x', graphQLErrors: [{ message: 'x' }] })).toBeNull();
    expect(errorCode('text')).toBeNull();
    expect(errorCode(null)).toBeNull();
  });
});
