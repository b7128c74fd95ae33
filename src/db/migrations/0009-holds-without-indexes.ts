// The holds table keeps only its primary key. A hold is a call in flight: inserted at admission,
// deleted by id at settlement, so the table holds the calls running now (tens to thousands of
// rows), and every other query of it (the sweeper's expired-or-orphaned scan, the audit's expired
// holds, counts) reads it whole anyway: the sweeper's `expires_at < ? or owner not in (…)` cannot
// use an index for its second half. Each secondary index cost a b-tree insert at admission and a
// delete at settlement on every billed call, and on SQLite a page more in every commit.
import { PortableMigration } from './portable.js';

const INDEXES = [
  ['account_id', 'holds_account_id_index'],
  ['owner', 'holds_owner_index'],
  ['expires_at', 'holds_expires_at_index'],
] as const;

export class Migration0009HoldsWithoutIndexes extends PortableMigration {
  override up(): void {
    this.addSchema(
      this.schema.alterTable('holds', (t) => {
        for (const [column, name] of INDEXES) t.dropIndex([column], name);
      }),
    );
  }

  override down(): void {
    this.addSchema(
      this.schema.alterTable('holds', (t) => {
        for (const [column, name] of INDEXES) t.index([column], name);
      }),
    );
  }
}
