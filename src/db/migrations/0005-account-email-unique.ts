// One account per e-mail address, compared case-insensitively: a unique index on lower(email)
// (an expression index, which SQLite and PostgreSQL both write the same way). It also serves the
// look-up by address. A database that already holds two accounts with the same address stops at
// this migration, naming the index; merge or rename them, then start again.
import { PortableMigration } from './portable.js';

export class Migration0005AccountEmailUnique extends PortableMigration {
  override up(): void {
    this.addSql('create unique index accounts_email_lower_unique on accounts (lower(email))');
  }

  override down(): void {
    this.addSql('drop index accounts_email_lower_unique');
  }
}
