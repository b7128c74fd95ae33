// One template per notification kind: the subject (its words are part of the contract, see the
// README's alert table), a plain-text body and an HTML body, amounts in the account's currency
// with two decimals, and a link to PUBLIC_URL. Pure functions of the notification's payload.
import { formatDecimal, parseDecimal, WALLET_CURRENCY } from '../domain/billing/money.js';
import type { NotificationKind } from '../domain/notifications/outbox.js';

export interface RenderedMail {
  subject: string;
  text: string;
  html: string;
}

export interface TemplateContext {
  publicUrl: string;
  accountId: string;
}

type Payload = Record<string, unknown>;

/**
 * A decimal (as the payload keeps it) in currency units, exact, with at least two decimals:
 * "12.5" → "12.50 USD", "9.998624" → "9.998624 USD" (as the API, the CLI and the dashboard show
 * it: usage is charged in fractions of a cent, and rounding made a 0.003 limit read 0.00).
 */
export function money(value: unknown, currency: unknown = WALLET_CURRENCY): string {
  const cur = typeof currency === 'string' && currency ? currency.toUpperCase() : WALLET_CURRENCY;
  let nanos: bigint;
  try {
    nanos = parseDecimal(typeof value === 'number' || typeof value === 'bigint' ? value : String(value ?? '0'));
  } catch {
    return `${String(value)} ${cur}`;
  }
  const [whole, fraction = ''] = formatDecimal(nanos).split('.');
  return `${whole}.${fraction.padEnd(2, '0')} ${cur}`;
}

