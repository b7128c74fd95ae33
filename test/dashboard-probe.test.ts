// The dashboard where a browser probe found it misleading, in Debian's Chromium through
// playwright-core, driven by role and accessible name: a sign-out that failed, a key the clipboard
// refused, settings changed in another tab, a session ending mid-form, a spending limit turned
// off, a top-up still being confirmed, a playground answer cut short or left mid-stream, usage
// days in UTC, a server error told from a network failure, keys and transactions at phone width,
// the e-mail form, the signed-in browsers, and the smaller wording fixes.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getKnex } from '../src/db/connection.js';
import { launchChromium } from './support/browser.js';
import { dashboardPeople, PASSWORD } from './support/dashboard-people.js';
import { buildDashboardOnce } from './support/dashboard-build.js';
import { ADMIN_TOKEN, catalogYaml, startTestServer, type TestServer } from './support/harness.js';
import { findExecutable, missing } from './support/requirements.js';
import { until } from './support/wait.js';

const CHROMIUM = findExecutable(process.env.CHROMIUM_PATH ?? '/usr/bin/chromium');
const ROOT = path.resolve(import.meta.dirname, '..');

describe.skipIf(missing('Chromium at /usr/bin/chromium (Debian: apt-get install chromium; or set CHROMIUM_PATH)', CHROMIUM !== null))(
  'the dashboard where the browser probe found it misleading',
  () => {
    let s: TestServer;
    let browser: Browser;

    beforeAll(async () => {
      buildDashboardOnce(ROOT);
      // The developer tier pays from the wallet from the first token; startup has a monthly fee.
      s = await startTestServer({
        yaml: (u) => `${catalogYaml(u)}tiers:\n  developer: { monthly_tokens: 0 }\n  startup: { monthly_fee: 49 }\n`,
      });
      browser = await launchChromium(CHROMIUM!);
    }, 120_000);
    afterAll(async () => {
      await browser?.close();
      await s?.close();
    });

    const people = dashboardPeople({ url: () => s.url, browser: () => browser, server: () => s, prefix: 'probe' });
    const { gql, browse, signUp, signedIn, credit } = people;

    const toDeveloper = async (accountId: string) => {
      const r = await s.graphql(
        'mutation($id: ID!) { setAccountTier(accountId: $id, tier: developer) { tier } }',
        { id: accountId },
        ADMIN_TOKEN,
      );
      expect(r.body.errors).toBeUndefined();
    };

    /**
     * Answers the dashboard's GraphQL requests whose document has `operation` with a bare HTTP 500
     * (a crash, a proxy); queries go as GET (in the address), mutations as POST.
     */
    const failOperation = (page: Page, operation: string) =>
      page.route(/\/graphql(\?|$)/, (route) => {
        const request = route.request();
        const sent = `${decodeURIComponent(request.url().replace(/\+/g, ' '))} ${request.postData() ?? ''}`;
        return sent.includes(operation)
          ? route.fulfill({ status: 500, contentType: 'text/plain', body: 'Internal Server Error' })
          : route.fallback();
      });

    /** The tab comes back into view (as when the person returns to it from another tab). */
    const returnToTab = (page: Page) => page.evaluate(() => dispatchEvent(new Event('focus')));

    /** Whether `el` lies inside the viewport's width (not scrolled out of sight in its table's box). */
    const inView = (selector: ReturnType<Page['getByRole']>) =>
      selector.evaluate((el) => {
        const r = el.getBoundingClientRect();
        return r.left >= 0 && r.right <= document.documentElement.clientWidth;
      });

    it('says signing out failed, and stays signed in, when the server could not sign out', { timeout: 60_000 }, async () => {
      const { ctx, page } = await signedIn('/');
      try {
        await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
        await failOperation(page, 'mutation SignOut');
        await page.getByRole('button', { name: 'Sign out' }).click();
        const alert = page.getByRole('alert').filter({ hasText: 'Signing out failed: you are still signed in' });
        await alert.waitFor();
        expect(await alert.textContent()).toContain('The server had an error (HTTP 500)');
        expect(page.url()).toBe(`${s.url}/dashboard/`);
        // The session is still good: the next try signs out.
        await page.unroute(/\/graphql(\?|$)/);
        await alert.getByRole('button', { name: 'Sign out again' }).click();
        await page.getByRole('heading', { name: 'Sign in to tollgate' }).waitFor();
      } finally {
        await ctx.close();
      }
    });

    it('says so when the clipboard refused the new key, selects it for copying by hand, and asks before closing it uncopied', {
      timeout: 60_000,
    }, async () => {
      const { ctx, page } = await signedIn('/api-keys');
      try {
        await page.getByRole('button', { name: 'Create key' }).click();
        await page.getByLabel('Key name').fill('copy test');
        await page.getByRole('button', { name: 'Create', exact: true }).click();
        const panel = page.getByRole('region', { name: 'Your new API key' });
        const apiKey = (await page.getByLabel('New API key', { exact: true }).textContent())!.trim();
        // A browser that refuses the clipboard (no permission, an insecure page).
        await page.evaluate(() => {
          navigator.clipboard.writeText = () => Promise.reject(new DOMException('Write permission denied.', 'NotAllowedError'));
        });
        await panel.getByRole('button', { name: 'Copy' }).click();
        await panel.getByRole('status').getByText('did not let the dashboard copy it').waitFor();
        expect(await panel.getByRole('status').textContent()).not.toContain('Copied');
        expect(await page.evaluate(() => getSelection()?.toString().trim())).toBe(apiKey);
        // Done before the key was copied asks first; "Cancel" keeps it on screen.
        const asked: string[] = [];
        page.once('dialog', (d) => {
          asked.push(d.message());
          void d.dismiss();
        });
        await panel.getByRole('button', { name: 'Done' }).click();
        expect(asked).toEqual([expect.stringContaining('You have not copied the new API key')]);
        expect(await panel.count()).toBe(1);
        // Copied by hand (the key is selected), Done closes it without asking.
        await page.keyboard.press('Control+C');
        await panel.getByRole('status').getByText('Copied to the clipboard.').waitFor();
        page.once('dialog', (d) => {
          asked.push(d.message());
          void d.dismiss();
        });
        await panel.getByRole('button', { name: 'Done' }).click();
        await panel.waitFor({ state: 'detached' });
        expect(asked).toHaveLength(1);
      } finally {
        await ctx.close();
      }
    });

    it("asks before a link, Back, Forward or closing the tab leaves a new key not copied yet (Done's question), staying when told to", {
      timeout: 60_000,
    }, async () => {
      const { ctx, page } = await signedIn('/');
      try {
        const nav = page.getByRole('navigation');
        const asked: string[] = [];
        /** Answers the next question the page asks: `yes` leaves, no stays. */
        const answerNext = (yes: boolean) =>
          page.once('dialog', (d) => {
            asked.push(d.message());
            void (yes ? d.accept() : d.dismiss());
          });
        const onPage = (p: string) => expect.poll(() => new URL(page.url()).pathname).toBe(`/dashboard${p}`);
        const keysHeading = page.getByRole('heading', { name: 'API keys', level: 1 });
        const panel = page.getByRole('region', { name: 'Your new API key' });
        const createKey = async () => {
          await page.getByRole('button', { name: 'Create key' }).click();
          await page.getByLabel('Key name').fill(`held ${asked.length}`);
          await page.getByRole('button', { name: 'Create', exact: true }).click();
          await panel.waitFor();
        };
        await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
        await nav.getByRole('link', { name: 'API keys' }).click();
        await nav.getByRole('link', { name: 'Usage' }).click();
        await page.getByRole('heading', { name: 'Usage', level: 1 }).waitFor();
        await page.evaluate(() => history.back());
        await keysHeading.waitFor();
        await createKey();
        // Forward (to the usage page), Cancel: the page, its address and the key stay.
        answerNext(false);
        await page.evaluate(() => history.forward());
        await expect.poll(() => asked.length).toBe(1);
        expect(asked[0]).toContain('You have not copied the new API key');
        await page.waitForTimeout(300);
        await onPage('/api-keys');
        expect(await panel.count()).toBe(1);
        // A link of the navigation, Cancel.
        answerNext(false);
        await nav.getByRole('link', { name: 'Settings' }).click();
        await expect.poll(() => asked.length).toBe(2);
        await onPage('/api-keys');
        expect(await panel.count()).toBe(1);
        // Back (to the overview), Cancel.
        answerNext(false);
        await page.evaluate(() => history.back());
        await expect.poll(() => asked.length).toBe(3);
        await page.waitForTimeout(300);
        await onPage('/api-keys');
        expect(await panel.count()).toBe(1);
        expect(await keysHeading.count()).toBe(1);
        // Back again, OK: the overview, one step back as asked.
        answerNext(true);
        await page.evaluate(() => history.back());
        await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
        await onPage('/');
        expect(asked).toHaveLength(4);
        // Closing the tab asks too (the browser's own question): the page cancels beforeunload.
        // (Dispatched here rather than by closing the page: a real close left waiting on its
        // question took the whole browser down once, under a loaded machine.)
        await nav.getByRole('link', { name: 'API keys' }).click();
        await createKey();
        const held = await page.evaluate(() => {
          const e = new Event('beforeunload', { cancelable: true });
          window.dispatchEvent(e);
          return e.defaultPrevented;
        });
        expect(held).toBe(true);
        expect(asked.every((m) => m === asked[0])).toBe(true);
      } finally {
        await ctx.close();
      }
    });

    it('moves the focus to the new key, announced by its heading, when a key is created with the keyboard', {
      timeout: 60_000,
    }, async () => {
      const { ctx, page } = await signedIn('/api-keys');
      try {
        await page.getByRole('button', { name: 'Create key' }).focus();
        await page.keyboard.press('Enter');
        await page.getByLabel('Key name').waitFor();
        await page.keyboard.type('keyboard');
        await page.keyboard.press('Enter');
        await page.getByRole('region', { name: 'Your new API key' }).waitFor();
        const focused = () => page.evaluate(() => `${document.activeElement?.tagName} ${document.activeElement?.textContent?.trim()}`);
        await expect.poll(focused).toBe('H2 Your new API key');
        // The keyboard goes on from there: Copy is next.
        await page.keyboard.press('Tab');
        expect(await focused()).toBe('BUTTON Copy');
      } finally {
        await ctx.close();
      }
    });

    it('takes settings changed in another tab when it comes back into view, and warns a form being edited instead of overwriting', {
      timeout: 60_000,
    }, async () => {
      const { ctx, page, cookie } = await signedIn('/settings');
      try {
        const threshold = page.getByLabel('Low-balance threshold');
        await page.getByRole('heading', { name: 'Settings', level: 1 }).waitFor();
        expect(await threshold.inputValue()).toBe('');
        // Another tab sets the threshold: this one, untouched, shows it once it is looked at again.
        await gql('mutation { setLowBalanceAlert(threshold: "7") { lowBalanceAlert } }', {}, cookie);
        await returnToTab(page);
        await expect.poll(() => threshold.inputValue()).toBe('7');
        // A form being edited keeps the edits, and says the settings changed elsewhere.
        await page.getByLabel('Enable spending limit').check();
        await page.getByLabel('Monthly limit').fill('30');
        await gql(
          'mutation { updateSpendingLimit(input: { enabled: true, monthlyLimit: "40", action: alert }) { monthlySpend } }',
          {},
          cookie,
        );
        await returnToTab(page);
        const spending = page.getByRole('form', { name: 'Spending limit' });
        await spending.getByText('Changed elsewhere since you opened this page').waitFor();
        expect(await page.getByLabel('Monthly limit').inputValue()).toBe('30');
        await spending.getByRole('button', { name: 'Show the new values' }).click();
        expect(await page.getByLabel('Monthly limit').inputValue()).toBe('40');
        expect(await page.getByLabel('When reached').inputValue()).toBe('alert');
        expect(await spending.getByText('Changed elsewhere').count()).toBe(0);
        // "Saved." is about what was saved: it goes with the next edit.
        await threshold.fill('8');
        await page.getByRole('button', { name: 'Save threshold' }).click();
        const lowBalance = page.getByRole('form', { name: 'Low-balance alert' });
        await lowBalance.getByText('Saved.').waitFor();
        await threshold.fill('9');
        expect(await lowBalance.getByText('Saved.').count()).toBe(0);
      } finally {
        await ctx.close();
      }
    });

    it('brings a person whose session ended back to the page they were on after signing in, and to no other site', {
      timeout: 60_000,
    }, async () => {
      const { ctx, page, cookie, email } = await signedIn('/settings');
      try {
        await page.getByRole('heading', { name: 'Settings', level: 1 }).waitFor();
        await gql('mutation { signOut }', {}, cookie);
        await page.getByLabel('Low-balance threshold').fill('5');
        await page.getByRole('button', { name: 'Save threshold' }).click();
        await page.getByRole('status').getByText('Your session ended: sign in again.').waitFor();
        expect(new URL(page.url()).searchParams.get('next')).toBe('/settings');
        await page.getByLabel('Email').fill(email);
        await page.getByLabel('Password').fill(PASSWORD);
        await page.getByRole('button', { name: 'Sign in' }).click();
        await page.getByRole('heading', { name: 'Settings', level: 1 }).waitFor();
        // A sign-in link made to send people elsewhere lands on the overview.
        await page.getByRole('button', { name: 'Sign out' }).click();
        await page.getByRole('heading', { name: 'Sign in to tollgate' }).waitFor();
        await page.goto(`${s.url}/dashboard/login?next=//evil.example/steal`);
        await page.getByLabel('Email').fill(email);
        await page.getByLabel('Password').fill(PASSWORD);
        await page.getByRole('button', { name: 'Sign in' }).click();
        await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
        expect(new URL(page.url()).origin).toBe(s.url);
      } finally {
        await ctx.close();
      }
    });

    it('keeps the monthly amount of a spending limit turned off', { timeout: 60_000 }, async () => {
      const { ctx, page, cookie } = await signedIn('/settings');
      try {
        const spending = page.getByRole('form', { name: 'Spending limit' });
        await page.getByLabel('Enable spending limit').check();
        // Empty while on: said to be required, not to be an amount it is not.
        await page.getByRole('button', { name: 'Save spending limit' }).click();
        await spending.getByRole('alert').getByText('Monthly limit is required').waitFor();
        await page.getByLabel('Monthly limit').fill('25');
        await page.getByRole('button', { name: 'Save spending limit' }).click();
        await spending.getByText('Saved.').waitFor();
        await page.getByLabel('Enable spending limit').uncheck();
        await page.getByRole('button', { name: 'Save spending limit' }).click();
        await spending.getByText('Saved.').waitFor();
        const limit = await gql('{ viewer { settings { spendingLimit { enabled monthlyLimit } } } }', {}, cookie);
        expect(limit.body.data.viewer.settings.spendingLimit).toEqual({ enabled: false, monthlyLimit: '25' });
        await page.reload();
        await page.getByRole('heading', { name: 'Settings', level: 1 }).waitFor();
        expect(await page.getByLabel('Enable spending limit').isChecked()).toBe(false);
        expect(await page.getByLabel('Monthly limit').inputValue()).toBe('25');
      } finally {
        await ctx.close();
      }
    });

    it('says once why automatic top-up was turned off', { timeout: 60_000 }, async () => {
      const { cookie, accountId } = await signUp();
      // As the settlement leaves it when a payment is disputed (and as an older reason could read).
      const knex = getKnex(s.services.orm);
      const turnOff = (reason: string) =>
        knex('auto_topups')
          .insert({ account_id: accountId, enabled: false, disabled_reason: reason, updated_at: new Date() })
          .onConflict('account_id')
          .merge();
      await turnOff('Turned off: payment pi_123 is disputed.');
      const { ctx, page } = await browse(cookie, '/settings');
      try {
        const form = page.getByRole('form', { name: 'Automatic top-up' });
        await form.getByText('payment pi_123 is disputed.').waitFor();
        expect(await form.getByText(/Turned off/).allTextContents()).toEqual(['Turned off: payment pi_123 is disputed.']);
        await turnOff('the card was declined three times.');
        await page.reload();
        await form.getByText('the card was declined three times.').waitFor();
        expect(await form.getByText(/Turned off/).allTextContents()).toEqual(['Turned off: the card was declined three times.']);
      } finally {
        await ctx.close();
      }
    });

    it('updates a top-up still being confirmed by itself, with a link back to its checkout', { timeout: 60_000 }, async () => {
      const { ctx, page, cookie } = await signedIn('/');
      try {
        const started = await gql('mutation { topUp(amount: "20") { id checkoutUrl } }', {}, cookie);
        const { id, checkoutUrl } = started.body.data.topUp as { id: string; checkoutUrl: string };
        await page.goto(`${s.url}/dashboard/top-up/return?top_up=${id}`);
        await page.getByRole('heading', { name: 'Waiting for the payment to be confirmed.' }).waitFor();
        expect(await page.getByRole('link', { name: 'Go back to the checkout' }).getAttribute('href')).toBe(checkoutUrl);
        // Paid meanwhile (the processor confirms it): the open page shows it without a reload.
        let reloaded = false;
        page.on('framenavigated', (f) => f === page.mainFrame() && (reloaded = true));
        const paid = await fetch(`${s.url}/checkout/sandbox/${id}/complete`, { method: 'POST', headers: { accept: 'application/json' } });
        expect(paid.status).toBe(200);
        await page.getByRole('heading', { name: 'Paid: the credits are in your wallet.' }).waitFor({ timeout: 20_000 });
        expect(reloaded).toBe(false);
        expect(await page.getByRole('link', { name: 'Go back to the checkout' }).count()).toBe(0);
      } finally {
        await ctx.close();
      }
    });

    it('shows a top-up whose payment was refunded or disputed as such', { timeout: 60_000 }, async () => {
      const { ctx, page, cookie } = await signedIn('/');
      try {
        const started = await gql('mutation { topUp(amount: "20") { id } }', {}, cookie);
        const id = started.body.data.topUp.id as string;
        await fetch(`${s.url}/checkout/sandbox/${id}/complete`, { method: 'POST', headers: { accept: 'application/json' } });
        // The sandbox has no refunds: the processor's report is written as a Stripe webhook leaves it.
        const knex = getKnex(s.services.orm);
        await knex('top_ups').where({ id }).update({ refunded_cents: 500 });
        await page.goto(`${s.url}/dashboard/top-up/return?top_up=${id}`);
        await page.getByRole('heading', { name: /^Refunded: / }).waitFor();
        const outcome = page.getByRole('region', { name: /^Refunded: / });
        expect(await outcome.getByRole('term').allTextContents()).toContain('Refunded');
        await outcome.getByText('5.00 USD').waitFor();
        await knex('top_ups').where({ id }).update({ dispute_state: 'withdrawn' });
        await page.reload();
        await page.getByRole('heading', { name: /^Disputed: / }).waitFor();
      } finally {
        await ctx.close();
      }
    });

    it('says when a playground answer was cut short, and stops the call (and its billing) when the page is left mid-stream', {
      timeout: 90_000,
    }, async () => {
      const { ctx, page, accountId } = await signedIn('/playground');
      try {
        await toDeveloper(accountId);
        await credit(accountId, '1');
        // More words than the model's maximum output (256): the answer ends with finish reason length.
        await page.getByLabel('Prompt').fill('Go on #tokens=300');
        await page.getByRole('button', { name: 'Send' }).click();
        await page.getByRole('note').getByText('The answer was cut short').waitFor();
        // A slow answer, left after its first words.
        const before = (await s.services.billing.listUsageEvents(accountId)).length;
        const abortedBefore = s.upstream.aborted;
        await page.getByLabel('Prompt').fill('Take your time #tokens=60 #delay=300');
        await page.getByRole('button', { name: 'Send' }).click();
        await page.locator('p.answer').getByText(/w0 w1/).waitFor();
        await page.getByRole('navigation').getByRole('link', { name: 'Overview' }).click();
        const events = await until(async () => {
          const list = await s.services.billing.listUsageEvents(accountId);
          return list.length > before && list;
        }, 30_000);
        const left = events.at(-1)!;
        expect(left.outcome).toBe('client_disconnected');
        expect(left.completionTokens).toBeLessThan(60);
        // The server stopped the model's call: the upstream saw its client go.
        await until(() => s.upstream.aborted > abortedBefore, 10_000);
      } finally {
        await ctx.close();
      }
    });

    it('prices a playground answer at the model it came from, whatever model is chosen afterwards', { timeout: 60_000 }, async () => {
      const { ctx, page } = await signedIn('/playground');
      try {
        const model = page.getByLabel('Model');
        expect(await model.inputValue()).toBe('chat-test');
        await page.getByLabel('Prompt').fill('Hi #tokens=3');
        await page.getByRole('button', { name: 'Send' }).click();
        const cost = page.getByRole('region', { name: 'Answer' }).getByRole('status');
        await cost.getByText(/ tokens, .* USD at list/).waitFor();
        const shown = await cost.textContent();
        expect(shown).toContain('USD at list prices for chat-test');
        // chat-test's prices: 1.00 per million prompt tokens, 2.00 per million completion tokens.
        const [, prompt, completion] = /^(\d+) prompt \+ (\d+) completion/.exec(shown!)!;
        const nanos = (Number(prompt) * 1000 + Number(completion) * 2000).toString().padStart(9, '0');
        const price = `0.${nanos.replace(/0+$/, '').padEnd(2, '0')} USD`;
        expect(shown).toContain(price);
        // Another model for the next prompt (half the prices): the answer shown keeps its cost.
        await model.selectOption('chat-old');
        expect(await model.inputValue()).toBe('chat-old');
        expect(await cost.textContent()).toContain(price);
        expect(await cost.textContent()).toBe(shown);
      } finally {
        await ctx.close();
      }
    });

    it('labels usage days as UTC and shows amounts of usage and transactions with their currency', { timeout: 60_000 }, async () => {
      const { ctx, page, cookie, accountId } = await signedIn('/');
      try {
        await toDeveloper(accountId);
        await credit(accountId, '1');
        const apiKey = (await gql('mutation { createMyApiKey(name: "usage") { apiKey } }', {}, cookie)).body.data.createMyApiKey.apiKey;
        const call = await fetch(`${s.v1}/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'chat-test', messages: [{ role: 'user', content: 'Hi #tokens=3' }] }),
        });
        expect(call.status).toBe(200);
        await page.getByRole('navigation').getByRole('link', { name: 'Usage' }).click();
        await page.getByLabel('Month (UTC)').waitFor();
        const byDay = page.getByRole('table', { name: 'By day (UTC)' });
        await byDay.getByRole('columnheader', { name: 'Day (UTC)' }).waitFor();
        expect(await byDay.getByRole('cell', { name: /USD$/ }).count()).toBe(1);
        await page.getByRole('navigation').getByRole('link', { name: 'Transactions' }).click();
        const ledger = page.getByRole('table', { name: /Ledger/ });
        await ledger.getByRole('cell', { name: '+1.00 USD' }).waitFor();
      } finally {
        await ctx.close();
      }
    });

    it('tells a server error from a network failure, offers to try again, and a Reload when the dashboard cannot start', {
      timeout: 60_000,
    }, async () => {
      const { ctx, page } = await signedIn('/');
      try {
        await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
        await failOperation(page, 'query Usage');
        await page.getByRole('navigation').getByRole('link', { name: 'Usage' }).click();
        const alert = page.getByRole('alert');
        await alert.getByText('The server had an error (HTTP 500)').waitFor();
        expect(await alert.textContent()).not.toContain('could not be reached');
        await page.unroute(/\/graphql(\?|$)/);
        await alert.getByRole('button', { name: 'Try again' }).click();
        await page.getByText(/^No usage in \d{4}-\d{2} \(UTC\)\.$/).waitFor();
        expect(await page.getByRole('alert').count()).toBe(0);
        // The first request of all fails: the app says so and offers a reload, which works once the server does.
        await failOperation(page, 'query Session');
        await page.reload();
        const start = page.getByRole('alert').filter({ hasText: 'The dashboard could not start' });
        await start.getByText('The server had an error (HTTP 500)').waitFor();
        await page.unroute(/\/graphql(\?|$)/);
        await start.getByRole('button', { name: 'Reload' }).click();
        await page.getByRole('heading', { name: 'Usage', level: 1 }).waitFor();
      } finally {
        await ctx.close();
      }
    });

    it('creates a key with an expiry and shows every column of keys and transactions at 375 px', { timeout: 60_000 }, async () => {
      const { ctx, page, accountId } = await signedIn('/api-keys', { width: 375, height: 760 });
      try {
        await credit(accountId, '3');
        await page.getByRole('button', { name: 'Create key' }).click();
        await page.getByLabel('Key name').fill('phone');
        await page.getByLabel('Expires on (optional)').fill('2099-01-31');
        await page.getByRole('button', { name: 'Create', exact: true }).click();
        page.once('dialog', (d) => void d.accept());
        await page.getByRole('button', { name: 'Done' }).click();
        const row = page.getByRole('row', { name: /phone/ });
        await row.waitFor();
        // 00:00 UTC on that day.
        expect(await row.getByRole('cell', { name: /2099/ }).count()).toBe(1);
        const status = row.getByRole('cell', { name: 'Active' });
        const revoke = row.getByRole('button', { name: 'Revoke phone' });
        expect(await inView(status)).toBe(true);
        expect(await inView(revoke)).toBe(true);
        expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
        await page.getByRole('navigation').getByRole('link', { name: 'Transactions' }).click();
        const amount = page.getByRole('table', { name: /Ledger/ }).getByRole('cell', { name: '+3.00 USD' });
        await amount.waitFor();
        expect(await inView(amount)).toBe(true);
        expect(await inView(page.getByRole('cell', { name: '3.00 USD', exact: true }))).toBe(true);
      } finally {
        await ctx.close();
      }
    });

    it("shows a key's expiry day, creation and last use in UTC, labelled, in a browser west of UTC", { timeout: 60_000 }, async () => {
      const { cookie } = await signUp();
      const ctx = await browser.newContext({ viewport: { width: 1200, height: 860 }, timezoneId: 'America/New_York' });
      try {
        await ctx.addCookies([{ name: 'tollgate_session', value: cookie.slice(cookie.indexOf('=') + 1), url: s.url }]);
        const page = await ctx.newPage();
        await page.goto(`${s.url}/dashboard/api-keys`);
        expect(await page.evaluate(() => new Date('2026-12-15T00:00:00Z').getDate())).toBe(14);
        await page.getByRole('button', { name: 'Create key' }).click();
        await page.getByLabel('Key name').fill('dated');
        await page.getByLabel('Expires on (optional)').fill('2026-12-15');
        await page.getByRole('button', { name: 'Create', exact: true }).click();
        page.once('dialog', (d) => void d.accept());
        await page.getByRole('button', { name: 'Done' }).click();
        const row = page.getByRole('row', { name: /dated/ });
        // The day the key was set to expire on, at the hour it stops: not 14 Dec, 19:00 local time.
        await row.getByRole('cell', { name: '15 Dec 2026, 00:00 UTC', exact: true }).waitFor();
        const created = await row.getByRole('cell').nth(2).textContent();
        expect(created).toMatch(/^\d{1,2} [A-Z][a-z]{2} \d{4}, \d{2}:\d{2} UTC$/);
        const now = new Date();
        expect(created).toContain(`${now.getUTCFullYear()}`);
      } finally {
        await ctx.close();
      }
    });

    it('downloads no CSV, and says why, when a request of the export failed; the whole ledger once it works', {
      timeout: 60_000,
    }, async () => {
      const { cookie, accountId } = await signUp();
      await credit(accountId, '4');
      await credit(accountId, '5');
      const { ctx, page } = await browse(cookie, '/transactions');
      try {
        const downloads: string[] = [];
        page.on('download', (d) => downloads.push(d.suggestedFilename()));
        await page
          .getByRole('table', { name: /Ledger/ })
          .getByRole('cell', { name: '+5.00 USD' })
          .waitFor();
        // The export's requests (1000 at a time) fail with HTTP 500; the page's own (25) do not.
        await page.route(/\/graphql(\?|$)/, (route) => {
          const sent = `${decodeURIComponent(route.request().url().replace(/\+/g, ' '))} ${route.request().postData() ?? ''}`;
          return sent.includes('query Transactions') && sent.includes('"first":1000')
            ? route.fulfill({ status: 500, contentType: 'text/plain', body: 'Internal Server Error' })
            : route.fallback();
        });
        await page.getByRole('button', { name: 'Export CSV' }).click();
        const failed = page.getByRole('alert').filter({ hasText: 'Could not export the transactions: nothing was downloaded' });
        await expect.poll(async () => downloads.length > 0 || (await failed.count()) > 0).toBe(true);
        await page.waitForTimeout(500);
        expect(downloads).toEqual([]);
        await failed.getByText('The server had an error (HTTP 500)').waitFor();
        // Once the server answers, "Try again" downloads every transaction.
        await page.unroute(/\/graphql(\?|$)/);
        const download = page.waitForEvent('download');
        await failed.getByRole('button', { name: 'Try again' }).click();
        const csv = readFileSync((await (await download).path())!, 'utf8');
        expect(csv.split('\r\n').filter(Boolean)).toHaveLength(3);
        expect(csv).toContain(',bonus,5,');
        expect(await failed.count()).toBe(0);
      } finally {
        await ctx.close();
      }
    });

    it('shows every column of the usage and models tables at 375 px, the cost in view', { timeout: 60_000 }, async () => {
      const { cookie, accountId } = await signUp();
      await toDeveloper(accountId);
      await credit(accountId, '1');
      const apiKey = (await gql('mutation { createMyApiKey(name: "phone usage") { apiKey } }', {}, cookie)).body.data.createMyApiKey.apiKey;
      const call = await fetch(`${s.v1}/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'chat-test', messages: [{ role: 'user', content: 'Hi #tokens=3' }] }),
      });
      expect(call.status).toBe(200);
      const { ctx, page } = await browse(cookie, '/usage', { width: 375, height: 760 });
      /** Nothing of `table` is cut off by its box, and nothing of the page reaches past the screen. */
      const fits = async (table: ReturnType<Page['getByRole']>) => {
        const box = await table.evaluate((t) => ({ table: t.scrollWidth, wrap: t.parentElement!.clientWidth }));
        expect(box.table, 'the table inside its box').toBeLessThanOrEqual(box.wrap);
        expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
      };
      try {
        for (const name of [/^By model/, 'By day (UTC)']) {
          const table = page.getByRole('table', { name });
          const cost = table.getByRole('cell', { name: /USD$/ });
          await cost.waitFor();
          expect(await inView(cost), String(name)).toBe(true);
          await fits(table);
        }
        await page.getByRole('navigation').getByRole('link', { name: 'Models' }).click();
        const models = page.getByRole('table', { name: /Prices per million tokens/ });
        const chat = models.getByRole('row', { name: /chat-test/ });
        await chat.waitFor();
        for (const cell of await chat.getByRole('cell').all()) expect(await inView(cell), (await cell.textContent()) ?? '').toBe(true);
        await fits(models);
      } finally {
        await ctx.close();
      }
    });

    it('pre-fills nothing as the new e-mail address and says the old address is told', { timeout: 60_000 }, async () => {
      const { ctx, page, email } = await signedIn('/settings');
      try {
        const form = page.getByRole('form', { name: 'E-mail address' });
        await form.getByText(`You sign in as ${email}.`).waitFor();
        expect(await page.getByLabel('New email').inputValue()).toBe('');
        await page.getByLabel('New email').fill(`new-${email}`);
        await page.getByLabel('Password to confirm').fill(PASSWORD);
        await page.getByRole('button', { name: 'Change email' }).click();
        await form.getByText(`Saved. A notice was sent to ${email}.`).waitFor();
        await form.getByText(`You sign in as new-${email}.`).waitFor();
        expect(await page.getByLabel('New email').inputValue()).toBe('');
      } finally {
        await ctx.close();
      }
    });

    it('tells signed-in browsers apart by when they signed in, and asks before ending one', { timeout: 60_000 }, async () => {
      const { ctx, page, email, cookie } = await signedIn('/settings');
      try {
        const other = await fetch(`${s.url}/graphql`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'user-agent': 'curl/8.5.0' },
          body: JSON.stringify({
            query: 'mutation($e: String!, $p: String!) { signIn(email: $e, password: $p) { id } }',
            variables: { e: email, p: PASSWORD },
          }),
        });
        const otherId = ((await other.json()) as { data: { signIn: { id: string } } }).data.signIn.id;
        await page.reload();
        const list = page.getByRole('region', { name: 'Signed-in browsers' });
        await list.getByText('(this browser)').waitFor();
        expect(await list.getByText(/^Signed in .+ · last seen /).count()).toBe(2);
        await list.getByRole('button', { name: /^End session: curl\/8\.5\.0, signed in / }).click();
        const confirm = list.getByRole('group', { name: /^Confirm ending curl\/8\.5\.0/ });
        await confirm.waitFor();
        const sessions = async () =>
          ((await gql('{ viewer { sessions { id } } }', {}, cookie)).body.data.viewer.sessions as { id: string }[]).map((x) => x.id);
        expect(await sessions()).toContain(otherId);
        await confirm.getByRole('button', { name: 'Keep it' }).click();
        await list.getByRole('button', { name: /^End session: curl/ }).click();
        await list
          .getByRole('group', { name: /^Confirm ending curl/ })
          .getByRole('button', { name: 'Yes, end it' })
          .click();
        await list.getByText('curl/8.5.0').waitFor({ state: 'detached' });
        expect(await sessions()).not.toContain(otherId);
      } finally {
        await ctx.close();
      }
    });

    it("words the plan's fee with its currency, a refusal in the form's words, and gives the password forms a username", {
      timeout: 60_000,
    }, async () => {
      const { ctx, page } = await signedIn('/plan');
      const notices: string[] = [];
      page.on('console', (m) => notices.push(m.text()));
      try {
        await page.getByRole('button', { name: 'Switch to startup' }).click();
        await page.getByText('The fee of 49.00 USD is charged from your wallet now.').waitFor();
        await page.getByRole('button', { name: 'Cancel' }).click();
        await page.getByRole('navigation').getByRole('link', { name: 'Settings' }).click();
        await page.getByLabel('Enable automatic top-up').check();
        await page.getByLabel('Top up when the balance falls below').fill('600');
        await page.getByLabel('Top-up amount').fill('25');
        await page.getByRole('button', { name: 'Save automatic top-up' }).click();
        await page
          .getByRole('form', { name: 'Automatic top-up' })
          .getByRole('alert')
          .getByText('The balance to top up at must be below 500.00 USD')
          .waitFor();
        // Every form with a password names the account it belongs to (for password managers).
        for (const form of ['Password', 'E-mail address']) {
          expect(await page.getByRole('form', { name: form, exact: true }).locator('input[autocomplete="username"]').inputValue()).toMatch(
            /@example\.com$/,
          );
        }
        expect(notices.filter((n) => n.includes('Password forms should have'))).toEqual([]);
      } finally {
        await ctx.close();
      }
    });
  },
);
