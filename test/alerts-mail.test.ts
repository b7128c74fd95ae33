// Alerts that reach people, through the running server and a real SMTP server on loopback: each
// alert is e-mailed to the account and its extra recipients with its subject and amounts; an
// alert turned off is not; SMTP down → the message waits and arrives once; tries used up → kept
// as failed, visible and retried from the CLI; no SMTP_URL → .eml files; the feed on GraphQL.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../src/cli.js';
import { closeDatabase, openDatabase } from '../src/db/orm.js';
import { billingDatabase, rows } from '../src/domain/billing/sql.js';
import { enqueueNotification } from '../src/domain/notifications/outbox.js';
import { createTestDatabase, type TestDatabase } from './support/databases.js';
import { ADMIN_TOKEN, catalogYaml, chatModelYaml, startTestServer, type TestServer } from './support/harness.js';
import { client, credit, seed, signedIn } from './support/seed.js';
import { eventually, startTestSmtp, type CapturedMail, type TestSmtp } from './support/smtp.js';

// chat-alert bills only output tokens, 0.10 USD each: every charge is a whole number of cents.
const YAML = (
  u: string,
  maxAttempts = 3,
) => `${chatModelYaml(u, { id: 'chat-alert', inputPrice: '0', outputPrice: '100000', maxOutputTokens: 256, timeoutMs: 10000 })}tiers:
  developer: { monthly_tokens: 100 }
  startup: { monthly_fee: 5 }
  enterprise: { rpm: 1 }
rate_limits:
  alert_threshold: 1
alerts:
  unusual_usage: { factor: 3, min_tokens: 100, min_spend: 100 }
  delivery: { poll_interval_ms: 100, backoff_seconds: 0.2, max_backoff_seconds: 0.5, max_attempts: ${maxAttempts} }
`;

const chat = (s: TestServer, apiKey: string, tokens: number) =>
  fetch(`${s.v1}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'chat-alert', messages: [{ role: 'user', content: `go #tokens=${tokens}` }], max_tokens: tokens }),
  }).then(async (r) => (await r.arrayBuffer(), r.status));

const emailOf = async (s: TestServer, apiKey: string): Promise<string> =>
  (await s.graphql('{ viewer { email } }', {}, apiKey)).body.data.viewer.email;

const SETTINGS =
  'mutation($i: AlertSettingsInput!) { updateAlertSettings(input: $i) { lowBalance allocation80 allocation100 spendingLimit rateLimit unusualUsage autoTopup monthlyFee receipt extraRecipients } }';

function mailTo(smtp: TestSmtp, address: string, subject: string): CapturedMail[] {
  return smtp.messages.filter((m) => m.to.includes(address) && m.subject.includes(subject));
}

