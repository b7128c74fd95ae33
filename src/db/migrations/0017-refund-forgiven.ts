// What a payment's refunds called for and could not take (the credits were already spent), kept
// apart from its dispute's: a shortfall stays forgiven, and a dispute won gives back exactly what
// the dispute took, never what a refund took before it. Top-ups reversed before this migration
// without a dispute get it from what they call for less what they took; with one, it is unknown
// and taken as nothing forgiven (a dispute won then gives back at most what exceeds the refunds' share).
import { PortableMigration } from './portable.js';

export class Migration0017RefundForgiven extends PortableMigration {
  override up(): void {
    this.addSchema(
      this.schema.alterTable('top_ups', (t) => {
        t.bigInteger('refund_forgiven_nanos').notNullable().defaultTo(0);
      }),
    );
    this.addSql(
      'update top_ups set refund_forgiven_nanos = reversed_nanos - taken_back_nanos where dispute_state is null and reversed_nanos > taken_back_nanos',
    );
  }

  override down(): void {
    this.addSql('alter table top_ups drop column refund_forgiven_nanos');
  }
}
