// An account: who pays and whose keys call the API. Its wallet (Wallet) and ledger
// (WalletTransaction) are entities of their own.
import { EntitySchema } from '@mikro-orm/core';
import type { Tier } from '../domain/accounts/tiers.js';

export class Account {
  id: string;
  email: string;
  tier: Tier;
  createdAt: Date;

  constructor(init: { id: string; email: string; tier: Tier; createdAt?: Date }) {
    this.id = init.id;
    this.email = init.email;
    this.tier = init.tier;
    this.createdAt = init.createdAt ?? new Date();
  }
}

export const AccountSchema = new EntitySchema<Account>({
  class: Account,
  tableName: 'accounts',
  // One account per address, whatever its case (migration 0005).
  uniques: [
    { name: 'accounts_email_lower_unique', expression: 'create unique index accounts_email_lower_unique on accounts (lower(email))' },
  ],
  properties: {
    id: { type: 'string', primary: true, length: 32 },
    email: { type: 'string', length: 320, index: 'accounts_email_index' },
    // Validated against TIERS by the service; a plain column so a new tier needs no migration.
    tier: { type: 'string', length: 32 },
    createdAt: { type: 'datetime', length: 3 },
  },
});
