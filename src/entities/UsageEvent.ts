// One billed call (or a hold released unsettled, outcome 'abandoned'): the tokens it used, how many
// came from the monthly allocation, and the wallet money it cost. `day` is the UTC date as text, so
// daily sums group the same way on every database. Read by the usage report.
import { EntitySchema } from '@mikro-orm/core';
import type { Account } from './Account.js';
import { accountRef, bigintColumn, timestamp, tokenColumn } from './columns.js';

export class UsageEvent {
  seq!: bigint;
  id!: string;
  account!: Account;
  keyId: string | null = null;
  /** The request's `user` (the customer's end-user id), when it gave one. */
  endUser: string | null = null;
  model!: string;
  requestId!: string;
  outcome!: string;
  promptTokens!: number;
  completionTokens!: number;
  totalTokens!: number;
  allocationTokens!: number;
  walletNanos!: bigint;
  /** Why less was charged than used, when it was: 'capped_at_hold' or 'hold_released'. */
  billingNote: string | null = null;
  day!: string;
  createdAt!: Date;
}

export const UsageEventSchema = new EntitySchema<UsageEvent>({
  class: UsageEvent,
  tableName: 'usage_events',
  uniques: [{ name: 'usage_events_id_unique', properties: ['id'] }],
  indexes: [
    // The one index per account (migration 0010): the usage report's days, and the unusual-usage
    // check's baseline (its query bounds the days as well as the times).
    { name: 'usage_events_account_day_index', properties: ['account', 'day'] },
  ],
  properties: {
    seq: { ...bigintColumn, primary: true, autoincrement: true },
    id: { type: 'string', length: 40 },
    // No index of its own: usage_events_account_day_index starts with it.
    account: { ...accountRef, index: false },
    keyId: { type: 'string', length: 32, nullable: true },
    endUser: { type: 'string', length: 256, nullable: true },
    model: { type: 'string', length: 200 },
    requestId: { type: 'string', length: 128 },
    outcome: { type: 'string', length: 32 },
    promptTokens: tokenColumn,
    completionTokens: tokenColumn,
    totalTokens: tokenColumn,
    allocationTokens: tokenColumn,
    walletNanos: bigintColumn,
    billingNote: { type: 'string', length: 32, nullable: true },
    day: { type: 'string', length: 10 },
    createdAt: timestamp,
  },
});
