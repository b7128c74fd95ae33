// A message the mail server took for some recipients and deferred for others (a 4xx at RCPT TO,
// e.g. greylisting) stays pending for those it deferred: `recipients` holds who has it so far, and
// `refused_recipients` those refused for good (a 5xx, as JSON {address: reply}), so a retry goes
// to the deferred ones only and the message, once sent, still names the refused ones.
import { PortableMigration } from './portable.js';

export class Migration0018NotificationRefusedRecipients extends PortableMigration {
  override up(): void {
    this.addSchema(
      this.schema.alterTable('notifications', (t) => {
        t.text('refused_recipients').nullable();
      }),
    );
  }

  override down(): void {
    this.addSql('alter table notifications drop column refused_recipients');
  }
}
