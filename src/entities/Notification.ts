// An alert for an account (low balance, allocation or spending limit reached, frequent rate-limit
// hits), written once per occasion (`dedupe_key`) in the transaction that crossed the line, and
// marked sent when delivered.
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
}

export const NotificationSchema = new EntitySchema<Notification>({
  class: Notification,
  tableName: 'notifications',
  uniques: [
    { name: 'notifications_id_unique', properties: ['id'] },
    { name: 'notifications_dedupe_key_unique', properties: ['dedupeKey'] },
  ],
  indexes: [{ name: 'notifications_account_seq_index', properties: ['account', 'seq'] }],
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
  },
});
