// Who may read an account's private fields (wallet, usage, settings): the holder of one of its
// API keys, or the operator (ADMIN_TOKEN). Anyone else is told the account does not exist.
import { DomainError } from '../domain/errors.js';
import type { GraphQLContext } from './context.js';

export async function requireAccountAccess(ctx: GraphQLContext, accountId: string): Promise<void> {
  try {
    ctx.requireAdmin();
    return;
  } catch {
    // not the operator: the key must belong to the account
  }
  const { account } = await ctx.principal();
  if (account.id !== accountId) throw new DomainError('not_found', `No account with id '${accountId}'.`);
}
