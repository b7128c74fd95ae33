// A row of the append-only ledger: one balance change of one wallet (a top-up, a bonus, a refund,
// usage, a fee), with the balance after it. `seq` orders an account's rows the way its balance
// changed (they are written under the wallet row's lock); `idempotency_key` makes a retried credit
// a no-op. Written and read by src/domain/ledger/.
import { EntitySchema } from '@mikro-orm/core';
import type { Account } from './Account.js';
import { accountRef, bigintColumn, timestamp } from './columns.js';

export class WalletTransaction {
  seq!: bigint;
  id!: string;
  account!: Account;
  type!: string;
  amount!: bigint;
  balanceAfter!: bigint;
  description!: string;
  reference: string | null = null;
  idempotencyKey: string | null = null;
  createdAt!: Date;
}

export const WalletTransactionSchema = new EntitySchema<WalletTransaction>({
  class: WalletTransaction,
  tableName: 'wallet_transactions',
  uniques: [
    { name: 'wallet_transactions_id_unique', properties: ['id'] },
    { name: 'wallet_transactions_idempotency_key_unique', properties: ['idempotencyKey'] },
  ],
  indexes: [{ name: 'wallet_transactions_account_seq_index', properties: ['account', 'seq'] }],
  properties: {
    seq: { ...bigintColumn, primary: true, autoincrement: true },
    id: { type: 'string', length: 40 },
    // No index of its own: wallet_transactions_account_seq_index starts with it.
    account: { ...accountRef, index: false },
    type: { type: 'string', length: 16 },
    amount: bigintColumn,
    balanceAfter: bigintColumn,
    description: { type: 'string', length: 500 },
    reference: { type: 'string', length: 200, nullable: true },
    idempotencyKey: { type: 'string', length: 240, nullable: true },
    createdAt: timestamp,
  },
});
