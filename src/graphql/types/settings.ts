// Account settings the dashboard sets (section 2.12): the monthly spending limit and the
// low-balance alert, with Account.settings and the mutations that change them.
import { SPENDING_LIMIT_ACTIONS, type SettingsView } from '../../domain/billing/billing-service.js';
import { requireAccountAccess } from '../access.js';
import { builder } from '../builder.js';
import { AccountRef } from './account.js';
import { DecimalScalar } from './money.js';

const SpendingLimitActionEnum = builder.enumType('SpendingLimitAction', {
  description: 'block: refuse calls the wallet would pay past the limit (402 spending_limit_reached); alert: notify once a period.',
  values: SPENDING_LIMIT_ACTIONS,
});

const SpendingLimitRef = builder.objectRef<SettingsView['spendingLimit']>('SpendingLimit').implement({
  fields: (t) => ({
    enabled: t.exposeBoolean('enabled'),
    monthlyLimit: t.field({ type: DecimalScalar, nullable: true, resolve: (s) => s.monthlyLimit }),
    action: t.field({ type: SpendingLimitActionEnum, resolve: (s) => s.action }),
  }),
});

export const AccountSettingsRef = builder.objectRef<SettingsView>('AccountSettings').implement({
  fields: (t) => ({
    spendingLimit: t.field({ type: SpendingLimitRef, resolve: (s) => s.spendingLimit }),
    lowBalanceAlert: t.field({
      type: DecimalScalar,
      nullable: true,
      description: 'Alert when the balance falls below this; null: off.',
      resolve: (s) => s.lowBalanceAlert,
    }),
    monthlySpend: t.field({
      type: DecimalScalar,
      description: 'Wallet money charged for usage this period.',
      resolve: (s) => s.monthlySpend,
    }),
  }),
});

// Batched: a list of accounts (the operator's) reads their settings in one query.
builder.objectField(AccountRef, 'settings', (t) =>
  t.loadable({
    type: AccountSettingsRef,
    load: (accountIds: string[], ctx) => ctx.services.billing.getSettingsOf(accountIds),
    // Batched, never cached: a document whose mutations change the settings reads each change.
    loaderOptions: { cache: false },
    resolve: async (account, _args, ctx) => {
      await requireAccountAccess(ctx, account.id);
      return account.id;
    },
  }),
);

const SpendingLimitInput = builder.inputType('SpendingLimitInput', {
  fields: (t) => ({
    enabled: t.boolean({ required: true }),
    monthlyLimit: t.field({ type: DecimalScalar, required: false, description: 'Required when enabled.' }),
    action: t.field({ type: SpendingLimitActionEnum, required: false, description: 'Default: block.' }),
  }),
});

builder.mutationFields((t) => ({
  updateSpendingLimit: t.field({
    type: AccountSettingsRef,
    description: "Sets the signed-in account's monthly spending limit (a dashboard session only: an API key gets session_required).",
    args: { input: t.arg({ type: SpendingLimitInput, required: true }) },
    resolve: async (_root, { input }, ctx) => {
      const { accountId } = ctx.requireSession();
      return ctx.services.billing.updateSpendingLimit(accountId, {
        enabled: input.enabled,
        monthlyLimit: input.monthlyLimit ?? null,
        action: input.action ?? null,
      });
    },
  }),
  setLowBalanceAlert: t.field({
    type: AccountSettingsRef,
    description: "Sets the signed-in account's low-balance alert threshold; null turns it off (a dashboard session only).",
    args: { threshold: t.arg({ type: DecimalScalar, required: false }) },
    resolve: async (_root, args, ctx) => {
      const { accountId } = ctx.requireSession();
      return ctx.services.billing.setLowBalanceAlert(accountId, args.threshold ?? null);
    },
  }),
}));
