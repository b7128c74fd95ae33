// An operator session made from ADMIN_TOKEN keeps a digest of the token it was made from (salted
// with the session's id), and is good only while ADMIN_TOKEN is still that token: changing or
// unsetting ADMIN_TOKEN ends every such session. Operator sessions made before this migration
// have none, so they end too (the operator signs in again).
import { PortableMigration } from './portable.js';

export class Migration0012OperatorSessionToken extends PortableMigration {
  override up(): void {
    this.addSchema(
      this.schema.alterTable('sessions', (t) => {
        t.string('admin_token_digest', 64).nullable();
      }),
    );
  }

  override down(): void {
    this.addSql('alter table sessions drop column admin_token_digest');
  }
}
