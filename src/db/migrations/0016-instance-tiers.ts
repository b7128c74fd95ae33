// Each running server records the config file it read and a digest of its tiers (fees, monthly
// allocations, rate limits): the operator CLI compares them with the tiers it read itself, so a
// tier change made without the server's CONFIG is refused instead of charging another fee.
import { PortableMigration } from './portable.js';

export class Migration0016InstanceTiers extends PortableMigration {
  override up(): void {
    this.addSchema(
      this.schema.alterTable('billing_instances', (t) => {
        t.string('config_path', 1000).nullable();
        t.string('tiers_digest', 64).nullable();
      }),
    );
  }

  override down(): void {
    this.addSql('alter table billing_instances drop column tiers_digest');
    this.addSql('alter table billing_instances drop column config_path');
  }
}
