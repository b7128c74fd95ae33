// Accounts and their API keys.
import { PortableMigration } from './portable.js';

export class Migration0001AccountsAndKeys extends PortableMigration {
  override up(): void {
    this.addSchema(
      this.schema.createTable('accounts', (t) => {
        t.string('id', 32).primary();
        t.string('email', 320).notNullable();
        t.string('tier', 32).notNullable();
        t.timestamp('created_at', { useTz: true, precision: 3 }).notNullable();
        t.index(['email'], 'accounts_email_index');
      }),
    );
    this.addSchema(
      this.schema.createTable('api_keys', (t) => {
        t.string('id', 32).primary();
        t.string('account_id', 32).notNullable().references('id').inTable('accounts');
        t.string('digest', 64).notNullable();
        t.string('prefix', 16).notNullable();
        t.string('last4', 4).notNullable();
        t.string('name', 255).nullable();
        t.timestamp('created_at', { useTz: true, precision: 3 }).notNullable();
        t.timestamp('expires_at', { useTz: true, precision: 3 }).nullable();
        t.timestamp('revoked_at', { useTz: true, precision: 3 }).nullable();
        // Every authenticated request looks its key up by digest.
        t.unique(['digest'], { indexName: 'api_keys_digest_unique' });
        t.index(['account_id'], 'api_keys_account_id_index');
      }),
    );
  }

  override down(): void {
    this.addSchema(this.schema.dropTable('api_keys'));
    this.addSchema(this.schema.dropTable('accounts'));
  }
}
