// Usage: Account.allocation (this period's monthly tokens) and Account.usage (daily sums per model,
// end user or API key of the usage events, with what the wallet paid), the data behind GET /v1/usage.
import { type AllocationView, USAGE_GROUP_BY, type UsageDay, type UsageReport } from '../../domain/billing/billing-service.js';
import { requireAccountAccess } from '../access.js';
import { builder } from '../builder.js';
import { AccountRef, TierEnum } from './account.js';
import { DecimalScalar, SafeIntScalar } from './money.js';

export const AllocationRef = builder.objectRef<AllocationView>('Allocation').implement({
  description: "The tier's monthly token allocation in the current billing period (the calendar month, UTC).",
  fields: (t) => ({
    period: t.exposeString('period', { description: 'YYYY-MM' }),
    periodStart: t.expose('periodStart', { type: 'DateTime' }),
    periodEnd: t.expose('periodEnd', {
      type: 'DateTime',
      description: 'The first instant of the next period, when the allocation resets.',
    }),
    tier: t.field({ type: TierEnum, resolve: (a) => a.tier }),
    monthlyTokens: t.field({ type: SafeIntScalar, nullable: true, description: 'null: unlimited.', resolve: (a) => a.monthlyTokens }),
    used: t.field({ type: SafeIntScalar, resolve: (a) => a.used }),
    held: t.field({ type: SafeIntScalar, description: 'Held by calls in flight.', resolve: (a) => a.held }),
    remaining: t.field({
      type: SafeIntScalar,
      nullable: true,
      description: 'Neither used nor held; null: unlimited.',
      resolve: (a) => a.remaining,
    }),
    feePaidTier: t.field({
      type: TierEnum,
      nullable: true,
      description:
        'The tier whose monthly fee is paid for this period: taking it (again) this period charges nothing. null: no fee paid this period.',
      resolve: (a) => a.feePaidTier,
    }),
  }),
});

export const UsageGroupByEnum = builder.enumType('UsageGroupBy', {
  description:
    "What usage rows are summed by, beside the day: model; user (the requests' `user` field, the customer's end-user id); key (the API key).",
  values: USAGE_GROUP_BY,
});

const UsageDayRef = builder.objectRef<UsageDay>('UsageDay').implement({
  description: 'The usage of one day and one model, end user or API key (as the report is grouped).',
  fields: (t) => ({
    date: t.exposeString('date', { description: 'YYYY-MM-DD (UTC)' }),
    model: t.string({ nullable: true, description: 'The model; null unless grouped by model.', resolve: (d) => d.model }),
    user: t.string({
      nullable: true,
      description: "Grouped by user: the requests' `user` (null for calls that gave none, and unless grouped by user).",
      resolve: (d) => d.user ?? null,
    }),
    keyId: t.id({
      nullable: true,
      description: 'Grouped by key: the API key (null for calls made without one, and unless grouped by key).',
      resolve: (d) => d.keyId ?? null,
    }),
    requests: t.field({ type: SafeIntScalar, resolve: (d) => d.requests }),
    promptTokens: t.field({ type: SafeIntScalar, resolve: (d) => d.promptTokens }),
    completionTokens: t.field({ type: SafeIntScalar, resolve: (d) => d.completionTokens }),
    totalTokens: t.field({ type: SafeIntScalar, resolve: (d) => d.totalTokens }),
    cost: t.field({
      type: DecimalScalar,
      description: 'Money charged from the wallet (allocation tokens are not money).',
      resolve: (d) => d.cost,
    }),
  }),
});

const UsageReportRef = builder.objectRef<UsageReport>('UsageReport').implement({
  fields: (t) => ({
    start: t.exposeString('start', { description: 'First day covered, YYYY-MM-DD.' }),
    end: t.exposeString('end', { description: 'Last day covered (inclusive), YYYY-MM-DD.' }),
    groupBy: t.field({ type: UsageGroupByEnum, resolve: (r) => r.groupBy }),
    allocation: t.field({ type: AllocationRef, resolve: (r) => r.allocation }),
    data: t.field({ type: [UsageDayRef], resolve: (r) => r.data }),
  }),
});

// Batched, never cached (calls a document makes change them): a list of accounts (the operator's)
// reads their allocations in one query, and each usage report (by path: one per set of arguments)
// in two, the allocations and the sums.
builder.objectFields(AccountRef, (t) => ({
  allocation: t.loadable({
    type: AllocationRef,
    load: (accountIds: string[], ctx) => ctx.services.billing.getAllocations(accountIds),
    loaderOptions: { cache: false },
    resolve: async (account, _args, ctx) => {
      await requireAccountAccess(ctx, account.id);
      return account.id;
    },
  }),
  usage: t.loadable({
    type: UsageReportRef,
    byPath: true,
    load: (accountIds: string[], ctx, args) =>
      ctx.services.billing.usageReports(accountIds, { start: args.start, end: args.end, groupBy: args.groupBy }),
    loaderOptions: { cache: false },
    description:
      'Daily usage per model (or end user, or API key: `groupBy`) between two UTC dates (inclusive, at most 366 days); default: the current period.',
    args: {
      start: t.arg.string({ required: false, description: 'YYYY-MM-DD' }),
      end: t.arg.string({ required: false, description: 'YYYY-MM-DD' }),
      groupBy: t.arg({ type: UsageGroupByEnum, required: false, defaultValue: 'model' }),
    },
    resolve: async (account, _args, ctx) => {
      await requireAccountAccess(ctx, account.id);
      return account.id;
    },
  }),
}));
