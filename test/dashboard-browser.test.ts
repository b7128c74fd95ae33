// The dashboard end to end, in Debian's Chromium through playwright-core, driven the way a person
// does: by role and accessible name. Sign up; top up 50 through the sandbox checkout and see
// 52.50; a top-up paid in another tab shows on an open overview without a reload; create a key,
// call /v1 with it, see its usage, revoke it and get 401; settings stick after a reload; password
// reset through the .eml file; an operator changes a tier; axe-core finds no serious or critical
// violation on any page. The screenshots of the README are taken here (docs/screenshots/).
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { launchChromium } from './support/browser.js';
import { buildDashboardOnce } from './support/dashboard-build.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enqueueNotification } from '../src/domain/notifications/outbox.js';
import { ADMIN_TOKEN, startTestServer, type TestServer } from './support/harness.js';
import { findExecutable, missing } from './support/requirements.js';

const CHROMIUM = findExecutable(process.env.CHROMIUM_PATH ?? '/usr/bin/chromium');
const ROOT = path.resolve(import.meta.dirname, '..');
const SHOTS = path.join(ROOT, 'docs/screenshots');
const AXE = path.join(ROOT, 'node_modules/axe-core/axe.min.js');
const PASSWORD = 'a long enough password';

async function axe(page: Page, name: string): Promise<void> {
  await page.addScriptTag({ path: AXE });
  const violations = (await page.evaluate(async () => {
    const r = await (
      window as unknown as {
        axe: { run: (o: unknown) => Promise<{ violations: { id: string; impact: string; nodes: { target: string[] }[] }[] }> };
      }
    ).axe.run({ resultTypes: ['violations'] });
    return r.violations.map((v) => ({ id: v.id, impact: v.impact, targets: v.nodes.map((n) => n.target.join(' ')) }));
  })) as { id: string; impact: string; targets: string[] }[];
  const bad = violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  expect(bad, `${name}: ${JSON.stringify(bad)}`).toEqual([]);
}

const balance = (page: Page) => page.getByRole('region', { name: 'Balance' });

