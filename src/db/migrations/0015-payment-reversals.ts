// Refunds and disputes measured as one thing: the share of the payment that went back to the payer.
// `payment_reversals` keeps what the processor has said of a payment (its refunded total, its
// dispute and the dispute's amount, what was charged), whether or not the payment's top-up is
// known or paid yet: a refund that arrives before the event that credits the top-up is applied
// when that event comes. A top-up keeps what was charged (tax included), the credits its reversals
// call for (`reversed_nanos`) and the credits actually taken back (`taken_back_nanos`, at most what
// the wallet had). Top-ups reversed before this migration get both from their ledger rows.
import { PortableMigration } from './portable.js';

export class Migration0015PaymentReversals extends PortableMigration {
  override up(): void {
    this.addSchema(
      this.schema.createTable('payment_reversals', (t) => {
        t.string('processor', 32).notNullable();
        t.string('payment_id', 255).notNullable();
        t.integer('refunded_cents').notNullable().defaultTo(0);
        t.integer('charged_cents').nullable();
        t.string('dispute_id', 255).nullable();
        t.string('dispute_state', 16).nullable();
        t.integer('dispute_cents').nullable();
        t.timestamp('updated_at', { useTz: true, precision: 3 }).notNullable();
        t.primary(['processor', 'payment_id']);
      }),
    );
    this.addSchema(
      this.schema.alterTable('top_ups', (t) => {
        t.integer('charged_cents').nullable();
        t.bigInteger('reversed_nanos').notNullable().defaultTo(0);
        t.bigInteger('taken_back_nanos').notNullable().defaultTo(0);
      }),
    );
    // What the earlier reversals took (their rows' keys: topup-refund, topup-dispute, topup-reinstated).
    this.addSql(
      `update top_ups set taken_back_nanos = coalesce((select -sum(w.amount) from wallet_transactions w where w.account_id = top_ups.account_id and w.reference = top_ups.payment_id and (w.idempotency_key like 'topup-refund:%' or w.idempotency_key like 'topup-dispute:%' or w.idempotency_key like 'topup-reinstated:%')), 0) where payment_id is not null and (refunded_cents > 0 or dispute_state is not null)`,
    );
    // The dispute's amount, from the credits it took (0014 kept no amount): rounded up to a cent.
    // N: the credits bought, C: the amount in cents (whole cents), N / C: credits per cent.
    const N = '(amount + bonus)';
    const C = '(amount / 10000000)';
    this.addSql(
      `insert into payment_reversals (processor, payment_id, refunded_cents, dispute_state, dispute_cents, updated_at) select processor, payment_id, refunded_cents, dispute_state, case when dispute_state is not null and dispute_nanos > 0 and ${C} > 0 then (dispute_nanos + ${N} / ${C} - 1) / (${N} / ${C}) else null end, updated_at from top_ups where payment_id is not null and (refunded_cents > 0 or dispute_state is not null)`,
    );
    // What those reversals called for (not only what they took: a shortfall stays forgiven), the
    // returned share of the credits computed without overflowing 64 bits: (N / C) × r + (N % C) × r / C.
    const returned = `(case when refunded_cents + (case when dispute_state = 'withdrawn' then coalesce((select p.dispute_cents from payment_reversals p where p.processor = top_ups.processor and p.payment_id = top_ups.payment_id), ${C}) else 0 end) > ${C} then ${C} else refunded_cents + (case when dispute_state = 'withdrawn' then coalesce((select p.dispute_cents from payment_reversals p where p.processor = top_ups.processor and p.payment_id = top_ups.payment_id), ${C}) else 0 end) end)`;
    this.addSql(
      `update top_ups set reversed_nanos = (${N} / ${C}) * ${returned} + ((${N} % ${C}) * ${returned}) / ${C} where payment_id is not null and ${C} > 0 and (refunded_cents > 0 or dispute_state is not null)`,
    );
    this.addSql('update top_ups set reversed_nanos = taken_back_nanos where reversed_nanos < taken_back_nanos');
  }

  override down(): void {
    for (const column of ['charged_cents', 'reversed_nanos', 'taken_back_nanos']) this.addSql(`alter table top_ups drop column ${column}`);
    this.addSql('drop table payment_reversals');
  }
}
