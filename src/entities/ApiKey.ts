// An API key of an account. Only the SHA-256 digest of the secret is stored, with its first 12 and
// last 4 characters for display; a key is never deleted, only revoked (or left to expire).
import { EntitySchema } from '@mikro-orm/core';
import type { Account } from './Account.js';
import { accountRef } from './columns.js';

export class ApiKey {
  id: string;
  account: Account;
  digest: string;
  prefix: string;
  last4: string;
  name: string | null;
  createdAt: Date;
  expiresAt: Date | null;
  revokedAt: Date | null = null;
  /** When a call was last made with it, to the minute (src/domain/keys/key-use.ts); null: never. */
  lastUsedAt: Date | null = null;

  constructor(init: {
    id: string;
    account: Account;
    digest: string;
    prefix: string;
    last4: string;
    name?: string | null;
    createdAt?: Date;
    expiresAt?: Date | null;
  }) {
    this.id = init.id;
    this.account = init.account;
    this.digest = init.digest;
    this.prefix = init.prefix;
    this.last4 = init.last4;
    this.name = init.name ?? null;
    this.createdAt = init.createdAt ?? new Date();
    this.expiresAt = init.expiresAt ?? null;
  }
}

export const ApiKeySchema = new EntitySchema<ApiKey>({
  class: ApiKey,
  tableName: 'api_keys',
  indexes: [{ name: 'api_keys_account_id_index', properties: ['account'] }],
  properties: {
    id: { type: 'string', primary: true, length: 32 },
    account: { ...accountRef },
    digest: { type: 'string', length: 64, unique: 'api_keys_digest_unique' },
    prefix: { type: 'string', length: 16 },
    last4: { type: 'string', length: 4 },
    name: { type: 'string', length: 255, nullable: true },
    createdAt: { type: 'datetime', length: 3 },
    expiresAt: { type: 'datetime', length: 3, nullable: true },
    revokedAt: { type: 'datetime', length: 3, nullable: true },
    lastUsedAt: { type: 'datetime', length: 3, nullable: true },
  },
});
