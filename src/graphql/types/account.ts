// Account and ApiKey: Query.viewer (the account of the key) and the operator's admin mutations.
import { TIERS, type AccountView, type ApiKeyView } from '../../domain/accounts/accounts-service.js';
import { builder } from '../builder.js';

export const TierEnum = builder.enumType('Tier', {
  description:
    "An account's pricing tier: its monthly token allocation, whether usage beyond it is paid from the wallet, any monthly fee, and its rate limits.",
  values: TIERS,
});

export const ApiKeyRef = builder.objectRef<ApiKeyView>('ApiKey').implement({
  description: 'An API key, shown as its prefix and last four characters; the secret is shown once, at creation.',
  fields: (t) => ({
    id: t.exposeID('id'),
    display: t.exposeString('display'),
    name: t.exposeString('name', { nullable: true }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    expiresAt: t.expose('expiresAt', { type: 'DateTime', nullable: true }),
    revokedAt: t.expose('revokedAt', { type: 'DateTime', nullable: true }),
    lastUsedAt: t.expose('lastUsedAt', {
      type: 'DateTime',
      nullable: true,
      description: 'When a call was last made with the key, to the minute (null: never).',
    }),
  }),
});

export const AccountRef = builder.loadableObject('Account', {
  description: 'An account: who pays (its wallet) and whose API keys call the API.',
  load: (ids: string[], ctx) => ctx.services.accounts.getAccountsByIds(ids),
  sort: (a: AccountView) => a.id,
  fields: (t) => ({
    id: t.exposeID('id'),
    email: t.exposeString('email'),
    tier: t.field({ type: TierEnum, resolve: (a) => a.tier }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    // Batched: a list of accounts reads all their keys in one query.
    apiKeys: t.loadableList({
      type: ApiKeyRef,
      load: (ids: string[], ctx) => ctx.services.accounts.keysOf(ids),
      resolve: (a) => a.id,
    }),
  }),
});

builder.queryField('viewer', (t) =>
  t.field({
    type: AccountRef,
    description: 'The account of the API key in the Authorization header.',
    // The account authentication already read: given whole, and put in the loader's cache, so
    // nothing reads it again.
    resolve: async (_root, _args, ctx) => {
      const { account } = await ctx.principal();
      AccountRef.getDataloader(ctx).prime(account.id, account);
      return account;
    },
  }),
);

const CreateAccountPayload = builder.objectRef<{ account: AccountView; apiKey: string; keyId: string }>('CreateAccountPayload').implement({
  fields: (t) => ({
    account: t.field({ type: AccountRef, resolve: (p) => p.account }),
    apiKey: t.exposeString('apiKey', { description: 'The secret key; shown this once.' }),
    keyId: t.exposeID('keyId'),
  }),
});

export const CreateApiKeyPayload = builder.objectRef<{ id: string; apiKey: string }>('CreateApiKeyPayload').implement({
  fields: (t) => ({
    id: t.exposeID('id'),
    apiKey: t.exposeString('apiKey', { description: 'The secret key; shown this once.' }),
  }),
});

builder.mutationFields((t) => ({
  createAccount: t.field({
    type: CreateAccountPayload,
    description: 'Admin (Bearer $ADMIN_TOKEN): create an account and its first API key.',
    args: { email: t.arg.string({ required: true }), tier: t.arg({ type: TierEnum, required: true }) },
    resolve: (_root, args, ctx) => {
      ctx.requireAdmin();
      return ctx.services.accounts.createAccount({ email: args.email, tier: args.tier });
    },
  }),
  createApiKey: t.field({
    type: CreateApiKeyPayload,
    description: 'Admin: issue another API key for an account.',
    args: {
      accountId: t.arg.id({ required: true }),
      name: t.arg.string({ required: false }),
      expiresAt: t.arg({ type: 'DateTime', required: false }),
    },
    resolve: (_root, args, ctx) => {
      ctx.requireAdmin();
      return ctx.services.accounts.createKey(String(args.accountId), {
        name: args.name ?? undefined,
        expiresAt: args.expiresAt ?? undefined,
      });
    },
  }),
  revokeApiKey: t.boolean({
    description: 'Admin: revoke an API key; it is refused from the next request on.',
    args: { id: t.arg.id({ required: true }) },
    resolve: async (_root, args, ctx) => {
      ctx.requireAdmin();
      await ctx.services.accounts.revokeKey(String(args.id));
      return true;
    },
  }),
}));
