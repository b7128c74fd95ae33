// The dashboard where a second browser probe found it wanting, in Debian's Chromium through
// playwright-core, driven by role and accessible name: the operator's credit (a form, asked
// first, announced), where the focus goes after a key's Revoke is kept or a form cancelled, a plan
// switched or a notification read, live outcomes (a key revoked, a plan switched, a top-up paid),
// checkouts not paid yet found again, one h1 on the Operator page, the usage month and the
// transactions' type kept in the address, times in UTC everywhere, and the ways on from a taken
// sign-up address, a used reset link and a blocking spending limit.
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enqueueNotification } from '../src/domain/notifications/outbox.js';
import { launchChromium } from './support/browser.js';
import { dashboardPeople, PASSWORD } from './support/dashboard-people.js';
import { buildDashboardOnce } from './support/dashboard-build.js';
import { ADMIN_TOKEN, startTestServer, type TestServer } from './support/harness.js';
import { findExecutable, missing } from './support/requirements.js';

const CHROMIUM = findExecutable(process.env.CHROMIUM_PATH ?? '/usr/bin/chromium');
const ROOT = path.resolve(import.meta.dirname, '..');
/** formatUtcDateTime's shape: "28 Nov 2026, 12:19 UTC". */
const UTC_TIME = /\d{1,2} [A-Z][a-z]{2} \d{4}, \d{2}:\d{2} UTC/;

