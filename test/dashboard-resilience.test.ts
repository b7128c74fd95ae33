// The dashboard when things change under an open page, in Debian's Chromium through
// playwright-core: the session ends elsewhere (the sign-in page says so instead of raw API
// errors), the server restarts (the live balance comes back on its own), a page's code cannot be
// loaded (a message and a Reload button, the navigation still usable), long amounts or answers at
// phone width (nothing widens the page), a notification with no wallet change (the overview shows
// it live), and a canceled top-up (its result page lists no credits).
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningServer, startServer } from '../src/server.js';
import { launchChromium } from './support/browser.js';
import { dashboardPeople, PASSWORD } from './support/dashboard-people.js';
import { buildDashboardOnce } from './support/dashboard-build.js';
import { ADMIN_TOKEN, catalogYaml, startTestServer, type TestServer } from './support/harness.js';
import { findExecutable, missing } from './support/requirements.js';
import { until, waitUntil } from './support/wait.js';

const CHROMIUM = findExecutable(process.env.CHROMIUM_PATH ?? '/usr/bin/chromium');
const ROOT = path.resolve(import.meta.dirname, '..');

describe.skipIf(missing('Chromium at /usr/bin/chromium (Debian: apt-get install chromium; or set CHROMIUM_PATH)', CHROMIUM !== null))(
  'the dashboard when things change under an open page',
  () => {
    let s: TestServer;
    // A second HTTP server over the same services, which a test can stop and start again on its port.
    let running: RunningServer;
    let url: string;
    let browser: Browser;

    beforeAll(async () => {
      buildDashboardOnce(ROOT);
      // The developer tier without an allocation: its calls are paid from the wallet from the first token.
      s = await startTestServer({ yaml: (u) => `${catalogYaml(u)}tiers:\n  developer: { monthly_tokens: 0 }\n` });
      running = await startServer(s.services, { port: 0, host: '127.0.0.1' });
      url = running.url;
      browser = await launchChromium(CHROMIUM!);
    }, 120_000);
    afterAll(async () => {
      await browser?.close();
      await running?.shutdown();
      await s?.close();
    });

    const people = dashboardPeople({ url: () => url, browser: () => browser, server: () => s, prefix: 'person' });
    const { gql, browse, signUp, signedIn, credit } = people;

    /** The session ends from elsewhere: signed out with its cookie by another client. */
    const endSession = async (cookie: string) => {
      await gql('mutation { signOut }', {}, cookie);
    };

    /** Stops the dashboard's server, runs `whileDown`, and starts it again on the same port. */
    async function restart(whileDown: () => Promise<void>): Promise<void> {
      await running.shutdown();
      await whileDown();
      running = await startServer(s.services, { port: Number(new URL(url).port), host: '127.0.0.1' });
    }

    /** Whether anything on the page reaches past the viewport's width (the page scrolls sideways). */
    const widerThanViewport = (page: Page) =>
      page.evaluate(() => document.documentElement.scrollWidth > document.documentElement.clientWidth);

    async function seesSessionEnded(page: Page): Promise<void> {
      await page.getByRole('heading', { name: 'Sign in to tollgate' }).waitFor();
      await page.getByRole('status').getByText('Your session ended: sign in again.').waitFor();
    }

    it('sends an open overview to the sign-in page, saying the session ended, when it is signed out elsewhere', {
      timeout: 60_000,
    }, async () => {
      const { ctx, page, cookie } = await signedIn('/');
      try {
        await page.getByRole('region', { name: 'Balance' }).getByText('0.00 USD').waitFor();
        // Nothing is clicked: the live balance's subscription ends with the session.
        await endSession(cookie);
        await seesSessionEnded(page);
      } finally {
        await ctx.close();
      }
    });

    it('sends a page opened after the session ended to the sign-in page, and signing in again comes back to it', {
      timeout: 60_000,
    }, async () => {
      const { ctx, page, cookie, email } = await signedIn('/api-keys');
      try {
        await page.getByRole('heading', { name: 'API keys', level: 1 }).waitFor();
        await endSession(cookie);
        await page.getByRole('navigation').getByRole('link', { name: 'Settings' }).click();
        await seesSessionEnded(page);
        await page.getByLabel('Email').fill(email);
        await page.getByLabel('Password').fill(PASSWORD);
        await page.getByRole('button', { name: 'Sign in' }).click();
        await page.getByRole('heading', { name: 'Settings', level: 1 }).waitFor();
      } finally {
        await ctx.close();
      }
    });

    it('sends the playground to the sign-in page when its stream is refused for want of a session', { timeout: 60_000 }, async () => {
      const { ctx, page, cookie } = await signedIn('/playground');
      try {
        await page.getByLabel('Prompt').fill('Say hello');
        await endSession(cookie);
        await page.getByRole('button', { name: 'Send' }).click();
        await seesSessionEnded(page);
      } finally {
        await ctx.close();
      }
    });

    it("sends an operator to the sign-in page when the operator's session ended elsewhere", { timeout: 60_000 }, async () => {
      const op = await gql('mutation($t: String!) { signInAsOperator(token: $t) { id } }', { t: ADMIN_TOKEN });
      const cookie = op.setCookie[0]!.split(';')[0]!;
      const { ctx, page } = await browse(cookie, '/operator');
      try {
        await page.getByRole('heading', { name: 'Operator', level: 1 }).waitFor();
        await endSession(cookie);
        await page.getByLabel('Search accounts').fill('person');
        await seesSessionEnded(page);
      } finally {
        await ctx.close();
      }
    });

    it('resumes the live balance once the server is back after a restart on the same port', { timeout: 90_000 }, async () => {
      const { ctx, page, accountId } = await signedIn('/');
      try {
        const balance = page.getByRole('region', { name: 'Balance' });
        await balance.getByText('0.00 USD').waitFor();
        await waitUntil(() => s.services.billing.events.size > 0);
        // WebSockets opened from here on are the page's attempts to reconnect.
        let closedAttempts = 0;
        page.on('websocket', (socket) => socket.on('close', () => closedAttempts++));
        await restart(async () => {
          await waitUntil(() => s.services.billing.events.size === 0);
          // While the server is down, the page tries again and is refused.
          await expect.poll(() => closedAttempts, { timeout: 30_000 }).toBeGreaterThan(0);
        });
        // The page subscribes again on its own, and sees the next change without a reload.
        await waitUntil(() => s.services.billing.events.size > 0, 30_000);
        await credit(accountId, '12.5');
        await balance.getByText('12.50 USD').waitFor();
      } finally {
        await ctx.close();
      }
    });

    it('never sends a playground prompt again when its connection breaks mid-answer: the answer ends with an error instead', {
      timeout: 90_000,
    }, async () => {
      const { ctx, page, accountId } = await signedIn('/playground');
      const chatCalls = () => s.upstream.requests.filter((r) => r.path.endsWith('/chat/completions')).length;
      try {
        const before = chatCalls();
        const usageBefore = (await s.services.billing.listUsageEvents(accountId)).length;
        // A slow answer (60 words, 300 ms apart), broken by a server restart after its first words.
        await page.getByLabel('Prompt').fill('Take your time #tokens=60 #delay=300');
        await page.getByRole('button', { name: 'Send' }).click();
        const answer = page.getByRole('region', { name: 'Answer' });
        await answer.getByText(/w0 w1/).waitFor();
        expect(chatCalls()).toBe(before + 1);
        const broken = answer.getByRole('alert').getByText('The connection to the server was lost before the answer was complete');
        await restart(async () => {
          await new Promise((resolve) => setTimeout(resolve, 500));
        });
        // Either the page says the answer broke off, or (the bug) it subscribed again once the
        // server was back, which sent the prompt to the model a second time.
        await expect
          .poll(async () => (await broken.count()) > 0 || chatCalls() > before + 1, { timeout: 30_000, interval: 250 })
          .toBe(true);
        // A reconnect would have come by now (graphql-ws retries within a few seconds).
        await new Promise((resolve) => setTimeout(resolve, 4000));
        expect(chatCalls()).toBe(before + 1);
        expect(await broken.count()).toBe(1);
        expect(await page.getByRole('button', { name: 'Send' }).isEnabled()).toBe(true);
        // One call, billed once.
        const events = await until(async () => {
          const list = await s.services.billing.listUsageEvents(accountId);
          return list.length > usageBefore && list;
        }, 10_000);
        expect(events.length).toBe(usageBefore + 1);
      } finally {
        await ctx.close();
      }
    });

    it("shows a message and a Reload button when a page's code cannot be loaded, with the navigation still usable", {
      timeout: 90_000,
    }, async () => {
      const { ctx, page } = await signedIn('/');
      try {
        const nav = page.getByRole('navigation');
        await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
        const failed = page.getByRole('alert').getByText('This page could not be loaded.');
        await restart(async () => {
          // The usage page's code was never loaded in this tab, and now cannot be.
          await nav.getByRole('link', { name: 'Usage' }).click();
          await failed.waitFor();
          expect(await page.getByRole('button', { name: 'Sign out' }).count()).toBe(1);
          // The navigation still works: the overview (its code loaded) says what is wrong itself.
          await nav.getByRole('link', { name: 'Overview' }).click();
          await page.getByText('The server could not be reached.').waitFor();
          expect(await failed.count()).toBe(0);
          await nav.getByRole('link', { name: 'Usage' }).click();
          await failed.waitFor();
        });
        // Reload brings the page once the server is back.
        await page.getByRole('button', { name: 'Reload' }).click();
        await page.getByRole('heading', { name: 'Usage', level: 1 }).waitFor();
      } finally {
        await ctx.close();
      }
    });

    it('loads a page whose code failed to load while the server was down on its next visit, without a reload', {
      timeout: 90_000,
    }, async () => {
      const { ctx, page } = await signedIn('/');
      try {
        const nav = page.getByRole('navigation');
        await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
        // A mark on this document: a reload would take it away.
        await page.evaluate(() => Object.assign(window, { sameDocument: true }));
        const failed = page.getByRole('alert').getByText('This page could not be loaded.');
        await restart(async () => {
          // The transactions page's code was never loaded in this tab, and now cannot be.
          await nav.getByRole('link', { name: 'Transactions' }).click();
          await failed.waitFor();
          await nav.getByRole('link', { name: 'Overview' }).click();
          await page.getByText('The server could not be reached.').waitFor();
        });
        // The server is back: the next visit loads the page, with no Reload.
        await nav.getByRole('link', { name: 'Transactions' }).click();
        await page.getByRole('heading', { name: 'Transactions', level: 1 }).waitFor();
        expect(await failed.count()).toBe(0);
        expect(await page.evaluate(() => 'sameDocument' in window)).toBe(true);
      } finally {
        await ctx.close();
      }
    });

    it('fits a large balance in its card at phone, small phone and tablet widths', { timeout: 60_000 }, async () => {
      const { ctx, page, accountId } = await signedIn('/', { width: 320, height: 700 });
      try {
        await page.getByRole('region', { name: 'Balance' }).getByText('0.00 USD').waitFor();
        await credit(accountId, '99999.496954');
        const balance = page.getByRole('region', { name: 'Balance' });
        await balance.getByText('99,999.496954 USD').waitFor();
        for (const width of [320, 375, 1024]) {
          await page.setViewportSize({ width, height: 700 });
          expect(await widerThanViewport(page), `${width} px`).toBe(false);
          const card = await balance.evaluate((e) => ({ scroll: e.scrollWidth, client: e.clientWidth }));
          expect(card.scroll, `the Balance card at ${width} px`).toBeLessThanOrEqual(card.client);
        }
      } finally {
        await ctx.close();
      }
    });

    it('wraps a playground answer and its reasoning with long runs without spaces at phone width', { timeout: 60_000 }, async () => {
      const run = `https://example.com/${'a'.repeat(200)}`;
      const thought = `thinking:${'b'.repeat(200)}`;
      const chunk = (body: Record<string, unknown>) =>
        `data: ${JSON.stringify({ id: 'chatcmpl-x', object: 'chat.completion.chunk', created: 1735689600, model: 'm', ...body })}\n\n`;
      s.upstream.setFault({
        raw: [
          chunk({ choices: [{ index: 0, delta: { role: 'assistant', reasoning_content: thought }, finish_reason: null }] }),
          chunk({ choices: [{ index: 0, delta: { content: run }, finish_reason: null }] }),
          chunk({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] }),
          chunk({ choices: [], usage: { prompt_tokens: 4, completion_tokens: 1, total_tokens: 5 } }),
          'data: [DONE]\n\n',
        ].join(''),
        type: 'text/event-stream',
      });
      const { ctx, page } = await signedIn('/playground', { width: 320, height: 700 });
      try {
        await page.getByLabel('Prompt').fill('A link, please');
        await page.getByRole('button', { name: 'Send' }).click();
        await page.getByText(run).waitFor();
        await page.getByText(thought).waitFor();
        expect(await widerThanViewport(page)).toBe(false);
      } finally {
        s.upstream.setFault(null);
        await ctx.close();
      }
    });

    it("shows a notification without a wallet change (a call refused by the spending limit) live, and the spend's currency", {
      timeout: 60_000,
    }, async () => {
      const { cookie, accountId } = await signUp();
      const tier = await s.graphql(
        'mutation($id: ID!) { setAccountTier(accountId: $id, tier: developer) { tier } }',
        { id: accountId },
        ADMIN_TOKEN,
      );
      expect(tier.body.errors).toBeUndefined();
      await credit(accountId, '1');
      const limit = await gql(
        'mutation { updateSpendingLimit(input: { enabled: true, monthlyLimit: "0.00003", action: block }) { monthlySpend } }',
        {},
        cookie,
      );
      expect(limit.body.errors).toBeUndefined();
      const apiKey = (await gql('mutation { createMyApiKey(name: "test") { apiKey } }', {}, cookie)).body.data.createMyApiKey
        .apiKey as string;
      const chat = () =>
        fetch(`${url}/v1/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'chat-test', messages: [{ role: 'user', content: 'a #tokens=5' }], max_tokens: 5 }),
        });
      const { ctx, page } = await browse(cookie, '/');
      try {
        const spend = page.getByRole('region', { name: 'Spend this month' });
        await spend.getByText('0.00 USD of 0.00003 USD').waitFor();
        expect((await chat()).status).toBe(200);
        await spend.getByText('0.000016 USD of 0.00003 USD').waitFor();
        const recent = page.getByRole('region', { name: /Recent notifications/ });
        await recent.getByText('No notifications yet.').waitFor();
        // The next call would pass the limit: refused, nothing charged, one notification written.
        expect((await chat()).status).toBe(402);
        await recent.getByText(/Spending limit reached/).waitFor();
      } finally {
        await ctx.close();
      }
    });

    it('lists no credits on the result page of a canceled top-up', { timeout: 60_000 }, async () => {
      const { ctx, page } = await signedIn('/top-up');
      try {
        await page.getByLabel('Amount').fill('25');
        await page.getByRole('button', { name: 'Top up', exact: true }).click();
        await page.getByRole('button', { name: 'Cancel' }).click();
        await page.getByRole('link', { name: /Back to your account/ }).click();
        await page.getByRole('heading', { name: 'Canceled: nothing was charged.' }).waitFor();
        const outcome = page.getByRole('region', { name: 'Canceled: nothing was charged.' });
        await outcome.getByText('25.00 USD').first().waitFor();
        expect(await outcome.getByRole('term').allTextContents()).toEqual(['Amount', 'Balance now']);
      } finally {
        await ctx.close();
      }
    });
  },
);
