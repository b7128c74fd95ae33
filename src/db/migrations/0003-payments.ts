// Payments: top-ups (hosted checkouts and automatic top-ups, with their processor's ids and the
// Idempotency-Key of the request that created them), the processor's customer of each account,
// and each account's automatic top-up settings with its one in-flight slot.
import { PortableMigration } from './portable.js';

const ts = { useTz: true, precision: 3 } as const;

export class Migration0003Payments extends PortableMigration {
  override up(): void {
    this.addSchema(
      this.schema.createTable('top_ups', (t) => {
        t.string('id', 40).primary();
        t.string('account_id', 32).notNullable().references('id').inTable('accounts');
        // 'checkout' (POST /v1/wallet/top-up, Mutation.topUp) or 'auto' (automatic top-up).
        t.string('source', 16).notNullable();
        t.string('processor', 16).notNullable();
        // open → paid | expired | canceled | failed (src/domain/payments/checkout-state.ts).
        t.string('status', 16).notNullable();
        t.bigInteger('amount').notNullable();
        // The bonus quoted when the top-up was created, credited as its own transaction.
        t.bigInteger('bonus').notNullable();
        t.integer('bonus_bps').notNullable();
        t.string('currency', 3).notNullable();
        t.string('idempotency_key', 255).nullable();
        t.string('request_hash', 64).nullable();
        t.string('processor_checkout_id', 255).nullable();
        // The processor's payment (Stripe: the PaymentIntent) that paid it; credited once.
        t.string('payment_id', 255).nullable();
        t.string('checkout_url', 2048).nullable();
        t.string('failure_reason', 500).nullable();
        t.timestamp('created_at', ts).notNullable();
        t.timestamp('updated_at', ts).notNullable();
        t.timestamp('expires_at', ts).nullable();
        t.timestamp('settled_at', ts).nullable();
        t.unique(['account_id', 'idempotency_key'], { indexName: 'top_ups_account_idempotency_key_unique' });
        t.unique(['payment_id'], { indexName: 'top_ups_payment_id_unique' });
        t.index(['processor_checkout_id'], 'top_ups_processor_checkout_id_index');
        t.index(['account_id', 'created_at'], 'top_ups_account_created_index');
      }),
    );
    this.addSchema(
      this.schema.createTable('payment_customers', (t) => {
        t.string('account_id', 32).notNullable().references('id').inTable('accounts');
        t.string('processor', 16).notNullable();
        t.string('customer_id', 255).notNullable();
        t.timestamp('created_at', ts).notNullable();
        t.primary(['account_id', 'processor']);
      }),
    );
    this.addSchema(
      this.schema.createTable('auto_topups', (t) => {
        t.string('account_id', 32).primary().references('id').inTable('accounts');
        t.boolean('enabled').notNullable().defaultTo(false);
        t.bigInteger('threshold').notNullable().defaultTo(0);
        t.bigInteger('amount').notNullable().defaultTo(0);
        t.integer('consecutive_failures').notNullable().defaultTo(0);
        // The automatic top-up being charged (top_ups.id): at most one per account.
        t.string('in_flight_id', 40).nullable();
        t.string('disabled_reason', 500).nullable();
        t.timestamp('updated_at', ts).notNullable();
      }),
    );
  }

  override down(): void {
    for (const table of ['auto_topups', 'payment_customers', 'top_ups']) this.addSchema(this.schema.dropTable(table));
  }
}