describe.skipIf(missing('Chromium at /usr/bin/chromium (Debian: apt-get install chromium; or set CHROMIUM_PATH)', CHROMIUM !== null))(
  'the dashboard where the second browser probe found it wanting',
  () => {
    let s: TestServer;
    let browser: Browser;

    beforeAll(async () => {
      buildDashboardOnce(ROOT);
      s = await startTestServer();
      browser = await launchChromium(CHROMIUM!);
    }, 120_000);
    afterAll(async () => {
      await browser?.close();
      await s?.close();
    });

    const people = dashboardPeople({ url: () => s.url, browser: () => browser, server: () => s, prefix: 'finding' });
    const { browse, signUp, signedIn, credit } = people;
    /** GraphQL that must succeed. */
    const gql = async (query: string, variables: Record<string, unknown> = {}, cookie?: string) => {
      const r = await people.gql(query, variables, cookie);
      expect(r.body.errors, JSON.stringify(r.body.errors)).toBeUndefined();
      return r;
    };

    /** The focused element: its tag, and its label or text. */
    const focused = (page: Page) =>
      page.evaluate(() => {
        const el = document.activeElement;
        const label = el instanceof HTMLInputElement ? el.labels?.[0]?.textContent : null;
        return `${el?.tagName} ${(el?.getAttribute('aria-label') ?? label ?? el?.textContent ?? '').trim()}`;
      });

    it("credits an account from a form (Enter asks), after a question naming the amount and the address, and says it's done", {
      timeout: 90_000,
    }, async () => {
      const { email } = await signUp();
      const { ctx, page } = await browse(null, '/operator-login');
      try {
        await page.getByLabel('Operator token').fill(ADMIN_TOKEN);
        await page.getByRole('button', { name: 'Sign in as operator' }).click();
        await page.getByRole('heading', { name: 'Operator', level: 1 }).waitFor();
        // One h1: the models embedded under "Model availability" are a section of this page.
        await page.getByRole('heading', { name: 'Model availability', level: 2 }).waitFor();
        await page.getByRole('heading', { name: 'Models', level: 3 }).waitFor();
        expect(await page.getByRole('heading', { level: 1 }).count()).toBe(1);

        await page.getByLabel('Search accounts').fill(email);
        const row = page.getByRole('row', { name: new RegExp(email.replace('.', '\\.')) });
        const amount = row.getByLabel(`Credit amount for ${email}`);
        const question = row.getByRole('group', { name: `Confirm crediting ${email}` });
        // A mistyped amount is told at once, never asked about.
        await amount.fill('12,5');
        await amount.press('Enter');
        await row.getByText('Enter an amount such as 25 or 1,250.50').waitFor();
        expect(await question.count()).toBe(0);
        // Enter asks first, naming the amount and the account; Cancel credits nothing and goes back to the amount.
        await amount.fill('1,250.50');
        await amount.press('Enter');
        await question.getByText(`Credit 1,250.50 USD to ${email}?`).waitFor();
        expect(await focused(page)).toBe('BUTTON Cancel');
        await page.keyboard.press('Enter');
        await question.waitFor({ state: 'detached' });
        expect(await focused(page)).toBe(`INPUT Credit amount for ${email}`);
        const balance = async () =>
          (await s.graphql('query($e: String!) { accounts(search: $e) { wallet { balance } } }', { e: email }, ADMIN_TOKEN)).body.data
            .accounts[0].wallet.balance as string;
        expect(Number(await balance())).toBe(0);
        // Asked again, confirmed with the keyboard: credited, announced, the focus back on the amount.
        await amount.press('Enter');
        await question.getByRole('button', { name: 'Confirm' }).waitFor();
        await page.keyboard.press('Shift+Tab');
        expect(await focused(page)).toBe('BUTTON Confirm');
        await page.keyboard.press('Enter');
        await page.getByRole('status').getByText(`Credited 1,250.50 USD to ${email}; the balance is now 1,250.50 USD.`).waitFor();
        await row.getByText('1,250.50 USD').waitFor();
        await expect.poll(() => focused(page)).toBe(`INPUT Credit amount for ${email}`);
        expect(Number(await balance())).toBe(1250.5);
      } finally {
        await ctx.close();
      }
    });

    it("gives the focus back after Keep it (the key's Revoke) and Cancel (Create key), and says a key was revoked", {
      timeout: 60_000,
    }, async () => {
      const { ctx, page, cookie } = await signedIn('/');
      try {
        await gql('mutation { createMyApiKey(name: "first") { id } }', {}, cookie);
        await gql('mutation { createMyApiKey(name: "second") { id } }', {}, cookie);
        await page.getByRole('navigation').getByRole('link', { name: 'API keys' }).click();
        await page.getByRole('button', { name: 'Revoke second' }).click();
        await page.getByRole('button', { name: 'Keep it' }).click();
        await expect.poll(() => focused(page)).toBe('BUTTON Revoke second');
        // With the keyboard too.
        await page.keyboard.press('Enter');
        expect(await focused(page)).toBe('BUTTON Keep it');
        await page.keyboard.press('Enter');
        await expect.poll(() => focused(page)).toBe('BUTTON Revoke second');

        await page.getByRole('button', { name: 'Create key' }).click();
        await page.getByLabel('Key name').waitFor();
        await page.getByRole('button', { name: 'Cancel' }).click();
        await expect.poll(() => focused(page)).toBe('BUTTON Create key');

        await page.getByRole('button', { name: 'Revoke first' }).click();
        await page.getByRole('button', { name: 'Yes, revoke' }).click();
        await page.getByRole('status').getByText('Revoked first: calls with it are refused from now on.').waitFor();
      } finally {
        await ctx.close();
      }
    });

    it('says the plan changed and puts the focus on the heading after Confirm switch; Cancel goes back to Switch', {
      timeout: 60_000,
    }, async () => {
      const { ctx, page } = await signedIn('/plan');
      try {
        await page.getByRole('heading', { name: 'Plan', level: 1 }).waitFor();
        await page.getByRole('button', { name: 'Switch to developer' }).click();
        await page.getByRole('button', { name: 'Cancel' }).click();
        await expect.poll(() => focused(page)).toBe('BUTTON Switch to developer');
        await page.keyboard.press('Enter');
        await page.getByRole('button', { name: 'Confirm switch to developer' }).click();
        await page.getByRole('status').getByText('Your plan is now developer.').waitFor();
        await expect.poll(() => focused(page)).toBe('H1 Plan');
      } finally {
        await ctx.close();
      }
    });

    it("moves the focus to the next unread notification's button after Mark as read, to the heading after the last; times in UTC", {
      timeout: 60_000,
    }, async () => {
      const { ctx, page, accountId } = await signedIn('/');
      try {
        for (let i = 0; i < 3; i++) {
          await enqueueNotification(s.services.billing.db, {
            accountId,
            kind: 'auto_topup_capped',
            dedupeKey: `findings-feed:${accountId}:${i}`,
            payload: { period: '2026-11', max_monthly: '10', started: String(i), amount: '1', currency: 'USD' },
            now: new Date(),
          });
        }
        // The overview's list of notifications, in UTC too.
        const recent = page.getByRole('region', { name: /Recent notifications/ });
        await expect.poll(() => recent.getByRole('listitem').count()).toBe(3);
        expect(await recent.getByRole('listitem').first().textContent()).toMatch(UTC_TIME);

        await page.getByRole('navigation').getByRole('link', { name: 'Notifications' }).click();
        await page.getByText('3 unread').waitFor();
        const items = page.getByRole('article');
        expect(await items.first().textContent()).toMatch(UTC_TIME);
        const buttons = page.getByRole('button', { name: /^Mark as read: / });
        const second = await buttons.nth(1).elementHandle();
        await buttons.first().click();
        await page.getByText('2 unread').waitFor();
        // The next item's button (the same element, not only one with the same name).
        await expect.poll(() => page.evaluate((b) => document.activeElement === b, second)).toBe(true);
        await page.keyboard.press('Enter');
        await page.getByText('1 unread').waitFor();
        await page.keyboard.press('Enter');
        await expect.poll(() => buttons.count()).toBe(0);
        await expect.poll(() => focused(page)).toBe('H1 Notifications');

        // The signed-in browsers, in UTC too.
        await page.getByRole('navigation').getByRole('link', { name: 'Settings' }).click();
        const sessions = page.getByRole('region', { name: 'Signed-in browsers' });
        await sessions
          .getByText(/Signed in/)
          .first()
          .waitFor();
        expect(await sessions.textContent()).toMatch(UTC_TIME);
      } finally {
        await ctx.close();
      }
    });

    it('announces the top-up turning from waiting to paid (a live region), and lists checkouts not paid yet, newest first', {
      timeout: 60_000,
    }, async () => {
      const { ctx, page, cookie } = await signedIn('/');
      try {
        const start = async (amount: string) =>
          (await gql('mutation($a: Decimal!) { topUp(amount: $a) { id checkoutUrl } }', { a: amount }, cookie)).body.data.topUp as {
            id: string;
            checkoutUrl: string;
          };
        const older = await start('20');
        const newer = await start('30');
        await page.getByRole('navigation').getByRole('link', { name: 'Top up' }).click();
        const open = page.getByRole('region', { name: 'Checkouts not paid yet' });
        const links = open.getByRole('link', { name: /^Continue to payment/ });
        await expect.poll(() => links.count()).toBe(2);
        expect(await links.first().getAttribute('aria-label')).toContain('30.00 USD');
        expect(await links.first().getAttribute('href')).toBe(newer.checkoutUrl);
        expect(await links.nth(1).getAttribute('href')).toBe(older.checkoutUrl);
        expect(await open.textContent()).toMatch(UTC_TIME);

        await page.goto(`${s.url}/dashboard/top-up/return?top_up=${older.id}`);
        const outcome = page.getByRole('heading', { name: 'Waiting for the payment to be confirmed.' });
        await outcome.waitFor();
        expect(await outcome.getAttribute('aria-live')).toBe('polite');
        // The same element's text changes: a screen reader says it.
        await outcome.evaluate((el) => el.setAttribute('data-seen', 'yes'));
        await fetch(`${s.url}/checkout/sandbox/${older.id}/complete`, { method: 'POST', headers: { accept: 'application/json' } });
        await page.locator('[data-seen="yes"]').getByText('Paid: the credits are in your wallet.').waitFor({ timeout: 15_000 });

        // Paid, it is no longer listed.
        await page.getByRole('link', { name: 'Another top-up' }).click();
        await page.getByRole('heading', { name: 'Top up', level: 1 }).waitFor();
        await expect.poll(() => links.count()).toBe(1);
        expect(await links.first().getAttribute('href')).toBe(newer.checkoutUrl);
      } finally {
        await ctx.close();
      }
    });

    it("keeps the usage page's month and the transactions' type in the address (reload, Back, a shared link); unknown values read as the default", {
      timeout: 60_000,
    }, async () => {
      const { ctx, page, accountId } = await signedIn('/usage?month=2025-03');
      try {
        await credit(accountId, '5');
        const month = page.getByLabel('Month (UTC)');
        await expect.poll(() => month.inputValue()).toBe('2025-03');
        await page.getByText('No usage in 2025-03 (UTC).').waitFor();
        await month.fill('2025-04');
        await expect.poll(() => new URL(page.url()).search).toBe('?month=2025-04');
        await page.reload();
        await expect.poll(() => month.inputValue()).toBe('2025-04');
        await page.goto(`${s.url}/dashboard/usage?month=2025-13`);
        await expect.poll(() => month.inputValue()).toBe(new Date().toISOString().slice(0, 7));

        await page.goto(`${s.url}/dashboard/transactions?type=usage`);
        const type = page.getByLabel('Type');
        await page.getByText('No transactions of type usage yet.').waitFor();
        expect(await type.inputValue()).toBe('usage');
        await type.selectOption('bonus');
        await expect.poll(() => new URL(page.url()).search).toBe('?type=bonus');
        const date = page.getByRole('cell', { name: UTC_TIME });
        await date.first().waitFor();
        await page.reload();
        await expect.poll(() => type.inputValue()).toBe('bonus');
        // Leaving and coming Back finds it as left.
        await page.getByRole('navigation').getByRole('link', { name: 'Overview' }).click();
        await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
        await page.goBack();
        await expect.poll(() => type.inputValue()).toBe('bonus');
        await type.selectOption('');
        await expect.poll(() => new URL(page.url()).search).toBe('');
        await page.goto(`${s.url}/dashboard/transactions?type=nope`);
        await date.first().waitFor();
        expect(await type.inputValue()).toBe('');
      } finally {
        await ctx.close();
      }
    });

    it('offers sign-in and a password reset for a taken address, a new link for a used one; a blocking limit names the calls it refuses', {
      timeout: 60_000,
    }, async () => {
      const { email, cookie } = await signUp();
      const { ctx, page } = await browse(null, '/signup');
      try {
        await page.getByLabel('Email').fill(email);
        await page.getByLabel('Password').fill(PASSWORD);
        await page.getByRole('button', { name: 'Sign up' }).click();
        const alert = page.getByRole('alert');
        await alert.getByText('already exists').waitFor();
        expect(await alert.getByRole('link', { name: 'Sign in' }).getAttribute('href')).toBe('/dashboard/login');
        expect(await alert.getByRole('link', { name: 'reset the password' }).getAttribute('href')).toBe('/dashboard/forgot-password');

        await page.goto(`${s.url}/dashboard/reset-password?token=tgr_not_a_link_of_ours`);
        await page.getByLabel('New password', { exact: true }).fill(PASSWORD);
        await page.getByRole('button', { name: 'Set password' }).click();
        await alert.getByText('ask for a new one').waitFor();
        await alert.getByRole('link', { name: 'Ask for a new link' }).click();
        await page.getByRole('heading', { name: /password/i, level: 1 }).waitFor();
        expect(new URL(page.url()).pathname).toBe('/dashboard/forgot-password');
      } finally {
        await ctx.close();
      }
      await gql(
        'mutation { updateSpendingLimit(input: { enabled: true, monthlyLimit: "5", action: block }) { monthlySpend } }',
        {},
        cookie,
      );
      const signed = await browse(cookie, '/');
      try {
        await signed.page.getByText('(calls that would pass it are refused)').waitFor();
      } finally {
        await signed.ctx.close();
      }
    });
  },
);
