// An account's automatic top-up settings (section 2.12) and state: the run of failed attempts and
// the one attempt in flight (top_ups.id), which is what keeps concurrent charges to one top-up.
import { BigIntType, EntitySchema } from '@mikro-orm/core';
import type { Account } from './Account.js';
import { accountRef } from './columns.js';

export class AutoTopup {
  account!: Account;
  enabled = false;
  threshold = 0n;
  amount = 0n;
  consecutiveFailures = 0;
  inFlightId: string | null = null;
  disabledReason: string | null = null;
  updatedAt!: Date;
}

export const AutoTopupSchema = new EntitySchema<AutoTopup>({
  class: AutoTopup,
  tableName: 'auto_topups',
  properties: {
    account: { ...accountRef, kind: '1:1', primary: true, owner: true },
    enabled: { type: 'boolean', default: false },
    threshold: { type: new BigIntType('bigint'), defaultRaw: "'0'" },
    amount: { type: new BigIntType('bigint'), defaultRaw: "'0'" },
    consecutiveFailures: { type: 'integer', default: 0 },
    inFlightId: { type: 'string', length: 40, nullable: true },
    disabledReason: { type: 'string', length: 500, nullable: true },
    updatedAt: { type: 'datetime', length: 3 },
  },
});
