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
}

export interface MailReceipt {
  accepted: string[];
  /** Recipients the server refused (the message went to the others). */
  rejected: string[];
  /** The server's reply to each refused recipient, e.g. "bad@ex.com: 550 no such user". */
  rejectedReplies: string[];
}

export interface Mailer {
  /**
   * Resolves once the message is accepted (by the SMTP server, or written); rejects otherwise, or
   * when `signal` aborts it (the SMTP connection is closed, whatever the server has received).
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
    const info = await this.transport.sendMail({ ...messageOf(this.from, mail), signal });
    const rejected = info.rejected.map(String);
    const replies = new Map((info.rejectedErrors ?? []).map((e) => [String(e.recipient), e.response ?? e.message]));
    return {
      accepted: info.accepted.map(String),
      rejected,
      rejectedReplies: rejected.map((r) => (replies.get(r) ? `${r}: ${replies.get(r)}` : r)),
    };
  }

  close(): void {
    this.transport.close();
  }
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
    const to = [...mail.to, ...mail.cc];
    this.logger.info({ to, subject: mail.subject, file }, 'mail written (no SMTP_URL)');
    return { accepted: to, rejected: [], rejectedReplies: [] };
  }

  close(): void {
    this.transport.close();
  }
}
