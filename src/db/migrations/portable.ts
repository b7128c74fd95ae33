// Helpers for migrations written once for SQLite and PostgreSQL with knex's schema builder.
import { Migration } from '@mikro-orm/migrations';

type SchemaBuilder = ReturnType<ReturnType<Migration['getKnex']>['schema']['createTable']>;

/**
 * A Migration that queues knex schema-builder statements. Each statement is queued on its own
 * (better-sqlite3 prepares one statement at a time), and all of them run in the migrator's
 * transaction.
 */
export abstract class PortableMigration extends Migration {
  protected get schema() {
    return this.getKnex().schema;
  }

  protected addSchema(builder: SchemaBuilder): void {
    for (const statement of builder.toSQL()) {
      if (statement.bindings && statement.bindings.length > 0) {
        throw new Error(`migration statement has bindings, which addSql cannot pass: ${statement.sql}`);
      }
      this.addSql(statement.sql);
    }
  }

  /** For the rare statement the schema builder cannot express portably. */
  protected get dialect(): 'sqlite' | 'postgresql' {
    const name = (this.getKnex().client as { dialect?: string }).dialect ?? '';
    return name.startsWith('postgres') ? 'postgresql' : 'sqlite';
  }
}
