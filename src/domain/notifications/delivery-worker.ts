// Sends the notifications outbox by e-mail, at least once and never lost:
// - a message is claimed with a lease (claimDue, renewed right before it is sent, so a slow server
//   never lets another instance claim and send it too) and marked sent only after the mailer resolved,
//   i.e. the SMTP server accepted it; a crash before that leaves it pending, and the lease lapses
//   (at once when the owner is no longer a registered instance), so a restart resumes it;
// - a failed try (server down, 4xx/5xx, timeout) is retried after a doubling backoff, and after
//   `max_attempts` kept as failed for an operator (`tollgate mail status|retry`);
// - the server answers each recipient: those it defers (a 4xx at RCPT TO, e.g. greylisting) keep
//   the message pending and the next try goes to them only; those it refuses for good (a 5xx) are
//   given up, named with its reply in the last error;
// - each message carries a Message-ID derived from its notification id, so the rare resend (a
//   crash between the server's acceptance and the mark) is recognisable as the same message.
// It polls the outbox every `poll_interval_ms` (alerts are written by this process, by other
// instances and by the CLI alike), runs one round at a time, never throws, and stops cleanly: at
// shutdown it waits for the message being sent at most STOP_GRACE_MS (a hung SMTP server would
// otherwise hold shutdown for nodemailer's timeouts, 30 s and more), then aborts the exchange
// and gives the message back untried, to be sent again (same Message-ID) by the next instance.
import type { DeliverySettings } from '../../config-alerts.js';
import type { Logger } from '../../logger.js';
import { describeMailError, type Mailer } from '../../mail/mailer.js';
import { renderNotification } from '../../mail/templates.js';
import { rows, type BillingDatabase } from '../billing/sql.js';
import { getAlertSettings } from './alert-settings.js';
import {
  anyDue,
  claimDue,
  markFailedTry,
  markPartlySent,
  markSent,
  markSkipped,
  releaseLeases,
  renewLease,
  type NotificationRecord,
} from './notification-store.js';
import { alertOf } from './outbox.js';
import { logBackgroundFailure } from '../../db/unavailable.js';

export interface DeliveryWorkerOptions {
  db: BillingDatabase;
  mailer: Mailer;
  settings: DeliverySettings;
  /** This server's billing instance id: the owner of its leases. */
  owner: string;
  /** Read when a message is rendered (the address clients reach). */
  publicUrl: () => string;
  logger: Logger;
  now?: () => Date;
}

/** How long shutdown waits for the message being sent before aborting it. */
export const STOP_GRACE_MS = 2000;

export class DeliveryWorker {
  private readonly now: () => Date;
  private timer: NodeJS.Timeout | undefined;
  private round: Promise<void> | undefined;
  private stopping = false;
  private again = false;
  /** Aborts the SMTP exchange in progress (at shutdown, past STOP_GRACE_MS). */
  private sending: AbortController | undefined;

  constructor(private readonly o: DeliveryWorkerOptions) {
    this.now = o.now ?? (() => new Date());
  }

  start(): void {
    this.stopping = false;
    this.timer = setInterval(() => this.wake(), this.o.settings.poll_interval_ms);
    // Never keeps the process alive on its own.
    this.timer.unref();
    this.wake();
  }

  /** Runs a round now (or right after the one running): e.g. after this process wrote a notification. */
  wake(): void {
    if (this.stopping) return;
    if (this.round) {
      this.again = true;
      return;
    }
    this.round = (async () => {
      do {
        this.again = false;
        try {
          await this.deliverDue();
        } catch (err) {
          logBackgroundFailure(this.o.logger, err, 'mail delivery round failed; will try again');
        }
      } while (this.again && !this.stopping);
    })().finally(() => (this.round = undefined));
  }

  /** Resolves when no round is running (tests). */
  async idle(): Promise<void> {
    while (this.round) await this.round;
  }

