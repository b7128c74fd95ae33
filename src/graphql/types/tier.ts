// The operator's setAccountTier mutation: the same BillingService.setTier as `tollgate accounts
// set-tier`, which charges a tier's monthly fee when it is taken.
import { builder } from '../builder.js';
import { AccountRef, TierEnum } from './account.js';

builder.mutationField('setAccountTier', (t) =>
  t.field({
    type: AccountRef,
    description:
      "Admin (Bearer $ADMIN_TOKEN): move an account to a tier; a tier's monthly fee is charged from the wallet when it is taken (402 insufficient_balance when it cannot be paid).",
    args: { accountId: t.arg.id({ required: true }), tier: t.arg({ type: TierEnum, required: true }) },
    resolve: async (_root, args, ctx) => {
      ctx.requireAdmin();
      const { id } = await ctx.services.billing.setTier(String(args.accountId), args.tier);
      return id;
    },
  }),
);