describe.skipIf(missing('Chromium at /usr/bin/chromium (Debian: apt-get install chromium; or set CHROMIUM_PATH)', CHROMIUM !== null))(
  'the dashboard in a browser',
  () => {
    let s: TestServer;
    let browser: Browser;
    let ann: BrowserContext;
    let page: Page;
    const email = 'ann@example.com';
    /** Every answer of 400 or more the page's requests got (the page's own, its scripts', the browser's). */
    const failed: string[] = [];

    beforeAll(async () => {
      // What npm ci's prepare script does.
      buildDashboardOnce(ROOT);
      mkdirSync(SHOTS, { recursive: true });
      s = await startTestServer();
      browser = await launchChromium(CHROMIUM!);
      ann = await browser.newContext({ viewport: { width: 1200, height: 860 }, bypassCSP: true });
      page = await ann.newPage();
      page.on('response', (r) => {
        if (r.status() >= 400) failed.push(`${r.status()} ${new URL(r.url()).pathname}`);
      });
    }, 120_000);
    afterAll(async () => {
      await browser?.close();
      await s?.close();
    });

    it('signs up on /dashboard/signup and lands on the overview', { timeout: 60_000 }, async () => {
      await page.goto(`${s.url}/dashboard/login`);
      await axe(page, 'sign-in');
      await page.getByRole('link', { name: 'Sign up' }).click();
      await page.getByRole('heading', { name: 'Create your tollgate account' }).waitFor();
      await axe(page, 'sign-up');
      await page.getByLabel('Email').fill(email);
      await page.getByLabel('Password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Sign up' }).click();
      await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
      await balance(page).getByText('0.00 USD').waitFor();
      for (const name of ['Overview', 'Usage', 'Transactions', 'Top up', 'Settings', 'API keys', 'Playground', 'Notifications']) {
        expect(await page.getByRole('navigation').getByRole('link', { name, exact: true }).count()).toBe(1);
      }
      expect(await page.getByRole('button', { name: 'Sign out' }).count()).toBe(1);
      await axe(page, 'overview');
      // Nothing the browser asked for was missing (a favicon, a chunk): no error in its console.
      expect(failed).toEqual([]);
    });

    it('tops up 50 through the sandbox checkout and shows 52.50 on the overview', { timeout: 60_000 }, async () => {
      await page.getByRole('link', { name: 'Top up', exact: true }).click();
      // A new account is on the free tier, which never pays from the wallet: the page says so first.
      await page
        .getByRole('note')
        .getByText(/Your plan \(free\) does not pay from the wallet/)
        .waitFor();
      await page.getByLabel('Amount').fill('600');
      await page.getByText('arranged with our sales team').waitFor();
      await page.getByLabel('Amount').fill('50');
      await page.getByText('+2.50 USD (5%)').waitFor();
      await page.getByText('52.50 USD').waitFor();
      await axe(page, 'top up');
      await page.screenshot({ path: path.join(SHOTS, 'top-up.png') });
      await page.getByRole('button', { name: 'Top up', exact: true }).click();
      await page.getByRole('button', { name: /Pay 50\.00 USD/ }).click();
      await page.getByRole('link', { name: /Back to your account/ }).click();
      await page.getByRole('heading', { name: /Paid: the credits are in your wallet/ }).waitFor();
      await axe(page, 'top-up result');
      await page.getByRole('link', { name: 'Overview', exact: true }).click();
      await balance(page).getByText('52.50 USD').waitFor();
      // Moving to another page puts the focus on its heading (a screen reader says where it is).
      await page.waitForFunction(() => document.activeElement?.tagName === 'H1' && document.activeElement.textContent === 'Overview');
    });

    it('shows a top-up paid in another tab on the open overview without a reload', { timeout: 60_000 }, async () => {
      let reloaded = false;
      page.on('framenavigated', (f) => f === page.mainFrame() && (reloaded = true));
      const other = await ann.newPage();
      await other.goto(`${s.url}/dashboard/top-up`);
      await other.getByLabel('Amount').fill('10');
      await other.getByText('No bonus at this amount').waitFor();
      await other.getByRole('button', { name: 'Top up', exact: true }).click();
      await other.getByRole('button', { name: /Pay 10\.00 USD/ }).click();
      await other.getByText(/Paid/).first().waitFor();
      await other.close();
      await balance(page).getByText('62.50 USD').waitFor();
      expect(reloaded).toBe(false);
      await page.screenshot({ path: path.join(SHOTS, 'overview.png') });
    });

    it('creates a key, calls /v1 with it, shows its usage; revoking it gives 401', { timeout: 60_000 }, async () => {
      await page.getByRole('link', { name: 'API keys' }).click();
      await page.getByRole('heading', { name: 'API keys', level: 1 }).waitFor();
      await page.getByText('No API keys yet').waitFor();
      await axe(page, 'api keys (empty)');
      await page.getByRole('button', { name: 'Create key' }).click();
      await page.getByLabel('Key name').fill('ci');
      await page.getByRole('button', { name: 'Create', exact: true }).click();
      const apiKey = (await page.getByLabel('New API key', { exact: true }).textContent())!.trim();
      expect(apiKey).toMatch(/^ask_/);
      expect(await page.getByRole('button', { name: 'Copy' }).count()).toBe(1);
      await axe(page, 'api keys (new key)');
      // Never copied (the test holds it): Done asks first.
      page.once('dialog', (d) => void d.accept());
      await page.getByRole('button', { name: 'Done' }).click();
      // Its button gone, the focus is not dropped on the page's body: it goes on from "Create key".
      await page.waitForFunction(() => document.activeElement?.textContent === 'Create key');
      const chat = () =>
        fetch(`${s.v1}/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'chat-test', messages: [{ role: 'user', content: 'Hello there' }] }),
        });
      expect((await chat()).status).toBe(200);
      await page.getByRole('link', { name: 'Usage' }).click();
      await page
        .getByRole('table', { name: /By model/ })
        .getByRole('rowheader', { name: 'chat-test' })
        .waitFor();
      await page.getByRole('figure', { name: 'Tokens per day, by model' }).waitFor();
      await axe(page, 'usage');
      await page.screenshot({ path: path.join(SHOTS, 'usage.png') });
      await page.getByRole('link', { name: 'API keys' }).click();
      await page.getByRole('cell', { name: 'ci', exact: true }).waitFor();
      await page.screenshot({ path: path.join(SHOTS, 'api-keys.png') });
      await page.getByRole('button', { name: 'Revoke ci' }).click();
      await page.getByRole('button', { name: 'Yes, revoke' }).click();
      await page.getByRole('cell', { name: 'Revoked' }).waitFor();
      await page.waitForFunction(() => document.activeElement?.tagName === 'TABLE');
      expect((await chat()).status).toBe(401);
    });

    it('pages the transactions and filters them by type', { timeout: 60_000 }, async () => {
      await page.getByRole('link', { name: 'Transactions' }).click();
      const ledger = page.getByRole('table', { name: /Ledger/ });
      await ledger.getByRole('cell', { name: 'topup' }).first().waitFor();
      await axe(page, 'transactions');
      await page.getByLabel('Type').selectOption('usage');
      await page.getByText('No transactions of type usage yet.').waitFor();
      await page.getByLabel('Type').selectOption('');
      await ledger.getByRole('cell', { name: '+50.00' }).waitFor();
      const download = page.waitForEvent('download');
      await page.getByRole('button', { name: 'Export CSV' }).click();
      const file = await (await download).path();
      const csv = readFileSync(file!, 'utf8');
      expect(csv.split('\r\n')[0]).toBe('created_at,type,amount,balance_after,description,reference');
      expect(csv).toContain(',topup,50,');
    });

    it('keeps each setting after a reload', { timeout: 60_000 }, async () => {
      await page.getByRole('link', { name: 'Settings' }).click();
      await page.getByRole('heading', { name: 'Settings', level: 1 }).waitFor();
      await page.getByLabel('Enable spending limit').check();
      await page.getByLabel('Monthly limit').fill('25');
      await page.getByLabel('When reached').selectOption('alert');
      await page.getByRole('button', { name: 'Save spending limit' }).click();
      await page.getByRole('form', { name: 'Spending limit' }).getByText('Saved.').waitFor();
      await page.getByLabel('Low-balance threshold').fill('5');
      await page.getByRole('button', { name: 'Save threshold' }).click();
      await page.getByRole('form', { name: 'Low-balance alert' }).getByText('Saved.').waitFor();
      await page.getByLabel('Enable automatic top-up').check();
      await page.getByLabel('Top up when the balance falls below').fill('3');
      await page.getByLabel('Top-up amount').fill('20');
      await page.getByRole('button', { name: 'Save automatic top-up' }).click();
      await page.getByRole('form', { name: 'Automatic top-up' }).getByText('Saved.').waitFor();
      await page.getByLabel('Unusual usage').uncheck();
      await page.getByLabel('Extra recipients').fill('ops@example.com');
      await page.getByRole('button', { name: 'Save alerts' }).click();
      await page.getByRole('form', { name: 'E-mail alerts' }).getByText('Saved.').waitFor();
      await axe(page, 'settings');
      await page.screenshot({ path: path.join(SHOTS, 'settings.png'), fullPage: true });
      await page.reload();
      await page.getByRole('heading', { name: 'Settings', level: 1 }).waitFor();
      expect(await page.getByLabel('Enable spending limit').isChecked()).toBe(true);
      expect(await page.getByLabel('Monthly limit').inputValue()).toBe('25');
      expect(await page.getByLabel('When reached').inputValue()).toBe('alert');
      expect(await page.getByLabel('Low-balance threshold').inputValue()).toBe('5');
      expect(await page.getByLabel('Enable automatic top-up').isChecked()).toBe(true);
      expect(await page.getByLabel('Top up when the balance falls below').inputValue()).toBe('3');
      expect(await page.getByLabel('Top-up amount').inputValue()).toBe('20');
      expect(await page.getByLabel('Unusual usage').isChecked()).toBe(false);
      expect(await page.getByLabel('Extra recipients').inputValue()).toBe('ops@example.com');
      // The e-mail address and the password.
      await page.getByLabel('New email').fill('ann2@example.com');
      await page.getByLabel('Password to confirm').fill(PASSWORD);
      await page.getByRole('button', { name: 'Change email' }).click();
      await page.getByRole('form', { name: 'E-mail address' }).getByText('Saved.').waitFor();
      await page.getByLabel('Current password').fill(PASSWORD);
      await page.getByLabel('New password').fill(`${PASSWORD} 2`);
      await page.getByRole('button', { name: 'Change password' }).click();
      await page.getByRole('form', { name: 'Password' }).getByText('Saved.').waitFor();
      await page.reload();
      await page.getByRole('form', { name: 'E-mail address' }).getByText('You sign in as ann2@example.com.').waitFor();
      expect(await page.getByLabel('New email').inputValue()).toBe('');
    });

    it("streams an answer in the playground, a reasoning model's reasoning above it, with tokens and cost at the end", {
      timeout: 60_000,
    }, async () => {
      await page.getByRole('link', { name: 'Playground' }).click();
      await page.getByLabel('Model').selectOption('chat-test');
      // The fake upstream sends three words of reasoning (r0 r1 r2) before four words of answer.
      await page.getByLabel('Prompt').fill('Say hello #reasoning=3 #tokens=4');
      await page.getByRole('button', { name: 'Send' }).click();
      await page
        .getByRole('status')
        .filter({ hasText: /tokens, .* USD at list/ })
        .waitFor();
      expect((await page.locator('details.reasoning p').textContent())?.trim()).toBe('r0 r1 r2');
      expect((await page.locator('p.answer').textContent())?.trim()).toBe('w0 w1 w2 w3');
      await axe(page, 'playground');
      await page.screenshot({ path: path.join(SHOTS, 'playground.png') });
    });

    it('has no serious accessibility violation on the notifications, plan and models pages, and at phone width', {
      timeout: 60_000,
    }, async () => {
      await page.getByRole('link', { name: 'Notifications' }).click();
      await page.getByRole('heading', { name: 'Notifications', level: 1 }).waitFor();
      await page.getByRole('article').first().waitFor();
      await axe(page, 'notifications');
      await page.getByRole('link', { name: 'Plan' }).click();
      await page.getByRole('button', { name: 'Switch to developer' }).waitFor();
      await axe(page, 'plan');
      // Enterprise is arranged with the operator: no switch. A switch opened from the keyboard
      // leaves the focus on the safe choice, not on the page's body.
      expect(await page.getByRole('button', { name: 'Switch to enterprise' }).count()).toBe(0);
      await page.getByText('Arranged with us').waitFor();
      await page.getByRole('button', { name: 'Switch to developer' }).focus();
      await page.keyboard.press('Enter');
      expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Cancel');
      await page.keyboard.press('Enter');
      await page.getByRole('button', { name: 'Switch to developer' }).waitFor();
      await page.getByRole('link', { name: 'Models' }).click();
      await page.getByRole('rowheader', { name: 'chat-test' }).waitFor();
      await axe(page, 'models');
      await page.setViewportSize({ width: 390, height: 844 });
      await page.getByRole('link', { name: 'Overview' }).click();
      await balance(page).getByText('62.50 USD').waitFor();
      await axe(page, 'overview at phone width');
      // Nothing widens a page past the phone's width (tables scroll inside their own box).
      for (const name of ['Overview', 'API keys', 'Transactions', 'Usage', 'Models']) {
        await page.getByRole('link', { name, exact: true }).click();
        await page.getByRole('heading', { name, level: 1 }).waitFor();
        await page.waitForLoadState('networkidle');
        expect(await page.evaluate(() => document.documentElement.scrollWidth), name).toBeLessThanOrEqual(390);
      }
      await page.setViewportSize({ width: 1200, height: 860 });
    });

    it('resets a forgotten password through the link in the .eml file', { timeout: 60_000 }, async () => {
      const ctx = await browser.newContext({ bypassCSP: true });
      const p = await ctx.newPage();
      await p.goto(`${s.url}/dashboard/login`);
      await p.getByRole('link', { name: 'Forgot your password?' }).click();
      await p.getByLabel('Email').fill('ann2@example.com');
      await p.getByRole('button', { name: 'Send reset link' }).click();
      await p.getByText('a link to choose a new password is on its way').waitFor();
      await axe(p, 'forgot password');
      await s.services.auth.idle();
      const dir = path.join(s.dir, 'mail');
      const file = readdirSync(dir).find((f) => f.startsWith('password-reset-'))!;
      const eml = readFileSync(path.join(dir, file), 'utf8')
        .replace(/=\r?\n/g, '')
        .replace(/=3D/g, '=');
      const link = /(http:\/\/\S+\/dashboard\/reset-password\?token=tgr_[\w-]+)/.exec(eml)![1]!;
      await p.goto(link);
      await p.getByLabel('New password', { exact: true }).fill('the newest password');
      await axe(p, 'reset password');
      await p.getByRole('button', { name: 'Set password' }).click();
      await p.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
      await p.getByRole('button', { name: 'Sign out' }).click();
      await p.getByRole('heading', { name: 'Sign in to tollgate' }).waitFor();
      await p.getByLabel('Email').fill('ann2@example.com');
      await p.getByLabel('Password').fill('the newest password');
      await p.getByRole('button', { name: 'Sign in' }).click();
      await p.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
      await ctx.close();
    });

    it('lets an operator (ADMIN_TOKEN exchanged for a session) change a tier', { timeout: 60_000 }, async () => {
      const ctx = await browser.newContext({ viewport: { width: 1200, height: 860 }, bypassCSP: true });
      const p = await ctx.newPage();
      await p.goto(`${s.url}/dashboard/login`);
      await p.getByRole('link', { name: 'Operator sign-in' }).click();
      await p.getByLabel('Operator token').fill(ADMIN_TOKEN);
      await p.getByRole('button', { name: 'Sign in as operator' }).click();
      await p.getByRole('heading', { name: 'Operator', level: 1 }).waitFor();
      await p.getByLabel('Search accounts').fill('ann2');
      await p.getByLabel('Tier for ann2@example.com').selectOption('startup');
      await p.getByRole('button', { name: 'Change tier' }).click();
      await p
        .getByRole('row', { name: /ann2@example\.com/ })
        .getByRole('combobox')
        .and(p.locator(':not([disabled])'))
        .first()
        .waitFor();
      await expect.poll(async () => (await s.services.auth.searchAccounts('ann2'))[0]?.tier).toBe('startup');
      await axe(p, 'operator');
      await p.screenshot({ path: path.join(SHOTS, 'operator.png') });
      await ctx.close();
    });

    it("pages the operator's account list fifty at a time", { timeout: 60_000 }, async () => {
      for (let i = 0; i < 52; i++) {
        const r = await s.graphql(
          'mutation($e: String!) { createAccount(email: $e, tier: free) { account { id } } }',
          { e: `lot-${i}@ex.com` },
          ADMIN_TOKEN,
        );
        expect(r.body.errors).toBeUndefined();
      }
      const ctx = await browser.newContext({ viewport: { width: 1200, height: 860 }, bypassCSP: true });
      const p = await ctx.newPage();
      await p.goto(`${s.url}/dashboard/operator-login`);
      await p.getByLabel('Operator token').fill(ADMIN_TOKEN);
      await p.getByRole('button', { name: 'Sign in as operator' }).click();
      await p.getByRole('heading', { name: 'Operator', level: 1 }).waitFor();
      await p.getByLabel('Search accounts').fill('lot-');
      const rows = p.getByRole('row', { name: /lot-\d+@ex\.com/ });
      await expect.poll(() => rows.count()).toBe(50);
      // Newest first: the last two made are on the first page, the first two on the second.
      await p.getByRole('row', { name: /lot-51@ex\.com/ }).waitFor();
      await p.getByRole('button', { name: 'Next page' }).click();
      await expect.poll(() => rows.count()).toBe(2);
      // Focus goes to the list's heading, which names the page, not to the document's body.
      await expect.poll(() => p.evaluate(() => document.activeElement?.textContent)).toBe('Accounts, page 2');
      await p.getByRole('row', { name: /lot-0@ex\.com/ }).waitFor();
      expect(await p.getByRole('button', { name: 'Next page' }).isDisabled()).toBe(true);
      await p.getByRole('button', { name: 'Previous page' }).click();
      await expect.poll(() => rows.count()).toBe(50);
      await ctx.close();
    });

    it('marks all notifications read, not only the page shown, and pages older ones', { timeout: 60_000 }, async () => {
      const ctx = await browser.newContext({ viewport: { width: 1200, height: 860 }, bypassCSP: true });
      const p = await ctx.newPage();
      await p.goto(`${s.url}/dashboard/signup`);
      await p.getByLabel('Email').fill('feed@example.com');
      await p.getByLabel('Password').fill(PASSWORD);
      await p.getByRole('button', { name: 'Sign up' }).click();
      await p.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
      const [me] = await s.services.auth.searchAccounts('feed@example.com');
      for (let i = 0; i < 60; i++) {
        await enqueueNotification(s.services.billing.db, {
          accountId: me!.id,
          kind: 'auto_topup_capped',
          dedupeKey: `browser-feed:${i}`,
          payload: { period: '2026-11', max_monthly: '10', started: String(i), amount: '1', currency: 'USD' },
          now: new Date(),
        });
      }
      const unread = () => s.services.alerts.notifications.unreadCount(me!.id);
      expect(await unread()).toBeGreaterThanOrEqual(60);
      await p.goto(`${s.url}/dashboard/notifications`);
      await p.getByRole('heading', { name: 'Notifications', level: 1 }).waitFor();
      await p.getByText(`${await unread()} unread`).waitFor();
      await p.getByRole('button', { name: 'Older' }).click();
      await p.getByRole('button', { name: 'Newer' }).and(p.locator(':not([disabled])')).waitFor();
      await expect.poll(() => p.evaluate(() => document.activeElement?.textContent)).toBe('Notifications, page 2');
      await p.getByRole('button', { name: 'Mark all as read' }).click();
      await expect.poll(unread).toBe(0);
      await expect.poll(() => p.evaluate(() => document.activeElement?.tagName)).toBe('H1');
      await expect.poll(() => p.getByRole('button', { name: 'Mark all as read' }).count()).toBe(0);
      await ctx.close();
    });
  },
);
