// An alert for an account (low balance, allocation or spending limit reached, frequent rate-limit
// hits), written once per occasion (`dedupe_key`) in the transaction that crossed the line, and
// e-mailed after the commit by the delivery worker (its state below); the feed shows them.
import { EntitySchema } from '@mikro-orm/core';
import type { Account } from './Account.js';
import { accountRef, bigintColumn, optionalTimestamp, timestamp } from './columns.js';

export class Notification {
  seq!: bigint;
  id!: string;
  account!: Account;
  kind!: string;
  dedupeKey!: string;
  /** JSON. */
  payload!: string;
  createdAt!: Date;
  sentAt: Date | null = null;
  /** pending → sent | failed (tries used up) | skipped (the kind is turned off). */
  delivery = 'pending';
  attempts = 0;
  nextAttemptAt: Date | null = null;
  /** The billing instance sending it, until leaseUntil. */
  leaseOwner: string | null = null;
  leaseUntil: Date | null = null;
  lastError: string | null = null;
  /** Who has it: once sent, or so far (some recipients deferred with a 4xx, to be tried again). */
  recipients: string | null = null;
  /** JSON {address: reply}: recipients the mail server refused for good (a 5xx), never tried again. */
  refusedRecipients: string | null = null;
  /** When its owner read it in the feed. */
  readAt: Date | null = null;
}

export const NotificationSchema = new EntitySchema<Notification>({
  class: Notification,
  tableName: 'notifications',
  uniques: [
    { name: 'notifications_id_unique', properties: ['id'] },
    { name: 'notifications_dedupe_key_unique', properties: ['dedupeKey'] },
  ],
  indexes: [
    { name: 'notifications_account_seq_index', properties: ['account', 'seq'] },
    { name: 'notifications_delivery_index', properties: ['delivery', 'nextAttemptAt'] },
  ],
  properties: {
    seq: { ...bigintColumn, primary: true, autoincrement: true },
    id: { type: 'string', length: 40 },
    // No index of its own: notifications_account_seq_index starts with it.
    account: { ...accountRef, index: false },
    kind: { type: 'string', length: 32 },
    dedupeKey: { type: 'string', length: 240 },
    payload: { type: 'text' },
    createdAt: timestamp,
    sentAt: optionalTimestamp,
    delivery: { type: 'string', length: 16, default: 'pending' },
    attempts: { type: 'integer', default: 0 },
    nextAttemptAt: optionalTimestamp,
    leaseOwner: { type: 'string', length: 40, nullable: true },
    leaseUntil: optionalTimestamp,
    lastError: { type: 'string', length: 500, nullable: true },
    recipients: { type: 'string', length: 2000, nullable: true },
    refusedRecipients: { type: 'text', nullable: true },
    readAt: optionalTimestamp,
  },
});