/** An instant as the other mails write one, in UTC to the minute: "2026-11-26 14:00 UTC". */
function utcMinute(value: unknown): string {
  const d = new Date(String(value));
  return Number.isNaN(d.getTime()) ? String(value) : `${d.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

function tokens(value: unknown): string {
  const n = Number(value ?? 0);
  return Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : String(value);
}

interface Draft {
  subject: string;
  /** Paragraphs of the body. */
  lines: string[];
}

const TEMPLATES: Record<NotificationKind, (p: Payload) => Draft> = {
  low_balance: (p) => ({
    subject: `Low balance: your wallet is at ${money(p.balance, p.currency)}`,
    lines: [
      `Your wallet balance is ${money(p.balance, p.currency)}, below your low-balance alert of ${money(p.threshold, p.currency)}.`,
      'Top up the wallet to keep your API calls running: a paid call that the wallet cannot cover is refused (402).',
    ],
  }),
  allocation_80: (p) => ({
    subject: `80% of your monthly tokens are used (${p.period})`,
    lines: [
      `You have used ${tokens(p.used)} of your ${tokens(p.monthly_tokens)} monthly tokens for ${p.period}.`,
      'Once they are used up, calls are paid from your wallet (or refused on the free tier).',
    ],
  }),
  allocation_100: (p) => ({
    subject: `Monthly tokens used up (${p.period})`,
    lines: [
      // Written at a refused call when usage stopped just short of the allocation (see billing's alerts).
      p.refused
        ? `A call was refused: the ${tokens(p.left)} tokens left of your ${tokens(p.monthly_tokens)} monthly tokens for ${p.period} cannot cover it (${tokens(p.used)} used).`
        : `You have used all ${tokens(p.monthly_tokens)} monthly tokens of your allocation for ${p.period} (${tokens(p.used)} used).`,
      // The payload does not say the tier: true of both.
      'Until the next period, calls on the free tier are refused; on a paid tier they are paid from your wallet at the model prices.',
    ],
  }),
  spending_limit: (p) => {
    const reached = p.action === 'block';
    // Calls in progress hold wallet money too: at the first refusal of a burst, nothing may be spent yet.
    const held = p.held !== undefined && p.held !== null && p.held !== '0' ? money(p.held, p.currency) : null;
    return {
      // Blocking refuses a call that would pass the limit: the spend may still be just under it.
      subject: reached
        ? `Spending limit reached: calls past ${money(p.limit, p.currency)} refused (${money(p.spent, p.currency)} spent this month${held ? `, ${held} held by calls in progress` : ''})`
        : `Spending limit passed: ${money(p.spent, p.currency)} this month`,
      lines: [
        `Your usage spend for ${p.period} is ${money(p.spent, p.currency)}${held ? `, and calls in progress hold ${held} more` : ''}; your monthly spending limit is ${money(p.limit, p.currency)}.`,
        reached
          ? 'Calls the wallet would pay beyond the limit are refused (402 spending_limit_reached) until the next period or until you raise the limit.'
          : 'Your limit is set to alert only: calls keep running.',
      ],
    };
  },
  subscription_charged: (p) => ({
    subject: `Monthly fee charged: ${money(p.fee, p.currency)} for the ${p.tier} tier (${p.period})`,
    lines: [
      `The ${p.tier} tier's monthly fee of ${money(p.fee, p.currency)} for ${p.period} was charged to your wallet.`,
      `Balance after the fee: ${money(p.balance, p.currency)}.`,
    ],
  }),
  subscription_unpaid: (p) => ({
    subject: `Monthly fee failed: your account moved to the ${p.now_tier ?? 'free'} tier`,
    lines: [
      `The ${p.tier} tier's monthly fee of ${money(p.fee, p.currency)} for ${p.period} could not be paid: your wallet had ${money(p.available, p.currency)} available.`,
      `Your account is now on the ${p.now_tier ?? 'free'} tier. Top up the wallet, then take the ${p.tier} tier again.`,
    ],
  }),
  rate_limit_hits: (p) => ({
    subject: `Rate limit hit ${tokens(p.recent_hits)} times in ${Math.round(Number(p.window_seconds ?? 600) / 60)} minutes`,
    lines: [
      `Your API calls were refused for exceeding your rate limit ${tokens(p.recent_hits)} times in the last ${Math.round(Number(p.window_seconds ?? 600) / 60)} minutes (this alert fires above ${tokens(p.threshold)}).`,
      'Slow your calls down (the X-RateLimit-* headers say how much is left), or ask for a higher tier.',
    ],
  }),
  unusual_usage: (p) => ({
    subject: `Unusual usage: ${tokens(p.tokens)} tokens and ${money(p.spend, p.currency)} in the last hour`,
    lines: [
      `In the hour up to ${utcMinute(p.hour_end)}, your account used ${tokens(p.tokens)} tokens and spent ${money(p.spend, p.currency)} from its wallet.`,
      Number(p.usual_tokens ?? 0) === 0 && Number(p.usual_spend ?? 0) === 0
        ? 'The same hour on the previous 7 days used nothing (the median): an hour this large is unusual for the account.'
        : `The same hour on the previous 7 days used ${tokens(p.usual_tokens)} tokens and ${money(p.usual_spend, p.currency)} (the median): more than ${p.factor} times that is unusual.`,
      'If you did not expect this, check which API keys are in use and revoke any you do not recognise.',
    ],
  }),
  auto_topup_failed: (p) => ({
    subject: `Automatic top-up failed: ${money(p.amount, p.currency)}`,
    lines: [
      `An automatic top-up of ${money(p.amount, p.currency)} could not be charged: ${p.reason}.`,
      `Failed attempts in a row: ${p.consecutive_failures}. Check the card saved with your last checkout.`,
    ],
  }),
  auto_topup_disabled: (p) => ({
    subject: `Automatic top-up turned off after ${p.consecutive_failures} failures`,
    lines: [
      `An automatic top-up of ${money(p.amount, p.currency)} failed (${p.reason}), the ${ordinal(Number(p.consecutive_failures))} in a row, so automatic top-up is now turned off.`,
      'Pay a top-up at the checkout with a working card, then turn automatic top-up on again.',
    ],
  }),
  auto_topup_capped: (p) => ({
    subject: `Automatic top-up skipped: it would pass the monthly cap of ${money(p.max_monthly, p.currency)}`,
    lines: [
      `An automatic top-up of ${money(p.amount, p.currency)} was not started: automatic top-ups have added ${money(p.started, p.currency)} in ${p.period}, and this one would take that past the monthly cap of ${money(p.max_monthly, p.currency)}.`,
      'Top up at the checkout if your wallet needs more this month.',
    ],
  }),
  topup_reversed: (p) => {
    const cur = p.currency;
    const short =
      p.credits_taken !== p.credits_due
        ? [
            `Only ${money(p.credits_taken, cur)} of it could be taken back: the rest had already been spent or is held by calls in progress.`,
          ]
        : [];
    const balance = `New balance: ${money(p.balance, cur)}.`;
    const ref = `Top-up ${p.top_up_id} (payment ${p.payment_id}).`;
    if (p.cause === 'reinstated')
      return {
        subject: `Dispute resolved: ${money(p.credits_given, cur)} in credits given back`,
        lines: [
          `The dispute of your payment of ${money(p.payment_amount, cur)} is closed and its funds are reinstated, so the ${money(p.credits_given, cur)} in credits it took back are given back.`,
          ref,
          balance,
        ],
      };
    if (p.cause === 'dispute')
      return {
        subject: `Payment disputed: ${money(p.credits_taken, cur)} in credits taken back`,
        lines: [
          `Your payment of ${money(p.payment_amount, cur)} is disputed with your card's issuer and its funds were withdrawn, so the ${money(p.credits_due, cur)} in credits it bought (bonus included) are taken back from your wallet.`,
          ...short,
          ...(p.auto_topup_disabled
            ? ['Automatic top-up is turned off: turn it on again from the dashboard once the dispute is settled.']
            : []),
          "If the dispute is decided in the payment's favour, the credits are given back.",
          ref,
          balance,
        ],
      };
    return {
      subject: `Top-up refunded: ${money(p.credits_taken, cur)} in credits taken back`,
      lines: [
        `${money(p.payment_amount, cur)} of your payment was refunded, so the ${money(p.credits_due, cur)} in credits it bought (bonus included) are taken back from your wallet.`,
        ...short,
        ref,
        balance,
      ],
    };
  },
  receipt: (p) => {
    const auto = p.source === 'auto';
    const lines = [
      `${auto ? 'An automatic top-up' : 'Your top-up'} was paid. Thank you.`,
      `Amount paid: ${money(p.amount, p.currency)}`,
      `Bonus: ${money(p.bonus, p.currency)}`,
      `Credits added: ${money(p.credits, p.currency)}`,
      `New balance: ${money(p.balance, p.currency)}`,
      `Reference: ${p.top_up_id}${p.payment_id ? ` (payment ${p.payment_id})` : ''}`,
    ];
    return {
      subject: auto
        ? `Automatic top-up succeeded: Receipt for ${money(p.amount, p.currency)}`
        : `Receipt for your top-up of ${money(p.amount, p.currency)}`,
      lines,
    };
  },
};

