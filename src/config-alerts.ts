// The `alerts:` section of config.yaml (unusual-usage detection, e-mail delivery) and the mail
// environment (SMTP_URL, MAIL_FROM, MAIL_DIR), parsed once at start-up with the rest of the
// configuration (src/config.ts). A bad value stops start-up naming its key.
import path from 'node:path';
import { z } from 'zod';
import { parseDecimal, refineAmount } from './domain/billing/money.js';

const money = z.number().nonnegative().superRefine(refineAmount);

/** The longest interval Node.js keeps for a timer (2^31 - 1 ms); a longer one fires every millisecond. */
export const MAX_TIMER_SECONDS = 2_147_483;
export const TIMER_TOO_LONG = `at most ${MAX_TIMER_SECONDS} (about 24.8 days, the longest interval a timer keeps)`;

const unusualUsageSchema = z.strictObject({
  /** The last hour counts as unusual when it is more than `factor` times the usual (the median of the same hour on the previous 7 days). */
  factor: z.number().min(1).default(5),
  /** Floor: an hour under this many tokens is never unusual on tokens (a new account's first busy hour). */
  min_tokens: z.number().int().nonnegative().default(100_000),
  /** Floor: an hour under this much wallet money spent is never unusual on spend. */
  min_spend: money.default(1),
  /** How often every account's last hour is checked. */
  check_interval_seconds: z.number().positive().max(MAX_TIMER_SECONDS, TIMER_TOO_LONG).default(300),
  /** false: no detection at all. */
  enabled: z.boolean().default(true),
});

const deliverySchema = z.strictObject({
  /** Tries before a message is kept as failed (`tollgate mail status`, `tollgate mail retry`). */
  max_attempts: z.number().int().positive().default(10),
  /** Wait after the first failed try; doubled after each further one, up to max_backoff_seconds. */
  backoff_seconds: z.number().positive().default(10),
  max_backoff_seconds: z.number().positive().default(3600),
  /** How often the outbox is looked at for new messages (a new alert goes out within about this). */
  poll_interval_ms: z.number().int().positive().max(1000).default(1000),
  /** How long an instance owns the messages it took; past it, another instance may send them. Longer than one SMTP exchange. */
  lease_seconds: z.number().positive().default(120),
  /** Messages taken at a time. */
  batch_size: z.number().int().positive().max(500).default(20),
});

// prefault: a section left out is parsed as {}, so the defaults above are written once.
export const alertsSchema = z
  .strictObject({
    unusual_usage: unusualUsageSchema.prefault({}),
    delivery: deliverySchema.prefault({}),
  })
  .prefault({});

export type AlertsSettings = z.infer<typeof alertsSchema>;
export type UnusualUsageSettings = AlertsSettings['unusual_usage'];
export type DeliverySettings = AlertsSettings['delivery'];

export interface MailEnv {
  /** SMTP_URL (smtp:// or smtps://, credentials in the URL); null: messages are written as .eml files into `dir`. */
  smtpUrl: string | null;
  /** MAIL_FROM: the sender, e.g. "Tollgate <alerts@example.com>". */
  from: string;
  /** Where .eml files go without SMTP_URL: MAIL_DIR, else mail/ beside the SQLite file, else ./data/mail. */
  dir: string;
}

/** Reads SMTP_URL, MAIL_FROM and MAIL_DIR; throws with the variable's name when one is wrong. */
export function readMailEnv(env: NodeJS.ProcessEnv, databaseUrl: string): MailEnv {
  const smtpUrl = env.SMTP_URL?.trim() || null;
  if (smtpUrl) {
    let parsed: URL;
    try {
      parsed = new URL(smtpUrl);
    } catch {
      throw new Error('SMTP_URL: not a URL; use smtp://user:password@host:587 or smtps://user:password@host:465');
    }
    if (parsed.protocol !== 'smtp:' && parsed.protocol !== 'smtps:')
      throw new Error(`SMTP_URL: the scheme must be smtp:// or smtps://, not ${parsed.protocol}//`);
    if (!parsed.hostname) throw new Error('SMTP_URL: no host');
  }
  const from = env.MAIL_FROM?.trim() || 'Tollgate <tollgate@localhost>';
  if (!/@[^\s@>]+/.test(from)) throw new Error(`MAIL_FROM: not an e-mail address: ${from}`);
  return { smtpUrl, from, dir: path.resolve(env.MAIL_DIR?.trim() || mailDirBeside(databaseUrl)) };
}

/** mail/ beside the SQLite file (sqlite:./data/tollgate.db → ./data/mail); ./data/mail for any other database. */
function mailDirBeside(databaseUrl: string): string {
  const value = databaseUrl.trim();
  if (/^postgres(ql)?:\/\//i.test(value)) return './data/mail';
  let file = value.replace(/^sqlite:/i, '');
  if (file.startsWith('//')) file = file.slice(2);
  if (!file || file === ':memory:') return './data/mail';
  return path.join(path.dirname(file), 'mail');
}

/** Nanos of a money setting (alerts.unusual_usage.min_spend). */
export const moneyNanos = (n: number): bigint => parseDecimal(n);
