// Usage: Account.allocation (this period's monthly tokens) and Account.usage (daily sums per model
// of the usage events, with what the wallet paid), the data behind GET /v1/usage.
import type { AllocationView, UsageDay, UsageReport } from '../../domain/billing/billing-service.js';
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
  }),
});

const UsageDayRef = builder.objectRef<UsageDay>('UsageDay').implement({
  fields: (t) => ({
    date: t.exposeString('date', { description: 'YYYY-MM-DD (UTC)' }),
    model: t.exposeString('model'),
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
    allocation: t.field({ type: AllocationRef, resolve: (r) => r.allocation }),
    data: t.field({ type: [UsageDayRef], resolve: (r) => r.data }),
  }),
});

builder.objectFields(AccountRef, (t) => ({
  allocation: t.field({
    type: AllocationRef,
    resolve: async (account, _args, ctx) => {
      await requireAccountAccess(ctx, account.id);
      return ctx.services.billing.getAllocation(account.id);
    },
  }),
  usage: t.field({
    type: UsageReportRef,
    description: 'Daily usage per model between two UTC dates (inclusive, at most 366 days); default: the current period.',
    args: {
      start: t.arg.string({ required: false, description: 'YYYY-MM-DD' }),
      end: t.arg.string({ required: false, description: 'YYYY-MM-DD' }),
    },
    resolve: async (account, args, ctx) => {
      await requireAccountAccess(ctx, account.id);
      return ctx.services.billing.usageReport(account.id, { start: args.start, end: args.end });
    },
  }),
}));
