// One-off messages that are not in the notifications outbox: a password-reset link and the notice
// that an account's e-mail address changed. A reset link is a secret: the outbox keeps bodies in
// the database (the feed renders them), so these are kept in memory only, for as long as they are
// worth sending (a reset link works for an hour). Each is sent in the background (the request that
// caused it has been answered), and a try that fails (server down, a 4xx or 5xx, a recipient
// deferred with a 4xx) is tried again after 10 s, 20 s, 40 s … until it goes or its time is up; a
// recipient refused for good (a 5xx at RCPT TO) is not. Shutdown tries the ones waiting for their
// next try once more at once, lets the exchanges in progress finish for at most STOP_GRACE_MS (as
// the alerts' delivery worker does: a hung server would otherwise hold shutdown for nodemailer's
// timeouts, 30 s and more), then closes them. A message still unsent then is logged (never its
// body) and lost, as it is when the process dies: the person asks for another reset.
import type { Logger } from '../logger.js';
import { describeMailError, type Mailer, type OutgoingMail } from './mailer.js';

/** How long shutdown waits for the messages being sent before closing their exchanges (the alerts' worker waits as long). */
export const STOP_GRACE_MS = 2000;

export interface RetryPolicy {
  /** The wait before the second try; doubled after each failed one … */
  firstDelayMs: number;
  /** … up to this. */
  maxDelayMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { firstDelayMs: 10_000, maxDelayMs: 10 * 60_000 };

interface Job {
  /** What it is, for the logs: never the message, which may hold a secret link. */
  what: string;
  account: string;
  make: () => Promise<OutgoingMail>;
  mail?: OutgoingMail;
  /** Epoch ms: no try starts after it. */
  until: number;
  tries: number;
  timer?: NodeJS.Timeout;
  sending?: AbortController;
}

export class RetriedMail {
  private readonly jobs = new Set<Job>();
  /** The tries running now. */
  private readonly running = new Set<Promise<void>>();
  private readonly retry: RetryPolicy;
  private readonly now: () => number;
  private stopping = false;

  constructor(
    private readonly o: {
      mailer: Mailer;
      logger: Logger;
      retry?: RetryPolicy;
      now?: () => number;
    },
  ) {
    this.retry = o.retry ?? DEFAULT_RETRY;
    this.now = o.now ?? Date.now;
  }

  /**
   * Makes the message and sends it now, in the background, trying again until it goes or `until`
   * (epoch ms) has passed. Never throws; every outcome is logged.
   */
  send(make: () => Promise<OutgoingMail>, o: { what: string; account: string; until: number }): void {
    const job: Job = { ...o, make, tries: 0 };
    this.jobs.add(job);
    this.start(job);
  }

  /** Resolves when no message is being sent or waiting for its next try (tests). */
  async idle(): Promise<void> {
    while (this.jobs.size > 0) {
      if (this.running.size > 0) await Promise.all([...this.running]);
      else await new Promise((r) => setTimeout(r, 10));
    }
  }

  /**
   * At shutdown: the messages waiting for a retry are tried once more now; every exchange gets up
   * to `graceMs` to finish, then is closed; what is still unsent is logged as lost.
   */
  async stop(graceMs = STOP_GRACE_MS): Promise<void> {
    this.stopping = true;
    for (const job of this.jobs) {
      if (job.timer === undefined) continue;
      clearTimeout(job.timer);
      job.timer = undefined;
      this.start(job);
    }
    if (this.running.size === 0) return;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), graceMs)));
    const outcome = await Promise.race([Promise.all([...this.running]), late]);
    clearTimeout(timer);
    if (outcome === 'late') {
      for (const job of this.jobs) job.sending?.abort(new Error('shutting down'));
      await Promise.all([...this.running]);
    }
  }

  private start(job: Job): void {
    const run = this.attempt(job).finally(() => this.running.delete(run));
    this.running.add(run);
  }

  private async attempt(job: Job): Promise<void> {
    const { logger } = this.o;
    const log = { what: job.what, account: job.account, attempt: ++job.tries };
    let problem: string;
    const sending = new AbortController();
    job.sending = sending;
    try {
      job.mail ??= await job.make();
      const receipt = await this.o.mailer.send(job.mail, sending.signal);
      const deferred = receipt.refused.filter((r) => r.temporary);
      const refused = receipt.refused.filter((r) => !r.temporary);
      if (deferred.length === 0) {
        if (receipt.accepted.length > 0) logger.info({ ...log, to: receipt.accepted }, 'mail sent');
        if (refused.length > 0)
          logger.error(
            { ...log, refused: refused.map((r) => `${r.address}: ${r.reply}`) },
            `the ${job.what} e-mail was refused for good by the mail server`,
          );
        return this.finish(job);
      }
      problem = deferred.map((r) => `${r.address}: ${r.reply}`).join('; ');
    } catch (err) {
      if (job.mail === undefined) {
        logger.error({ ...log, err }, `the ${job.what} e-mail could not be made`);
        return this.finish(job);
      }
      if (sending.signal.aborted) {
        logger.error(log, `the ${job.what} e-mail was not sent: its exchange with the mail server was closed at shutdown`);
        return this.finish(job);
      }
      problem = describeMailError(err);
    } finally {
      job.sending = undefined;
    }
    const delay = Math.min(this.retry.firstDelayMs * 2 ** (job.tries - 1), this.retry.maxDelayMs);
    if (this.stopping || this.now() + delay > job.until) {
      logger.error({ ...log, error: problem }, `the ${job.what} e-mail could not be sent; no more tries`);
      return this.finish(job);
    }
    logger.warn({ ...log, error: problem, retryInMs: delay }, `the ${job.what} e-mail was not sent; will retry`);
    job.timer = setTimeout(() => {
      job.timer = undefined;
      this.start(job);
    }, delay);
    // A wait never keeps the process alive on its own (shutdown tries it once more).
    job.timer.unref();
  }

  private finish(job: Job): void {
    this.jobs.delete(job);
  }
}
