// The mail environment and the `alerts:` config: where .eml files go without SMTP_URL, and
// start-up refusing a wrong SMTP_URL, MAIL_FROM or alerts key with a message naming it.
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { readMailEnv } from '../src/config-alerts.js';
import { parseConfigText } from '../src/config.js';
import { ordinal, renderNotification } from '../src/mail/templates.js';

describe('mail and alerts configuration', () => {
  it('writes .eml files beside the SQLite file, in ./data/mail for PostgreSQL, or in MAIL_DIR', () => {
    expect(readMailEnv({}, 'sqlite:./data/tollgate.db').dir).toBe(path.resolve('data/mail'));
    expect(readMailEnv({}, 'sqlite:///var/lib/tollgate/t.db').dir).toBe('/var/lib/tollgate/mail');
    expect(readMailEnv({}, 'postgres://u@db:5432/t').dir).toBe(path.resolve('data/mail'));
    expect(readMailEnv({ MAIL_DIR: '/tmp/x' }, 'sqlite:a.db').dir).toBe('/tmp/x');
    expect(readMailEnv({}, 'sqlite:a.db').smtpUrl).toBeNull();
  });

  it('refuses an SMTP_URL that is not smtp:// or smtps://, and a MAIL_FROM without an address', () => {
    expect(readMailEnv({ SMTP_URL: 'smtps://u:p@smtp.example.com:465' }, 'sqlite:a.db').smtpUrl).toBe('smtps://u:p@smtp.example.com:465');
    expect(() => readMailEnv({ SMTP_URL: 'http://smtp.example.com' }, 'sqlite:a.db')).toThrow(/SMTP_URL: the scheme must be smtp/);
    expect(() => readMailEnv({ SMTP_URL: 'not a url' }, 'sqlite:a.db')).toThrow(/SMTP_URL/);
    expect(() => readMailEnv({ MAIL_FROM: 'Tollgate' }, 'sqlite:a.db')).toThrow(/MAIL_FROM/);
  });

  it('reads alerts.unusual_usage and alerts.delivery with their defaults, and names a wrong key', () => {
    const defaults = parseConfigText('', 'test.yaml').alerts;
    expect(defaults.unusual_usage).toMatchObject({ factor: 5, min_tokens: 100_000, min_spend: 1 });
    expect(defaults.delivery).toMatchObject({ max_attempts: 10, poll_interval_ms: 1000 });
    expect(
      parseConfigText('alerts:\n  unusual_usage: { factor: 3, min_tokens: 5000, min_spend: 0.5 }\n', 'test.yaml').alerts.unusual_usage,
    ).toMatchObject({ factor: 3, min_tokens: 5000, min_spend: 0.5 });
    expect(() => parseConfigText('alerts:\n  unusual_usage: { factor: 0.5 }\n', 'test.yaml')).toThrow(/alerts\.unusual_usage\.factor/);
    expect(() => parseConfigText('alerts:\n  delivery: { poll_interval_ms: 5000 }\n', 'test.yaml')).toThrow(
      /alerts\.delivery\.poll_interval_ms/,
    );
  });

  it('refuses a timer interval longer than Node.js keeps one (it would fire every millisecond), naming the key', () => {
    const long = 30 * 86_400;
    expect(() => parseConfigText(`alerts:\n  unusual_usage: { check_interval_seconds: ${long} }\n`, 'test.yaml')).toThrow(
      /alerts\.unusual_usage\.check_interval_seconds: at most 2147483/,
    );
    expect(() => parseConfigText(`billing:\n  sweep_interval_seconds: ${long}\n`, 'test.yaml')).toThrow(
      /billing\.sweep_interval_seconds: at most 2147483/,
    );
    expect(parseConfigText('billing:\n  sweep_interval_seconds: 2147483\n', 'test.yaml').billing.sweep_interval_seconds).toBe(2_147_483);
  });

  it("says a blocking spending limit refuses calls past it, whatever the month's spend reads (just under it, when the next call would pass it)", () => {
    const mail = renderNotification(
      'spending_limit',
      { period: '2026-11', spent: '0.001926', limit: '0.002', action: 'block', currency: 'USD' },
      { publicUrl: 'https://tollgate.example', accountId: 'acct_x' },
    );
    expect(mail.subject).toBe('Spending limit reached: calls past 0.002 USD refused (0.001926 USD spent this month)');
    // Refused while calls in progress held the rest (a burst): the mail says so, not "0.00 USD spent" alone.
    const burst = renderNotification(
      'spending_limit',
      { period: '2026-11', spent: '0', held: '0.288', limit: '0.3', action: 'block', currency: 'USD' },
      { publicUrl: 'https://tollgate.example', accountId: 'acct_x' },
    );
    expect(burst.subject).toBe(
      'Spending limit reached: calls past 0.30 USD refused (0.00 USD spent this month, 0.288 USD held by calls in progress)',
    );
    expect(burst.text).toContain('Your usage spend for 2026-11 is 0.00 USD, and calls in progress hold 0.288 USD more;');
  });

  it('words the cap, the used-up allocation and unusual usage so they are true (and English)', () => {
    const render = (kind: Parameters<typeof renderNotification>[0], p: Record<string, unknown>) =>
      renderNotification(kind, p, { publicUrl: 'https://tollgate.example', accountId: 'acct_x' });
    // 20 of 25 added: the cap is not reached, the next top-up would pass it.
    const capped = render('auto_topup_capped', { period: '2026-11', max_monthly: '25', started: '20', amount: '10', currency: 'USD' });
    expect(capped.subject).toBe('Automatic top-up skipped: it would pass the monthly cap of 25.00 USD');
    expect(capped.text).toContain('have added 20.00 USD in 2026-11, and this one would take that past the monthly cap of 25.00 USD');
    const usedUp = render('allocation_100', { period: '2026-11', monthly_tokens: 2000, used: 2000 });
    expect(usedUp.subject).toBe('Monthly tokens used up (2026-11)');
    // Whatever the tier: a free account's calls are not paid from its wallet.
    expect(usedUp.text).toContain('calls on the free tier are refused; on a paid tier they are paid from your wallet');
    const spike = (usual: number) =>
      render('unusual_usage', {
        hour_end: '2026-11-26T14:00:07.123Z',
        tokens: 150000,
        spend: '0',
        usual_tokens: usual,
        usual_spend: '0',
        factor: 5,
        currency: 'USD',
      }).text;
    expect(spike(0)).toContain('In the hour up to 2026-11-26 14:00 UTC,');
    expect(spike(0)).not.toContain('.123Z');
    expect(spike(0)).toContain('The same hour on the previous 7 days used nothing');
    expect(spike(0)).not.toContain('times that');
    expect(spike(1000)).toContain('used 1,000 tokens and 0.00 USD (the median): more than 5 times that is unusual');
  });

  it('writes ordinals as English does (the automatic top-up mail: "the 3rd in a row")', () => {
    expect([1, 2, 3, 4, 11, 12, 13, 21, 22, 23, 101, 111].map(ordinal)).toEqual([
      '1st',
      '2nd',
      '3rd',
      '4th',
      '11th',
      '12th',
      '13th',
      '21st',
      '22nd',
      '23rd',
      '101st',
      '111th',
    ]);
  });
});
