// The `payments:` section and the STRIPE_* environment: defaults, the production guard on the
// sandbox, Stripe's required secrets, bad values stopping start-up with the key named, and the
// start-up warning that payments are simulated.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, parseConfigText } from '../src/config.js';
import { closeServices, createServices } from '../src/container.js';

const dir = mkdtempSync(path.join(tmpdir(), 'tollgate-payments-config-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function load(yaml: string, env: Record<string, string> = {}) {
  const file = path.join(dir, `c-${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(file, yaml);
  return loadConfig({ CONFIG: file, DATABASE_URL: `sqlite:${path.join(dir, 'db.sqlite')}`, ...env });
}

function failure(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return (e as Error).message;
  }
  throw new Error('expected a ConfigError');
}

const STRIPE_ENV = { STRIPE_SECRET_KEY: 'sk_test_x', STRIPE_WEBHOOK_SECRET: 'whsec_x' };

describe('payments configuration', () => {
  it('defaults to the sandbox, the specification bonus table, 24-hour checkouts and no monthly cap', () => {
    const cfg = load('');
    expect(cfg.payments).toEqual({
      processor: 'sandbox',
      allow_sandbox: false,
      success_url: null,
      cancel_url: null,
      return_url: null,
      checkout_expires_after_minutes: 1440,
      bonus_table: [
        { min_amount: 50, percent: 5 },
        { min_amount: 100, percent: 10 },
        { min_amount: 250, percent: 15 },
      ],
      auto_topup: { max_monthly: null, max_consecutive_failures: 3, retry_after_seconds: 300 },
      sales_contact: null,
    });
    expect(cfg.stripe).toBeNull();
  });

  it('refuses the sandbox with NODE_ENV=production unless payments.allow_sandbox is true', () => {
    expect(failure(() => load('', { NODE_ENV: 'production' }))).toMatch(
      /payments\.processor: the sandbox .* NODE_ENV=production.*allow_sandbox: true/,
    );
    expect(load('payments: { allow_sandbox: true }', { NODE_ENV: 'production' }).payments.processor).toBe('sandbox');
    expect(load('payments: { processor: stripe }', { NODE_ENV: 'production', ...STRIPE_ENV }).stripe).toEqual({
      secretKey: 'sk_test_x',
      webhookSecret: 'whsec_x',
      apiBase: null,
    });
  });

  it('needs STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET with the stripe processor, and an origin-only STRIPE_API_BASE', () => {
    expect(failure(() => load('payments: { processor: stripe }', { STRIPE_WEBHOOK_SECRET: 'whsec_x' }))).toMatch(
      /^STRIPE_SECRET_KEY: required/,
    );
    expect(failure(() => load('payments: { processor: stripe }', { STRIPE_SECRET_KEY: 'sk_test_x' }))).toMatch(
      /^STRIPE_WEBHOOK_SECRET: required/,
    );
    // Swapped, or not Stripe's at all: refused at start, not at the first top-up.
    expect(
      failure(() => load('payments: { processor: stripe }', { STRIPE_SECRET_KEY: 'whsec_x', STRIPE_WEBHOOK_SECRET: 'sk_test_x' })),
    ).toMatch(
      /^STRIPE_SECRET_KEY: a Stripe secret key starts sk_live_, sk_test_ .*got whsec_… \(the webhook signing secret: the two are swapped\?\)/,
    );
    expect(
      failure(() => load('payments: { processor: stripe }', { STRIPE_SECRET_KEY: 'sk_test_x', STRIPE_WEBHOOK_SECRET: 'pk_test_x' })),
    ).toMatch(/^STRIPE_WEBHOOK_SECRET: a webhook signing secret starts whsec_; got pk_tes…$/);
    expect(failure(() => load('payments: { processor: stripe }', { ...STRIPE_ENV, STRIPE_API_BASE: 'http://127.0.0.1:1/v1' }))).toMatch(
      /STRIPE_API_BASE: .*without a path/,
    );
    expect(load('payments: { processor: stripe }', { ...STRIPE_ENV, STRIPE_API_BASE: 'http://127.0.0.1:12111' }).stripe?.apiBase).toBe(
      'http://127.0.0.1:12111',
    );
  });

  it('names the key of a bad payments value', () => {
    const bad = (yaml: string) => failure(() => parseConfigText(yaml, 'test.yaml'));
    expect(bad('payments: { processor: paypal }')).toMatch(/payments\.processor/);
    expect(bad('payments: { bonus_table: [{ min_amount: 100, percent: 10 }, { min_amount: 50, percent: 5 }] }')).toMatch(
      /payments\.bonus_table.*increasing order/,
    );
    expect(bad('payments: { bonus_table: [{ min_amount: 50, percent: 120 }] }')).toMatch(/payments\.bonus_table\.0\.percent/);
    expect(bad('payments: { checkout_expires_after_minutes: 10 }')).toMatch(/payments\.checkout_expires_after_minutes/);
    expect(bad('payments: { success_url: "not a url" }')).toMatch(/payments\.success_url/);
    expect(bad('payments: { auto_topup: { max_monthly: -5 } }')).toMatch(/payments\.auto_topup\.max_monthly/);
    expect(bad('payments: { colour: blue }')).toMatch(/payments: unknown key "colour"/);
    expect(bad('payments: { sales_contact: "call Bob" }')).toMatch(
      /payments\.sales_contact: .*e-mail address, a mailto: URL or an http\(s\) URL/,
    );
    expect(bad('payments: { sales_contact: "ftp://sales.example.com" }')).toMatch(/payments\.sales_contact/);
    // An e-mail address is read as a mailto: URL; URLs are kept.
    expect(parseConfigText('payments: { sales_contact: " sales@acme.example " }', 't').payments.sales_contact).toBe(
      'mailto:sales@acme.example',
    );
    expect(parseConfigText('payments: { sales_contact: "https://acme.example/sales" }', 't').payments.sales_contact).toBe(
      'https://acme.example/sales',
    );
    expect(parseConfigText('payments: { bonus_table: [] , auto_topup: { max_monthly: 200 } }', 't').payments).toMatchObject({
      bonus_table: [],
      auto_topup: { max_monthly: 200 },
    });
  });

  it('warns at start-up that the sandbox simulates payments', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _enc, done) {
        lines.push(String(chunk));
        done();
      },
    });
    const cfg = load('');
    const services = await createServices(cfg, pino({ level: 'info' }, sink));
    try {
      const warning = lines.map((l) => JSON.parse(l) as { level: number; msg: string }).find((l) => /SANDBOX/.test(l.msg));
      expect(warning?.level).toBe(40);
      expect(warning?.msg).toMatch(/payments are simulated/);
    } finally {
      await closeServices(services);
    }
  });
});
