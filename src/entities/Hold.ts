// Money and allocation promised to one call in flight, between admission and settlement. `owner`
// is the server instance (billing_instances.id) running the call: when that server dies, the
// sweeper of another releases its holds; `expires_at` bounds a hold whose call never settled.
import { EntitySchema } from '@mikro-orm/core';
import type { Account } from './Account.js';
import { accountRef, bigintColumn, timestamp, tokenColumn } from './columns.js';

export class Hold {
  id!: string;
  account!: Account;
  keyId: string | null = null;
  /** The request's `user` (the customer's end-user id), when it gave one. */
  endUser: string | null = null;
  requestId!: string;
  model!: string;
  period!: string;
  allocationTokens!: number;
  walletNanos!: bigint;
  promptTokens!: number;
  maxOutputTokens!: number;
  owner!: string;
  createdAt!: Date;
  expiresAt!: Date;
}

export const HoldSchema = new EntitySchema<Hold>({
  class: Hold,
  tableName: 'holds',
  properties: {
    id: { type: 'string', primary: true, length: 40 },
    // Only the primary key: the table holds the calls in flight, read by id or whole (migration 0009).
    account: { ...accountRef, index: false },
    keyId: { type: 'string', length: 32, nullable: true },
    endUser: { type: 'string', length: 256, nullable: true },
    requestId: { type: 'string', length: 128 },
    model: { type: 'string', length: 200 },
    period: { type: 'string', length: 7 },
    allocationTokens: tokenColumn,
    walletNanos: bigintColumn,
    promptTokens: { type: 'integer' },
    maxOutputTokens: { type: 'integer' },
    owner: { type: 'string', length: 40 },
    createdAt: timestamp,
    expiresAt: timestamp,
  },
});
