// Top-ups: Mutation.topUp (a hosted checkout; its bonus and credits are shown before paying),
// Query.topUpQuote, Account.topUps (checkouts and automatic top-ups with their states), and
// automatic top-up (AccountSettings.autoTopup, Mutation.updateAutoTopup).
import type { TopUpQuote, TopUpTerms } from '../../domain/payments/amounts.js';
import type { AutoTopupView } from '../../domain/payments/auto-topup-service.js';
import { TOP_UP_STATES } from '../../domain/payments/checkout-state.js';
import type { TopUpView } from '../../domain/payments/payments-service.js';
import { requireAccountAccess } from '../access.js';
import { builder } from '../builder.js';
import { AccountRef } from './account.js';
import { DecimalScalar } from './money.js';
import { PageInfoRef } from './page-info.js';
import { AccountSettingsRef } from './settings.js';

const TopUpStatusEnum = builder.enumType('TopUpStatus', {
  description: 'open → paid | expired | canceled | failed. A top-up credits at most once, when it becomes paid.',
  values: TOP_UP_STATES,
});

const TopUpSourceEnum = builder.enumType('TopUpSource', {
  description: 'checkout: paid by the customer at a hosted checkout; auto: an automatic top-up charged to the saved card.',
  values: ['checkout', 'auto'] as const,
});

const TopUpDisputeEnum = builder.enumType('TopUpDispute', {
  description:
    'withdrawn: the payment is disputed and its funds were taken back (the credits with them); reinstated: the dispute was won and the credits given back.',
  values: ['withdrawn', 'reinstated'] as const,
});

