// Two delivery workers (two instances) on one database and a slow SMTP server: a batch's lease
// covers one exchange, each message's is renewed right before it is sent, so a message whose
// batch outlasted its lease is sent once (by whichever instance holds it), never by both.
import type { MikroORM } from '@mikro-orm/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfigText } from '../src/config.js';
import { closeDatabase, openDatabase } from '../src/db/orm.js';
import { AccountsService } from '../src/domain/accounts/accounts-service.js';
import { registerInstance } from '../src/domain/billing/instance-store.js';
import { billingDatabase, rows, type BillingDatabase } from '../src/domain/billing/sql.js';
import { DeliveryWorker } from '../src/domain/notifications/delivery-worker.js';
import { enqueueNotification } from '../src/domain/notifications/outbox.js';
import { createLogger } from '../src/logger.js';
import { createMailer } from '../src/mail/mailer.js';
import { BACKENDS, createTestDatabase, type TestDatabase } from './support/databases.js';
import { startTestSmtp, type TestSmtp } from './support/smtp.js';

describe.each(BACKENDS)('mail leases on %s', (backend) => {
  let smtp: TestSmtp;
  let tdb: TestDatabase;
  let orm: MikroORM;
  let db: BillingDatabase;

  beforeAll(async () => {
    smtp = await startTestSmtp();
    tdb = await createTestDatabase(backend);
    orm = await openDatabase(tdb.url);
    db = billingDatabase(orm);
  });
  afterAll(async () => {
    await closeDatabase(orm);
    await tdb.drop();
    await smtp.close();
  });

  it('a batch that outlasts its lease is not sent again by another instance', async () => {
    const accountId = (await new AccountsService(orm).createAccount({ email: 'slow@example.com', tier: 'developer' })).account.id;
    for (let i = 0; i < 8; i++) {
      await enqueueNotification(db, {
        accountId,
        kind: 'auto_topup_capped',
        dedupeKey: `lease:${i}`,
        payload: { period: '2026-11', max_monthly: '100', started: String(i), amount: '25', currency: 'USD' },
        now: new Date(),
      });
    }
    // Each message takes 300 ms; a batch of 8 leased for 0.5 s lapses after its second message.
    smtp.delayMs = 300;
    const settings = parseConfigText('alerts:\n  delivery: { lease_seconds: 0.5, batch_size: 8 }\n', 'test.yaml').alerts.delivery;
    const mail = { smtpUrl: smtp.url, from: 'alerts@tollgate.test', dir: '' };
    const workers = ['mail-a', 'mail-b', 'mail-c'].map(async (owner) => {
      await registerInstance(db, { id: owner, host: 'test', pid: 1, now: new Date() });
      return new DeliveryWorker({
        db,
        mailer: createMailer(mail, createLogger('silent')),
        settings,
        owner,
        publicUrl: () => 'http://x',
        logger: createLogger('silent'),
      });
    });
    const [a, b, c] = await Promise.all(workers);
    const first = a!.deliverDue();
    // Two more instances look while the first is half-way through its batch.
    await new Promise((r) => setTimeout(r, 700));
    const second = b!.deliverDue();
    await new Promise((r) => setTimeout(r, 700));
    const third = c!.deliverDue();
    const sent = (await Promise.all([first, second, third])).reduce((x, y) => x + y, 0);

    const ids = (await rows<{ id: string }>(db, "select id from notifications where dedupe_key like 'lease:%'")).map((r) => r.id);
    const got = smtp.messages.map((m) => /<(ntf_[^@]+)@/.exec(m.messageId)?.[1]);
    expect(new Set(got)).toEqual(new Set(ids));
    expect(got).toHaveLength(8);
    expect(sent).toBe(8);
    const states = await rows<{ delivery: string }>(db, "select delivery from notifications where dedupe_key like 'lease:%'");
    expect(states.every((s) => s.delivery === 'sent')).toBe(true);
    for (const w of [a, b, c]) await w!.stop();
  }, 30_000);
});
