// The notifications table beyond the outbox's insert: what the delivery worker claims and marks
// (with a lease, so several instances on one database send each message once), what operators
// see and retry (`tollgate mail status|retry`), and the account's feed (Account.notifications,
// markNotificationsRead, Subscription.notificationAdded). The only code that touches the table's
// delivery columns.
import { DomainError } from '../errors.js';
import { date, int, rows, run, type Binding, type BillingDatabase, type Db } from '../billing/sql.js';
import type { NotificationKind } from './outbox.js';

export type DeliveryState = 'pending' | 'sent' | 'failed' | 'skipped';
export const DELIVERY_STATES: readonly DeliveryState[] = ['pending', 'sent', 'failed', 'skipped'];

export interface NotificationRecord {
  seq: number;
  id: string;
  accountId: string;
  kind: NotificationKind;
  payload: Record<string, unknown>;
  createdAt: Date;
  delivery: DeliveryState;
  attempts: number;
  nextAttemptAt: Date | null;
  sentAt: Date | null;
  lastError: string | null;
  /** Who has it: once sent, or so far while some recipients the server deferred (4xx) wait for a retry. */
  recipients: string[];
  /** Recipients the mail server refused for good (5xx), lower-cased, with its reply: never tried again. */
  refusedRecipients: Record<string, string>;
  readAt: Date | null;
}

const COLUMNS =
  'seq, id, account_id, kind, payload, created_at, delivery, attempts, next_attempt_at, sent_at, last_error, recipients, refused_recipients, read_at';

interface Row {
  seq: unknown;
  id: string;
  account_id: string;
  kind: NotificationKind;
  payload: string;
  created_at: unknown;
  delivery: DeliveryState;
  attempts: unknown;
  next_attempt_at: unknown;
  sent_at: unknown;
  last_error: string | null;
  recipients: string | null;
  refused_recipients: string | null;
  read_at: unknown;
}

function record(r: Row): NotificationRecord {
  return {
    seq: int(r.seq),
    id: r.id,
    accountId: r.account_id,
    kind: r.kind,
    payload: JSON.parse(r.payload) as Record<string, unknown>,
    createdAt: date(r.created_at),
    delivery: r.delivery,
    attempts: int(r.attempts),
    nextAttemptAt: r.next_attempt_at == null ? null : date(r.next_attempt_at),
    sentAt: r.sent_at == null ? null : date(r.sent_at),
    lastError: r.last_error ?? null,
    recipients: r.recipients ? r.recipients.split(',').filter(Boolean) : [],
    refusedRecipients: r.refused_recipients ? (JSON.parse(r.refused_recipients) as Record<string, string>) : {},
    readAt: r.read_at == null ? null : date(r.read_at),
  };
}

// ---------------------------------------------------------------------------------------------
// Delivery: claim, then mark each message sent, skipped, to retry, or failed.

/**
 * Takes up to `limit` messages due for a try, oldest first, leasing them to `owner` until
 * `leaseUntil` and counting the try. A message is due when pending, its next try has come, and no
 * live instance holds it (no lease, a lapsed one, or one of an instance no longer registered in
 * billing_instances, e.g. this server's previous life). PostgreSQL skips rows another instance is
 * claiming at the same moment (FOR UPDATE SKIP LOCKED); SQLite has one writer at a time.
 */
export async function claimDue(
  db: BillingDatabase,
  o: { owner: string; now: Date; leaseUntil: Date; limit: number },
): Promise<NotificationRecord[]> {
  const lock = db.kind === 'postgresql' ? ' for update skip locked' : '';
  const claimed = await rows<Row>(
    db,
    `update notifications set lease_owner = ?, lease_until = ?, attempts = attempts + 1
      where seq in (select seq from notifications
                     where delivery = 'pending' and (next_attempt_at is null or next_attempt_at <= ?)
                       and (lease_until is null or lease_until < ? or lease_owner not in (select id from billing_instances))
                     order by seq limit ?${lock})
      returning ${COLUMNS}`,
    [o.owner, o.leaseUntil, o.now, o.now, o.limit],
  );
  return claimed.map(record).sort((a, b) => a.seq - b.seq);
}

