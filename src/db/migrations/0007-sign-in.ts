// People sign in to the dashboard (issue 15): an account's password (argon2id) and operator flag,
// sign-in sessions (only the SHA-256 digest of the cookie's secret is stored), and single-use
// tokens for password reset and set-password links. Instants are epoch milliseconds (bigint), the
// same on SQLite and PostgreSQL.
import { PortableMigration } from './portable.js';

export class Migration0007SignIn extends PortableMigration {
  override up(): void {
    this.addSchema(
      this.schema.createTable('account_passwords', (t) => {
        t.string('account_id', 32).primary().references('id').inTable('accounts');
        t.string('password_hash', 255).nullable();
        t.boolean('is_admin').notNullable().defaultTo(false);
        t.bigInteger('updated_at_ms').notNullable();
      }),
    );
    this.addSchema(
      this.schema.createTable('sessions', (t) => {
        t.string('id', 32).primary();
        t.string('digest', 64).notNullable().unique('sessions_digest_unique');
        // Null for an operator session made from ADMIN_TOKEN (it belongs to no account).
        t.string('account_id', 32).nullable().references('id').inTable('accounts');
        t.boolean('operator').notNullable().defaultTo(false);
        t.string('user_agent', 255).nullable();
        t.bigInteger('created_at_ms').notNullable();
        t.bigInteger('last_seen_at_ms').notNullable();
        t.bigInteger('expires_at_ms').notNullable();
        t.index(['account_id'], 'sessions_account_id_index');
      }),
    );
    this.addSchema(
      this.schema.createTable('password_tokens', (t) => {
        t.string('digest', 64).primary();
        t.string('account_id', 32).notNullable().references('id').inTable('accounts');
        // reset (asked for by e-mail) or set (printed by the CLI for an account an operator created).
        t.string('purpose', 16).notNullable();
        t.bigInteger('created_at_ms').notNullable();
        t.bigInteger('expires_at_ms').notNullable();
        t.bigInteger('used_at_ms').nullable();
      }),
    );
  }

  override down(): void {
    this.addSchema(this.schema.dropTable('password_tokens'));
    this.addSchema(this.schema.dropTable('sessions'));
    this.addSchema(this.schema.dropTable('account_passwords'));
  }
}
