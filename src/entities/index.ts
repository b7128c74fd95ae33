// Every entity schema, one per table, registered explicitly with MikroORM (no folder discovery, no
// decorators). test/schema.test.ts migrates an empty database and checks that MikroORM finds no
// difference between these and the migrations' tables, so the two cannot drift.
import type { EntitySchema } from '@mikro-orm/core';
import { AccountSchema } from './Account.js';
import { AccountPasswordSchema } from './AccountPassword.js';
import { AlertSettingsSchema } from './AlertSettings.js';
import { ApiKeySchema } from './ApiKey.js';
import { AutoTopupSchema } from './AutoTopup.js';
import { BillingInstanceSchema } from './BillingInstance.js';
import { HoldSchema } from './Hold.js';
import { NotificationSchema } from './Notification.js';
import { PasswordTokenSchema } from './PasswordToken.js';
import { PaymentCustomerSchema } from './PaymentCustomer.js';
import { PaymentReversalSchema } from './PaymentReversal.js';
import { RateLimitOverrideSchema } from './RateLimitOverride.js';
import { SessionSchema } from './Session.js';
import { TopUpSchema } from './TopUp.js';
import { UsageEventSchema } from './UsageEvent.js';
import { WalletSchema } from './Wallet.js';
import { WalletTransactionSchema } from './WalletTransaction.js';

export { Account, AccountSchema } from './Account.js';
export { AccountPassword, AccountPasswordSchema } from './AccountPassword.js';
export { AlertSettings, AlertSettingsSchema } from './AlertSettings.js';
export { ApiKey, ApiKeySchema } from './ApiKey.js';
export { AutoTopup, AutoTopupSchema } from './AutoTopup.js';
export { BillingInstance, BillingInstanceSchema } from './BillingInstance.js';
export { Hold, HoldSchema } from './Hold.js';
export { Notification, NotificationSchema } from './Notification.js';
export { PasswordToken, PasswordTokenSchema } from './PasswordToken.js';
export { PaymentCustomer, PaymentCustomerSchema } from './PaymentCustomer.js';
export { PaymentReversal, PaymentReversalSchema } from './PaymentReversal.js';
export { RateLimitOverride, RateLimitOverrideSchema } from './RateLimitOverride.js';
export { Session, SessionSchema } from './Session.js';
export { TopUp, TopUpSchema } from './TopUp.js';
export { UsageEvent, UsageEventSchema } from './UsageEvent.js';
export { Wallet, WalletSchema } from './Wallet.js';
export { WalletTransaction, WalletTransactionSchema } from './WalletTransaction.js';

// biome-ignore lint/suspicious/noExplicitAny: schemas of different entity types in one list, as MikroORM's own typing does.
export const ENTITIES: EntitySchema<any, any>[] = [
  AccountSchema,
  ApiKeySchema,
  WalletSchema,
  WalletTransactionSchema,
  HoldSchema,
  UsageEventSchema,
  NotificationSchema,
  BillingInstanceSchema,
  TopUpSchema,
  PaymentCustomerSchema,
  PaymentReversalSchema,
  AutoTopupSchema,
  RateLimitOverrideSchema,
  AlertSettingsSchema,
  AccountPasswordSchema,
  SessionSchema,
  PasswordTokenSchema,
];