/**
 * Renews `owner`'s lease of one message until `leaseUntil`, right before it is sent: false when
 * the message is no longer this owner's to send (its lease lapsed while the batch's earlier
 * messages were being sent and another instance claimed it, or it was sent or marked meanwhile).
 * So a batch's lease need only cover one SMTP exchange, not the whole batch.
 */
export async function renewLease(db: Db, o: { id: string; owner: string; leaseUntil: Date }): Promise<boolean> {
  return (
    (await run(db, "update notifications set lease_until = ? where id = ? and lease_owner = ? and delivery = 'pending'", [
      o.leaseUntil,
      o.id,
      o.owner,
    ])) > 0
  );
}

/** Whether anything could be due now: a cheap read before the claiming write. */
export async function anyDue(db: Db, now: Date): Promise<boolean> {
  const found = await rows<{ seq: unknown }>(
    db,
    "select seq from notifications where delivery = 'pending' and (next_attempt_at is null or next_attempt_at <= ?) limit 1",
    [now],
  );
  return found.length > 0;
}

/**
 * Accepted by the mail server for `recipients` (all who have it, over every try). `refused`: the
 * recipients it refused for good, with its replies, and `error` what it said of them, kept as the
 * last error so the feed shows it; null when it took them all.
 */
export async function markSent(
  db: Db,
  id: string,
  now: Date,
  recipients: string[],
  refused: { recipients?: Record<string, string>; error?: string | null } = {},
): Promise<void> {
  await run(
    db,
    "update notifications set delivery = 'sent', sent_at = ?, recipients = ?, refused_recipients = ?, lease_owner = null, lease_until = null, last_error = ? where id = ?",
    [now, recipients.join(',').slice(0, 2000), refusedJson(refused.recipients), refused.error?.slice(0, 500) ?? null, id],
  );
}

/**
 * A try the mail server answered recipient by recipient without taking them all: some took it
 * (`recipients`, all who have it so far), some were refused for good (`refused`), and the rest were
 * deferred (a 4xx): another try at `nextAttemptAt` goes to those only, or, with `final`, it is kept
 * as failed for an operator (`mail retry` then sends to the deferred ones only).
 */
export async function markPartlySent(
  db: Db,
  id: string,
  o: { owner: string; recipients: string[]; refused: Record<string, string>; error: string; nextAttemptAt: Date | null; final: boolean },
): Promise<void> {
  await run(
    db,
    `update notifications set delivery = ?, next_attempt_at = ?, last_error = ?, recipients = ?, refused_recipients = ?, lease_owner = null, lease_until = null
      where id = ? and delivery = 'pending' and lease_owner = ?`,
    [
      o.final ? 'failed' : 'pending',
      o.nextAttemptAt,
      o.error.slice(0, 500),
      o.recipients.length > 0 ? o.recipients.join(',').slice(0, 2000) : null,
      refusedJson(o.refused),
      id,
      o.owner,
    ],
  );
}

function refusedJson(refused: Record<string, string> | undefined): string | null {
  return refused && Object.keys(refused).length > 0 ? JSON.stringify(refused) : null;
}

/** Not e-mailed: the account turned this alert off (it stays in the feed). */
export async function markSkipped(db: Db, id: string, why: string): Promise<void> {
  await run(db, "update notifications set delivery = 'skipped', last_error = ?, lease_owner = null, lease_until = null where id = ?", [
    why.slice(0, 500),
    id,
  ]);
}

/** A failed try: another at `nextAttemptAt`, or, with `final`, kept as failed for an operator. */
export async function markFailedTry(
  db: Db,
  id: string,
  o: { owner: string; error: string; nextAttemptAt: Date | null; final: boolean },
): Promise<void> {
  await run(
    db,
    `update notifications set delivery = ?, next_attempt_at = ?, last_error = ?, lease_owner = null, lease_until = null where id = ? and delivery = 'pending' and lease_owner = ?`,
    [o.final ? 'failed' : 'pending', o.nextAttemptAt, o.error.slice(0, 500), id, o.owner],
  );
}

