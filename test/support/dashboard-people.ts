// People of the dashboard's browser tests: accounts signed up over GraphQL, each in a browser
// context of its own with its session cookie, and the operator's credit to their wallets. Shared by
// the browser suites (dashboard-probe, dashboard-resilience, dashboard-findings).
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { expect } from 'vitest';
import { ADMIN_TOKEN, type TestServer } from './harness.js';

export const PASSWORD = 'a long enough password';
const VIEWPORT = { width: 1200, height: 860 };

/**
 * The helpers of one suite: `url()` the dashboard's server as now running, `browser()` the suite's
 * Chromium, `server()` its test server, `prefix` the new addresses' (prefix-N@example.com).
 */
export function dashboardPeople(o: { url: () => string; browser: () => Browser; server: () => TestServer; prefix: string }) {
  let people = 0;

  /** A GraphQL request, with a session cookie (name=value) when given: its body and its Set-Cookie headers. */
  async function gql(query: string, variables: Record<string, unknown> = {}, cookie?: string) {
    const res = await fetch(`${o.url()}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(cookie ? { cookie } : {}) },
      body: JSON.stringify({ query, variables }),
    });
    return { body: (await res.json()) as { data?: any; errors?: any[] }, setCookie: res.headers.getSetCookie() };
  }

  /** A browser of its own, with the session cookie `cookie` (name=value) when given, on `at` (a path under /dashboard). */
  async function browse(cookie: string | null, at: string, viewport = VIEWPORT) {
    const ctx: BrowserContext = await o.browser().newContext({ viewport });
    if (cookie) await ctx.addCookies([{ name: 'tollgate_session', value: cookie.slice(cookie.indexOf('=') + 1), url: o.url() }]);
    const page: Page = await ctx.newPage();
    await page.goto(`${o.url()}/dashboard${at}`);
    return { ctx, page };
  }

  /** A new account, signed up: its address, its session cookie (name=value) and its id. */
  async function signUp() {
    const email = `${o.prefix}-${++people}@example.com`;
    const up = await gql('mutation($e: String!, $p: String!) { signUp(email: $e, password: $p) { account { id } } }', {
      e: email,
      p: PASSWORD,
    });
    return { email, cookie: up.setCookie[0]!.split(';')[0]!, accountId: up.body.data.signUp.account.id as string };
  }

  /** A new account, signed in in a browser of its own, on `at` (a path under /dashboard). */
  async function signedIn(at: string, viewport = VIEWPORT) {
    const person = await signUp();
    return { ...person, ...(await browse(person.cookie, at, viewport)) };
  }

  /** The operator credits `amount` (a bonus) to the account's wallet. */
  async function credit(accountId: string, amount: string) {
    const r = await o
      .server()
      .graphql(
        'mutation($i: CreditWalletInput!) { creditWallet(input: $i) { id } }',
        { i: { accountId, amount, type: 'bonus', description: 'a test credit' } },
        ADMIN_TOKEN,
      );
    expect(r.body.errors).toBeUndefined();
  }

  return { gql, browse, signUp, signedIn, credit };
}
