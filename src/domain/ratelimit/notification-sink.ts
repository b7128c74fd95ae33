// Where the limiter reports the "frequent rate-limit hits" alert. The server writes it to the
// notifications outbox (src/domain/notifications/); tests and tools use the in-memory sink.

export interface NotificationSink {
  notify(accountId: string, kind: string, payload: Record<string, unknown>): Promise<void>;
}

export interface SentNotification {
  accountId: string;
  kind: string;
  payload: Record<string, unknown>;
}

/** Keeps what it is given, in order. */
export class MemoryNotificationSink implements NotificationSink {
  readonly sent: SentNotification[] = [];

  async notify(accountId: string, kind: string, payload: Record<string, unknown>): Promise<void> {
    this.sent.push({ accountId, kind, payload });
  }
}
