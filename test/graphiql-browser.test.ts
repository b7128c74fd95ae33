// GraphiQL at GET /graphql, opened in a real browser (Debian's Chromium through playwright-core):
// it renders its editor from assets the server itself sends, with no request leaving loopback, so
// it works offline. Skipped without Chromium (a failure under CI=true: .ci/run installs it).
import type { Browser } from 'playwright-core';
import { launchChromium } from './support/browser.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/harness.js';
import { findExecutable, missing } from './support/requirements.js';

const CHROMIUM = findExecutable(process.env.CHROMIUM_PATH ?? '/usr/bin/chromium');

describe.skipIf(missing('Chromium at /usr/bin/chromium (Debian: apt-get install chromium; or set CHROMIUM_PATH)', CHROMIUM !== null))(
  'GraphiQL in a browser',
  () => {
    let s: TestServer;
    let browser: Browser;

    beforeAll(async () => {
      s = await startTestServer();
      browser = await launchChromium(CHROMIUM!);
    }, 60_000);
    afterAll(async () => {
      await browser?.close();
      await s?.close();
    });

    it('renders its editor and runs a query with every request staying on loopback', { timeout: 90_000 }, async () => {
      const page = await browser.newPage();
      const requested: string[] = [];
      page.on('request', (r) => requested.push(r.url()));
      // GraphiQL takes its first query from the address, as a shared link would give it.
      await page.goto(`${s.url}/graphql?query=${encodeURIComponent('{ models { id } }')}`, { waitUntil: 'load' });
      const execute = page.getByRole('button', { name: /execute query/i });
      await execute.waitFor({ state: 'visible', timeout: 60_000 });
      expect(await page.title()).toBe('tollgate GraphiQL');
      expect(await page.getByText('Loading', { exact: false }).count()).toBe(0);
      // The editor holds the query and runs it: the server's data shows in the result pane.
      await execute.click();
      await page.getByText('"chat-test"').first().waitFor({ state: 'visible', timeout: 30_000 });

      const leaving = requested.filter((u) => {
        if (u.startsWith('data:') || u.startsWith('blob:')) return false;
        const host = new URL(u).hostname;
        return !['127.0.0.1', 'localhost', '[::1]'].includes(host);
      });
      expect(requested.some((u) => u.startsWith(`${s.url}/graphql`))).toBe(true);
      expect(leaving).toEqual([]);
      await page.close();
    });
  },
);
