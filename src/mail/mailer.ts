// How an e-mail leaves tollgate: through the SMTP server of SMTP_URL (nodemailer), or, with no
// SMTP_URL, as an .eml file in a folder (mail/ beside the SQLite file) with its recipients and
// subject logged, so `npm start` shows every message without any mail server. The delivery worker
// (src/domain/notifications/delivery-worker.ts) marks a message sent only once `send` resolved:
// for SMTP, once the server accepted it.
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createTransport } from 'nodemailer';
import type { MailEnv } from '../config-alerts.js';
import type { Logger } from '../logger.js';
import { makeFolder } from '../make-folder.js';

export interface OutgoingMail {
  to: string[];
  cc: string[];
  subject: string;
  text: string;
  html: string;
  /** Stable per notification (`<ntf_…@domain>`): a resend after a crash carries the same one. */
  messageId: string;
  /** A file name for the .eml writer: the notification id. */
  key: string;
  /**
   * The recipients to send it to (RCPT TO), when not all of `to` and `cc`: a retry to those the
   * server deferred the first time. The headers stay those of the whole message.
   */
  envelope?: string[];
}

export interface RefusedRecipient {
  address: string;
  /** The server's reply, e.g. "550 5.1.1 no such user". */
  reply: string;
  /** A 4xx (greylisting, a full mailbox): the address may take it later. A 5xx: never. */
  temporary: boolean;
}

export interface MailReceipt {
  /** Recipients the server took the message for. */
  accepted: string[];
  /** Recipients the server refused at RCPT TO (the message went to the others, if any). */
  refused: RefusedRecipient[];
}

export interface Mailer {
  /**
   * Resolves once the server has answered for every recipient: the message is accepted for
   * `accepted` (by the SMTP server, or written), and `refused` are the recipients it refused, each
   * with its reply (when it refused them all, `accepted` is empty). Rejects when the message
   * itself was not taken (server down, a refused sender or message, a timeout), or when `signal`
   * aborts it (the SMTP connection is closed, whatever the server has received).
   */
  send(mail: OutgoingMail, signal?: AbortSignal): Promise<MailReceipt>;
  /** The domain of the sender's address, for Message-IDs. */
  readonly domain: string;
  /** For the start-up log line. */
  readonly describe: string;
  close(): void;
}

/** SMTP timeouts: a dead or hung server fails the try, to be retried later, instead of holding the worker. */
const SMTP_TIMEOUTS = { connectionTimeout: 10_000, greetingTimeout: 10_000, socketTimeout: 30_000, dnsTimeout: 10_000 };

export function createMailer(env: MailEnv, logger: Logger): Mailer {
  return env.smtpUrl ? new SmtpMailer(env.smtpUrl, env.from) : new EmlFileMailer(env.dir, env.from, logger);
}

function domainOf(from: string): string {
  const m = /@([^\s@>]+)/.exec(from);
  return m?.[1] ?? 'localhost';
}

class SmtpMailer implements Mailer {
  readonly domain: string;
  readonly describe: string;
  private readonly transport;

  constructor(
    url: string,
    private readonly from: string,
  ) {
    this.domain = domainOf(from);
    const u = new URL(url);
    this.describe = `${u.protocol}//${u.hostname}:${u.port || (u.protocol === 'smtps:' ? 465 : 587)}`;
    this.transport = createTransport({ url, ...SMTP_TIMEOUTS });
  }

  async send(mail: OutgoingMail, signal?: AbortSignal): Promise<MailReceipt> {
    try {
      const info = await this.transport.sendMail({ ...messageOf(this.from, mail), signal });
      return { accepted: info.accepted.map(String), refused: refusedOf(info.rejected, info.rejectedErrors) };
    } catch (err) {
      // Every recipient refused at RCPT TO: an answer per recipient, some perhaps only deferred.
      const e = err as { code?: string; command?: string; rejected?: unknown[]; rejectedErrors?: RecipientError[] };
      if (e?.code === 'EENVELOPE' && e.command === 'RCPT TO' && Array.isArray(e.rejected) && e.rejected.length > 0 && !signal?.aborted)
        return { accepted: [], refused: refusedOf(e.rejected, e.rejectedErrors) };
      throw err;
    }
  }

  close(): void {
    this.transport.close();
  }
}

interface RecipientError {
  recipient?: unknown;
  response?: string;
  responseCode?: number;
  message?: string;
}

/** nodemailer's refused recipients with their replies; a reply without a code counts as temporary (tried again). */
function refusedOf(rejected: unknown[], errors: RecipientError[] = []): RefusedRecipient[] {
  return rejected.map((r) => {
    const address = String(r);
    const e = errors.find((x) => String(x.recipient) === address);
    const reply = (e?.response ?? e?.message ?? 'refused').slice(0, 200);
    const code = e?.responseCode ?? Number(/^(\d{3})/.exec(reply)?.[1] ?? Number.NaN);
    return { address, reply, temporary: !(code >= 500 && code < 600) };
  });
}

/** The nodemailer message of a mail, the same for SMTP and for .eml files. */
function messageOf(from: string, mail: OutgoingMail) {
  return {
    from,
    to: mail.to,
    cc: mail.cc.length > 0 ? mail.cc : undefined,
    subject: mail.subject,
    text: mail.text,
    html: mail.html,
    messageId: mail.messageId,
    envelope: mail.envelope ? { from, to: mail.envelope } : undefined,
  };
}

class EmlFileMailer implements Mailer {
  readonly domain: string;
  readonly describe: string;
  private readonly transport = createTransport({ streamTransport: true, buffer: true, newline: 'unix' });

  constructor(
    private readonly dir: string,
    private readonly from: string,
    private readonly logger: Logger,
  ) {
    this.domain = domainOf(from);
    this.describe = `.eml files in ${dir} (no SMTP_URL)`;
  }

  async send(mail: OutgoingMail): Promise<MailReceipt> {
    const info = await this.transport.sendMail(messageOf(this.from, mail));
    makeFolder(this.dir);
    // One file per notification, written whole then renamed: a resend replaces it, never half-writes it.
    const file = path.join(this.dir, `${mail.key.replace(/[^A-Za-z0-9_-]/g, '_')}.eml`);
    writeFileSync(`${file}.tmp`, info.message as Buffer);
    renameSync(`${file}.tmp`, file);
    const to = mail.envelope ?? [...mail.to, ...mail.cc];
    this.logger.info({ to, subject: mail.subject, file }, 'mail written (no SMTP_URL)');
    return { accepted: to, refused: [] };
  }

  close(): void {
    this.transport.close();
  }
}

/** A failed send in one line for logs and the feed: nodemailer's code, the SMTP reply code, the message (500 characters at most). */
export function describeMailError(err: unknown): string {
  const e = err as { message?: string; responseCode?: number; code?: string };
  const parts = [e?.code, e?.responseCode, e?.message ?? String(err)].filter((x) => x !== undefined && x !== null && x !== '');
  return parts.join(' ').slice(0, 500);
}