/**
 * Gives back the leases an instance still holds (at shutdown): the next instance sends them at
 * once. Each was claimed (counting a try) and not tried, or its try was abandoned unanswered (a
 * tried message no longer has a lease), so the try claimDue counted is taken back.
 */
export async function releaseLeases(db: Db, owner: string): Promise<number> {
  return run(
    db,
    "update notifications set lease_owner = null, lease_until = null, attempts = case when attempts > 0 then attempts - 1 else 0 end where lease_owner = ? and delivery = 'pending'",
    [owner],
  );
}

// ---------------------------------------------------------------------------------------------
// Operators: `tollgate mail status`, `tollgate mail retry`.

export async function deliveryCounts(db: Db): Promise<Record<DeliveryState, number>> {
  const found = await rows<{ delivery: DeliveryState; n: unknown }>(
    db,
    'select delivery, count(*) as n from notifications group by delivery',
  );
  const counts = { pending: 0, sent: 0, failed: 0, skipped: 0 };
  for (const r of found) if (r.delivery in counts) counts[r.delivery] = int(r.n);
  return counts;
}

/** Messages in one state (failed ones for `mail status`), oldest first. */
export async function listByDelivery(db: Db, state: DeliveryState, limit = 100): Promise<NotificationRecord[]> {
  return (await rows<Row>(db, `select ${COLUMNS} from notifications where delivery = ? order by seq limit ?`, [state, limit])).map(record);
}

/** Puts failed messages (all, or those named) back to pending with a fresh count of tries. Returns how many. */
export async function retryFailed(db: Db, ids: string[] | null): Promise<number> {
  if (ids && ids.length === 0) return 0;
  const where = ids ? ` and id in (${ids.map(() => '?').join(', ')})` : '';
  return run(
    db,
    `update notifications set delivery = 'pending', attempts = 0, next_attempt_at = null, lease_owner = null, lease_until = null where delivery = 'failed'${where}`,
    ids ?? [],
  );
}

// ---------------------------------------------------------------------------------------------
// The account's feed.

export const FEED_PAGE = { defaultLimit: 20, maxLimit: 100 } as const;

export interface FeedPage {
  notifications: NotificationRecord[];
  hasMore: boolean;
}

/** One page of the account's notifications, newest first; `after` is a notification id (the cursor). */
export async function pageNotifications(
  db: Db,
  accountId: string,
  q: { first?: number | null; after?: string | null; unreadOnly?: boolean | null },
): Promise<FeedPage> {
  const limit = q.first ?? FEED_PAGE.defaultLimit;
  if (!Number.isInteger(limit) || limit < 1 || limit > FEED_PAGE.maxLimit) {
    throw new DomainError('invalid_value', `'first' must be an integer from 1 to ${FEED_PAGE.maxLimit}; got ${limit}.`, { param: 'first' });
  }
  const where = ['account_id = ?'];
  const bindings: Binding[] = [accountId];
  if (q.unreadOnly) where.push('read_at is null');
  if (q.after) {
    const cursor = await rows<{ seq: unknown }>(db, 'select seq from notifications where id = ? and account_id = ?', [q.after, accountId]);
    if (!cursor[0])
      throw new DomainError(
        'invalid_value',
        `'after' must be the id of one of the account's notifications; got '${q.after.slice(0, 60)}'.`,
        { param: 'after' },
      );
    where.push('seq < ?');
    bindings.push(int(cursor[0].seq));
  }
  const found = await rows<Row>(db, `select ${COLUMNS} from notifications where ${where.join(' and ')} order by seq desc limit ?`, [
    ...bindings,
    limit + 1,
  ]);
  return { notifications: found.slice(0, limit).map(record), hasMore: found.length > limit };
}

/**
 * The first page of each account's feed in one query (GraphQL lists accounts with their feeds).
 * With a cursor (`after`, one account's notification), each account's page is read on its own.
 */
