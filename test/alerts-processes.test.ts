// E-mail delivery across server processes: two tollgate processes on one PostgreSQL deliver each
// message once; a server stopped in the middle of a batch (SIGTERM, or killed with SIGKILL) and
// started again loses nothing and duplicates nothing (after SIGKILL, at worst the one message in
// flight is sent again, with the same Message-ID).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { MikroORM } from '@mikro-orm/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeDatabase, openDatabase } from '../src/db/orm.js';
import { AccountsService } from '../src/domain/accounts/accounts-service.js';
import { billingDatabase, rows, type BillingDatabase } from '../src/domain/billing/sql.js';
import { enqueueNotification } from '../src/domain/notifications/outbox.js';
import { BACKENDS, createTestDatabase, HAS_POSTGRES, type TestDatabase } from './support/databases.js';
import { freePort, spawnTollgate, waitReady, type TollgateProcess } from './support/ready.js';
import { eventually, startTestSmtp, type TestSmtp } from './support/smtp.js';

async function startProcess(env: Record<string, string>): Promise<{ p: TollgateProcess; url: string }> {
  const port = await freePort();
  const p = spawnTollgate(['src/main.ts'], { ...env, PORT: String(port) });
  const url = `http://127.0.0.1:${port}`;
  await waitReady(url);
  return { p, url };
}

async function queue(db: BillingDatabase, accountId: string, count: number, tag: string): Promise<string[]> {
  for (let i = 0; i < count; i++) {
    await enqueueNotification(db, {
      accountId,
      kind: 'auto_topup_capped',
      dedupeKey: `${tag}:${i}`,
      payload: { period: '2026-11', max_monthly: '100', started: String(i), amount: '25', currency: 'USD' },
      now: new Date(),
    });
  }
  return (await rows<{ id: string }>(db, 'select id from notifications where dedupe_key like ?', [`${tag}:%`])).map((r) => r.id);
}

const sentCount = async (db: BillingDatabase, ids: string[]) =>
  (
    await rows<{ id: string; delivery: string }>(
      db,
      `select id, delivery from notifications where id in (${ids.map(() => '?').join(', ')})`,
      ids,
    )
  ).filter((r) => r.delivery === 'sent').length;

const idsOf = (smtp: TestSmtp) => smtp.messages.map((m) => /<(ntf_[^@]+)@/.exec(m.messageId)?.[1] ?? m.messageId);

describe.each(BACKENDS)('e-mail delivery across processes on %s', (backend) => {
  let smtp: TestSmtp;
  let tdb: TestDatabase;
  let orm: MikroORM;
  let db: BillingDatabase;
  let dir: string;
  let env: Record<string, string>;
  let accountId: string;
  const running: TollgateProcess[] = [];

  beforeAll(async () => {
    smtp = await startTestSmtp();
    tdb = await createTestDatabase(backend);
    orm = await openDatabase(tdb.url);
    db = billingDatabase(orm);
    accountId = (await new AccountsService(orm).createAccount({ email: 'owner@example.com', tier: 'developer' })).account.id;
    dir = mkdtempSync(path.join(tmpdir(), 'tollgate-mail-'));
    writeFileSync(
      path.join(dir, 'config.yaml'),
      'alerts:\n  delivery: { poll_interval_ms: 100, batch_size: 10, backoff_seconds: 0.2, max_backoff_seconds: 0.5 }\n',
    );
    env = {
      DATABASE_URL: tdb.url,
      CONFIG: path.join(dir, 'config.yaml'),
      SMTP_URL: smtp.url,
      MAIL_FROM: 'alerts@tollgate.test',
      LOG_LEVEL: 'warn',
    };
  });
  afterAll(async () => {
    for (const r of running) {
      r.proc.kill('SIGKILL');
      await r.exited;
    }
    await closeDatabase(orm);
    await tdb.drop();
    await smtp.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it.runIf(backend === 'PostgreSQL' && HAS_POSTGRES)(
    'two server processes on one PostgreSQL deliver each message once',
    async () => {
      smtp.messages.length = 0;
      smtp.delayMs = 5;
      const a = await startProcess(env);
      const b = await startProcess(env);
      running.push(a.p, b.p);
      const ids = await queue(db, accountId, 120, 'pair');
      await eventually(async () => (await sentCount(db, ids)) === ids.length, 'all 120 sent', 120_000);
      // A last look for a late duplicate from either process.
      await new Promise((r) => setTimeout(r, 1000));
      const got = idsOf(smtp);
      expect(new Set(got)).toEqual(new Set(ids));
      expect(got).toHaveLength(ids.length);
      for (const r of [a, b]) {
        r.p.proc.kill('SIGTERM');
        expect(await r.p.exited).toBe(0);
      }
    },
    180_000,
  );

  it.each(['SIGTERM', 'SIGKILL'] as const)(
    'a server stopped with %s in the middle of a batch and started again loses nothing and duplicates nothing',
    async (signal) => {
      smtp.messages.length = 0;
      smtp.delayMs = 150;
      const first = await startProcess(env);
      running.push(first.p);
      const ids = await queue(db, accountId, 30, `restart-${signal}`);
      await eventually(() => smtp.messages.length >= 5, 'the first messages', 60_000);
      first.p.proc.kill(signal);
      await first.p.exited;
      const sentBefore = await sentCount(db, ids);
      expect(sentBefore).toBeLessThan(ids.length);
      const second = await startProcess(env);
      running.push(second.p);
      await eventually(async () => (await sentCount(db, ids)) === ids.length, 'all 30 sent after the restart', 120_000);
      await new Promise((r) => setTimeout(r, 500));
      const got = idsOf(smtp);
      expect(new Set(got)).toEqual(new Set(ids));
      // SIGTERM: the message in flight finishes and the rest are given back. SIGKILL: the one in
      // flight may have been accepted but not marked; it goes again with the same Message-ID.
      expect(got.length - ids.length).toBeLessThanOrEqual(signal === 'SIGTERM' ? 0 : 1);
      second.p.proc.kill('SIGTERM');
      expect(await second.p.exited).toBe(0);
    },
    180_000,
  );
});
