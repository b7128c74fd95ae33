// GET /v1/wallet/balance → Account.wallet; GET /v1/wallet/transactions → Wallet.transactions
// (limit, after, order, type; has_more beside the list). Amounts are exact JSON numbers.
import type { Request, Response } from 'express';
import type { Services } from '../src/container.js';
import { DomainError } from '../src/domain/errors.js';
import { TRANSACTION_PAGE, TRANSACTION_TYPES, type TransactionType } from '../src/domain/ledger/ledger.js';
import type { GraphQLContext } from '../src/graphql/context.js';
import { exact, sendExactJson } from './money.js';
import { documents, run } from './operations.js';
import { queryParam } from './query.js';

export function walletBalance(_services: Services) {
  return async (_req: Request, res: Response, ctx: GraphQLContext) => {
    const data = await run(documents.walletBalance, {}, ctx);
    const w = data.viewer.wallet;
    sendExactJson(res, { balance: exact(w.balance), currency: w.currency });
  };
}

function limitOf(req: Request): number | null {
  const raw = queryParam(req, 'limit');
  if (raw === null) return null;
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || n < 1 || n > TRANSACTION_PAGE.maxLimit) {
    throw new DomainError('invalid_value', `'limit' must be an integer from 1 to ${TRANSACTION_PAGE.maxLimit}; got '${raw.slice(0, 20)}'.`, { param: 'limit' });
  }
  return n;
}

export function walletTransactions(_services: Services) {
  return async (req: Request, res: Response, ctx: GraphQLContext) => {
    const order = queryParam(req, 'order');
    if (order !== null && order !== 'asc' && order !== 'desc') {
      throw new DomainError('invalid_value', `'order' must be 'asc' or 'desc'; got '${order.slice(0, 20)}'.`, { param: 'order' });
    }
    const type = queryParam(req, 'type');
    if (type !== null && !(TRANSACTION_TYPES as readonly string[]).includes(type)) {
      throw new DomainError('invalid_value', `'type' must be one of ${TRANSACTION_TYPES.join(', ')}; got '${type.slice(0, 20)}'.`, { param: 'type' });
    }
    const variables = { first: limitOf(req), after: queryParam(req, 'after'), order: order as 'asc' | 'desc' | null, type: type as TransactionType | null };
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
