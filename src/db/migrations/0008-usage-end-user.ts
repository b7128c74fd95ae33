// Usage by end user (issue 16): the `user` field of a chat or embeddings request (the customer's
// own end-user id, "for monitoring and abuse detection") is kept with the call's hold and written
// into its usage event, so an account's usage can be grouped by it. Null when the call had none.
import { PortableMigration } from './portable.js';

export class Migration0008UsageEndUser extends PortableMigration {
  override up(): void {
    for (const table of ['holds', 'usage_events']) {
      this.addSchema(
        this.schema.alterTable(table, (t) => {
          // LIMITS.maxUserLength (src/domain/inference/inference-types.ts): longer ones are refused.
          t.string('end_user', 256).nullable();
        }),
      );
    }
  }

  override down(): void {
    for (const table of ['holds', 'usage_events']) {
      this.addSchema(
        this.schema.alterTable(table, (t) => {
          t.dropColumn('end_user');
        }),
      );
    }
  }
}
