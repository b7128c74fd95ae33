// Money in nanos and the arithmetic of holds: parsing and printing exact decimals, the one
// rounding rule, and each admission rule of the hold plan on its own.
import { describe, expect, it } from 'vitest';
import { parseConfigText, TIER_DEFAULTS } from '../src/config.js';
import { holdFor, planHold, split, type HoldInput } from '../src/domain/billing/hold-plan.js';
import { affordableCompletionTokens, costNanos, formatDecimal, parseDecimal, type Prices } from '../src/domain/billing/money.js';
import { isDay, periodBounds, periodDays, periodOf, usageDay } from '../src/domain/billing/period.js';

// $1 per million input tokens, $2 per million output tokens: 1000 and 2000 nanos per token.
const CHAT: Prices = { inputPerMillion: 1_000_000_000n, outputPerMillion: 2_000_000_000n };

describe('money', () => {
  it('parses decimal amounts into nanos exactly, from text and from numbers', () => {
    expect(parseDecimal('12.5')).toBe(12_500_000_000n);
    expect(parseDecimal(12.5)).toBe(12_500_000_000n);
    expect(parseDecimal('0.000000001')).toBe(1n);
    expect(parseDecimal(0.1)).toBe(100_000_000n);
    expect(parseDecimal(1e-7)).toBe(100n);
    expect(parseDecimal('-3')).toBe(-3_000_000_000n);
    expect(parseDecimal(0.15)).toBe(150_000_000n);
    expect(parseDecimal('9223372036.854775807')).toBe(2n ** 63n - 1n);
  });

  it('refuses more than nine decimal places, non-numbers and overflow instead of rounding', () => {
    expect(() => parseDecimal('0.0000000001')).toThrow(/9 decimal places/);
    expect(() => parseDecimal(0.1234567891)).toThrow(/9 decimal places/);
    expect(() => parseDecimal('1e3')).toThrow(/decimal/);
    expect(() => parseDecimal('12,5')).toThrow(/decimal/);
    expect(() => parseDecimal(Number.NaN)).toThrow();
    expect(() => parseDecimal('9223372036.854775808')).toThrow(/too large/);
  });

  it('prints nanos as the shortest exact decimal', () => {
    expect(formatDecimal(12_500_000_000n)).toBe('12.5');
    expect(formatDecimal(1n)).toBe('0.000000001');
    expect(formatDecimal(0n)).toBe('0');
    expect(formatDecimal(-18_000n)).toBe('-0.000018');
    expect(formatDecimal(2n ** 63n - 1n)).toBe('9223372036.854775807');
    for (const text of ['0.1', '123.456789012', '7', '0.000000999']) expect(formatDecimal(parseDecimal(text))).toBe(text);
  });

  it('rounds the cost of a call up to the next whole nano, once per call', () => {
    // $1 per million tokens is 1000 nanos a token; at $0.00015 per million, 1 token costs 0.15
    // nanos: charged 1 nano, never 0.
    const cheap: Prices = { inputPerMillion: parseDecimal(0.00015), outputPerMillion: 0n };
    expect(costNanos(1, 0, cheap)).toBe(1n);
    expect(costNanos(10, 0, cheap)).toBe(2n); // 1.5 → 2
    expect(costNanos(20, 0, cheap)).toBe(3n); // exactly 3
    // Rounded once over the whole call, not per part: 0.5 + 0.5 nanos = 1 nano, not 2.
    const half: Prices = { inputPerMillion: parseDecimal(0.0005), outputPerMillion: parseDecimal(0.0005) };
    expect(costNanos(1, 1, half)).toBe(1n);
    expect(costNanos(0, 0, CHAT)).toBe(0n);
    expect(costNanos(7, 10, CHAT)).toBe(27_000n);
  });

  it('finds the most output tokens a budget pays for under that rounding', () => {
    expect(affordableCompletionTokens(7, 27_000n, CHAT)).toBe(10);
    expect(affordableCompletionTokens(7, 26_999n, CHAT)).toBe(9);
    expect(affordableCompletionTokens(7, 6_999n, CHAT)).toBe(-1);
    expect(affordableCompletionTokens(7, 7_000n, CHAT)).toBe(0);
    expect(affordableCompletionTokens(7, 7_000n, { inputPerMillion: CHAT.inputPerMillion, outputPerMillion: 0n })).toBeNull();
    // Consistent with costNanos at awkward prices.
    const odd: Prices = { inputPerMillion: parseDecimal(0.37), outputPerMillion: parseDecimal(1.13) };
    for (const budget of [0n, 1n, 2n, 5n, 17n, 1_000n]) {
      const c = affordableCompletionTokens(3, budget, odd)!;
      if (c >= 0) expect(costNanos(3, c, odd) <= budget && costNanos(3, c + 1, odd) > budget).toBe(true);
      else expect(costNanos(3, 0, odd) > budget).toBe(true);
    }
  });
});

