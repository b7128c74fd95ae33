// The arithmetic of admission and settlement, free of I/O so each rule is tested on its own:
// how much of a call's worst case the allocation and the wallet hold, whether it fits, why not,
// and how the real usage is split between them afterwards.
import type { ModelConfig } from '../catalog/model.js';
import { DomainError } from '../errors.js';
import { affordableCompletionTokens, costNanos, formatDecimal, parseDecimal, WALLET_CURRENCY, type Prices } from './money.js';

export type RefusalCode = 'monthly_allocation_exhausted' | 'insufficient_balance' | 'spending_limit_reached';

/**
 * A call refused by its plan, with the occasion of the wallet it was planned on: its period and
 * its spending limit's version. A refusal's alert is looked at once per occasion, in every
 * server: a limit set again through another server is a new occasion here too.
 */
export class RefusalError extends DomainError {
  readonly occasion: string;
  /** The wallet balance the call was refused on (held money not subtracted). */
  readonly balance: bigint;
  constructor(plan: { code: RefusalCode; message: string }, w: { period: string; spendingLimitVersion: number; balance: bigint }) {
    super(plan.code, plan.message);
    this.occasion = `${w.period}:${w.spendingLimitVersion}`;
    this.balance = w.balance;
  }
}

export interface HoldInput {
  promptTokens: number;
  /** The client's max_tokens, or null. */
  requestedOutputTokens: number | null;
  /** The most output this call may produce (model and context window); 0 for non-chat calls. */
  maxOutputTokens: number;
  /** The choices a chat call asks for (`n`), which the output figures cover together; 1 when absent. */
  choices?: number;
  /** Chat calls need room for at least one output token. */
  chat: boolean;
  prices: Prices;
  tier: string;
  /** The tier's allocation this period, and what of it is neither used nor held. */
  monthlyTokens: number;
  allocationLeft: number;
  /** Whether the tier pays beyond its allocation from the wallet. */
  overage: boolean;
  /** Wallet balance minus what is held. */
  walletAvailable: bigint;
  /** A `block` spending limit: the limit, this period's spend, and the wallet money held. */
  spendingLimit: { limit: bigint; spent: bigint; held: bigint } | null;
  /** When the allocation resets (for messages). */
  resetsAt: Date;
}

export type HoldPlan =
  | { ok: true; allocationTokens: number; walletNanos: bigint; outputTokens: number }
  | { ok: false; code: RefusalCode; message: string };

/** What a hold reserves for a call of `promptTokens` + `outputTokens`: allocation first, the rest in money. */
export function holdFor(
  promptTokens: number,
  outputTokens: number,
  allocationLeft: number,
  prices: Prices,
): { allocationTokens: number; walletNanos: bigint } {
  const allocationTokens = Math.min(allocationLeft, promptTokens + outputTokens);
  const { walletNanos } = split(promptTokens, outputTokens, allocationTokens, prices);
  return { allocationTokens, walletNanos };
}

/**
 * Splits usage between the allocation (at most `allocationTokens`: prompt tokens first, then
 * completion tokens) and the wallet (the remaining tokens at their own prices, rounded up once).
 */
export function split(
  promptTokens: number,
  completionTokens: number,
  allocationTokens: number,
  prices: Prices,
): { allocationUsed: number; walletNanos: bigint } {
  const allocationUsed = Math.min(allocationTokens, promptTokens + completionTokens);
  const promptFromAllocation = Math.min(allocationUsed, promptTokens);
  const completionFromAllocation = allocationUsed - promptFromAllocation;
  return {
    allocationUsed,
    walletNanos: costNanos(promptTokens - promptFromAllocation, completionTokens - completionFromAllocation, prices),
  };
}

/** Output tokens a budget pays for after this prompt, allocation first; -1 if not even the prompt. */
function affordableOutput(promptTokens: number, allocationLeft: number, budget: bigint, prices: Prices): number {
  const promptFromAllocation = Math.min(promptTokens, allocationLeft);
  const allocationForOutput = allocationLeft - promptFromAllocation;
  const fromWallet = affordableCompletionTokens(promptTokens - promptFromAllocation, budget, prices);
  if (fromWallet === -1) return -1;
  if (fromWallet === null) return Number.POSITIVE_INFINITY;
  return allocationForOutput + fromWallet;
}

const usd = (nanos: bigint) => `${formatDecimal(nanos)} ${WALLET_CURRENCY}`;
const n = (x: number) => x.toLocaleString('en-US');

/** The output tokens a call can be admitted with when `affordable` are paid for; null if none. */
function outputFor(input: HoldInput, affordable: number): number | null {
  const requested = input.requestedOutputTokens;
  if (requested !== null) return affordable >= requested ? requested : null;
  if (!input.chat) return affordable >= 0 ? 0 : null;
  const output = Math.min(input.maxOutputTokens, affordable);
  return output >= 1 ? output : null;
}

