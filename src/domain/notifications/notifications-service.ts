// What the doors call for notifications: the account's alert settings, its feed (a page, marking
// read, the live feed of Subscription.notificationAdded), and the operator's delivery status and
// retry. The live feed polls the table while anyone listens, so it shows notifications written by
// any process (other instances, the CLI) and only once they are committed.
import { pushFeed } from '../push-iterator.js';
import type { Logger } from '../../logger.js';
import type { Db } from '../billing/sql.js';
import {
  getAlertSettings,
  getAlertSettingsOf,
  updateAlertSettings,
  type AlertSettingsInput,
  type AlertSettingsView,
} from './alert-settings.js';
import {
  countUnread,
  countUnreadOf,
  deliveryCounts,
  listByDelivery,
  markAllRead,
  markRead,
  maxSeq,
  notificationsAfter,
  pageNotifications,
  pageNotificationsOf,
  retryFailed,
  type DeliveryState,
  type FeedPage,
  type NotificationRecord,
} from './notification-store.js';
import { DomainError } from '../errors.js';
import { logBackgroundFailure } from '../../db/unavailable.js';

/** A row committed late (a long transaction on PostgreSQL) can take a lower seq than one already seen: look back this long. */
const LOOKBACK_MS = 10_000;
const MAX_IDS = 100;

type Listener = (n: NotificationRecord) => void;

export class NotificationsService {
  private readonly now: () => Date;
  private readonly listeners = new Map<string, Set<Listener>>();
  private timer: NodeJS.Timeout | undefined;
  private polling: Promise<void> | undefined;
  /** Seqs published, and the highest seq seen at each poll (for the look-back floor). */
  private readonly published = new Set<number>();
  private marks: { at: number; max: number }[] = [];
  private started: Promise<void> | undefined;

  constructor(private readonly o: { db: Db; logger: Logger; pollMs: number; now?: () => Date }) {
    this.now = o.now ?? (() => new Date());
  }

  getSettings(accountId: string): Promise<AlertSettingsView> {
    return getAlertSettings(this.o.db, accountId);
  }

  /** The settings of several accounts, in their order, in one query (GraphQL's list of accounts). */
  getSettingsOf(accountIds: readonly string[]): Promise<AlertSettingsView[]> {
    return getAlertSettingsOf(this.o.db, accountIds);
  }

  updateSettings(accountId: string, input: AlertSettingsInput): Promise<AlertSettingsView> {
    return updateAlertSettings(this.o.db, accountId, input, this.now());
  }

  page(accountId: string, q: { first?: number | null; after?: string | null; unreadOnly?: boolean | null }): Promise<FeedPage> {
    return pageNotifications(this.o.db, accountId, q);
  }

  /** The same page of several accounts' feeds, in one query where it can (GraphQL's batches). */
  pages(
    accountIds: readonly string[],
    q: { first?: number | null; after?: string | null; unreadOnly?: boolean | null },
  ): Promise<FeedPage[]> {
    return pageNotificationsOf(this.o.db, accountIds, q);
  }

  unreadCount(accountId: string): Promise<number> {
    return countUnread(this.o.db, accountId);
  }

  /** Unread counts of several accounts, in one query. */
  unreadCounts(accountIds: readonly string[]): Promise<number[]> {
    return countUnreadOf(this.o.db, accountIds);
  }

  markRead(accountId: string, ids: string[]): Promise<NotificationRecord[]> {
    if (ids.length > MAX_IDS)
      throw new DomainError('invalid_value', `At most ${MAX_IDS} ids at a time; got ${ids.length}.`, { param: 'ids' });
    return markRead(this.o.db, accountId, ids, this.now());
  }

  /** Marks the account's unread notifications read, up to the notification `upTo` (all when null); how many. */
  markAllRead(accountId: string, upTo: string | null): Promise<number> {
    return markAllRead(this.o.db, accountId, upTo, this.now());
  }

  // Operators ------------------------------------------------------------------------------------

  deliveryStatus(): Promise<{ counts: Record<DeliveryState, number>; failed: NotificationRecord[]; pending: NotificationRecord[] }> {
    return (async () => ({
      counts: await deliveryCounts(this.o.db),
      failed: await listByDelivery(this.o.db, 'failed'),
      pending: await listByDelivery(this.o.db, 'pending'),
    }))();
  }

  retryFailed(ids: string[] | null): Promise<number> {
    return retryFailed(this.o.db, ids);
  }

  // The live feed --------------------------------------------------------------------------------

  /** The account's new notifications, as they are committed, until the signal aborts or return() is called. */
  subscribe(accountId: string, signal?: AbortSignal): AsyncIterableIterator<NotificationRecord> {
    const feed = pushFeed<NotificationRecord>(signal);
    let set = this.listeners.get(accountId);
    if (!set) this.listeners.set(accountId, (set = new Set()));
    const listeners = set;
    listeners.add(feed.push);
    this.ensurePolling();
    feed.onEnd(() => {
      listeners.delete(feed.push);
      if (listeners.size === 0 && this.listeners.get(accountId) === listeners) this.listeners.delete(accountId);
      if (this.listeners.size === 0) this.stopPolling();
    });
    return feed.iterator;
  }

  /** Subscribers listening now (tests, metrics). */
  get listening(): number {
    let n = 0;
    for (const set of this.listeners.values()) n += set.size;
    return n;
  }

  /** Ready to see notifications written from now on (the first subscriber's poll has its starting point). */
  async ready(): Promise<void> {
    await this.started;
  }

  async close(): Promise<void> {
    this.stopPolling();
    await this.polling;
  }

  private ensurePolling(): void {
    if (this.timer) return;
    this.started = (async () => {
      const max = await maxSeq(this.o.db);
      this.marks = [{ at: Date.now(), max }];
    })().catch((err) => this.o.logger.error({ err }, 'notifications feed: could not start'));
    this.timer = setInterval(() => {
      this.polling ??= this.poll()
        .catch((err) => logBackgroundFailure(this.o.logger, err, 'notifications feed: poll failed'))
        .finally(() => (this.polling = undefined));
    }, this.o.pollMs);
    this.timer.unref();
  }

  private stopPolling(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.published.clear();
    this.marks = [];
  }

  private async poll(): Promise<void> {
    await this.started;
    if (this.listeners.size === 0 || this.marks.length === 0) return;
    const cutoff = Date.now() - LOOKBACK_MS;
    // The floor: the highest seq seen at the latest poll at least LOOKBACK_MS ago (or the start).
    let floor = this.marks[0]!.max;
    for (const m of this.marks) if (m.at <= cutoff) floor = m.max;
    this.marks = this.marks.filter((m, i) => m.at > cutoff || this.marks[i + 1]?.at === undefined || this.marks[i + 1]!.at > cutoff);
    const found = await notificationsAfter(this.o.db, [...this.listeners.keys()], floor);
    let max = floor;
    for (const n of found) {
      max = Math.max(max, n.seq);
      if (this.published.has(n.seq)) continue;
      this.published.add(n.seq);
      for (const listener of this.listeners.get(n.accountId) ?? []) listener(n);
    }
    for (const seq of this.published) if (seq <= floor) this.published.delete(seq);
    this.marks.push({ at: Date.now(), max: Math.max(max, this.marks.at(-1)?.max ?? 0) });
  }
}