describe('e-mail alerts through a real SMTP server', () => {
  let smtp: TestSmtp;
  let s: TestServer;
  beforeAll(async () => {
    smtp = await startTestSmtp();
    s = await startTestServer({
      env: { SMTP_URL: smtp.url, MAIL_FROM: 'Tollgate <alerts@tollgate.test>' },
      yaml: (u) => catalogYaml(u, YAML(u)),
    });
  });
  afterAll(async () => {
    await s?.close();
    await smtp?.close();
  });

  it('each alert reaches the account and its extra recipients, with its subject and the amounts in its body', async () => {
    const a = await seed(s).account({ tier: 'developer' });
    const c = client(s, a.apiKey);
    const owner = await emailOf(s, a.apiKey);
    const extras = ['ops@example.com', 'cfo@example.org'];
    const signed = await signedIn(s, a.id);
    expect((await signed.graphql(SETTINGS, { i: { extraRecipients: extras } })).body.data.updateAlertSettings.extraRecipients).toEqual(
      extras,
    );
    await credit(s, a.id, '5.50');
    expect((await signed.graphql('mutation { setLowBalanceAlert(threshold: "5") { lowBalanceAlert } }')).body.data).toBeTruthy();
    expect(
      (
        await signed.graphql(
          'mutation { updateSpendingLimit(input: { enabled: true, monthlyLimit: "1", action: alert }) { spendingLimit { enabled } } }',
        )
      ).body.data,
    ).toBeTruthy();

    // 1st call: within the 100-token allocation. 2nd: past 80% and 100% at once (only "used up" is mailed); the rest paid from the wallet.
    expect(await chat(s, a.apiKey, 50)).toBe(200);
    expect(await chat(s, a.apiKey, 50)).toBe(200);
    const balance = await c.balance();
    const spent = (5.5 - Number(balance)).toFixed(2);
    expect(Number(spent)).toBeGreaterThanOrEqual(1);

    // A paid checkout top-up: the receipt.
    const started = await c.graphql('mutation($a: Decimal!) { topUp(amount: $a) { id checkoutUrl } }', { a: '50' });
    const paid = await fetch(`${started.body.data.topUp.checkoutUrl}/complete`, {
      method: 'POST',
      headers: { accept: 'application/json' },
    });
    expect(paid.status).toBe(200);
    const after = await c.balance();

    // Unusual usage: 100+ tokens in the last hour against nothing on the previous days.
    const spikes = await s.services.alerts.unusualUsage.check();
    expect(spikes.map((x) => x.accountId)).toContain(a.id);

    // Payments' alerts as their producers write them (their triggers are tested in auto-topup.test.ts).
    const db = s.services.billing.db;
    const now = new Date();
    await enqueueNotification(db, {
      accountId: a.id,
      kind: 'auto_topup_failed',
      dedupeKey: `t1:${a.id}`,
      payload: { top_up_id: 'atu_1', amount: '25.00', currency: 'USD', reason: 'card declined', consecutive_failures: 1 },
      now,
    });
    await enqueueNotification(db, {
      accountId: a.id,
      kind: 'auto_topup_disabled',
      dedupeKey: `t2:${a.id}`,
      payload: { top_up_id: 'atu_2', amount: '25.00', currency: 'USD', reason: 'card declined', consecutive_failures: 3, disabled: true },
      now,
    });
    await enqueueNotification(db, {
      accountId: a.id,
      kind: 'auto_topup_capped',
      dedupeKey: `t3:${a.id}`,
      payload: { period: '2026-11', max_monthly: '100.00', started: '100.00', amount: '25.00', currency: 'USD' },
      now,
    });

    const expected: [string, string[]][] = [
      ['Low balance', [`${(5.5 - Number(spent)).toFixed(2)} USD`, '5.00 USD']],
      ['Monthly tokens used up', ['all 100 monthly tokens']],
      ['Spending limit', [`${spent} USD`, '1.00 USD']],
      [
        'Receipt',
        ['Amount paid: 50.00 USD', 'Bonus: 2.50 USD', 'Credits added: 52.50 USD', `New balance: ${Number(after).toFixed(2)} USD`],
      ],
      ['Unusual usage', ['tokens']],
      ['Automatic top-up failed', ['25.00 USD', 'card declined']],
      ['Automatic top-up turned off', ['25.00 USD']],
      ['Automatic top-up skipped', ['100.00 USD']],
    ];
    for (const [subject, amounts] of expected) {
      const [mail] = await eventually(
        () => mailTo(smtp, owner, subject).length > 0 && mailTo(smtp, owner, subject),
        `"${subject}" for ${owner}`,
      );
      expect(mail!.to.sort()).toEqual([owner, ...extras].sort());
      for (const amount of amounts) expect(mail!.body, subject).toContain(amount);
      // The link to the dashboard's settings page under PUBLIC_URL, a page that is there.
      expect(mail!.body).toContain(`${s.url}/dashboard/settings`);
      expect(mail!.body).toMatch(/Content-Type: text\/html/i);
      expect(mail!.messageId).toMatch(/^<ntf_[A-Za-z0-9_-]+@tollgate\.test>$/);
    }
    expect((await fetch(`${s.url}/dashboard/settings`)).status).toBe(200);
    // Once each: the server does not send an alert twice.
    const ids = smtp.messages.filter((m) => m.to.includes(owner)).map((m) => m.messageId);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toHaveLength(expected.length);
  });

  it('sends the monthly fee (charged and failed) and the rate-limit alert to the account', async () => {
    const paying = await seed(s).account({ tier: 'developer' }).wallet('20');
    const payingEmail = await emailOf(s, paying.apiKey);
    const tier = await s.graphql(
      'mutation($a: ID!) { setAccountTier(accountId: $a, tier: startup) { tier } }',
      { a: paying.id },
      ADMIN_TOKEN,
    );
    expect(tier.body.data.setAccountTier.tier).toBe('startup');
    const [charged] = await eventually(
      () => mailTo(smtp, payingEmail, 'Monthly fee charged').length > 0 && mailTo(smtp, payingEmail, 'Monthly fee charged'),
      'the fee receipt',
    );
    expect(charged!.body).toContain('5.00 USD');
    expect(charged!.body).toContain('Balance after the fee: 15.00 USD');

    // Created on a fee tier with an empty wallet: the fee cannot be paid at the first billing action.
    const broke = await s.graphql(
      'mutation { createAccount(email: "broke@example.com", tier: startup) { account { id } apiKey } }',
      {},
      ADMIN_TOKEN,
    );
    expect(broke.body.data).toBeTruthy();
    // Not at the sweeper's pass (it has done nothing yet), at its first call.
    await s.services.billing.chargeDueFees();
    expect(mailTo(smtp, 'broke@example.com', 'Monthly fee')).toEqual([]);
    expect(await chat(s, broke.body.data.createAccount.apiKey, 1)).toBe(200); // on free, from its allocation
    const [unpaid] = await eventually(
      () => mailTo(smtp, 'broke@example.com', 'Monthly fee').length > 0 && mailTo(smtp, 'broke@example.com', 'Monthly fee'),
      'the unpaid fee',
    );
    expect(unpaid!.subject).toContain('failed');
    expect(unpaid!.body).toContain('5.00 USD');

    // Enterprise allows 1 request a minute here; the alert fires past 1 refusal in 10 minutes.
    const busy = await seed(s).account({ tier: 'enterprise' });
    const busyEmail = await emailOf(s, busy.apiKey);
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push(await chat(s, busy.apiKey, 1));
    expect(statuses.filter((x) => x === 429).length).toBeGreaterThanOrEqual(2);
    const [limited] = await eventually(
      () => mailTo(smtp, busyEmail, 'Rate limit').length > 0 && mailTo(smtp, busyEmail, 'Rate limit'),
      'the rate-limit alert',
    );
    expect(limited!.to).toEqual([busyEmail]);
  });

  it('does not e-mail an alert turned off (the feed shows it skipped), and refuses to turn receipts off or a sixth extra recipient', async () => {
    const a = await seed(s).account({ tier: 'developer' });
    const c = client(s, a.apiKey);
    const owner = await emailOf(s, a.apiKey);
    const signed = await signedIn(s, a.id);
    const off = await signed.graphql(SETTINGS, { i: { lowBalance: false } });
    expect(off.body.data.updateAlertSettings).toMatchObject({ lowBalance: false, allocation80: true, receipt: true });
    const codes = async (i: unknown) => (await signed.graphql(SETTINGS, { i })).body.errors?.[0]?.extensions?.code;
    expect(await codes({ receipt: false })).toBe('invalid_value');
    expect(
      await codes({
        extraRecipients: ['a@example.com', 'b@example.com', 'c@example.com', 'd@example.com', 'e@example.com', 'f@example.com'],
      }),
    ).toBe('invalid_value');
    expect(await codes({ extraRecipients: ['not an address'] })).toBe('invalid_value');
    expect((await c.graphql('{ viewer { alertSettings { lowBalance extraRecipients } } }')).body.data.viewer.alertSettings).toEqual({
      lowBalance: false,
      extraRecipients: [],
    });

    await credit(s, a.id, '10');
    await signed.graphql('mutation { setLowBalanceAlert(threshold: "9.50") { lowBalanceAlert } }');
    // The second call goes past the 100-token allocation: its wallet charge crosses the threshold.
    expect(await chat(s, a.apiKey, 50)).toBe(200);
    expect(await chat(s, a.apiKey, 50)).toBe(200);
    const feed = async () =>
      (await c.graphql('{ viewer { notifications(first: 10) { nodes { kind delivery { state lastError } } } } }')).body.data.viewer
        .notifications.nodes as { kind: string; delivery: { state: string; lastError: string | null } }[];
    const low = await eventually(
      async () => (await feed()).find((n) => n.kind === 'low_balance' && n.delivery.state === 'skipped'),
      'the skipped low-balance alert',
    );
    expect(low.delivery.lastError).toMatch(/turned off/);
    // The allocation alerts of the same calls did go out; the low-balance one did not.
    await eventually(() => mailTo(smtp, owner, 'Monthly tokens used up').length > 0, 'the allocation alert');
    expect(mailTo(smtp, owner, 'Low balance')).toEqual([]);
  });

  it('sends to the recipients the server takes, and names the ones it refused in the feed', async () => {
    const a = await seed(s).account();
    const c = client(s, a.apiKey);
    const owner = await emailOf(s, a.apiKey);
    const signed = await signedIn(s, a.id);
    await signed.graphql(SETTINGS, { i: { extraRecipients: ['bad@ex.com', 'ok2@ex.com'] } });
    smtp.refuseRecipients = ['bad@ex.com'];
    try {
      await enqueueNotification(s.services.billing.db, {
        accountId: a.id,
        kind: 'auto_topup_failed',
        dedupeKey: `partly:${a.id}`,
        payload: { top_up_id: 'partly', amount: '25.00', currency: 'USD', reason: 'partly', consecutive_failures: 1 },
        now: new Date(),
      });
      const feed = async () =>
        (await c.graphql('{ viewer { notifications(first: 1) { nodes { delivery { state lastError recipients } } } } }')).body.data.viewer
          .notifications.nodes[0].delivery;
      const delivery = await eventually(async () => {
        const d = await feed();
        return d.state === 'sent' && d;
      }, 'the message marked sent');
      expect(delivery.recipients.sort()).toEqual([owner, 'ok2@ex.com'].sort());
      expect(delivery.lastError).toContain('The mail server refused 1 recipient: bad@ex.com');
      expect(delivery.lastError).toContain('550');
      const [mail] = mailTo(smtp, owner, 'Automatic top-up failed');
      expect(mail!.to.sort()).toEqual([owner, 'ok2@ex.com'].sort());
    } finally {
      smtp.refuseRecipients = [];
    }
  });

  it('pages the feed newest first, filters unread, marks read, and pushes notificationAdded until the key is revoked', async () => {
    const a = await seed(s).account({ tier: 'developer' });
    const c = client(s, a.apiKey);
    const other = await seed(s).account({ tier: 'developer' });
    const ws = createClient({
      url: `${s.url.replace('http', 'ws')}/graphql`,
      webSocketImpl: WebSocket,
      connectionParams: { authorization: `Bearer ${a.apiKey}` },
      retryAttempts: 0,
    });
    const pushed: string[] = [];
    let ended: unknown;
    const done = new Promise<void>((resolve) => {
      ws.subscribe(
        { query: 'subscription { notificationAdded { id kind subject } }' },
        {
          next: (v) => {
            if (v.errors) ended = v.errors;
            else pushed.push((v.data as any)?.notificationAdded?.kind);
          },
          error: (e) => ((ended = e), resolve()),
          complete: () => resolve(),
        },
      );
    });
    await eventually(() => s.services.alerts.notifications.listening > 0, 'the subscription to start');
    await s.services.alerts.notifications.ready();
    const db = s.services.billing.db;
    for (let i = 0; i < 3; i++) {
      await enqueueNotification(db, {
        accountId: a.id,
        kind: 'auto_topup_capped',
        dedupeKey: `feed:${a.id}:${i}`,
        payload: { period: '2026-11', max_monthly: '10', started: String(i), amount: '1', currency: 'USD' },
        now: new Date(),
      });
    }
    await enqueueNotification(db, {
      accountId: other.id,
      kind: 'auto_topup_capped',
      dedupeKey: `feed:${other.id}`,
      payload: { period: '2026-11', max_monthly: '10', started: '0', amount: '1', currency: 'USD' },
      now: new Date(),
    });
    await eventually(() => pushed.length >= 3, 'three pushed notifications');

    const page1 = (
      await c.graphql('{ viewer { notifications(first: 2) { nodes { id subject read } pageInfo { hasNextPage endCursor } unreadCount } } }')
    ).body.data.viewer.notifications;
    expect(page1.nodes).toHaveLength(2);
    expect(page1.nodes[0].subject).toContain('Automatic top-up');
    expect(page1.pageInfo.hasNextPage).toBe(true);
    expect(page1.unreadCount).toBe(3);
    const page2 = (
      await c.graphql('query($a: String) { viewer { notifications(first: 2, after: $a) { nodes { id } pageInfo { hasNextPage } } } }', {
        a: page1.pageInfo.endCursor,
      })
    ).body.data.viewer.notifications;
    expect(page2.nodes).toHaveLength(1);
    expect(page2.pageInfo.hasNextPage).toBe(false);
    const marked = await c.graphql('mutation($ids: [ID!]!) { markNotificationsRead(ids: $ids) { id read } }', {
      ids: [page1.nodes[0].id, 'ntf_not_mine'],
    });
    expect(marked.body.data.markNotificationsRead).toEqual([{ id: page1.nodes[0].id, read: true }]);
    const unread = (await c.graphql('{ viewer { notifications(unreadOnly: true) { nodes { id } unreadCount } } }')).body.data.viewer
      .notifications;
    expect(unread.nodes.map((n: { id: string }) => n.id)).not.toContain(page1.nodes[0].id);
    expect(unread.unreadCount).toBe(2);
    expect(pushed).toEqual(['auto_topup_capped', 'auto_topup_capped', 'auto_topup_capped']);

    expect((await s.graphql('mutation($id: ID!) { revokeApiKey(id: $id) }', { id: a.keyId }, ADMIN_TOKEN)).body.data.revokeApiKey).toBe(
      true,
    );
    await eventually(
      async () => (await Promise.race([done.then(() => true), new Promise((r) => setTimeout(() => r(false), 100))])) as boolean,
      'the subscription to end',
    );
    expect(JSON.stringify(ended)).toContain('invalid_api_key');
    await ws.dispose();
  }, 60_000);

  it("marks every unread notification read up to the newest the reader saw, past any page size, and no other account's", async () => {
    const a = await seed(s).account({ tier: 'developer' });
    const c = client(s, a.apiKey);
    const other = await seed(s).account({ tier: 'developer' });
    const db = s.services.billing.db;
    const write = (accountId: string, i: number) =>
      enqueueNotification(db, {
        accountId,
        kind: 'auto_topup_capped',
        dedupeKey: `all-read:${accountId}:${i}`,
        payload: { period: '2026-11', max_monthly: '10', started: String(i), amount: '1', currency: 'USD' },
        now: new Date(),
      });
    // More than markNotificationsRead takes at once (100) and more than a page holds.
    for (let i = 0; i < 130; i++) await write(a.id, i);
    await write(other.id, 0);
    const unread = async (key = a.apiKey) =>
      (await client(s, key).graphql('{ viewer { notifications(first: 1) { nodes { id } unreadCount } } }')).body.data.viewer.notifications;
    const seen = await unread();
    expect(seen.unreadCount).toBe(130);
    // One written after the reader's page was read stays unread.
    await write(a.id, 130);

    const all = await c.graphql('mutation($upTo: ID) { markAllNotificationsRead(upTo: $upTo) }', { upTo: seen.nodes[0].id });
    expect(all.body.errors).toBeUndefined();
    expect(all.body.data.markAllNotificationsRead).toBe(130);
    const after = await unread();
    expect(after.unreadCount).toBe(1);
    expect(after.nodes[0].id).not.toBe(seen.nodes[0].id);
    expect((await unread(other.apiKey)).unreadCount).toBe(1);

    // Another account's notification, or none, is refused and marks nothing.
    const otherId = (await unread(other.apiKey)).nodes[0].id;
    for (const upTo of [otherId, 'ntf_not_there']) {
      const refused = await c.graphql('mutation($upTo: ID) { markAllNotificationsRead(upTo: $upTo) }', { upTo });
      expect(refused.body.errors[0].extensions.code).toBe('invalid_value');
      expect(refused.body.errors[0].message).toContain("'upTo' must be the id of one of the account's notifications");
    }
    expect((await unread()).unreadCount).toBe(1);
    expect((await unread(other.apiKey)).unreadCount).toBe(1);

    // Without upTo: all of them.
    expect((await c.graphql('mutation { markAllNotificationsRead }')).body.data.markAllNotificationsRead).toBe(1);
    expect((await unread()).unreadCount).toBe(0);
    expect((await c.graphql('mutation { markAllNotificationsRead }')).body.data.markAllNotificationsRead).toBe(0);
    expect((await unread(other.apiKey)).unreadCount).toBe(1);
  }, 60_000);
});