/** The message of one notification. */
export function renderNotification(kind: NotificationKind, payload: Payload, ctx: TemplateContext): RenderedMail {
  const template = TEMPLATES[kind];
  const draft = template ? template(payload) : { subject: `Notification: ${kind}`, lines: [JSON.stringify(payload)] };
  // The dashboard's settings page, where the alerts are set (the server's root has no page).
  const link = `${ctx.publicUrl.replace(/\/+$/, '')}/dashboard/settings`;
  const footer = [
    `Your account: ${ctx.accountId}. Manage your alerts and wallet at ${link}`,
    'You get this e-mail because of your tollgate alert settings; every alert but receipts can be turned off.',
  ];
  const text = [...draft.lines, '', ...footer].join('\n\n').replace(/\n{3,}/g, '\n\n') + '\n';
  const html =
    '<!doctype html><html><body style="font-family:sans-serif;line-height:1.4">' +
    `<h2>${escapeHtml(draft.subject)}</h2>` +
    draft.lines.map((l) => `<p>${escapeHtml(l)}</p>`).join('') +
    `<hr><p style="color:#555;font-size:smaller">Your account: ${escapeHtml(ctx.accountId)}. Manage your alerts and wallet at <a href="${escapeHtml(link)}">${escapeHtml(link)}</a>.<br>` +
    'You get this e-mail because of your tollgate alert settings; every alert but receipts can be turned off.</p>' +
    '</body></html>';
  return { subject: draft.subject, text, html };
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

/** 1st, 2nd, 3rd, 4th, 11th, 12th, 13th, 21st… */
export function ordinal(n: number): string {
  const tens = n % 100;
  const suffix = tens >= 11 && tens <= 13 ? 'th' : (['th', 'st', 'nd', 'rd'][n % 10] ?? 'th');
  return `${n}${suffix}`;
}
