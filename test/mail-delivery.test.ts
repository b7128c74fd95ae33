// The delivery worker against a real SMTP server on loopback, driven round by round with its own
// clock (no waiting on timers): recipients the server defers with a 4xx at RCPT TO are tried again,
// to them only, while those refused for good (5xx) are given up with the server's reply; a try
// abandoned at shutdown is given back untried.
import type { MikroORM } from '@mikro-orm/core';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfigText } from '../src/config.js';
import { closeDatabase, openDatabase } from '../src/db/orm.js';
import { AccountsService } from '../src/domain/accounts/accounts-service.js';
import { registerInstance } from '../src/domain/billing/instance-store.js';
import { billingDatabase, rows, type BillingDatabase } from '../src/domain/billing/sql.js';
import { updateAlertSettings } from '../src/domain/notifications/alert-settings.js';
import { DeliveryWorker } from '../src/domain/notifications/delivery-worker.js';
import { findNotification, retryFailed } from '../src/domain/notifications/notification-store.js';
import { enqueueNotification } from '../src/domain/notifications/outbox.js';
import { createMailer } from '../src/mail/mailer.js';
import { BACKENDS, createTestDatabase, type TestDatabase } from './support/databases.js';
import { eventually, startTestSmtp, type TestSmtp } from './support/smtp.js';

const SETTINGS = parseConfigText('alerts:\n  delivery: { max_attempts: 3 }\n', 'test.yaml').alerts.delivery;

