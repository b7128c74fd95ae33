// A dashboard sign-in session: only the SHA-256 digest of the cookie's secret is stored. An
// operator session made from ADMIN_TOKEN belongs to no account.
import { EntitySchema } from '@mikro-orm/core';
import type { Account } from './Account.js';
import { accountRef, bigintColumn } from './columns.js';

export class Session {
  id!: string;
  digest!: string;
  account: Account | null = null;
  operator = false;
  userAgent: string | null = null;
  /** An operator session made from ADMIN_TOKEN: a digest of that token, salted with the id (it ends when the token changes). */
  adminTokenDigest: string | null = null;
  createdAtMs!: bigint;
  lastSeenAtMs!: bigint;
  expiresAtMs!: bigint;
}

export const SessionSchema = new EntitySchema<Session>({
  class: Session,
  tableName: 'sessions',
  properties: {
    id: { type: 'string', primary: true, length: 32 },
    digest: { type: 'string', length: 64, unique: 'sessions_digest_unique' },
    account: { ...accountRef, nullable: true, index: 'sessions_account_id_index' },
    operator: { type: 'boolean', default: false },
    userAgent: { type: 'string', length: 255, nullable: true },
    adminTokenDigest: { type: 'string', length: 64, nullable: true },
    createdAtMs: bigintColumn,
    lastSeenAtMs: bigintColumn,
    expiresAtMs: bigintColumn,
  },
});
