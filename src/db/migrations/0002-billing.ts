// Billing: wallets (balance, holds and the current period's allocation counters in one row, so a
// hold is one conditional update), the append-only ledger, open holds, usage events, the
// notifications outbox, and the heartbeats that tell live servers from dead ones.
// Money columns are 64-bit integers of nanos; token counters that can grow over a month too.
import { PortableMigration } from './portable.js';

const ts = { useTz: true, precision: 3 } as const;

export class Migration0002Billing extends PortableMigration {
  override up(): void {
    this.addSchema(
      this.schema.createTable('wallets', (t) => {
        t.string('account_id', 32).primary().references('id').inTable('accounts');
        t.bigInteger('balance').notNullable().defaultTo(0);
        // Wallet money promised to calls in flight (sum of their holds).
        t.bigInteger('held').notNullable().defaultTo(0);
        // The billing period (calendar month UTC, 'YYYY-MM') the counters below belong to.
        t.string('period', 7).notNullable();
        t.bigInteger('period_used').notNullable().defaultTo(0);
        t.bigInteger('period_held').notNullable().defaultTo(0);
        t.bigInteger('period_spent').notNullable().defaultTo(0);
        t.string('fee_period', 7).nullable();
        t.string('fee_tier', 32).nullable();
        t.boolean('spending_limit_enabled').notNullable().defaultTo(false);
        t.bigInteger('spending_limit').nullable();
        t.string('spending_limit_action', 8).notNullable().defaultTo('block');
        t.bigInteger('low_balance_threshold').nullable();
        t.boolean('low_balance_alerted').notNullable().defaultTo(false);
        t.string('allocation_alert_period', 7).nullable();
        t.string('spending_alert_period', 7).nullable();
        t.timestamp('created_at', ts).notNullable();
        t.timestamp('updated_at', ts).notNullable();
      }),
    );
    this.addSchema(
      this.schema.createTable('wallet_transactions', (t) => {
        // The ledger's order: an account's rows are written under its wallet row's lock, so seq
        // follows the order of its balance changes.
        t.bigIncrements('seq');
        t.string('id', 40).notNullable();
        t.string('account_id', 32).notNullable().references('id').inTable('accounts');
        t.string('type', 16).notNullable();
        t.bigInteger('amount').notNullable();
        t.bigInteger('balance_after').notNullable();
        t.string('description', 500).notNullable();
        t.string('reference', 200).nullable();
        t.string('idempotency_key', 240).nullable();
        t.timestamp('created_at', ts).notNullable();
        t.unique(['id'], { indexName: 'wallet_transactions_id_unique' });
        t.unique(['idempotency_key'], { indexName: 'wallet_transactions_idempotency_key_unique' });
        t.index(['account_id', 'seq'], 'wallet_transactions_account_seq_index');
      }),
    );
    this.addSchema(
      this.schema.createTable('holds', (t) => {
        t.string('id', 40).primary();
        t.string('account_id', 32).notNullable().references('id').inTable('accounts');
        t.string('key_id', 32).nullable();
        t.string('request_id', 128).notNullable();
        t.string('model', 200).notNullable();
        t.string('period', 7).notNullable();
        t.bigInteger('allocation_tokens').notNullable();
        t.bigInteger('wallet_nanos').notNullable();
        t.integer('prompt_tokens').notNullable();
        t.integer('max_output_tokens').notNullable();
        // The server instance (billing_instances.id) whose call holds it.
        t.string('owner', 40).notNullable();
        t.timestamp('created_at', ts).notNullable();
        t.timestamp('expires_at', ts).notNullable();
        t.index(['expires_at'], 'holds_expires_at_index');
        t.index(['owner'], 'holds_owner_index');
        t.index(['account_id'], 'holds_account_id_index');
      }),
    );
    this.addSchema(
      this.schema.createTable('usage_events', (t) => {
        t.bigIncrements('seq');
        t.string('id', 40).notNullable();
        t.string('account_id', 32).notNullable().references('id').inTable('accounts');
        t.string('key_id', 32).nullable();
        t.string('model', 200).notNullable();
        t.string('request_id', 128).notNullable();
        t.string('outcome', 32).notNullable();
        t.bigInteger('prompt_tokens').notNullable();
        t.bigInteger('completion_tokens').notNullable();
        t.bigInteger('total_tokens').notNullable();
        t.bigInteger('allocation_tokens').notNullable();
        t.bigInteger('wallet_nanos').notNullable();
        // Why less was charged than used, when it was: 'capped_at_hold' or 'hold_released'.
        t.string('billing_note', 32).nullable();
        // UTC date 'YYYY-MM-DD', so daily sums group the same way on every database.
        t.string('day', 10).notNullable();
        t.timestamp('created_at', ts).notNullable();
        t.unique(['id'], { indexName: 'usage_events_id_unique' });
        t.index(['account_id', 'day'], 'usage_events_account_day_index');
      }),
    );
    this.addSchema(
      this.schema.createTable('notifications', (t) => {
        t.bigIncrements('seq');
        t.string('id', 40).notNullable();
        t.string('account_id', 32).notNullable().references('id').inTable('accounts');
        t.string('kind', 32).notNullable();
        // Once per crossing / period: a second alert of the same occasion is not written.
        t.string('dedupe_key', 240).notNullable();
        t.text('payload').notNullable();
        t.timestamp('created_at', ts).notNullable();
        t.timestamp('sent_at', ts).nullable();
        t.unique(['id'], { indexName: 'notifications_id_unique' });
        t.unique(['dedupe_key'], { indexName: 'notifications_dedupe_key_unique' });
        t.index(['account_id', 'seq'], 'notifications_account_seq_index');
      }),
    );
    this.addSchema(
      this.schema.createTable('billing_instances', (t) => {
        t.string('id', 40).primary();
        t.string('host', 255).notNullable();
        t.integer('pid').notNullable();
        t.timestamp('started_at', ts).notNullable();
        t.timestamp('heartbeat_at', ts).notNullable();
      }),
    );
  }

  override down(): void {
    for (const table of ['billing_instances', 'notifications', 'usage_events', 'holds', 'wallet_transactions', 'wallets']) {
      this.addSchema(this.schema.dropTable(table));
    }
  }
}
