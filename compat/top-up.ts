// POST /v1/wallet/top-up {amount} → Mutation.topUp: {checkout_url, amount, currency} (section 2.11),
// with the checkout's id, bonus, credits and expiry beside them. An Idempotency-Key header returns
// the same checkout for the same amount, and 422 idempotency_key_reused for another one.
import type { Request, Response } from 'express';
import { z } from 'zod';
import type { GraphQLContext } from '../src/graphql/context.js';
import { parse as parseLossless, isLosslessNumber } from 'lossless-json';
import { DomainError } from '../src/domain/errors.js';
import { parseBody, rawBodyOf } from './body.js';
import { exact, sendExactJson } from './money.js';
import { documents, run } from './operations.js';

/** `currency`, optional: the wallet's own (any case); another is refused, never quietly charged in USD. */
export const TopUpBody = z.object({ amount: z.number(), currency: z.string().optional() });

export function walletTopUp() {
  return async (req: Request, res: Response, ctx: GraphQLContext) => {
    // The JSON number as sent, digit for digit (JSON.parse would have made 49.99999999999999999
    // into 50): the domain's top-up rules refuse what is not a payable amount (10.001 is refused,
    // not rounded). Read first: 1e309, which JSON.parse makes Infinity, is an amount written wrong.
    const amount = exactAmount(req);
    const { currency } = parseBody(req, TopUpBody);
    if (amount === null)
      throw new DomainError('invalid_request', 'The request body could not be read exactly: send it as JSON, UTF-8.', { param: 'amount' });
    const idempotencyKey = req.header('idempotency-key') ?? null;
    const data = await run(documents.topUp, { amount, currency: currency ?? null, idempotencyKey }, ctx);
    const t = data.topUp;
    sendExactJson(res, {
      checkout_url: t.checkoutUrl,
      amount: exact(t.amount),
      currency: t.currency,
      id: t.id,
      status: t.status,
      bonus: exact(t.bonus),
      credits: exact(t.credits),
      expires_at: t.expiresAt,
    });
  };
}

/** `amount` as its JSON text, from the body the request was parsed from; null when it is no JSON number. */
function exactAmount(req: Request): string | null {
  const raw = rawBodyOf(req);
  let parsed: Record<string, unknown> | null = null;
  try {
    parsed = raw === null ? null : (parseLossless(raw) as Record<string, unknown> | null);
  } catch (e) {
    // JSON.parse read it, so only what it lets pass is left: two different values for one key.
    throw new DomainError('invalid_json', `The request body is ambiguous: ${(e as Error).message.slice(0, 80)}.`);
  }
  const amount = parsed?.amount;
  if (!isLosslessNumber(amount)) return null;
  // Decimal notation only: 1e2 is a number JSON allows, not an amount a person writes.
  if (!/^-?\d+(\.\d+)?$/.test(amount.value))
    throw new DomainError(
      'invalid_amount',
      `amount must be written as a decimal number with at most 2 decimal places, such as 25 or 49.99; got ${amount.value.slice(0, 40)}.`,
      {
        param: 'amount',
      },
    );
  // Past 9 decimals the Decimal scalar would refuse it in GraphQL's words: the payments rule's here.
  if ((amount.value.split('.')[1] ?? '').length > 9)
    throw new DomainError('invalid_amount', `'amount' must have at most 2 decimal places (cents); got ${amount.value.slice(0, 40)}.`, {
      param: 'amount',
    });
  // Past the Decimal scalar's range too (over 9 billion): far past the sales threshold, so the
  // largest amount it takes gets the same answer from the top-up rules (amount_requires_sales).
  if (Math.abs(Number(amount.value)) > MAX_WHOLE_UNITS) {
    if (amount.value.startsWith('-'))
      throw new DomainError('invalid_amount', `'amount' must be a positive amount; got ${amount.value.slice(0, 40)}.`, { param: 'amount' });
    return String(MAX_WHOLE_UNITS);
  }
  return amount.value;
}

/** The largest whole amount the Decimal scalar takes: 2^63 - 1 nanos, 9 223 372 036.854775807. */
const MAX_WHOLE_UNITS = 9_223_372_036;