  /**
   * Stops polling, lets the message being sent finish (for up to `graceMs`, then aborts it: it
   * stays pending), and gives back the leases this instance holds, so the next one sends them at once.
   */
  async stop(graceMs = STOP_GRACE_MS): Promise<void> {
    this.stopping = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    const round = this.round;
    if (round) {
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), graceMs)));
      const outcome = await Promise.race([round, late]);
      clearTimeout(timer);
      if (outcome === 'late') {
        this.o.logger.warn(
          { graceMs },
          'mail: the message being sent was not answered in time at shutdown; it is given back, to be sent again',
        );
        this.sending?.abort(new Error('shutting down'));
        await round;
      }
    }
    await releaseLeases(this.o.db, this.o.owner).catch((err) => this.o.logger.warn({ err }, 'mail: could not release leases at shutdown'));
    this.o.mailer.close();
  }

  /** One round: claim batches of due messages and send them one by one, until none is due. */
  async deliverDue(): Promise<number> {
    let sent = 0;
    const { settings } = this.o;
    while (!this.stopping) {
      const now = this.now();
      if (!(await anyDue(this.o.db, now))) break;
      const batch = await claimDue(this.o.db, {
        owner: this.o.owner,
        now,
        leaseUntil: new Date(now.getTime() + settings.lease_seconds * 1000),
        limit: settings.batch_size,
      });
      if (batch.length === 0) break;
      for (const n of batch) {
        // At shutdown the rest of the batch is released (stop), not sent half-way.
        if (this.stopping) break;
        // The batch was leased for one exchange's time: each message's lease is renewed before it
        // is sent, and one another instance took meanwhile (a slow server) is left to it.
        const leaseUntil = new Date(this.now().getTime() + settings.lease_seconds * 1000);
        if (!(await renewLease(this.o.db, { id: n.id, owner: this.o.owner, leaseUntil }))) continue;
        if (await this.deliver(n)) sent++;
      }
    }
    return sent;
  }

  private async deliver(n: NotificationRecord): Promise<boolean> {
    const { db, logger } = this.o;
    const alert = alertOf(n.kind);
    const prefs = await getAlertSettings(db, n.accountId);
    if (!prefs.enabled[alert]) {
      await markSkipped(db, n.id, `the ${alert} alert is turned off in the account's alert settings`);
      return false;
    }
    const owner = await rows<{ email: string }>(db, 'select email from accounts where id = ?', [n.accountId]);
    const to = owner[0]?.email ? [owner[0].email] : [];
    const cc = prefs.extraRecipients.filter((e) => !to.some((t) => t.toLowerCase() === e.toLowerCase()));
    if (to.length + cc.length === 0) {
      await markSkipped(db, n.id, 'the account has no e-mail address');
      return false;
    }
    const message = renderNotification(n.kind, n.payload, { publicUrl: this.o.publicUrl(), accountId: n.accountId });
    // A retry after some recipients were deferred goes to those still owed it only: not to the
    // ones that have it (n.recipients), nor to the ones refused for good.
    const lower = (a: string) => a.toLowerCase();
    const done = new Set(n.recipients.map(lower));
    const owed = [...to, ...cc].filter((a) => !done.has(lower(a)) && !(lower(a) in n.refusedRecipients));
    if (owed.length === 0) {
      // Everyone has it or refused it for good (an operator retried it, or the deferred ones were
      // removed from the alert settings meanwhile).
      const error = refusedError(n.refusedRecipients);
      if (n.recipients.length > 0) await markSent(db, n.id, this.now(), n.recipients, { recipients: n.refusedRecipients, error });
      else
        await markPartlySent(db, n.id, {
          owner: this.o.owner,
          recipients: [],
          refused: n.refusedRecipients,
          error: error ?? 'No recipient is left to send it to.',
          nextAttemptAt: null,
          final: true,
        });
      return false;
    }
    const sending = new AbortController();
    this.sending = sending;
    try {
      const receipt = await this.o.mailer.send(
        {
          ...message,
          to,
          cc,
          messageId: `<${n.id}@${this.o.mailer.domain}>`,
          key: n.id,
          envelope: owed.length < to.length + cc.length ? owed : undefined,
        },
        sending.signal,
      );
      const accepted = receipt.accepted.filter((a) => !done.has(lower(a)));
      const recipients = [...n.recipients, ...accepted];
      const refused = { ...n.refusedRecipients };
      for (const r of receipt.refused) if (!r.temporary) refused[lower(r.address)] = r.reply;
      const deferred = receipt.refused.filter((r) => r.temporary);
      const refusedNow = receipt.refused.filter((r) => !r.temporary);
      if (refusedNow.length > 0)
        logger.warn(
          { notification: n.id, refused: refusedNow.map((r) => `${r.address}: ${r.reply}`) },
          'mail: the server refused some recipients for good',
        );
      if (deferred.length === 0 && recipients.length > 0) {
        await markSent(db, n.id, this.now(), recipients, { recipients: refused, error: refusedError(refused) });
        logger.info({ notification: n.id, kind: n.kind, to: accepted, subject: message.subject, attempt: n.attempts }, 'mail sent');
        return true;
      }
      // Deferred recipients (a 4xx) are tried again, to them only; with none left to try (every
      // recipient refused for good), the message is kept as failed for an operator to see.
      const final = deferred.length === 0 || n.attempts >= this.o.settings.max_attempts;
      const nextAttemptAt = final ? null : new Date(this.now().getTime() + this.backoffMs(n.attempts));
      const error = [
        deferred.length > 0
          ? `The mail server deferred ${plural(deferred.length, 'recipient')}${final ? '' : ' (to be tried again)'}: ${deferred.map((r) => `${r.address}: ${r.reply}`).join('; ')}`
          : null,
        refusedError(refused),
      ]
        .filter(Boolean)
        .join('. ');
      await markPartlySent(db, n.id, { owner: this.o.owner, recipients, refused, error, nextAttemptAt, final });
      if (accepted.length > 0)
        logger.info({ notification: n.id, kind: n.kind, to: accepted, subject: message.subject, attempt: n.attempts }, 'mail sent');
      logger.warn(
        {
          notification: n.id,
          kind: n.kind,
          attempt: n.attempts,
          deferred: deferred.map((r) => `${r.address}: ${r.reply}`),
          next: nextAttemptAt?.toISOString() ?? null,
          failed: final,
        },
        final ? 'mail failed for good for some recipients: see tollgate mail status' : 'mail deferred for some recipients; will retry them',
      );
      return accepted.length > 0;
    } catch (err) {
      // Aborted at shutdown: no failed try (the server never answered); stop releases its lease.
      if (sending.signal.aborted) {
        logger.info({ notification: n.id, kind: n.kind }, 'mail: sending abandoned at shutdown; given back');
        return false;
      }
      const final = n.attempts >= this.o.settings.max_attempts;
      const error = describeMailError(err);
      const nextAttemptAt = final ? null : new Date(this.now().getTime() + this.backoffMs(n.attempts));
      await markFailedTry(db, n.id, { owner: this.o.owner, error, nextAttemptAt, final });
      logger.warn(
        { notification: n.id, kind: n.kind, attempt: n.attempts, error, next: nextAttemptAt?.toISOString() ?? null, failed: final },
        final ? 'mail failed for good: see tollgate mail status' : 'mail not sent; will retry',
      );
      return false;
    } finally {
      this.sending = undefined;
    }
  }

  /** 10 s, 20 s, 40 s … up to max_backoff_seconds (by default). */
  private backoffMs(attempts: number): number {
    const { backoff_seconds, max_backoff_seconds } = this.o.settings;
    return Math.min(backoff_seconds * 2 ** Math.max(0, attempts - 1), max_backoff_seconds) * 1000;
  }
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

/** What the feed's lastError says of the recipients refused for good; null when none was. */
function refusedError(refused: Record<string, string>): string | null {
  const list = Object.entries(refused);
  if (list.length === 0) return null;
  return `The mail server refused ${plural(list.length, 'recipient')}: ${list.map(([a, reply]) => `${a}: ${reply}`).join('; ')}`;
}