describe.each([
  ['down', 1000],
  ['refusing', 3],
])('delivery when the SMTP server is %s', (mode, maxAttempts) => {
  let smtp: TestSmtp;
  let s: TestServer;
  beforeAll(async () => {
    smtp = await startTestSmtp();
    s = await startTestServer({ env: { SMTP_URL: smtp.url }, yaml: (u) => catalogYaml(u, YAML(u, maxAttempts)) });
  });
  afterAll(async () => {
    await s?.close();
    await smtp?.close();
  });

  const queue = async (accountId: string, tag: string) => {
    await enqueueNotification(s.services.billing.db, {
      accountId,
      kind: 'auto_topup_failed',
      dedupeKey: `${tag}:${accountId}`,
      payload: { top_up_id: tag, amount: '25.00', currency: 'USD', reason: tag, consecutive_failures: 1 },
      now: new Date(),
    });
    const [n] = (await s.services.alerts.notifications.page(accountId, { first: 1 })).notifications;
    return n!;
  };
  const stateOf = async (accountId: string, id: string) =>
    (await s.services.alerts.notifications.page(accountId, { first: 50 })).notifications.find((n) => n.id === id)!;

  it.runIf(mode === 'down')(
    'keeps a message while the server is down, retries it, and delivers it once when the server is back',
    async () => {
      const a = await seed(s).account();
      const owner = await emailOf(s, a.apiKey);
      await smtp.stop();
      const before = await queue(a.id, 'down');
      const retrying = await eventually(async () => {
        const n = await stateOf(a.id, before.id);
        return n.attempts >= 1 && n.delivery === 'pending' && n.lastError ? n : undefined;
      }, 'a failed try');
      expect(retrying.lastError).toMatch(/ECONNREFUSED|connect/i);
      await smtp.start();
      await eventually(() => mailTo(smtp, owner, 'Automatic top-up failed').length > 0, 'the message after the server came back');
      const sent = await eventually(
        async () => ((await stateOf(a.id, before.id)).delivery === 'sent' ? stateOf(a.id, before.id) : undefined),
        'sent',
      );
      expect(sent.recipients).toEqual([owner]);
      await new Promise((r) => setTimeout(r, 500));
      expect(mailTo(smtp, owner, 'Automatic top-up failed')).toHaveLength(1);
    },
  );

  it.runIf(mode === 'refusing')(
    'keeps a message refused on every try as failed; mail status shows it and mail retry sends it',
    async () => {
      const a = await seed(s).account();
      const owner = await emailOf(s, a.apiKey);
      smtp.refuseWith = 550;
      const n = await queue(a.id, 'refused');
      const failed = await eventually(
        async () => ((await stateOf(a.id, n.id)).delivery === 'failed' ? stateOf(a.id, n.id) : undefined),
        'failed for good',
      );
      expect(failed.attempts).toBe(3);
      expect(failed.lastError).toContain('550');

      const env = { ...process.env, DATABASE_URL: s.services.config.databaseUrl, CONFIG: s.services.config.configPath };
      const out: string[] = [];
      const io = { stdout: (t: string) => void out.push(t), stderr: (t: string) => void out.push(t), env };
      expect(await runCli(['node', 'tollgate', 'mail', 'status', '--json'], io)).toBe(0);
      const status = JSON.parse(out.join(''));
      expect(status.counts.failed).toBeGreaterThanOrEqual(1);
      expect(status.failed.map((f: { id: string }) => f.id)).toContain(n.id);

      smtp.refuseWith = null;
      // An id that names no message is refused, and nothing is queued.
      out.length = 0;
      expect(await runCli(['node', 'tollgate', 'mail', 'retry', '--id', n.id, 'ntf_nope', '--json'], io)).toBe(1);
      expect(out.join('')).toContain("No message with id 'ntf_nope'");
      expect((await stateOf(a.id, n.id)).delivery).toBe('failed');
      out.length = 0;
      expect(await runCli(['node', 'tollgate', 'mail', 'retry', '--id', n.id, '--json'], io)).toBe(0);
      expect(JSON.parse(out.join(''))).toEqual({ retried: 1 });
      await eventually(() => mailTo(smtp, owner, 'Automatic top-up failed').length > 0, 'the retried message');
      // Marked sent once the server has accepted it: a moment after the message arrived.
      await eventually(async () => (await stateOf(a.id, n.id)).delivery === 'sent', 'the retried message marked sent');
      expect((await stateOf(a.id, n.id)).delivery).toBe('sent');
      // A message that is not failed is not retried, and the command says why (not "0 queued").
      out.length = 0;
      expect(await runCli(['node', 'tollgate', 'mail', 'retry', '--id', n.id], io)).toBe(1);
      expect(out.join('')).toContain(`'${n.id}' is sent, not failed: only failed messages are retried`);
    },
  );
});

