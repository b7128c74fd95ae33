// Alerts that reach people: the notifications outbox gains its delivery state (attempts, the next
// try, the lease of the instance sending it, the last error, to whom it went, when its owner read
// it), accounts get their alert settings (kinds turned off, extra recipients), and wallets a flag
// for the "monthly tokens used up" alert (once per period, like the 80% one).
import { PortableMigration } from './portable.js';

const ts = { useTz: true, precision: 3 } as const;

export class Migration0006AlertDelivery extends PortableMigration {
  override up(): void {
    this.addSchema(
      this.schema.alterTable('notifications', (t) => {
        // pending → sent | failed (tries used up; an operator can retry) | skipped (the kind is turned off).
        t.string('delivery', 16).notNullable().defaultTo('pending');
        t.integer('attempts').notNullable().defaultTo(0);
        t.timestamp('next_attempt_at', ts).nullable();
        // The billing instance sending it, until lease_until: other instances leave it alone meanwhile.
        t.string('lease_owner', 40).nullable();
        t.timestamp('lease_until', ts).nullable();
        t.string('last_error', 500).nullable();
        t.string('recipients', 2000).nullable();
        t.timestamp('read_at', ts).nullable();
        t.index(['delivery', 'next_attempt_at'], 'notifications_delivery_index');
      }),
    );
    this.addSchema(
      this.schema.createTable('alert_settings', (t) => {
        t.string('account_id', 32).primary().references('id').inTable('accounts');
        // JSON arrays: the alerts turned off, and the addresses that get a copy.
        t.text('disabled').notNullable();
        t.text('extra_recipients').notNullable();
        t.timestamp('updated_at', ts).notNullable();
      }),
    );
    this.addSchema(
      this.schema.alterTable('wallets', (t) => {
        t.string('allocation_full_period', 7).nullable();
      }),
    );
    this.addSchema(
      this.schema.alterTable('usage_events', (t) => {
        // Unusual-usage detection sums an account's usage over one hour.
        t.index(['account_id', 'created_at'], 'usage_events_account_created_index');
      }),
    );
  }

  override down(): void {
    this.addSchema(this.schema.dropTable('alert_settings'));
  }
}
