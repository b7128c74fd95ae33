// The migrations, in the order they run. Defined in code (no file globbing, no ts-node), so the
// server and the CLI apply the same list from source or from a bundle. Never rename an entry:
// the name is what the mikro_orm_migrations table records.
import type { Constructor } from '@mikro-orm/core';
import type { Migration } from '@mikro-orm/migrations';
import { Migration0001AccountsAndKeys } from './0001-accounts-and-keys.js';
import { Migration0002Billing } from './0002-billing.js';
import { Migration0003Payments } from './0003-payments.js';
import { Migration0004RateLimitOverrides } from './0004-rate-limit-overrides.js';
import { Migration0005AccountEmailUnique } from './0005-account-email-unique.js';
import { Migration0006AlertDelivery } from './0006-alert-delivery.js';
import { Migration0007SignIn } from './0007-sign-in.js';
import { Migration0008UsageEndUser } from './0008-usage-end-user.js';
import { Migration0009HoldsWithoutIndexes } from './0009-holds-without-indexes.js';
import { Migration0010UsageEventsOneAccountIndex } from './0010-usage-events-one-account-index.js';
import { Migration0011ApiKeyLastUsed } from './0011-api-key-last-used.js';
import { Migration0012OperatorSessionToken } from './0012-operator-session-token.js';
import { Migration0013SpendingLimitVersion } from './0013-spending-limit-version.js';
import { Migration0014TopUpReversals } from './0014-top-up-reversals.js';
import { Migration0015PaymentReversals } from './0015-payment-reversals.js';
import { Migration0016InstanceTiers } from './0016-instance-tiers.js';
import { Migration0017RefundForgiven } from './0017-refund-forgiven.js';
import { Migration0018NotificationRefusedRecipients } from './0018-notification-refused-recipients.js';

export const MIGRATIONS: { name: string; class: Constructor<Migration> }[] = [
  { name: '0001-accounts-and-keys', class: Migration0001AccountsAndKeys },
  { name: '0002-billing', class: Migration0002Billing },
  { name: '0003-payments', class: Migration0003Payments },
  { name: '0004-rate-limit-overrides', class: Migration0004RateLimitOverrides },
  { name: '0005-account-email-unique', class: Migration0005AccountEmailUnique },
  { name: '0006-alert-delivery', class: Migration0006AlertDelivery },
  { name: '0007-sign-in', class: Migration0007SignIn },
  { name: '0008-usage-end-user', class: Migration0008UsageEndUser },
  { name: '0009-holds-without-indexes', class: Migration0009HoldsWithoutIndexes },
  { name: '0010-usage-events-one-account-index', class: Migration0010UsageEventsOneAccountIndex },
  { name: '0011-api-key-last-used', class: Migration0011ApiKeyLastUsed },
  { name: '0012-operator-session-token', class: Migration0012OperatorSessionToken },
  { name: '0013-spending-limit-version', class: Migration0013SpendingLimitVersion },
  { name: '0014-top-up-reversals', class: Migration0014TopUpReversals },
  { name: '0015-payment-reversals', class: Migration0015PaymentReversals },
  { name: '0016-instance-tiers', class: Migration0016InstanceTiers },
  { name: '0017-refund-forgiven', class: Migration0017RefundForgiven },
  { name: '0018-notification-refused-recipients', class: Migration0018NotificationRefusedRecipients },
];
