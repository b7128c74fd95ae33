// Alerts on GraphQL: Account.alertSettings and updateAlertSettings (which alerts are e-mailed, extra
// recipients), Account.notifications (the feed, newest first, as a Relay connection with each
// message's delivery state), markNotificationsRead, and Subscription.notificationAdded.
import type { AlertSettingsView } from '../../domain/notifications/alert-settings.js';
import { DELIVERY_STATES, FEED_PAGE, type NotificationRecord } from '../../domain/notifications/notification-store.js';
import { ALERTS, alertOf, NOTIFICATION_KINDS, type Alert } from '../../domain/notifications/outbox.js';
import { renderNotification } from '../../mail/templates.js';
import { requireAccountAccess } from '../access.js';
import { builder } from '../builder.js';
import type { GraphQLContext } from '../context.js';
import { type StreamItem, untilKeyInvalid, unwrapStreamItem } from '../key-guard.js';
import { AccountRef } from './account.js';
import { PageInfoRef } from './page-info.js';

const NotificationKindEnum = builder.enumType('NotificationKind', { values: NOTIFICATION_KINDS });
const AlertEnum = builder.enumType('Alert', {
  description: 'An alert a person turns on or off; each notification kind belongs to one. receipt cannot be turned off.',
  values: ALERTS,
});
const DeliveryStateEnum = builder.enumType('DeliveryState', {
  description:
    'pending: not sent yet (or waiting for a retry); sent: accepted by the mail server; failed: tries used up (an operator can retry); skipped: the alert is turned off.',
  values: DELIVERY_STATES,
});

const DeliveryRef = builder.objectRef<NotificationRecord>('NotificationDelivery').implement({
  fields: (t) => ({
    state: t.field({ type: DeliveryStateEnum, resolve: (n) => n.delivery }),
    attempts: t.exposeInt('attempts'),
    sentAt: t.expose('sentAt', { type: 'DateTime', nullable: true }),
    nextAttemptAt: t.field({ type: 'DateTime', nullable: true, resolve: (n) => (n.delivery === 'pending' ? n.nextAttemptAt : null) }),
    lastError: t.exposeString('lastError', {
      nullable: true,
      description:
        'Why the last try failed, or why it was skipped; once sent, the recipients the mail server refused (the others got it), else null.',
    }),
    recipients: t.exposeStringList('recipients', { description: 'Who it was sent to, once sent.' }),
  }),
});

const rendered = (n: NotificationRecord, ctx: GraphQLContext) =>
  renderNotification(n.kind, n.payload, { publicUrl: ctx.services.config.publicUrl, accountId: n.accountId });

