// A paid top-up's money can go back to the payer: a refund (by the operator, in the processor's
// dashboard) or a dispute (a chargeback, whose funds the processor withdraws and may reinstate).
// The top-up keeps how much of its payment the processor has reported refunded (cumulative, so a
// repeated or late event takes back nothing twice) and its dispute's state with the credits the
// dispute took back (given back as they were if the funds are reinstated).
import { PortableMigration } from './portable.js';

export class Migration0014TopUpReversals extends PortableMigration {
  override up(): void {
    this.addSchema(
      this.schema.alterTable('top_ups', (t) => {
        t.integer('refunded_cents').notNullable().defaultTo(0);
        t.string('dispute_state', 16).nullable();
        t.bigInteger('dispute_nanos').notNullable().defaultTo(0);
      }),
    );
  }

  override down(): void {
    for (const column of ['refunded_cents', 'dispute_state', 'dispute_nanos']) this.addSql(`alter table top_ups drop column ${column}`);
  }
}
