// A real SMTP server on loopback (the smtp-server package) that keeps every message it accepts,
// for the e-mail tests: it can be stopped (the port refuses connections) and started again on the
// same port, told to refuse messages with a 4xx/5xx reply or some recipients with a 550, or to
// hang: take a message's data and never answer it.
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';

export interface CapturedMail {
  /** Envelope recipients (RCPT TO). */
  to: string[];
  subject: string;
  messageId: string;
  /** The raw message with quoted-printable undone, for searching the bodies. */
  body: string;
  raw: string;
}

export interface TestSmtp {
  url: string;
  port: number;
  messages: CapturedMail[];
  /** While set, every message is refused with this reply code (e.g. 451, 550). */
  refuseWith: number | null;
  /** The messages refused so (by `refuseWith`). */
  refusedMessages: CapturedMail[];
  /** Each message is answered this much later (a slow server, to stop a sender mid-batch). */
  delayMs: number;
  /** Recipients refused at RCPT TO with 550 (the message goes to the others). */
  refuseRecipients: string[];
  /** Recipients deferred at RCPT TO with `450 4.2.0 Greylisted` (the message goes to the others). */
  deferRecipients: string[];
  /** While set, a message's data is taken and never answered (a hung server); it lands in `hung`. */
  hang: boolean;
  /** The messages taken while hanging, never answered (so never accepted). */
  hung: CapturedMail[];
  stop(): Promise<void>;
  start(): Promise<void>;
  close(): Promise<void>;
}

function header(raw: string, name: string): string {
  const head = raw.split(/\r?\n\r?\n/)[0] ?? '';
  const unfolded = head.replace(/\r?\n[ \t]+/g, ' ');
  const m = new RegExp(`^${name}:\\s*(.*)$`, 'im').exec(unfolded);
  return m?.[1]?.trim() ?? '';
}

function decodeQuotedPrintable(s: string): string {
  return s.replace(/=\r?\n/g, '').replace(/=([0-9A-F]{2})/g, (_, h: string) => String.fromCharCode(parseInt(h, 16)));
}

/** `port`: 0 for any free one. */
export async function startTestSmtp(port = 0): Promise<TestSmtp> {
  let server: SMTPServer | null = null;
  const smtp: TestSmtp = {
    url: '',
    port,
    messages: [],
    refuseWith: null,
    refusedMessages: [],
    delayMs: 0,
    refuseRecipients: [],
    deferRecipients: [],
    hang: false,
    hung: [],
    async start() {
      server = new SMTPServer({
        secure: false,
        authOptional: true,
        disabledCommands: ['STARTTLS'],
        logger: false,
        onRcptTo(address, _session, callback) {
          if (smtp.deferRecipients.includes(address.address.toLowerCase())) {
            const err = new Error('4.2.0 Greylisted, please try again later') as Error & { responseCode: number };
            err.responseCode = 450;
            return callback(err);
          }
          if (!smtp.refuseRecipients.includes(address.address.toLowerCase())) return callback();
          const err = new Error(`no mailbox ${address.address} here`) as Error & { responseCode: number };
          err.responseCode = 550;
          callback(err);
        },
        onData(stream, session, callback) {
          let raw = '';
          stream.setEncoding('utf8');
          stream.on('data', (d: string) => (raw += d));
          stream.on('end', async () => {
            const mail: CapturedMail = {
              to: session.envelope.rcptTo.map((r) => r.address),
              subject: header(raw, 'Subject'),
              messageId: header(raw, 'Message-ID'),
              body: decodeQuotedPrintable(raw),
              raw,
            };
            if (smtp.hang) {
              smtp.hung.push(mail);
              return;
            }
            if (smtp.delayMs > 0) await new Promise((r) => setTimeout(r, smtp.delayMs));
            if (smtp.refuseWith !== null) {
              const err = new Error(`refused by the test server (${smtp.refuseWith})`) as Error & { responseCode: number };
              err.responseCode = smtp.refuseWith;
              smtp.refusedMessages.push(mail);
              callback(err);
              return;
            }
            smtp.messages.push(mail);
            callback();
          });
        },
      });
      await new Promise<void>((resolve, reject) => {
        server!.once('error', reject);
        server!.listen(smtp.port, '127.0.0.1', () => resolve());
      });
      smtp.port = (server.server.address() as AddressInfo).port;
      smtp.url = `smtp://127.0.0.1:${smtp.port}`;
    },
    async stop() {
      const s = server;
      server = null;
      if (s) await new Promise<void>((resolve) => s.close(() => resolve()));
    },
    async close() {
      await smtp.stop();
    },
  };
  await smtp.start();
  return smtp;
}

/** Polls until `check` returns a value that is not undefined/false (generous: a busy 2-core machine). */
export async function eventually<T>(
  check: () => T | Promise<T>,
  what: string,
  timeoutMs = 30_000,
): Promise<Exclude<T, false | undefined | null>> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined && value !== false && value !== null) return value as Exclude<T, false | undefined | null>;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${(last as Error).message}` : ''}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
