// The operator's override of an account's requests and tokens per minute (null keeps the tier's
// value), read with the key at authentication so it applies from the next request on.
import { EntitySchema } from '@mikro-orm/core';
import type { Account } from './Account.js';
import { accountRef, timestamp, tokenColumn } from './columns.js';

export class RateLimitOverride {
  account!: Account;
  rpm: number | null = null;
  tpm: number | null = null;
  updatedAt!: Date;
}

export const RateLimitOverrideSchema = new EntitySchema<RateLimitOverride>({
  class: RateLimitOverride,
  tableName: 'rate_limit_overrides',
  properties: {
    account: { ...accountRef, kind: '1:1', owner: true, primary: true },
    rpm: { type: 'integer', nullable: true },
    tpm: { ...tokenColumn, nullable: true },
    updatedAt: timestamp,
  },
});
