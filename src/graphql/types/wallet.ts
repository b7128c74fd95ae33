// The wallet: Account.wallet (balance, currency, the ledger as a Relay connection), the operator's
// creditWallet mutation, and Subscription.walletUpdated (the balance after each change).
import { WALLET_CURRENCY } from '../../domain/billing/money.js';
import type { WalletChange } from '../../domain/billing/wallet-events.js';
import type { WalletView } from '../../domain/billing/billing-service.js';
import { TRANSACTION_PAGE, TRANSACTION_TYPES, type TransactionView } from '../../domain/ledger/ledger.js';
import { requireAccountAccess } from '../access.js';
import { builder } from '../builder.js';
import { type StreamItem, untilKeyInvalid, unwrapStreamItem } from '../key-guard.js';
import { AccountRef } from './account.js';
import { DecimalScalar } from './money.js';
import { PageInfoRef } from './page-info.js';
import { TopUpRef } from './top-up.js';

export const TransactionTypeEnum = builder.enumType('TransactionType', {
  description:
    'topup: credits bought; usage: charged for API calls; refund: credits given back; subscription: a monthly fee; bonus: promotional credits.',
  values: TRANSACTION_TYPES,
});

export const SortOrderEnum = builder.enumType('SortOrder', {
  description: 'asc: oldest first; desc: newest first.',
  values: ['asc', 'desc'] as const,
});

const CreditTypeEnum = builder.enumType('CreditType', {
  description: 'bonus: promotional credits; refund: credits given back.',
  values: ['bonus', 'refund'] as const,
});

