// An account's dashboard sign-in: its password hash (argon2id; null until one is set) and whether
// the person is an operator. Instants are epoch milliseconds, the same on SQLite and PostgreSQL.
import { EntitySchema } from '@mikro-orm/core';
import type { Account } from './Account.js';
import { accountRef, bigintColumn } from './columns.js';

export class AccountPassword {
  account!: Account;
  passwordHash: string | null = null;
  isAdmin = false;
  updatedAtMs!: bigint;
}

export const AccountPasswordSchema = new EntitySchema<AccountPassword>({
  class: AccountPassword,
  tableName: 'account_passwords',
  properties: {
    account: { ...accountRef, kind: '1:1', owner: true, primary: true },
    passwordHash: { type: 'string', length: 255, nullable: true },
    isAdmin: { type: 'boolean', default: false },
    updatedAtMs: bigintColumn,
  },
});
