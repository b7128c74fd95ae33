// The mail of sign-in, against a real SMTP server on loopback: a password-reset link and the
// e-mail-changed notice survive a temporary refusal (they are tried again, in memory: a reset link
// is never written to the outbox nor logged); shutdown does not wait out a hung SMTP server for
// them; a password reset clears the address's sign-in lockout.
import type { MikroORM } from '@mikro-orm/core';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeDatabase, openDatabase } from '../src/db/orm.js';
import { AccountsService } from '../src/domain/accounts/accounts-service.js';
import { AuthService } from '../src/domain/auth/auth-service.js';
import { DomainError } from '../src/domain/errors.js';
import { createMailer } from '../src/mail/mailer.js';
import { createTestDatabase, type TestDatabase } from './support/databases.js';
import { startTestServer } from './support/harness.js';
import { eventually, startTestSmtp, type TestSmtp } from './support/smtp.js';

const PASSWORD = 'correct horse battery';

describe('password-reset and e-mail-changed mail', () => {
  let smtp: TestSmtp;
  let tdb: TestDatabase;
  let orm: MikroORM;
  let auth: AuthService;
  const logs: string[] = [];

  beforeAll(async () => {
    smtp = await startTestSmtp(47013);
    tdb = await createTestDatabase('SQLite');
    orm = await openDatabase(tdb.url);
    const logger = pino({ level: 'debug' }, { write: (line: string) => void logs.push(line) });
    auth = new AuthService({
      orm,
      accounts: new AccountsService(orm),
      settings: { signup: 'open', invite_codes: [], session_days: 30, max_failed_logins: 5 },
      adminToken: () => null,
      publicUrl: () => 'http://127.0.0.1:47099',
      mailer: createMailer({ smtpUrl: smtp.url, from: 'Tollgate <a@tollgate.test>', dir: '' }, logger),
      logger,
      mailRetry: { firstDelayMs: 20, maxDelayMs: 200 },
    });
  });
  afterAll(async () => {
    await auth?.stop();
    await closeDatabase(orm);
    await tdb.drop();
    await smtp.close();
  });

  const signIn = (email: string, password: string) => auth.signIn({ email, password, clientAddress: '127.0.0.1' });
  const codeOf = async (p: Promise<unknown>) =>
    p.then(
      () => 'ok',
      (e: unknown) => (e instanceof DomainError ? e.code : String(e)),
    );

  it('tries a password-reset link refused with 451 again, and the link it finally delivers works; it is never logged', async () => {
    await auth.signUp({ email: 'again@example.com', password: PASSWORD });
    smtp.refuseWith = 451;
    try {
      await auth.requestPasswordReset('again@example.com', '127.0.0.1');
      await eventually(() => smtp.refusedMessages.some((m) => m.to.includes('again@example.com')), 'the refused try');
    } finally {
      smtp.refuseWith = null;
    }
    const [mail] = await eventually(
      () => {
        const got = smtp.messages.filter((m) => m.to.includes('again@example.com') && m.subject === 'Reset your tollgate password');
        return got.length > 0 && got;
      },
      'the reset link after the refusal',
      10_000,
    );
    await auth.idle();
    const token = /reset-password\?token=(tgr_[\w-]+)/.exec(mail!.body)![1]!;
    // The same link each try: the first one made is the one that works.
    expect(smtp.refusedMessages.find((m) => m.to.includes('again@example.com'))!.body).toContain(token);
    await auth.resetPassword({ token, password: 'a brand new password' });
    expect(await codeOf(signIn('again@example.com', 'a brand new password'))).toBe('ok');
    expect(logs.join('\n')).not.toContain(token);
    expect(logs.join('\n')).not.toContain('tgr_');
  });

  it('tries the e-mail-changed notice again when the old address is greylisted (450 at RCPT TO)', async () => {
    const { session } = await auth.signUp({ email: 'grey-old@example.com', password: PASSWORD });
    smtp.deferRecipients = ['grey-old@example.com'];
    try {
      await auth.changeEmail(session.accountId!, { email: 'grey-new@example.com', password: PASSWORD });
      await eventually(
        () => logs.some((l) => l.includes('e-mail-changed notice e-mail was not sent; will retry') && l.includes('450')),
        'the deferred try',
        10_000,
      );
    } finally {
      smtp.deferRecipients = [];
    }
    const [notice] = await eventually(
      () => {
        const got = smtp.messages.filter((m) => m.to.includes('grey-old@example.com'));
        return got.length > 0 && got;
      },
      'the notice after the greylisting',
      10_000,
    );
    expect(notice!.subject).toBe('Your tollgate sign-in e-mail was changed');
    await auth.idle();
  });

  it('clears the address\'s sign-in lockout when the password is reset: "or reset the password" is true', async () => {
    const { session } = await auth.signUp({ email: 'locked@example.com', password: PASSWORD });
    for (let i = 0; i < 5; i++) expect(await codeOf(signIn('locked@example.com', 'a wrong password'))).toBe('invalid_credentials');
    expect(await codeOf(signIn('locked@example.com', PASSWORD))).toBe('too_many_attempts');
    const link = await auth.passwordLink(session.accountId!, 'reset');
    const token = new URL(link).searchParams.get('token')!;
    await auth.resetPassword({ token, password: 'the password after the reset' });
    // Signing in from another browser (another client address) works at once.
    expect(
      await codeOf(auth.signIn({ email: 'locked@example.com', password: 'the password after the reset', clientAddress: '10.0.0.9' })),
    ).toBe('ok');
  });
});

describe('shutdown while a password-reset mail is in flight to a hung SMTP server', () => {
  let smtp: TestSmtp;
  beforeAll(async () => {
    smtp = await startTestSmtp(47014);
  });
  afterAll(async () => {
    await smtp.close();
  });

  // Nodemailer alone would wait 30 s for the server's reply (its socket timeout): shutdown gives
  // up on the exchange after 2 s instead, and says the mail was not sent.
  it('closes the exchange instead of waiting out the SMTP timeouts, and logs the mail as not sent', async () => {
    const logs: string[] = [];
    const s = await startTestServer({
      env: { SMTP_URL: smtp.url, MAIL_FROM: 'Tollgate <a@tollgate.test>' },
      logger: pino({ level: 'info' }, { write: (line: string) => void logs.push(line) }),
    });
    let closed = false;
    try {
      await s.services.auth.signUp({ email: 'hung@example.com', password: PASSWORD });
      smtp.hang = true;
      await s.services.auth.requestPasswordReset('hung@example.com', '127.0.0.1');
      await eventually(() => smtp.hung.some((m) => m.to.includes('hung@example.com')), 'the reset mail to reach the hung server');
      await s.close();
      closed = true;
      expect(
        logs.some((l) => l.includes('password-reset e-mail was not sent: its exchange with the mail server was closed at shutdown')),
      ).toBe(true);
    } finally {
      smtp.hang = false;
      if (!closed) await s.close().catch(() => {});
    }
  }, 20_000);
});
