// Rate limits: the operator's per-account overrides of the tier's RPM and TPM (null keeps the
// tier's value). A row of its own, read with the key at authentication (one left join), so an
// override applies from the next request on, on every instance.
import { PortableMigration } from './portable.js';

export class Migration0004RateLimitOverrides extends PortableMigration {
  override up(): void {
    this.addSchema(
      this.schema.createTable('rate_limit_overrides', (t) => {
        t.string('account_id', 32).primary().references('id').inTable('accounts');
        t.integer('rpm').nullable();
        t.bigInteger('tpm').nullable();
        t.timestamp('updated_at', { useTz: true, precision: 3 }).notNullable();
      }),
    );
  }

  override down(): void {
    this.addSchema(this.schema.dropTable('rate_limit_overrides'));
  }
}
