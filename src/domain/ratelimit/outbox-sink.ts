// The limiter's alerts, written to the notifications outbox (src/domain/notifications/outbox.ts).
// The limiter already raises an account's alert at most once an hour (across instances on Redis);
// the dedupe key (account and UTC hour) also keeps a restarted in-memory limiter from writing a
// second one in the same hour.
import type { Db } from '../billing/sql.js';
import { enqueueNotification, type NotificationKind } from '../notifications/outbox.js';
import type { NotificationSink } from './notification-sink.js';

export class OutboxNotificationSink implements NotificationSink {
  constructor(
    private readonly db: Db,
    private readonly now: () => Date = () => new Date(),
  ) {}

  async notify(accountId: string, kind: string, payload: Record<string, unknown>): Promise<void> {
    const now = this.now();
    const hour = now.toISOString().slice(0, 13);
    await enqueueNotification(this.db, {
      accountId,
      kind: kind as NotificationKind,
      dedupeKey: `${kind}:${accountId}:${hour}`,
      payload,
      now,
    });
  }
}
