// GET /v1/wallet/balance → Account.wallet; GET /v1/wallet/transactions → Wallet.transactions
// (limit, after, order, type; has_more beside the list). Amounts are exact JSON numbers.
import type { Request, Response } from 'express';
import { DomainError } from '../src/domain/errors.js';
import type { SortOrder, TransactionType } from '../src/generated/graphql.js';
import type { GraphQLContext } from '../src/graphql/context.js';
import { exact, sendExactJson } from './money.js';
import { documents, run } from './operations.js';
import { enumParam, queryParam } from './query.js';

export function walletBalance() {
  return async (_req: Request, res: Response, ctx: GraphQLContext) => {
    const data = await run(documents.walletBalance, {}, ctx);
    const w = data.viewer.wallet;
    sendExactJson(res, { balance: exact(w.balance), currency: w.currency });
  };
}

/** The query string's `limit` as a number; its range is the domain's to check. */
function limitOf(req: Request): number | null {
  const raw = queryParam(req, 'limit');
  if (raw === null) return null;
  if (!/^\d{1,9}$/.test(raw))
    throw new DomainError('invalid_value', `'limit' must be an integer; got '${raw.slice(0, 20)}'.`, { param: 'limit' });
  return Number(raw);
}

export function walletTransactions() {
  return async (req: Request, res: Response, ctx: GraphQLContext) => {
    // Checked against GraphQL's enums (SortOrder, TransactionType), named in /v1's words when refused.
    const variables = {
      first: limitOf(req),
      after: queryParam(req, 'after'),
      order: enumParam(req, 'order', 'SortOrder') as SortOrder | null,
      type: enumParam(req, 'type', 'TransactionType') as TransactionType | null,
    };
    const data = await run(documents.walletTransactions, variables, ctx);
    const page = data.viewer.wallet.transactions;
    sendExactJson(res, {
      transactions: page.nodes.map((t) => ({
        id: t.id,
        type: t.type,
        amount: exact(t.amount),
        balance_after: exact(t.balanceAfter),
        created_at: t.createdAt,
        description: t.description,
      })),
      has_more: page.pageInfo.hasNextPage,
    });
  };
}
