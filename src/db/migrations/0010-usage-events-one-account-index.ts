// usage_events keeps one index per account: (account_id, day). The second, (account_id,
// created_at), served the unusual-usage check's baseline (an account's last seven days, hour by
// hour), which now bounds its days too and reads the same rows through the first; every billed
// call paid a b-tree insert for it, and on SQLite a page more in the commit.
import { PortableMigration } from './portable.js';

export class Migration0010UsageEventsOneAccountIndex extends PortableMigration {
  override up(): void {
    this.addSchema(
      this.schema.alterTable('usage_events', (t) => {
        t.dropIndex(['account_id', 'created_at'], 'usage_events_account_created_index');
      }),
    );
  }

  override down(): void {
    this.addSchema(
      this.schema.alterTable('usage_events', (t) => {
        t.index(['account_id', 'created_at'], 'usage_events_account_created_index');
      }),
    );
  }
}
