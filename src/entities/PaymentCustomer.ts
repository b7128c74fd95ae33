// The payment processor's customer of an account (Stripe: cus_…): reused for every checkout, and
// the holder of the card saved for automatic top-ups.
import { EntitySchema } from '@mikro-orm/core';
import type { ProcessorName } from '../domain/payments/processor.js';
import type { Account } from './Account.js';
import { accountRef } from './columns.js';

export class PaymentCustomer {
  account!: Account;
  processor!: ProcessorName;
  customerId!: string;
  createdAt!: Date;
}

export const PaymentCustomerSchema = new EntitySchema<PaymentCustomer>({
  class: PaymentCustomer,
  tableName: 'payment_customers',
  properties: {
    // No index of its own: the primary key starts with it.
    account: { ...accountRef, primary: true, index: false },
    processor: { type: 'string', length: 16, primary: true },
    customerId: { type: 'string', length: 255 },
    createdAt: { type: 'datetime', length: 3 },
  },
});