export const TopUpRef = builder.objectRef<TopUpView>('TopUp').implement({
  description: 'A wallet top-up: the amount paid, and the bonus credited on top of it (larger top-ups earn a bonus; see Query.topUpQuote).',
  fields: (t) => ({
    id: t.exposeID('id'),
    status: t.field({ type: TopUpStatusEnum, resolve: (x) => x.status }),
    source: t.field({ type: TopUpSourceEnum, resolve: (x) => x.source }),
    processor: t.exposeString('processor', { description: 'sandbox (the test processor: no real money) or stripe.' }),
    amount: t.field({ type: DecimalScalar, description: 'What is paid.', resolve: (x) => x.amount }),
    bonus: t.field({ type: DecimalScalar, description: 'Bonus credits added on top (the bonus table).', resolve: (x) => x.bonus }),
    bonusPercent: t.float({ resolve: (x) => Number(x.bonusPercent) }),
    credits: t.field({
      type: DecimalScalar,
      description: 'amount + bonus: what the wallet receives once paid.',
      resolve: (x) => x.credits,
    }),
    currency: t.exposeString('currency', { description: 'Upper case, e.g. USD, as the wallet writes it.' }),
    checkoutUrl: t.exposeString('checkoutUrl', {
      nullable: true,
      description: "The processor's hosted payment page; null for automatic top-ups.",
    }),
    failureReason: t.exposeString('failureReason', { nullable: true }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    expiresAt: t.expose('expiresAt', {
      type: 'DateTime',
      nullable: true,
      description: 'After this an unpaid checkout can no longer be paid.',
    }),
    settledAt: t.expose('settledAt', { type: 'DateTime', nullable: true, description: 'When it left open.' }),
    refunded: t.field({
      type: DecimalScalar,
      description: 'Of what was paid, how much was refunded (the credits it bought, in that share, are taken back).',
      resolve: (x) => x.refunded,
    }),
    dispute: t.field({ type: TopUpDisputeEnum, nullable: true, resolve: (x) => x.dispute }),
  }),
});

const TopUpQuoteRef = builder.objectRef<TopUpQuote>('TopUpQuote').implement({
  description: 'What a top-up of an amount adds, before paying.',
  fields: (t) => ({
    amount: t.field({ type: DecimalScalar, resolve: (q) => q.amount }),
    bonus: t.field({ type: DecimalScalar, resolve: (q) => q.bonus }),
    bonusPercent: t.float({ resolve: (q) => Number(q.bonusBasisPoints) / 100 }),
    credits: t.field({ type: DecimalScalar, resolve: (q) => q.credits }),
    currency: t.exposeString('currency'),
  }),
});

const BonusRowRef = builder.objectRef<{ minimum: bigint; percent: string }>('BonusRow').implement({
  description: 'One row of the bonus table: from `minAmount` on, `percent` more is credited.',
  fields: (t) => ({
    minAmount: t.field({ type: DecimalScalar, resolve: (r) => r.minimum }),
    percent: t.float({ resolve: (r) => Number(r.percent) }),
  }),
});

const TopUpTermsRef = builder.objectRef<TopUpTerms>('TopUpTerms').implement({
  description: 'The rules of a self-serve top-up, as the dashboard shows them before paying.',
  fields: (t) => ({
    minimumAmount: t.field({ type: DecimalScalar, description: 'The smallest top-up.', resolve: (x) => x.minimum }),
    salesThreshold: t.field({
      type: DecimalScalar,
      description: 'From this amount on, top-ups are arranged with sales, not paid at a checkout.',
      resolve: (x) => x.salesThreshold,
    }),
    currency: t.exposeString('currency'),
    bonusTable: t.field({ type: [BonusRowRef], resolve: (x) => x.bonusTable }),
    salesContact: t.string({
      nullable: true,
      description: 'Where to arrange larger top-ups (a mailto: or https: URL); null when the operator gave none.',
      resolve: (x) => x.salesContact,
    }),
  }),
});

builder.queryField('topUpTerms', (t) =>
  t.field({
    type: TopUpTermsRef,
    description: 'The rules of a self-serve top-up: the amounts, the bonus table and where to arrange more. Public.',
    resolve: (_root, _args, ctx) => ctx.services.payments.terms(),
  }),
);

builder.queryField('topUpQuote', (t) =>
  t.field({
    type: TopUpQuoteRef,
    description: 'The bonus and credits of a top-up of `amount`, checked against the top-up rules (10 to 499.99, at most 2 decimals).',
    args: { amount: t.arg({ type: DecimalScalar, required: true }) },
    resolve: (_root, args, ctx) => ctx.services.payments.quote(args.amount),
  }),
);

builder.mutationField('topUp', (t) =>
  t.field({
    type: TopUpRef,
    description:
      "Starts a top-up of the key's wallet: returns the checkout (its URL, the bonus and the credits it adds). Amounts from 500 are arranged with sales. " +
      'The same idempotencyKey with the same amount returns the same checkout; with another amount it is refused (idempotency_key_reused).',
    args: {
      amount: t.arg({ type: DecimalScalar, required: true }),
      currency: t.arg.string({
        required: false,
        description: "The currency to pay in: only the wallet's (USD, any case); another is refused (invalid_value).",
      }),
      idempotencyKey: t.arg.string({ required: false }),
    },
    resolve: async (_root, args, ctx) => {
      const { account } = await ctx.principal();
      return ctx.services.payments.startCheckout({
        accountId: account.id,
        email: account.email,
        amount: args.amount,
        currency: args.currency ?? null,
        idempotencyKey: args.idempotencyKey ?? null,
      });
    },
  }),
);

const TopUpEdgeRef = builder.objectRef<TopUpView>('TopUpEdge').implement({
  fields: (t) => ({
    cursor: t.string({ resolve: (x) => x.id }),
    node: t.field({ type: TopUpRef, resolve: (x) => x }),
  }),
});

interface TopUpConnectionShape {
  topUps: TopUpView[];
  hasMore: boolean;
  after: string | null;
}

// A Relay connection, as WalletTransactionConnection is: the same edges, nodes and pageInfo.
const TopUpConnectionRef = builder.objectRef<TopUpConnectionShape>('TopUpConnection').implement({
  fields: (t) => ({
    edges: t.field({ type: [TopUpEdgeRef], resolve: (c) => c.topUps }),
    nodes: t.field({ type: [TopUpRef], resolve: (c) => c.topUps }),
    pageInfo: t.field({
      type: PageInfoRef,
      resolve: (c) => ({
        hasNextPage: c.hasMore,
        hasPreviousPage: Boolean(c.after),
        startCursor: c.topUps[0]?.id ?? null,
        endCursor: c.topUps.at(-1)?.id ?? null,
      }),
    }),
  }),
});

builder.objectField(AccountRef, 'topUps', (t) =>
  t.field({
    type: TopUpConnectionRef,
    description: 'Top-ups (checkouts and automatic ones), newest first; after takes a top-up id (a cursor). first: 1 to 200, default 50.',
    args: {
      first: t.arg.int({ required: false }),
      after: t.arg.string({ required: false }),
      status: t.arg({ type: TopUpStatusEnum, required: false }),
    },
    resolve: async (account, args, ctx) => {
      await requireAccountAccess(ctx, account.id);
      const page = await ctx.services.payments.pageTopUps(account.id, { limit: args.first, status: args.status, after: args.after });
      return { ...page, after: args.after ?? null };
    },
  }),
);

builder.objectField(AccountRef, 'topUp', (t) =>
  t.field({
    type: TopUpRef,
    nullable: true,
    description: "One of the account's top-ups by its id (the checkout's); null when the account has none of that id.",
    args: { id: t.arg.id({ required: true }) },
    resolve: async (account, args, ctx) => {
      await requireAccountAccess(ctx, account.id);
      return ctx.services.payments.findTopUpOf(account.id, String(args.id));
    },
  }),
);

const AutoTopupRef = builder.objectRef<AutoTopupView>('AutoTopup').implement({
  description:
    'Automatic top-up: when a charge leaves the balance below threshold, amount is added (charged to the card saved at checkout).',
  fields: (t) => ({
    enabled: t.exposeBoolean('enabled'),
    threshold: t.field({ type: DecimalScalar, nullable: true, resolve: (a) => a.threshold }),
    amount: t.field({ type: DecimalScalar, nullable: true, resolve: (a) => a.amount }),
    consecutiveFailures: t.exposeInt('consecutiveFailures', { description: 'Failed automatic top-ups in a row; 3 turn it off.' }),
    disabledReason: t.exposeString('disabledReason', { nullable: true, description: 'Why tollgate turned it off, if it did.' }),
    inFlight: t.exposeBoolean('inFlight', { description: 'An automatic top-up is being charged now.' }),
  }),
});

// Batched, never cached (a mutation of the document may change them): one query for a list of accounts.
builder.objectField(AccountSettingsRef, 'autoTopup', (t) =>
  t.loadable({
    type: AutoTopupRef,
    load: (accountIds: string[], ctx) => ctx.services.autoTopups.getSettingsOf(accountIds),
    loaderOptions: { cache: false },
    resolve: async (settings, _args, ctx) => {
      await requireAccountAccess(ctx, settings.accountId);
      return settings.accountId;
    },
  }),
);

const AutoTopupInput = builder.inputType('AutoTopupInput', {
  fields: (t) => ({
    enabled: t.boolean({ required: true }),
    threshold: t.field({ type: DecimalScalar, required: false, description: '0 or more; required to enable unless set before.' }),
    amount: t.field({
      type: DecimalScalar,
      required: false,
      description: 'Within the top-up rules (10 to 499.99); required to enable unless set before.',
    }),
  }),
});

builder.mutationField('updateAutoTopup', (t) =>
  t.field({
    type: AutoTopupRef,
    description:
      "Turns automatic top-up of the signed-in account's wallet on or off (a dashboard session only: it charges the saved card). The threshold must be below 500 (the amount may be smaller than it); turned on with the balance already below the threshold, one top-up starts at once. With Stripe, a card must have been saved by a checkout first (payment_method_required).",
    args: { input: t.arg({ type: AutoTopupInput, required: true }) },
    resolve: async (_root, { input }, ctx) => {
      const { accountId } = ctx.requireSession();
      return ctx.services.autoTopups.updateSettings(accountId, {
        enabled: input.enabled,
        threshold: input.threshold,
        amount: input.amount,
      });
    },
  }),
);