export const NotificationRef = builder.objectRef<NotificationRecord>('Notification').implement({
  description: 'An alert or receipt written for the account, e-mailed (unless turned off) and kept here.',
  fields: (t) => ({
    id: t.exposeID('id'),
    kind: t.field({ type: NotificationKindEnum, resolve: (n) => n.kind }),
    alert: t.field({ type: AlertEnum, resolve: (n) => alertOf(n.kind) }),
    subject: t.string({ resolve: (n, _args, ctx) => rendered(n, ctx).subject }),
    text: t.string({ description: 'The plain-text body of the e-mail.', resolve: (n, _args, ctx) => rendered(n, ctx).text }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    readAt: t.expose('readAt', { type: 'DateTime', nullable: true }),
    read: t.boolean({ resolve: (n) => n.readAt !== null }),
    delivery: t.field({ type: DeliveryRef, resolve: (n) => n }),
  }),
});

const EdgeRef = builder.objectRef<NotificationRecord>('NotificationEdge').implement({
  fields: (t) => ({
    cursor: t.string({ resolve: (n) => n.id }),
    node: t.field({ type: NotificationRef, resolve: (n) => n }),
  }),
});

interface ConnectionShape {
  accountId: string;
  notifications: NotificationRecord[];
  hasMore: boolean;
  after: string | null;
}

const ConnectionRef = builder.objectRef<ConnectionShape>('NotificationConnection').implement({
  fields: (t) => ({
    edges: t.field({ type: [EdgeRef], resolve: (c) => c.notifications }),
    nodes: t.field({ type: [NotificationRef], resolve: (c) => c.notifications }),
    pageInfo: t.field({
      type: PageInfoRef,
      resolve: (c) => ({
        hasNextPage: c.hasMore,
        hasPreviousPage: Boolean(c.after),
        startCursor: c.notifications[0]?.id ?? null,
        endCursor: c.notifications.at(-1)?.id ?? null,
      }),
    }),
    unreadCount: t.loadable({
      type: 'Int',
      description: "The account's unread notifications, all pages.",
      // Batched: a list of accounts counts all their unread notifications in one query.
      load: (accountIds: string[], ctx) => ctx.services.alerts.notifications.unreadCounts(accountIds),
      resolve: (c) => c.accountId,
    }),
  }),
});

// Batched by path: a list of accounts reads the first page of every feed in one query.
builder.objectField(AccountRef, 'notifications', (t) =>
  t.loadable({
    type: ConnectionRef,
    byPath: true,
    load: async (accountIds: string[], ctx, args) => {
      const q = { first: args.first, after: args.after, unreadOnly: args.unreadOnly };
      const pages = await ctx.services.alerts.notifications.pages(accountIds, q);
      return pages.map((page, i) => ({ ...page, accountId: accountIds[i]!, after: args.after ?? null }));
    },
    description: `Alerts and receipts, newest first; after takes a notification id (a cursor). first: 1 to ${FEED_PAGE.maxLimit}, default ${FEED_PAGE.defaultLimit}.`,
    args: {
      first: t.arg.int({ required: false }),
      after: t.arg.string({ required: false }),
      unreadOnly: t.arg.boolean({ required: false }),
    },
    resolve: async (account, _args, ctx) => {
      await requireAccountAccess(ctx, account.id);
      return account.id;
    },
  }),
);

// Settings ---------------------------------------------------------------------------------------

/** GraphQL field name of each alert. */
const FIELD: Record<Alert, string> = {
  low_balance: 'lowBalance',
  allocation_80: 'allocation80',
  allocation_100: 'allocation100',
  spending_limit: 'spendingLimit',
  rate_limit: 'rateLimit',
  unusual_usage: 'unusualUsage',
  auto_topup: 'autoTopup',
  monthly_fee: 'monthlyFee',
  receipt: 'receipt',
};

const WHEN: Record<Alert, string> = {
  low_balance: 'The balance fell below the low-balance threshold (AccountSettings.lowBalanceAlert).',
  allocation_80: '80% of the monthly token allocation is used.',
  allocation_100: 'The monthly token allocation is used up.',
  spending_limit: 'The monthly spend reached the spending limit (block) or passed it (alert).',
  rate_limit: 'Many calls were refused by the rate limit in 10 minutes.',
  unusual_usage: "The last hour's tokens or spend are far above the same hour on the previous 7 days.",
  auto_topup: 'An automatic top-up failed, was turned off, or was skipped at the monthly cap.',
  monthly_fee: "The tier's monthly fee was charged, or could not be paid.",
  receipt: 'A top-up was paid (always on).',
};

export const AlertSettingsRef = builder.objectRef<AlertSettingsView>('AlertSettings').implement({
  description:
    'Which alerts are e-mailed (true: on), and who else gets them. An alert turned off still appears in Account.notifications, with delivery state skipped.',
  fields: (t) => ({
    ...Object.fromEntries(ALERTS.map((a) => [FIELD[a], t.boolean({ description: WHEN[a], resolve: (s) => s.enabled[a] })])),
    extraRecipients: t.exposeStringList('extraRecipients', {
      description: "Up to 5 addresses that get every e-mailed alert besides the account's e-mail.",
    }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime', nullable: true }),
  }),
});

// Batched, never cached (a mutation of the document may change them): one query for a list of accounts.
builder.objectField(AccountRef, 'alertSettings', (t) =>
  t.loadable({
    type: AlertSettingsRef,
    load: (accountIds: string[], ctx) => ctx.services.alerts.notifications.getSettingsOf(accountIds),
    loaderOptions: { cache: false },
    resolve: async (account, _args, ctx) => {
      await requireAccountAccess(ctx, account.id);
      return account.id;
    },
  }),
);

const AlertSettingsInput = builder.inputType('AlertSettingsInput', {
  description: 'Fields left out keep their value. receipt cannot be turned off.',
  fields: (t) => ({
    ...Object.fromEntries(ALERTS.map((a) => [FIELD[a], t.boolean({ required: false, description: WHEN[a] })])),
    extraRecipients: t.stringList({ required: false, description: 'Replaces the list (at most 5 e-mail addresses; [] clears it).' }),
  }),
});

builder.mutationFields((t) => ({
  updateAlertSettings: t.field({
    type: AlertSettingsRef,
    description: "Turns the signed-in account's alerts on or off and sets its extra recipients (a dashboard session only).",
    args: { input: t.arg({ type: AlertSettingsInput, required: true }) },
    resolve: async (_root, { input }, ctx) => {
      const { accountId } = ctx.requireSession();
      const given = input as Record<string, unknown>;
      const enabled = Object.fromEntries(ALERTS.map((a) => [a, given[FIELD[a]] as boolean | null | undefined]));
      return ctx.services.alerts.notifications.updateSettings(accountId, {
        enabled,
        extraRecipients: (given.extraRecipients as string[] | null | undefined) ?? null,
      });
    },
  }),
  markNotificationsRead: t.field({
    type: [NotificationRef],
    description: "Marks the key's account notifications read (ids of other accounts are ignored); returns them.",
    args: { ids: t.arg.idList({ required: true }) },
    resolve: async (_root, { ids }, ctx) => {
      const { account } = await ctx.principal();
      return ctx.services.alerts.notifications.markRead(account.id, ids.map(String));
    },
  }),
  markAllNotificationsRead: t.int({
    description:
      "Marks every unread notification of the key's account read, up to and including `upTo` (the newest the reader has seen, so one written since stays unread; all when omitted); returns how many it marked.",
    args: { upTo: t.arg.id({ required: false }) },
    resolve: async (_root, { upTo }, ctx) => {
      const { account } = await ctx.principal();
      return ctx.services.alerts.notifications.markAllRead(account.id, upTo == null ? null : String(upTo));
    },
  }),
}));

builder.subscriptionField('notificationAdded', (t) =>
  t.field({
    type: NotificationRef,
    description: "The key's account notifications as they are written (by any server process), within about a second.",
    // Ends when the operation completes, the client goes, or the key is revoked or expires.
    subscribe: (_root, _args, ctx) =>
      untilKeyInvalid<NotificationRecord>(ctx, (signal, { account }) => {
        ctx.services.subscriptionSlots.take(account.id, signal);
        return ctx.services.alerts.notifications.subscribe(account.id, signal);
      }) as AsyncIterable<unknown> as AsyncIterable<NotificationRecord>,
    resolve: (item) => unwrapStreamItem(item as StreamItem<NotificationRecord>),
  }),
);