describe.each(BACKENDS)('mail delivery recipient by recipient on %s', (backend) => {
  let smtp: TestSmtp;
  let tdb: TestDatabase;
  let orm: MikroORM;
  let db: BillingDatabase;
  let clock: Date;
  const logs: { msg: string; to?: string[]; notification?: string }[] = [];
  let serial = 0;

  beforeAll(async () => {
    smtp = await startTestSmtp(backend === 'SQLite' ? 47011 : 47012);
    tdb = await createTestDatabase(backend);
    orm = await openDatabase(tdb.url);
    db = billingDatabase(orm);
  });
  afterAll(async () => {
    await closeDatabase(orm);
    await tdb.drop();
    await smtp.close();
  });

  const worker = async (owner = `mail-${++serial}`) => {
    await registerInstance(db, { id: owner, host: 'test', pid: 1, now: new Date() });
    return new DeliveryWorker({
      db,
      mailer: createMailer({ smtpUrl: smtp.url, from: 'alerts@tollgate.test', dir: '' }, pino({ level: 'silent' })),
      settings: SETTINGS,
      owner,
      publicUrl: () => 'http://x',
      logger: pino({ level: 'info' }, { write: (line: string) => void logs.push(JSON.parse(line)) }),
      now: () => clock,
    });
  };

  /** An account whose alerts also go to `extras`, and one alert queued for it. */
  const queue = async (email: string, extras: string[]) => {
    const accountId = (await new AccountsService(orm).createAccount({ email, tier: 'developer' })).account.id;
    await updateAlertSettings(db, accountId, { extraRecipients: extras }, new Date());
    await enqueueNotification(db, {
      accountId,
      kind: 'auto_topup_failed',
      dedupeKey: `delivery:${accountId}`,
      payload: { top_up_id: 'x', amount: '25.00', currency: 'USD', reason: 'card declined', consecutive_failures: 1 },
      now: new Date(),
    });
    const [row] = await rows<{ id: string }>(db, 'select id from notifications where account_id = ?', [accountId]);
    return row!.id;
  };
  const later = (seconds: number) => (clock = new Date(clock.getTime() + seconds * 1000));
  const envelopesOf = (id: string) => smtp.messages.filter((m) => m.messageId === `<${id}@tollgate.test>`).map((m) => m.to.sort());

  it('tries a recipient deferred with 450 again, to that recipient only; one refused with 550 is given up with the reply', async () => {
    clock = new Date();
    const id = await queue('owner1@example.com', ['grey1@example.com', 'bad1@example.com']);
    smtp.deferRecipients = ['grey1@example.com'];
    smtp.refuseRecipients = ['bad1@example.com'];
    const w = await worker();
    try {
      await w.deliverDue();
      const first = (await findNotification(db, id))!;
      // Not sent: the greylisted person has not got it yet.
      expect(first).toMatchObject({ delivery: 'pending', attempts: 1, recipients: ['owner1@example.com'] });
      expect(first.nextAttemptAt).not.toBeNull();
      expect(first.lastError).toContain('deferred 1 recipient (to be tried again): grey1@example.com: 450');
      expect(first.lastError).toContain('refused 1 recipient: bad1@example.com: 550');
      // The "mail sent" line names who got it, not the recipients refused.
      const sentLines = logs.filter((l) => l.msg === 'mail sent' && l.notification === id);
      expect(sentLines.map((l) => l.to)).toEqual([['owner1@example.com']]);

      // The greylisting is over; the next try comes when it is due.
      smtp.deferRecipients = [];
      await w.deliverDue();
      expect((await findNotification(db, id))!.attempts).toBe(1);
      later(SETTINGS.max_backoff_seconds);
      await w.deliverDue();
      const second = (await findNotification(db, id))!;
      expect(second).toMatchObject({ delivery: 'sent', attempts: 2 });
      expect(second.recipients.sort()).toEqual(['grey1@example.com', 'owner1@example.com']);
      expect(second.lastError).toMatch(/^The mail server refused 1 recipient: bad1@example.com: 550/);
      // The owner got it once, the greylisted person once (same Message-ID), the refused one never again.
      expect(envelopesOf(id)).toEqual([['owner1@example.com'], ['grey1@example.com']]);
      const again = smtp.messages.filter((m) => m.messageId === `<${id}@tollgate.test>`)[1]!;
      expect(again.raw).toMatch(/^To: owner1@example\.com/m);
    } finally {
      smtp.deferRecipients = [];
      smtp.refuseRecipients = [];
      await w.stop();
    }
  });

  it('keeps a message every recipient defers pending, and one every recipient refuses for good as failed at once', async () => {
    clock = new Date();
    const deferred = await queue('owner2@example.com', []);
    const refused = await queue('owner3@example.com', []);
    smtp.deferRecipients = ['owner2@example.com'];
    smtp.refuseRecipients = ['owner3@example.com'];
    const w = await worker();
    try {
      await w.deliverDue();
      expect(await findNotification(db, deferred)).toMatchObject({ delivery: 'pending', attempts: 1, recipients: [] });
      const gone = (await findNotification(db, refused))!;
      expect(gone).toMatchObject({ delivery: 'failed', attempts: 1, recipients: [] });
      expect(gone.lastError).toContain('owner3@example.com: 550');
      // Tries used up while still deferred: failed, and `mail retry` sends it to the deferred one.
      later(SETTINGS.max_backoff_seconds);
      await w.deliverDue();
      later(SETTINGS.max_backoff_seconds);
      await w.deliverDue();
      const failed = (await findNotification(db, deferred))!;
      expect(failed).toMatchObject({ delivery: 'failed', attempts: 3 });
      expect(failed.lastError).toContain('owner2@example.com: 450');
      smtp.deferRecipients = [];
      expect(await retryFailed(db, [deferred])).toBe(1);
      await w.deliverDue();
      expect(await findNotification(db, deferred)).toMatchObject({ delivery: 'sent', recipients: ['owner2@example.com'], lastError: null });
      expect(envelopesOf(deferred)).toEqual([['owner2@example.com']]);
    } finally {
      smtp.deferRecipients = [];
      smtp.refuseRecipients = [];
      await w.stop();
    }
  });

  it('gives a try abandoned at shutdown back untried: its attempt is not counted', async () => {
    clock = new Date();
    const id = await queue('owner4@example.com', []);
    smtp.hang = true;
    const w = await worker();
    try {
      w.wake();
      await eventually(() => smtp.hung.some((m) => m.messageId === `<${id}@tollgate.test>`), 'the message to reach the hung server');
      await w.stop(0);
      expect(await findNotification(db, id)).toMatchObject({ delivery: 'pending', attempts: 0, lastError: null });
    } finally {
      smtp.hang = false;
    }
  });
});
