// When each API key was last used, on its own row (the dashboard's keys page shows it). It was
// read from usage_events, whose only index is (account_id, day): a max over every event of the
// account, per key, which held SQLite's event loop for seconds on a busy account. Billing writes
// it after a call (src/domain/keys/key-use.ts), at most once a minute per key and server; filled
// here once from the events already recorded.
import { PortableMigration } from './portable.js';

export class Migration0011ApiKeyLastUsed extends PortableMigration {
  override up(): void {
    this.addSchema(
      this.schema.alterTable('api_keys', (t) => {
        t.timestamp('last_used_at', { useTz: true, precision: 3 }).nullable();
      }),
    );
    // One pass over the events (UPDATE … FROM: PostgreSQL, and SQLite since 3.33).
    this.addSql(
      'update api_keys set last_used_at = m.last_used from ' +
        '(select key_id, max(created_at) as last_used from usage_events where key_id is not null group by key_id) as m ' +
        'where m.key_id = api_keys.id',
    );
  }

  override down(): void {
    // Plain SQL: knex drops a SQLite column by rebuilding the table at run time, which a queued
    // statement cannot do; SQLite (3.35 on) and PostgreSQL both drop it in place.
    this.addSql('alter table api_keys drop column last_used_at');
  }
}
