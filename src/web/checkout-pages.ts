// The HTML of the checkout pages tollgate serves itself: the sandbox's hosted checkout (amount,
// bonus, credits; Pay and Cancel), clearly marked as a test processor, and the status page a
// customer lands on after a checkout (the default success and cancel URL). Plain HTML, no script.
import { formatMoney } from '../domain/payments/amounts.js';
import type { TopUpView } from '../domain/payments/payments-service.js';

const STYLE = `
  body { font: 16px/1.5 system-ui, sans-serif; max-width: 32rem; margin: 2rem auto; padding: 0 1rem; color: #1b1b1b; }
  .test { border: 3px dashed #b00020; background: #fff4f4; color: #7a0016; padding: .75rem 1rem; border-radius: .5rem; }
  .test strong { display: block; font-size: 1.1rem; letter-spacing: .04em; }
  table { width: 100%; border-collapse: collapse; margin: 1.25rem 0; }
  th { text-align: left; font-weight: normal; color: #555; }
  td { text-align: right; font-variant-numeric: tabular-nums; }
  th, td { padding: .35rem 0; border-bottom: 1px solid #eee; }
  tr.total th, tr.total td { font-weight: 600; color: #1b1b1b; border-bottom: none; }
  .actions { display: flex; gap: .75rem; }
  button { font: inherit; padding: .6rem 1.2rem; border-radius: .4rem; border: 1px solid #888; background: #fff; cursor: pointer; }
  button.pay { background: #1b5e20; color: #fff; border-color: #1b5e20; }
  .state { font-weight: 600; }
  .muted { color: #666; font-size: .9rem; }
  .back { display: inline-block; margin-top: 1rem; }
`;

/** A date in words, e.g. "27 November 2026 at 13:20 UTC". */
export function dateInWords(d: Date): string {
  return `${new Intl.DateTimeFormat('en-GB', { dateStyle: 'long', timeStyle: 'short', timeZone: 'UTC' }).format(d)} UTC`;
}

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

function page(title: string, body: string, opts: { refreshSeconds?: number } = {}): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
${opts.refreshSeconds ? `<meta http-equiv="refresh" content="${opts.refreshSeconds}">` : ''}
<title>${escapeHtml(title)}</title>
<style>${STYLE}</style>
</head>
<body>
${body}
</body>
</html>
`;
}

function amounts(t: TopUpView, balance: bigint | null = null): string {
  const bonus = t.bonus > 0n ? `+${formatMoney(t.bonus)} ${t.currency} (${escapeHtml(t.bonusPercent)}%)` : 'none';
  const paid = t.status === 'paid';
  // Once paid, the page says what happened rather than what is to come.
  return `<table>
<tr><th>${paid ? 'Paid' : 'Amount to pay'}</th><td data-field="amount">${formatMoney(t.amount)} ${escapeHtml(t.currency)}</td></tr>
<tr><th>Bonus</th><td data-field="bonus">${bonus}</td></tr>
<tr class="total"><th>${paid ? 'Credited to your wallet' : 'Credits added to your wallet'}</th><td data-field="credits">${formatMoney(t.credits)} ${escapeHtml(t.currency)}</td></tr>
${paid && balance !== null ? `<tr class="total"><th>Your wallet's balance now</th><td data-field="balance">${formatMoney(balance)} ${escapeHtml(t.currency)}</td></tr>` : ''}
</table>`;
}

function backLink(href: string): string {
  return `<p><a class="back" href="${escapeHtml(href)}">← Back to your account</a></p>`;
}

const TEST_BANNER = `<div class="test" role="alert"><strong>TEST PROCESSOR — NO REAL MONEY</strong>
This is tollgate's sandbox checkout. No card is charged: paying here adds credits for free. An operator must never run it in production.</div>`;

const STATE_TEXT: Record<TopUpView['status'], string> = {
  open: 'Waiting for payment',
  paid: 'Paid — the credits are in your wallet',
  expired: 'Expired — this checkout can no longer be paid',
  canceled: 'Canceled — nothing was charged',
  failed: 'Failed — nothing was credited',
};

/** The sandbox's hosted checkout: `actionBase` is the page's own path, the buttons post to `{actionBase}/complete` and `/cancel`. */
export function sandboxCheckoutPage(t: TopUpView, actionBase: string): string {
  const id = escapeHtml(t.id);
  const open = t.status === 'open';
  const actions = open
    ? `<div class="actions">
<form method="post" action="${escapeHtml(actionBase)}/complete"><button class="pay" type="submit">Pay ${formatMoney(t.amount)} ${escapeHtml(t.currency)} (simulated)</button></form>
<form method="post" action="${escapeHtml(actionBase)}/cancel"><button type="submit">Cancel</button></form>
</div>
${t.expiresAt ? `<p class="muted">This checkout can be paid until <time datetime="${t.expiresAt.toISOString()}">${escapeHtml(dateInWords(t.expiresAt))}</time>.</p>` : ''}`
    : '';
  return page(
    'Sandbox checkout (test processor)',
    `${TEST_BANNER}
<h1>Top up your wallet</h1>
${amounts(t)}
<p>Status: <span class="state" data-field="status" data-status="${t.status}">${escapeHtml(STATE_TEXT[t.status])}</span></p>
${actions}
<p class="muted">Checkout ${id}</p>`,
  );
}

/**
 * Where a customer lands after a checkout (any processor): its state, refreshed while the payment
 * is being confirmed; once paid, what was paid and credited and the wallet's new balance.
 */
export function checkoutStatusPage(t: TopUpView, opts: { simulated: boolean; balance: bigint | null; backUrl: string }): string {
  const waiting = t.status === 'open';
  const when =
    t.status === 'paid' && t.settledAt
      ? `<p class="muted">Paid on <time datetime="${t.settledAt.toISOString()}">${escapeHtml(dateInWords(t.settledAt))}</time>.</p>`
      : waiting && t.expiresAt
        ? `<p class="muted">This checkout can be paid until <time datetime="${t.expiresAt.toISOString()}">${escapeHtml(dateInWords(t.expiresAt))}</time>.</p>`
        : '';
  return page(
    t.status === 'paid' ? 'Top-up paid' : 'Top-up status',
    `${opts.simulated ? TEST_BANNER : ''}
<h1>${t.status === 'paid' ? 'Thank you: your wallet is topped up' : 'Wallet top-up'}</h1>
${amounts(t, opts.balance)}
<p>Status: <span class="state" data-field="status" data-status="${t.status}">${escapeHtml(STATE_TEXT[t.status])}</span></p>
${when}
${waiting ? '<p class="muted">If you just paid, the payment is being confirmed: this page refreshes by itself, and the credits appear within moments.</p>' : ''}
${backLink(opts.backUrl)}
<p class="muted">Checkout ${escapeHtml(t.id)}</p>`,
    { refreshSeconds: waiting ? 3 : undefined },
  );
}

/** An error as a page of its own, styled like the others; a 404 says the checkout is unknown. */
export function errorPage(status: number, message: string, backUrl?: string): string {
  const [title, text] =
    status === 404
      ? [
          'Checkout not found',
          'There is no checkout at this address. Check the link you followed, or start a new top-up from your account.',
        ]
      : [status >= 500 ? 'Something went wrong' : 'This request could not be completed', message];
  return page(
    title,
    `<h1>${escapeHtml(title)}</h1>\n<p>${escapeHtml(text)}</p>\n<p class="muted">Error ${status}</p>\n${backUrl ? backLink(backUrl) : ''}`,
  );
}