describe('billing periods', () => {
  it('are calendar months in UTC', () => {
    expect(periodOf(new Date('2026-11-30T23:59:59.999Z'))).toBe('2026-11');
    expect(periodOf(new Date('2026-12-01T00:00:00.000Z'))).toBe('2026-12');
    expect(periodBounds('2026-12')).toEqual({ start: new Date('2026-12-01T00:00:00Z'), next: new Date('2027-01-01T00:00:00Z') });
    expect(periodDays('2028-02')).toEqual({ first: '2028-02-01', last: '2028-02-29' });
    expect(isDay('2026-02-29')).toBe(false);
    expect(isDay('2028-02-29')).toBe(true);
  });

  it("report a call's usage on the day it ended, within the period it was held in", () => {
    expect(usageDay('2026-11', new Date('2026-11-30T23:59:59.999Z'))).toBe('2026-11-30');
    // Ended in the next period (or two later): the held period's last day.
    expect(usageDay('2026-11', new Date('2026-12-01T00:00:00.000Z'))).toBe('2026-11-30');
    expect(usageDay('2028-02', new Date('2028-04-02T10:00:00Z'))).toBe('2028-02-29');
    expect(usageDay('2026-12', new Date('2027-01-01T00:00:01Z'))).toBe('2026-12-31');
    // Before it, by a clock behind the server's that held it: the period's first day, never a day to come.
    expect(usageDay('2026-02', new Date('2026-01-31T23:59:00Z'))).toBe('2026-02-01');
  });
});

describe('tiers in the config file', () => {
  it('default to the contract, and operators may override any key', () => {
    const { tiers } = parseConfigText('models: []', 'test.yaml');
    expect(tiers).toEqual(TIER_DEFAULTS);
    expect(tiers.free).toEqual({ monthly_tokens: 100_000, overage: false, monthly_fee: 0, self_service: true, rpm: 20, tpm: 40_000 });
    expect(tiers.enterprise.monthly_tokens).toBeNull();
    // Enterprise (unlimited, not billed) is the operator's to give, not the customer's to take.
    expect(tiers.enterprise.self_service).toBe(false);
    const custom = parseConfigText('tiers:\n  developer: { monthly_fee: 9.99 }\n  free: { monthly_tokens: 5 }', 'test.yaml').tiers;
    expect(custom.developer).toEqual({
      monthly_tokens: 5_000_000,
      overage: true,
      monthly_fee: 9.99,
      self_service: true,
      rpm: 500,
      tpm: 1_000_000,
    });
    expect(custom.free.monthly_tokens).toBe(5);
  });

  it('stop start-up on unknown keys, unknown tiers, a fee on free, or prices beyond nine places', () => {
    expect(() => parseConfigText('tiers:\n  gold: { monthly_tokens: 1 }', 'test.yaml')).toThrow(/tiers: unknown key "gold"/);
    expect(() => parseConfigText('tiers:\n  free: { monthly_tokenz: 1 }', 'test.yaml')).toThrow(/tiers.free: unknown key "monthly_tokenz"/);
    expect(() => parseConfigText('tiers:\n  free: { monthly_fee: 1 }', 'test.yaml')).toThrow(/free tier cannot have a fee/);
    expect(() => parseConfigText('billing:\n  hold_expiry: 5', 'test.yaml')).toThrow(/billing: unknown key "hold_expiry"/);
    expect(() => parseConfigText('tiers:\n  developer: { monthly_fee: 0.0000000001 }', 'test.yaml')).toThrow(/9 decimal places/);
    // A price past what a wallet holds is said as that, not as decimal places.
    expect(() => parseConfigText('tiers:\n  developer: { monthly_fee: 1000000000000 }', 'test.yaml')).toThrow(
      /at most 9223372036\.854775807 \(the largest amount a wallet holds\)/,
    );
  });
});

