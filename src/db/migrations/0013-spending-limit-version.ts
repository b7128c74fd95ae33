// Wallets count the changes of their spending limit: the limit's alert is written once per period
// and per arming (its dedupe key carries the count), so a limit changed, or turned off and on,
// back to one already notified this period is notified again at its next crossing or refusal,
// instead of its notification being dropped as a duplicate while the flag was used up.
import { PortableMigration } from './portable.js';

export class Migration0013SpendingLimitVersion extends PortableMigration {
  override up(): void {
    this.addSchema(
      this.schema.alterTable('wallets', (t) => {
        t.integer('spending_limit_version').notNullable().defaultTo(0);
      }),
    );
  }

  override down(): void {
    this.addSql('alter table wallets drop column spending_limit_version');
  }
}