describe('shutdown while the SMTP server hangs', () => {
  let smtp: TestSmtp;
  let tdb: TestDatabase;
  const servers: TestServer[] = [];
  beforeAll(async () => {
    smtp = await startTestSmtp();
    tdb = await createTestDatabase('SQLite');
  });
  afterAll(async () => {
    for (const s of servers) await s.close().catch(() => {});
    await smtp?.close();
    await tdb?.drop();
  });

  it('does not wait out the SMTP timeouts: the message in flight is given back untried and the next start sends it, with the same Message-ID', async () => {
    const start = async () => {
      const s = await startTestServer({
        databaseUrl: tdb.url,
        env: { SMTP_URL: smtp.url, MAIL_FROM: 'Tollgate <alerts@tollgate.test>' },
        yaml: (u) => catalogYaml(u, YAML(u)),
      });
      servers.push(s);
      return s;
    };
    const first = await start();
    const a = await seed(first).account();
    const owner = await emailOf(first, a.apiKey);
    smtp.hang = true;
    await enqueueNotification(first.services.billing.db, {
      accountId: a.id,
      kind: 'auto_topup_failed',
      dedupeKey: `hang:${a.id}`,
      payload: { top_up_id: 'hang', amount: '25.00', currency: 'USD', reason: 'hang', consecutive_failures: 1 },
      now: new Date(),
    });
    // The whole message has reached the server, which never answers it.
    const [taken] = await eventually(() => smtp.hung.length > 0 && smtp.hung, 'the message to reach the hung server');
    // Shutdown gives up on the exchange (nodemailer alone would wait 30 s for the reply, then
    // count a failed try) and gives the message back as it was: pending, due now, no error.
    await first.close();
    const orm = await openDatabase(tdb.url);
    try {
      const [row] = await rows<Record<string, unknown>>(
        billingDatabase(orm),
        'select id, delivery, attempts, next_attempt_at, lease_owner, lease_until, last_error from notifications where account_id = ?',
        [a.id],
      );
      expect(row).toMatchObject({ delivery: 'pending', next_attempt_at: null, lease_owner: null, lease_until: null, last_error: null });
      // Untried: the abandoned try is not counted.
      expect(Number(row!.attempts)).toBe(0);
      expect(taken!.messageId).toBe(`<${row!.id}@tollgate.test>`);
    } finally {
      await closeDatabase(orm);
    }

    // The next start sends it at once: the same message, to a server that answers again.
    smtp.hang = false;
    const second = await start();
    const [mail] = await eventually(() => mailTo(smtp, owner, 'Automatic top-up failed').length > 0 && smtp.messages, 'the message');
    expect(mail!.messageId).toBe(taken!.messageId);
    const sent = await eventually(async () => {
      const [n] = (await second.services.alerts.notifications.page(a.id, { first: 1 })).notifications;
      return n?.delivery === 'sent' && n;
    }, 'the message marked sent');
    expect(sent).toMatchObject({ attempts: 1, lastError: null, recipients: [owner] });
    // Room for nodemailer's own timeouts: without the bound, the failure is the row's state above.
  }, 120_000);
});

describe('without SMTP_URL', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({ yaml: (u) => catalogYaml(u, YAML(u)) });
  });
  afterAll(async () => {
    await s?.close();
  });

  it('writes each message as an .eml file under mail/ beside the SQLite file', async () => {
    const a = await seed(s).account();
    await enqueueNotification(s.services.billing.db, {
      accountId: a.id,
      kind: 'low_balance',
      dedupeKey: `eml:${a.id}`,
      payload: { balance: '4.2', threshold: '5', currency: 'USD' },
      now: new Date(),
    });
    const dir = s.services.config.mail.dir;
    expect(dir).toBe(path.join(s.dir, 'mail'));
    const file = await eventually(() => existsSync(dir) && readdirSync(dir).find((f) => f.endsWith('.eml')), 'an .eml file');
    const eml = readFileSync(path.join(dir, file), 'utf8');
    expect(eml).toMatch(/^Subject: Low balance: your wallet is at 4\.20 USD/m);
    expect(eml).toContain(await emailOf(s, a.apiKey));
  });
});