export async function pageNotificationsOf(
  db: Db,
  accountIds: readonly string[],
  q: { first?: number | null; after?: string | null; unreadOnly?: boolean | null },
): Promise<FeedPage[]> {
  const limit = q.first ?? FEED_PAGE.defaultLimit;
  if (q.after || accountIds.length <= 1 || !Number.isInteger(limit) || limit < 1 || limit > FEED_PAGE.maxLimit)
    return Promise.all(accountIds.map((id) => pageNotifications(db, id, q)));
  const found = await rows<Row>(
    db,
    `select ${COLUMNS} from (select ${COLUMNS}, row_number() over (partition by account_id order by seq desc) as rn from notifications
      where account_id in (${accountIds.map(() => '?').join(', ')})${q.unreadOnly ? ' and read_at is null' : ''}) x
      where rn <= ? order by seq desc`,
    [...accountIds, limit + 1],
  );
  return accountIds.map((id) => {
    const mine = found.filter((r) => r.account_id === id);
    return { notifications: mine.slice(0, limit).map(record), hasMore: mine.length > limit };
  });
}

/** Unread notifications of each account, in one query. */
export async function countUnreadOf(db: Db, accountIds: readonly string[]): Promise<number[]> {
  if (accountIds.length === 0) return [];
  const found = await rows<{ account_id: string; n: unknown }>(
    db,
    `select account_id, count(*) as n from notifications where read_at is null and account_id in (${accountIds.map(() => '?').join(', ')}) group by account_id`,
    [...accountIds],
  );
  const counts = new Map(found.map((r) => [r.account_id, int(r.n)]));
  return accountIds.map((id) => counts.get(id) ?? 0);
}

/** Marks the account's notifications among `ids` read (others' ids are ignored); returns them. */
export async function markRead(db: Db, accountId: string, ids: string[], now: Date): Promise<NotificationRecord[]> {
  if (ids.length === 0) return [];
  const list = ids.map(() => '?').join(', ');
  await run(db, `update notifications set read_at = ? where account_id = ? and read_at is null and id in (${list})`, [
    now,
    accountId,
    ...ids,
  ]);
  return (
    await rows<Row>(db, `select ${COLUMNS} from notifications where account_id = ? and id in (${list}) order by seq desc`, [
      accountId,
      ...ids,
    ])
  ).map(record);
}

/**
 * Marks every unread notification of the account read, up to and including `upTo` (a notification
 * id: the newest the reader has seen, so one written since is left unread); all when null. Returns
 * how many it marked.
 */
export async function markAllRead(db: Db, accountId: string, upTo: string | null, now: Date): Promise<number> {
  const bindings: Binding[] = [now, accountId];
  let upToSeq = '';
  if (upTo !== null) {
    const cursor = await rows<{ seq: unknown }>(db, 'select seq from notifications where id = ? and account_id = ?', [upTo, accountId]);
    if (!cursor[0])
      throw new DomainError('invalid_value', `'upTo' must be the id of one of the account's notifications; got '${upTo.slice(0, 60)}'.`, {
        param: 'upTo',
      });
    upToSeq = ' and seq <= ?';
    bindings.push(int(cursor[0].seq));
  }
  return run(db, `update notifications set read_at = ? where account_id = ? and read_at is null${upToSeq}`, bindings);
}

export async function countUnread(db: Db, accountId: string): Promise<number> {
  const found = await rows<{ n: unknown }>(db, 'select count(*) as n from notifications where account_id = ? and read_at is null', [
    accountId,
  ]);
  return int(found[0]?.n);
}

/** Notifications of these accounts with seq above `afterSeq`, oldest first (the live feed's poll). */
export async function notificationsAfter(db: Db, accountIds: string[], afterSeq: number, limit = 500): Promise<NotificationRecord[]> {
  if (accountIds.length === 0) return [];
  return (
    await rows<Row>(
      db,
      `select ${COLUMNS} from notifications where seq > ? and account_id in (${accountIds.map(() => '?').join(', ')}) order by seq limit ?`,
      [afterSeq, ...accountIds, limit],
    )
  ).map(record);
}

export async function maxSeq(db: Db): Promise<number> {
  const found = await rows<{ m: unknown }>(db, 'select max(seq) as m from notifications');
  return int(found[0]?.m);
}

export async function findNotification(db: Db, id: string): Promise<NotificationRecord | null> {
  const found = await rows<Row>(db, `select ${COLUMNS} from notifications where id = ?`, [id]);
  return found[0] ? record(found[0]) : null;
}