export const WalletTransactionRef = builder.objectRef<TransactionView>('WalletTransaction').implement({
  description: "One entry of the wallet's ledger. Entries are never changed or removed: a correction is a new entry.",
  fields: (t) => ({
    id: t.exposeID('id'),
    type: t.field({ type: TransactionTypeEnum, resolve: (x) => x.type }),
    amount: t.field({ type: DecimalScalar, description: 'Positive for a credit, negative for a charge.', resolve: (x) => x.amount }),
    balanceAfter: t.field({ type: DecimalScalar, resolve: (x) => x.balanceAfter }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    description: t.exposeString('description'),
    reference: t.exposeString('reference', {
      nullable: true,
      description: 'The request id of a usage charge, the payment of a top-up, the period of a fee.',
    }),
    topUp: t.loadable({
      type: TopUpRef,
      nullable: true,
      description: 'The top-up that paid for this credit (its amount or its bonus); null for other transactions.',
      // One query for a whole page of transactions.
      load: (paymentIds: string[], ctx) => ctx.services.payments.topUpsByPaymentIds(paymentIds),
      resolve: (x) => ((x.type === 'topup' || x.type === 'bonus') && x.reference ? x.reference : null),
    }),
  }),
});

const EdgeRef = builder.objectRef<TransactionView>('WalletTransactionEdge').implement({
  fields: (t) => ({
    cursor: t.string({ resolve: (x) => x.id }),
    node: t.field({ type: WalletTransactionRef, resolve: (x) => x }),
  }),
});

interface ConnectionShape {
  transactions: TransactionView[];
  hasMore: boolean;
  after: string | null;
}

const ConnectionRef = builder.objectRef<ConnectionShape>('WalletTransactionConnection').implement({
  fields: (t) => ({
    edges: t.field({ type: [EdgeRef], resolve: (c) => c.transactions }),
    nodes: t.field({ type: [WalletTransactionRef], resolve: (c) => c.transactions }),
    pageInfo: t.field({
      type: PageInfoRef,
      resolve: (c) => ({
        hasNextPage: c.hasMore,
        hasPreviousPage: Boolean(c.after),
        startCursor: c.transactions[0]?.id ?? null,
        endCursor: c.transactions.at(-1)?.id ?? null,
      }),
    }),
  }),
});

export const WalletRef = builder.objectRef<WalletView>('Wallet').implement({
  description: 'The prepaid wallet of an account: usage beyond the monthly allocation, and monthly fees, are paid from it.',
  fields: (t) => ({
    balance: t.field({ type: DecimalScalar, resolve: (w) => w.balance }),
    currency: t.exposeString('currency', { description: 'Upper case, e.g. USD.' }),
    held: t.field({
      type: DecimalScalar,
      description: 'Promised to calls in flight; spendable again once they settle.',
      resolve: (w) => w.held,
    }),
    available: t.field({ type: DecimalScalar, description: 'Balance minus held.', resolve: (w) => w.balance - w.held }),
    transactions: t.field({
      type: ConnectionRef,
      description: `The ledger, oldest first unless order is desc; after takes a transaction id (a cursor). first: 1 to ${TRANSACTION_PAGE.maxLimit}, default ${TRANSACTION_PAGE.defaultLimit}.`,
      args: {
        first: t.arg.int({ required: false }),
        after: t.arg.string({ required: false }),
        order: t.arg({ type: SortOrderEnum, required: false }),
        type: t.arg({ type: TransactionTypeEnum, required: false }),
      },
      resolve: async (w, args, ctx) => {
        const page = await ctx.services.billing.listTransactions(w.accountId, {
          limit: args.first,
          after: args.after,
          order: args.order,
          type: args.type,
        });
        return { ...page, after: args.after ?? null };
      },
    }),
  }),
});

// Batched: a list of accounts (the operator's) reads their wallets in one query.
builder.objectField(AccountRef, 'wallet', (t) =>
  t.loadable({
    type: WalletRef,
    load: (accountIds: string[], ctx) => ctx.services.billing.getWallets(accountIds),
    // Batched, never cached: a document whose mutations change a wallet reads each change.
    loaderOptions: { cache: false },
    resolve: async (account, _args, ctx) => {
      await requireAccountAccess(ctx, account.id);
      return account.id;
    },
  }),
);

const WalletUpdateRef = builder.objectRef<WalletChange>('WalletUpdate').implement({
  description: 'The wallet after a change, pushed once the change is committed.',
  fields: (t) => ({
    balance: t.field({ type: DecimalScalar, resolve: (c) => c.balance }),
    currency: t.string({ resolve: () => WALLET_CURRENCY }),
    transaction: t.field({ type: WalletTransactionRef, resolve: (c) => c.transaction }),
  }),
});

builder.subscriptionField('walletUpdated', (t) =>
  t.field({
    type: WalletUpdateRef,
    description:
      "The key's wallet after each committed change (credits, usage charges, fees). With REDIS_URL set, changes made through every instance are seen; without, those of this server process.",
    // Ends when the operation completes, the client goes, or the key is revoked or expires.
    subscribe: (_root, _args, ctx) =>
      untilKeyInvalid<WalletChange>(ctx, (signal, { account }) => {
        ctx.services.subscriptionSlots.take(account.id, signal);
        return ctx.services.billing.events.subscribe(account.id, signal);
      }) as AsyncIterable<unknown> as AsyncIterable<WalletChange>,
    resolve: (item) => unwrapStreamItem(item as StreamItem<WalletChange>),
  }),
);

const CreditWalletInput = builder.inputType('CreditWalletInput', {
  fields: (t) => ({
    accountId: t.id({ required: true }),
    amount: t.field({ type: DecimalScalar, required: true, description: 'Positive, in currency units.' }),
    type: t.field({ type: CreditTypeEnum, required: true }),
    description: t.string({ required: true }),
    idempotencyKey: t.string({ required: false, description: 'A repeated credit with the same key returns the first transaction.' }),
  }),
});

builder.mutationField('creditWallet', (t) =>
  t.field({
    type: WalletTransactionRef,
    description: "Admin (Bearer $ADMIN_TOKEN): add bonus or refund credits to an account's wallet.",
    args: { input: t.arg({ type: CreditWalletInput, required: true }) },
    resolve: (_root, { input }, ctx) => {
      ctx.requireAdmin();
      return ctx.services.billing.creditWallet({
        accountId: String(input.accountId),
        amount: input.amount,
        type: input.type,
        description: input.description,
        idempotencyKey: input.idempotencyKey ?? null,
      });
    },
  }),
);
