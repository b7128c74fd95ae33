// A single-use token for a password reset (asked for by e-mail) or a set-password link (printed by
// the CLI); only its digest is stored.
import { EntitySchema } from '@mikro-orm/core';
import type { Account } from './Account.js';
import { accountRef, bigintColumn } from './columns.js';

export class PasswordToken {
  digest!: string;
  account!: Account;
  purpose!: 'reset' | 'set';
  createdAtMs!: bigint;
  expiresAtMs!: bigint;
  usedAtMs: bigint | null = null;
}

export const PasswordTokenSchema = new EntitySchema<PasswordToken>({
  class: PasswordToken,
  tableName: 'password_tokens',
  properties: {
    digest: { type: 'string', primary: true, length: 64 },
    account: { ...accountRef, index: false },
    purpose: { type: 'string', length: 16 },
    createdAtMs: bigintColumn,
    expiresAtMs: bigintColumn,
    usedAtMs: { ...bigintColumn, nullable: true },
  },
});