const base: HoldInput = {
  promptTokens: 10,
  requestedOutputTokens: 20,
  maxOutputTokens: 256,
  chat: true,
  prices: CHAT,
  tier: 'developer',
  monthlyTokens: 100,
  allocationLeft: 100,
  overage: true,
  walletAvailable: 0n,
  spendingLimit: null,
  resetsAt: new Date('2026-12-01T00:00:00Z'),
};

describe('the hold plan', () => {
  it('holds allocation tokens first (rule 1)', () => {
    expect(planHold(base)).toEqual({ ok: true, allocationTokens: 30, walletNanos: 0n, outputTokens: 20 });
  });

  it('holds the rest as wallet money once the allocation runs out (rule 2): prompt first from the allocation', () => {
    // 15 allocation tokens: the 10 prompt tokens and 5 output tokens; 15 output tokens from the wallet.
    const plan = planHold({ ...base, allocationLeft: 15, walletAvailable: 1_000_000n });
    expect(plan).toEqual({ ok: true, allocationTokens: 15, walletNanos: 30_000n, outputTokens: 20 });
    // 4 allocation tokens: 4 prompt tokens; 6 prompt + 20 output from the wallet.
    expect(planHold({ ...base, allocationLeft: 4, walletAvailable: 1_000_000n })).toEqual({
      ok: true,
      allocationTokens: 4,
      walletNanos: 46_000n,
      outputTokens: 20,
    });
  });

  it('refuses a free-tier call the allocation cannot cover, whatever the wallet holds (rule 3)', () => {
    const plan = planHold({ ...base, tier: 'free', overage: false, allocationLeft: 29, walletAvailable: 1_000_000_000_000n });
    expect(plan.ok).toBe(false);
    if (plan.ok) return;
    expect(plan.code).toBe('monthly_allocation_exhausted');
    expect(plan.message).toContain('29 of 100 tokens are left until 2026-12-01');
    expect(plan.message).toContain('up to 19 output tokens');
  });

  it('refuses a paid-tier call when allocation plus wallet cannot cover it (rule 4), exactly at the nano', () => {
    // Worst case 10 + 20 tokens, no allocation: 10·1000 + 20·2000 = 50,000 nanos.
    const exact = planHold({ ...base, allocationLeft: 0, walletAvailable: 50_000n });
    expect(exact).toEqual({ ok: true, allocationTokens: 0, walletNanos: 50_000n, outputTokens: 20 });
    const short = planHold({ ...base, allocationLeft: 0, walletAvailable: 49_999n });
    expect(short.ok).toBe(false);
    if (short.ok) return;
    expect(short.code).toBe('insufficient_balance');
    expect(short.message).toContain('needs 0.00005 USD');
    expect(short.message).toContain('0.000049999 USD is available');
    expect(short.message).toContain('up to 19 output tokens');
    // One token: said in the singular.
    const one = planHold({ ...base, allocationLeft: 0, walletAvailable: 12_000n });
    if (one.ok) throw new Error('admitted');
    expect(one.message).toContain('It can pay for this prompt with up to 1 output token: lower max_tokens or top up the wallet.');
  });

  it('with n choices, says what max_tokens (per choice) or n the account can pay for', () => {
    // n = 4, max_tokens 20: 80 output tokens held; the wallet pays the prompt (10,000) and 31 output tokens.
    const four = { ...base, requestedOutputTokens: 80, maxOutputTokens: 80, choices: 4, allocationLeft: 0, walletAvailable: 72_000n };
    const refused = planHold(four);
    expect(refused).toMatchObject({ ok: false, code: 'insufficient_balance' });
    if (refused.ok) return;
    expect(refused.message).toContain('(10 prompt + 80 output)');
    expect(refused.message).toContain(
      'It can pay for this prompt with up to 7 output tokens for each of its 4 choices (n): lower max_tokens or n or top up the wallet.',
    );
    // Paid for: max_tokens 7 with n = 4 (28 output tokens).
    expect(planHold({ ...four, requestedOutputTokens: 28 })).toMatchObject({ ok: true, outputTokens: 28 });
    // Three output tokens in all: not one for each of the four choices, so only a lower n helps.
    const three = planHold({ ...four, walletAvailable: 16_000n });
    if (three.ok) throw new Error('admitted');
    expect(three.message).toContain(
      'It can pay for this prompt with up to 3 output tokens in all, less than one for each of its 4 choices (n): lower n or top up the wallet.',
    );
  });

  it('without max_tokens, lowers the maximum to what the account can pay for, and needs at least one token', () => {
    expect(planHold({ ...base, requestedOutputTokens: null, allocationLeft: 0, walletAvailable: 17_000n })).toEqual({
      ok: true,
      allocationTokens: 0,
      walletNanos: 16_000n,
      outputTokens: 3,
    });
    expect(planHold({ ...base, requestedOutputTokens: null, allocationLeft: 50, walletAvailable: 0n })).toMatchObject({
      ok: true,
      outputTokens: 40,
    });
    expect(planHold({ ...base, requestedOutputTokens: null, allocationLeft: 1000, maxOutputTokens: 256 })).toMatchObject({
      ok: true,
      outputTokens: 256,
    });
    const none = planHold({ ...base, requestedOutputTokens: null, allocationLeft: 0, walletAvailable: 11_999n });
    expect(none).toMatchObject({ ok: false, code: 'insufficient_balance' });
    // The prompt (10,000) is paid, not one output token (2,000): no max_tokens would help, and it does not say to lower one.
    if (none.ok) return;
    expect(none.message).toContain('It can pay for this prompt but not for one output token: top up the wallet or send a shorter prompt.');
    expect(none.message).not.toContain('max_tokens');
    const limited = planHold({
      ...base,
      requestedOutputTokens: null,
      allocationLeft: 0,
      walletAvailable: 1_000_000n,
      spendingLimit: { limit: 11_999n, spent: 0n, held: 0n },
    });
    expect(limited).toMatchObject({ ok: false, code: 'spending_limit_reached' });
    if (limited.ok) return;
    expect(limited.message).toContain('It can pay for this prompt but not for one output token: raise the limit or send a shorter prompt.');
  });

  it('refuses with spending_limit_reached when only a block limit stands in the way', () => {
    // The call needs 50,000 nanos; 110,000 − 40,000 spent − 20,000 held leaves exactly that.
    const limit = { limit: 110_000n, spent: 40_000n, held: 20_000n };
    expect(planHold({ ...base, allocationLeft: 0, walletAvailable: 1_000_000n, spendingLimit: limit })).toMatchObject({
      ok: true,
      walletNanos: 50_000n,
    });
    const over = planHold({ ...base, allocationLeft: 0, walletAvailable: 1_000_000n, spendingLimit: { ...limit, spent: 40_001n } });
    expect(over).toMatchObject({ ok: false, code: 'spending_limit_reached' });
    if (!over.ok) expect(over.message).toContain('spending limit of 0.00011 USD');
    // When the wallet could not pay either, the wallet is the reason.
    expect(planHold({ ...base, allocationLeft: 0, walletAvailable: 10n, spendingLimit: { ...limit, spent: 40_001n } })).toMatchObject({
      ok: false,
      code: 'insufficient_balance',
    });
    // Calls the allocation pays need no money: the limit does not apply.
    expect(planHold({ ...base, spendingLimit: { limit: 0n, spent: 0n, held: 0n } })).toMatchObject({ ok: true, walletNanos: 0n });
  });

  it('prices non-chat calls by their input tokens and needs no output', () => {
    const embed: Prices = { inputPerMillion: 100_000_000n, outputPerMillion: 0n };
    expect(
      planHold({
        ...base,
        chat: false,
        requestedOutputTokens: null,
        maxOutputTokens: 0,
        prices: embed,
        allocationLeft: 0,
        walletAvailable: 1_000n,
      }),
    ).toEqual({
      ok: true,
      allocationTokens: 0,
      walletNanos: 1_000n,
      outputTokens: 0,
    });
    expect(
      planHold({
        ...base,
        chat: false,
        requestedOutputTokens: null,
        maxOutputTokens: 0,
        prices: embed,
        allocationLeft: 0,
        walletAvailable: 999n,
      }),
    ).toMatchObject({
      ok: false,
      code: 'insufficient_balance',
    });
  });

  it('splits real usage allocation first (prompt, then completion) and charges the rest at matching prices', () => {
    expect(split(8, 40, 39, CHAT)).toEqual({ allocationUsed: 39, walletNanos: 18_000n });
    expect(split(8, 40, 5, CHAT)).toEqual({ allocationUsed: 5, walletNanos: 83_000n });
    expect(split(8, 2, 39, CHAT)).toEqual({ allocationUsed: 10, walletNanos: 0n });
    expect(holdFor(10, 20, 15, CHAT)).toEqual({ allocationTokens: 15, walletNanos: 30_000n });
  });
});