/**
 * What a refused chat call could have: `output` tokens in all, shared by its `choices` (max_tokens
 * applies to each choice, so with n > 1 the figure to lower max_tokens to is per choice).
 */
function withOutput(output: number, choices: number, overage: boolean): string {
  const orTopUp = overage ? ' or top up the wallet' : '';
  if (choices <= 1) return `It can pay for this prompt with up to ${outputTokens(output)}: lower max_tokens${orTopUp}.`;
  const each = Math.floor(output / choices);
  return each >= 1
    ? `It can pay for this prompt with up to ${outputTokens(each)} for each of its ${n(choices)} choices (n): lower max_tokens or n${orTopUp}.`
    : `It can pay for this prompt with up to ${outputTokens(output)} in all, less than one for each of its ${n(choices)} choices (n): lower n${orTopUp}.`;
}

/** "1 output token", "2 output tokens". */
function outputTokens(count: number): string {
  return `${n(count)} output token${count === 1 ? '' : 's'}`;
}

/** Decides admission: the hold to place, or the 402 and a message saying what the account can afford. */
export function planHold(input: HoldInput): HoldPlan {
  const { promptTokens: p, requestedOutputTokens: requested, prices } = input;
  const allocationLeft = Math.max(0, input.allocationLeft);
  const walletBudget = input.overage ? (input.walletAvailable > 0n ? input.walletAvailable : 0n) : 0n;
  const limit = input.spendingLimit;
  const limitRoom = limit ? limit.limit - limit.spent - limit.held : null;
  const budget = limitRoom === null ? walletBudget : limitRoom < walletBudget ? (limitRoom > 0n ? limitRoom : 0n) : walletBudget;

  const affordable = affordableOutput(p, allocationLeft, budget, prices);
  const output = outputFor(input, affordable);
  if (output !== null) return { ok: true, outputTokens: output, ...holdFor(p, output, allocationLeft, prices) };

  // Refused: say why, and what the account can afford.
  const minimum = requested ?? (input.chat ? 1 : 0);
  const needs = `${requested === null && input.chat ? 'at least' : 'up to'} ${n(p + minimum)} tokens (${n(p)} prompt + ${n(minimum)} output)`;
  const canAfford =
    affordable < 0
      ? 'It cannot pay for the prompt alone.'
      : !input.chat
        ? ''
        : affordable < 1
          ? // No max_tokens would run it: only more money, or a shorter prompt, would.
            `It can pay for this prompt but not for one output token${input.overage ? ': top up the wallet or send a shorter prompt' : ''}.`
          : withOutput(Math.min(affordable, input.maxOutputTokens), input.choices ?? 1, input.overage);
  if (!input.overage) {
    return {
      ok: false,
      code: 'monthly_allocation_exhausted',
      message:
        `The monthly token allocation of the ${input.tier} tier cannot cover this request: it needs ${needs}, and ${n(allocationLeft)} of ${n(input.monthlyTokens)} tokens are left until ${input.resetsAt.toISOString().slice(0, 10)}. ` +
        `The ${input.tier} tier has no overage, whatever the wallet holds. ${canAfford}`.trim(),
    };
  }
  const cost = holdFor(p, minimum, allocationLeft, prices).walletNanos;
  if (limit && limitRoom !== null && outputFor(input, affordableOutput(p, allocationLeft, walletBudget, prices)) !== null) {
    return {
      ok: false,
      code: 'spending_limit_reached',
      message:
        `This request would pass the monthly spending limit of ${usd(limit.limit)}: ${usd(limit.spent)} is spent and ${usd(limit.held)} held this month, and the request needs ${usd(cost)} from the wallet ` +
        `(${needs}, after ${n(allocationLeft)} allocation tokens). ${canAfford.replace('or top up the wallet', 'or raise the limit').replace('top up the wallet or', 'raise the limit or')}`.trim(),
    };
  }
  return {
    ok: false,
    code: 'insufficient_balance',
    message:
      `The wallet cannot pay for this request: it needs ${usd(cost)} (${needs}, after ${n(allocationLeft)} allocation tokens), and ${usd(walletBudget)} is available. ${canAfford}`.trim(),
  };
}

/** A model's prices in nanos per million tokens; embeddings, rerank and moderation price every token as input. */
export function pricesOf(model: ModelConfig): Prices {
  if (model.category === 'chat') {
    return {
      inputPerMillion: parseDecimal(model.pricing.input_price_per_million),
      outputPerMillion: parseDecimal(model.pricing.output_price_per_million),
    };
  }
  return { inputPerMillion: parseDecimal(model.pricing.price_per_million_tokens ?? 0), outputPerMillion: 0n };
}
