// A wallet top-up: a hosted checkout (POST /v1/wallet/top-up, Mutation.topUp) or an automatic
// top-up charged off-session. Money in nanos (BigInt). The payments service writes these rows in
// plain SQL inside the ledger's transactions (src/domain/payments/top-up-store.ts); the entity
// gives the ORM (and its tooling) the same table.
import { BigIntType, EntitySchema } from '@mikro-orm/core';
import type { TopUpSource, TopUpState } from '../domain/payments/checkout-state.js';
import type { ProcessorName } from '../domain/payments/processor.js';
import type { Account } from './Account.js';
import { accountRef } from './columns.js';

export class TopUp {
  id!: string;
  account!: Account;
  source!: TopUpSource;
  processor!: ProcessorName;
  status!: TopUpState;
  amount!: bigint;
  bonus!: bigint;
  bonusBps!: number;
  currency!: string;
  idempotencyKey: string | null = null;
  requestHash: string | null = null;
  processorCheckoutId: string | null = null;
  paymentId: string | null = null;
  checkoutUrl: string | null = null;
  failureReason: string | null = null;
  createdAt!: Date;
  updatedAt!: Date;
  expiresAt: Date | null = null;
  settledAt: Date | null = null;
  /** How much of the payment the processor reports refunded, in cents (cumulative). */
  refundedCents = 0;
  /** null, 'withdrawn' (a dispute took the funds back) or 'reinstated'. */
  disputeState: string | null = null;
  /** Credits a dispute took back before migration 0015 (superseded by takenBackNanos). */
  disputeNanos = 0n;
  /** What the processor charged, in cents (tax included), when it said. */
  chargedCents: number | null = null;
  /** The credits the payment's refunds and dispute call for. */
  reversedNanos = 0n;
  /** The credits actually taken back for them (at most what the wallet had). */
  takenBackNanos = 0n;
  /** What refunds called for and could not take (already spent): forgiven, and not a dispute's. */
  refundForgivenNanos = 0n;
}

export const TopUpSchema = new EntitySchema<TopUp>({
  class: TopUp,
  tableName: 'top_ups',
  uniques: [
    { name: 'top_ups_account_idempotency_key_unique', properties: ['account', 'idempotencyKey'] },
    { name: 'top_ups_payment_id_unique', properties: ['paymentId'] },
  ],
  indexes: [
    { name: 'top_ups_processor_checkout_id_index', properties: ['processorCheckoutId'] },
    { name: 'top_ups_account_created_index', properties: ['account', 'createdAt'] },
  ],
  properties: {
    id: { type: 'string', primary: true, length: 40 },
    // No index of its own: top_ups_account_created_index starts with it.
    account: { ...accountRef, index: false },
    source: { type: 'string', length: 16 },
    processor: { type: 'string', length: 16 },
    status: { type: 'string', length: 16 },
    amount: { type: new BigIntType('bigint') },
    bonus: { type: new BigIntType('bigint') },
    bonusBps: { type: 'integer', fieldName: 'bonus_bps' },
    currency: { type: 'string', length: 3 },
    idempotencyKey: { type: 'string', length: 255, nullable: true },
    requestHash: { type: 'string', length: 64, nullable: true },
    processorCheckoutId: { type: 'string', length: 255, nullable: true },
    paymentId: { type: 'string', length: 255, nullable: true },
    checkoutUrl: { type: 'string', length: 2048, nullable: true },
    failureReason: { type: 'string', length: 500, nullable: true },
    createdAt: { type: 'datetime', length: 3 },
    updatedAt: { type: 'datetime', length: 3 },
    expiresAt: { type: 'datetime', length: 3, nullable: true },
    settledAt: { type: 'datetime', length: 3, nullable: true },
    refundedCents: { type: 'integer', default: 0 },
    disputeState: { type: 'string', length: 16, nullable: true },
    disputeNanos: { type: new BigIntType('bigint'), defaultRaw: "'0'" },
    chargedCents: { type: 'integer', nullable: true },
    reversedNanos: { type: new BigIntType('bigint'), defaultRaw: "'0'" },
    takenBackNanos: { type: new BigIntType('bigint'), defaultRaw: "'0'" },
    refundForgivenNanos: { type: new BigIntType('bigint'), defaultRaw: "'0'" },
  },
});
