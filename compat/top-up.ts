// POST /v1/wallet/top-up {amount} → Mutation.topUp: {checkout_url, amount, currency} (section 2.11),
// with the checkout's id, bonus, credits and expiry beside them. An Idempotency-Key header returns
// the same checkout for the same amount, and 422 idempotency_key_reused for another one.
import type { Request, Response } from 'express';
import { z } from 'zod';
import type { GraphQLContext } from '../src/graphql/context.js';
import { parseBody } from './body.js';
import { exact, sendExactJson } from './money.js';
import { documents, run } from './operations.js';

export const TopUpBody = z.object({ amount: z.number() });

export function walletTopUp() {
  return async (req: Request, res: Response, ctx: GraphQLContext) => {
    const body = parseBody(req, TopUpBody);
    // The JSON number as sent: the Decimal scalar takes numbers too and reads it exactly, and the
    // domain's top-up rules refuse what is not a payable amount (10.001 is refused, not rounded).
    const amount = body.amount as unknown as string;
    const idempotencyKey = req.header('idempotency-key') ?? null;
    const data = await run(documents.topUp, { amount, idempotencyKey }, ctx);
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
