// What a payment processor has said of a payment going back to its payer (src/domain/payments/
// top-up-store.ts, mergeReversal): its refunded total, its dispute, what was charged. Kept per
// payment, whether or not the payment's top-up is known or paid yet.
import { EntitySchema } from '@mikro-orm/core';

export class PaymentReversal {
  processor!: string;
  paymentId!: string;
  refundedCents = 0;
  chargedCents: number | null = null;
  disputeId: string | null = null;
  disputeState: string | null = null;
  disputeCents: number | null = null;
  updatedAt!: Date;
}

export const PaymentReversalSchema = new EntitySchema<PaymentReversal>({
  class: PaymentReversal,
  tableName: 'payment_reversals',
  properties: {
    processor: { type: 'string', length: 32, primary: true },
    paymentId: { type: 'string', length: 255, primary: true },
    refundedCents: { type: 'integer', default: 0 },
    chargedCents: { type: 'integer', nullable: true },
    disputeId: { type: 'string', length: 255, nullable: true },
    disputeState: { type: 'string', length: 16, nullable: true },
    disputeCents: { type: 'integer', nullable: true },
    updatedAt: { type: 'datetime', length: 3 },
  },
});
