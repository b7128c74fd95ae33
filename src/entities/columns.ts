// Column shapes the entities share, written once so every table spells them the same way the
// migrations do (src/db/migrations/): money as 64-bit integers of nanos read as BigInt, token
// counters as 64-bit integers read as numbers, timestamps with time zone and milliseconds, and the
// owning account as a plain foreign key (no cascades: accounts are never deleted). Zero defaults of
// 64-bit columns are written `'0'`, as knex wrote them in the migrations.
import { BigIntType } from '@mikro-orm/core';
import { Account } from './Account.js';

export const bigintColumn = { type: new BigIntType('bigint') } as const;
export const tokenColumn = { type: new BigIntType('number') } as const;
export const timestamp = { type: 'datetime', length: 3 } as const;
export const optionalTimestamp = { type: 'datetime', length: 3, nullable: true } as const;
/** The account a row belongs to: `account_id`, referencing accounts(id) without cascades. */
export const accountRef = {
  kind: 'm:1',
  entity: () => Account,
  fieldName: 'account_id',
  updateRule: 'no action',
  deleteRule: 'no action',
} as const;
