// Sign-in for the dashboard through GraphQL (issue 15): sign-up policies, the session cookie and
// its attributes, what only a session may do, CSRF and cross-site WebSocket protection, login
// throttling, password reset through the .eml file, operator sessions.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { request as httpRequest } from 'node:http';
import { createServer as createNetServer, type AddressInfo, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../src/cli.js';
import { getKnex } from '../src/db/orm.js';
import { MAX_SESSIONS } from '../src/domain/auth/auth-service.js';
import { ADMIN_TOKEN, catalogYaml, startTestServer, type TestServer } from './support/harness.js';
import { waitUntil } from './support/wait.js';

const PASSWORD = 'correct horse battery';

async function gql(s: TestServer, query: string, variables: Record<string, unknown> = {}, headers: Record<string, string> = {}) {
  const res = await fetch(`${s.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ query, variables }),
  });
  return { status: res.status, body: (await res.json()) as { data?: any; errors?: any[] }, setCookie: res.headers.getSetCookie() };
}
const cookieOf = (setCookie: string[]) => setCookie[0]!.split(';')[0]!;

/** `{ viewer { email } }` over graphql-ws to `server` with this cookie, from this origin: its first result or its errors. */
async function viewerOverSocket(server: string, cookie: string, origin: string): Promise<any> {
  const client = createClient({
    url: `${server.replace('http', 'ws')}/graphql`,
    webSocketImpl: class extends WebSocket {
      constructor(url: string, protocols: string[]) {
        super(url, protocols, { headers: { cookie, origin } });
      }
    },
    retryAttempts: 0,
  });
  try {
    return await new Promise<any>((resolve) => {
      client.subscribe({ query: '{ viewer { email } }' }, { next: resolve, error: (e) => resolve({ errors: e }), complete: () => {} });
    });
  } finally {
    await client.dispose();
  }
}

describe('dashboard sign-in (open sign-up)', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  });
  afterAll(async () => s?.close());

  it('signs up onto the free tier with an httpOnly SameSite=Lax cookie, and the session reads the account', async () => {
    const r = await gql(
      s,
      'mutation($e: String!, $p: String!) { signUp(email: $e, password: $p) { operator account { email tier apiKeys { id } } } }',
      { e: 'Ann@Example.com', p: PASSWORD },
    );
    expect(r.body.errors).toBeUndefined();
    expect(r.body.data.signUp).toEqual({ operator: false, account: { email: 'Ann@Example.com', tier: 'free', apiKeys: [] } });
    expect(r.setCookie[0]).toMatch(/^tollgate_session=tgs_[\w-]+; Path=\/; Expires=.*; HttpOnly; SameSite=Lax$/);
    const cookie = cookieOf(r.setCookie);
    const me = await gql(s, '{ session { account { email wallet { balance } } } viewer { email } }', {}, { cookie });
    expect(me.body.data).toEqual({
      session: { account: { email: 'Ann@Example.com', wallet: { balance: '0' } } },
      viewer: { email: 'Ann@Example.com' },
    });
    // The same address in another case is taken.
    const again = await gql(s, 'mutation($e: String!, $p: String!) { signUp(email: $e, password: $p) { id } }', {
      e: 'ann@example.com',
      p: PASSWORD,
    });
    expect(again.body.errors?.[0].extensions.code).toBe('email_taken');
    // Too short a password is refused.
    const weak = await gql(s, 'mutation($e: String!, $p: String!) { signUp(email: $e, password: $p) { id } }', {
      e: 'bob@example.com',
      p: 'short',
    });
    expect(weak.body.errors?.[0].extensions).toMatchObject({ code: 'invalid_value', param: 'password' });
  });

  it('refuses an address a mail header would read as another recipient, a display name or a comment', async () => {
    await gql(s, 'mutation($e: String!, $p: String!) { signUp(email: $e, password: $p) { id } }', { e: 'victim@example.com', p: PASSWORD });
    for (const e of [
      'me,victim@example.com',
      'me;victim@example.com',
      'x<victim@example.com>',
      '"me"victim@example.com',
      'me(x)@example.com',
      'me@[127.0.0.1].com',
    ]) {
      const r = await gql(s, 'mutation($e: String!, $p: String!) { signUp(email: $e, password: $p) { id } }', { e, p: PASSWORD });
      expect(r.body.errors?.[0].extensions, e).toMatchObject({ code: 'invalid_value', param: 'email' });
    }
    const ok = await gql(s, 'mutation($e: String!, $p: String!) { signUp(email: $e, password: $p) { id } }', {
      e: 'first.last+tag@mail.example.com',
      p: PASSWORD,
    });
    expect(ok.body.errors).toBeUndefined();
  });

  it('only a session manages keys: a key it creates works on /v1, an API key cannot create one, a revoked key gets 401', async () => {
    const up = await gql(s, 'mutation($e: String!, $p: String!) { signUp(email: $e, password: $p) { id } }', {
      e: 'keys@example.com',
      p: PASSWORD,
    });
    const cookie = cookieOf(up.setCookie);
    const created = await gql(s, 'mutation { createMyApiKey(name: "ci") { id apiKey } }', {}, { cookie });
    const { id, apiKey } = created.body.data.createMyApiKey;
    const chat = (key: string) =>
      fetch(`${s.v1}/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'chat-test', messages: [{ role: 'user', content: 'hi' }] }),
      });
    expect((await chat(apiKey)).status).toBe(200);
    const withKey = await gql(s, 'mutation { createMyApiKey(name: "x") { id } }', {}, { authorization: `Bearer ${apiKey}` });
    expect(withKey.body.errors?.[0].extensions.code).toBe('session_required');
    // Another account's key cannot be revoked through this session.
    const other = await s.account();
    const foreign = await gql(s, 'mutation($id: ID!) { revokeMyApiKey(id: $id) { id } }', { id: other.keyId }, { cookie });
    expect(foreign.body.errors?.[0].extensions.code).toBe('not_found');
    const revoked = await gql(s, 'mutation($id: ID!) { revokeMyApiKey(id: $id) { revokedAt } }', { id }, { cookie });
    expect(revoked.body.data.revokeMyApiKey.revokedAt).not.toBeNull();
    expect((await chat(apiKey)).status).toBe(401);
  });

  it('ignores the cookie of a request from another site, and Yoga refuses a simple cross-site POST', async () => {
    const up = await gql(s, 'mutation($e: String!, $p: String!) { signUp(email: $e, password: $p) { id } }', {
      e: 'csrf@example.com',
      p: PASSWORD,
    });
    const cookie = cookieOf(up.setCookie);
    const evil = await gql(s, '{ session { id } }', {}, { cookie, origin: 'https://evil.example' });
    expect(evil.body.data.session).toBeNull();
    const same = await gql(s, '{ session { id } }', {}, { cookie, origin: s.url });
    expect(same.body.data.session).not.toBeNull();
    // X-Forwarded-Host is a proxy's word: without server.trust_proxy, anyone's, and not believed.
    const forwarded = await gql(
      s,
      '{ session { id } }',
      {},
      { cookie, origin: 'https://evil.example', 'x-forwarded-host': 'evil.example' },
    );
    expect(forwarded.body.data.session).toBeNull();
    const form = await fetch(`${s.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie },
      body: 'query=mutation{signOut}',
    });
    expect(form.status).toBeGreaterThanOrEqual(400);
  });

  it('uses the cookie over WebSocket from its own origin only (cross-site WebSocket hijacking)', async () => {
    const up = await gql(s, 'mutation($e: String!, $p: String!) { signUp(email: $e, password: $p) { id } }', {
      e: 'ws@example.com',
      p: PASSWORD,
    });
    const cookie = cookieOf(up.setCookie);
    const viewer = (origin: string) => viewerOverSocket(s.url, cookie, origin);
    expect((await viewer(s.url)).data).toEqual({ viewer: { email: 'ws@example.com' } });
    const hijack = await viewer('https://evil.example');
    expect(hijack.errors?.[0].extensions.code).toBe('session_required');
    // Said as what it is (not "No API key provided"), for a developer whose app runs on another origin.
    expect(hijack.errors?.[0].message).toMatch(/^The session cookie came from a page of another site \(Origin: https:\/\/evil\.example\)/);
    // The same over HTTP, for reads and for what only a session may do; no data either way.
    const overHttp = await gql(s, '{ viewer { email } }', {}, { cookie, origin: 'https://evil.example' });
    expect(overHttp.body.data?.viewer ?? null).toBeNull();
    expect(overHttp.body.errors![0].message).toMatch(/server\.cors_origins/);
    const keyed = await gql(s, 'mutation { createMyApiKey(name: "x") { id apiKey } }', {}, { cookie, origin: 'https://evil.example' });
    expect(keyed.body.errors![0].extensions.code).toBe('session_required');
    expect(keyed.body.errors![0].message).toMatch(/^The session cookie came from a page of another site/);
  });

  it('tells an ended or made-up session cookie, an operator session and the operator token what they are, not that no API key was sent', async () => {
    const ENDED = 'Your sign-in session has ended (it expired, or was signed out or revoked): sign in to the dashboard again.';
    const signIn = async (e: string) => {
      await gql(s, 'mutation($e: String!, $p: String!) { signUp(email: $e, password: $p) { id } }', { e, p: PASSWORD });
      const r = await gql(s, 'mutation($e: String!, $p: String!) { signIn(email: $e, password: $p) { id } }', { e, p: PASSWORD });
      return { cookie: cookieOf(r.setCookie), id: r.body.data.signIn.id as string };
    };
    const signedOut = await signIn('ended@example.com');
    await gql(s, 'mutation { signOut }', {}, { cookie: signedOut.cookie });
    const expired = await signIn('expired@example.com');
    await getKnex(s.services.orm)('sessions').where({ id: expired.id }).update({ expires_at_ms: 1 });
    const overSocket = (cookie: string) => viewerOverSocket(s.url, cookie, s.url);
    for (const [what, cookie] of [
      ['signed out', signedOut.cookie],
      ['expired', expired.cookie],
      ['made up', 'tollgate_session=tgs_madeup'],
    ]) {
      const viewer = await gql(s, '{ viewer { email } }', {}, { cookie });
      expect({ what, status: viewer.status, ...viewer.body.errors![0] }).toMatchObject({
        what,
        status: 401,
        message: ENDED,
        extensions: { code: 'invalid_api_key' },
      });
      expect((await overSocket(cookie)).errors[0].message, what).toBe(ENDED);
      const key = await gql(s, 'mutation { createMyApiKey(name: "x") { id } }', {}, { cookie });
      expect({ what, ...key.body.errors![0] }).toMatchObject({ what, message: ENDED, extensions: { code: 'session_required' } });
    }
    const operator = cookieOf(
      (await gql(s, 'mutation($t: String!) { signInAsOperator(token: $t) { operator } }', { t: ADMIN_TOKEN })).setCookie,
    );
    const operatorViewer = await gql(s, '{ viewer { email } }', {}, { cookie: operator });
    expect(operatorViewer.body.errors![0].message).toMatch(/^You are signed in as the operator, which belongs to no account/);
    const operatorKey = await gql(s, 'mutation { createMyApiKey(name: "x") { id } }', {}, { cookie: operator });
    expect(operatorKey.body.errors![0]).toMatchObject({
      message: "This needs the account's owner signed in to the dashboard: the operator's session belongs to no account.",
      extensions: { code: 'session_required' },
    });
    const tokenKey = await gql(s, 'mutation { createMyApiKey(name: "x") { id } }', {}, { authorization: `Bearer ${ADMIN_TOKEN}` });
    expect(tokenKey.body.errors![0]).toMatchObject({
      message: "This needs the account's owner signed in to the dashboard: the operator token (ADMIN_TOKEN) belongs to no account.",
      extensions: { code: 'session_required' },
    });
    // Nothing was made.
    const [made] = await getKnex(s.services.orm)('api_keys').where({ name: 'x' }).count({ n: '*' });
    expect(Number(made!.n)).toBe(0);
  });

  it('refuses sign-up, sign-in and password resets over WebSocket before doing anything (no cookie, no throttle there)', async () => {
    await gql(s, 'mutation($e: String!, $p: String!) { signUp(email: $e, password: $p) { id } }', { e: 'sock@example.com', p: PASSWORD });
    const client = createClient({ url: `${s.url.replace('http', 'ws')}/graphql`, webSocketImpl: WebSocket, retryAttempts: 0 });
    const over = (query: string, variables: Record<string, unknown>) =>
      new Promise<any>((resolve) => {
        client.subscribe({ query, variables }, { next: resolve, error: (e) => resolve({ errors: e }), complete: () => {} });
      });
    try {
      const signIn = 'mutation($e: String!, $p: String!) { signIn(email: $e, password: $p) { id } }';
      // A right and a wrong password get the same answer: nothing is told apart, nothing is counted.
      const right = await over(signIn, { e: 'sock@example.com', p: PASSWORD });
      const wrong = await over(signIn, { e: 'sock@example.com', p: 'wrong password!' });
      for (const r of [right, wrong]) {
        expect(r.errors[0].extensions.code).toBe('invalid_request');
        expect(r.errors[0].message).toMatch(/^Signing in works over HTTP only/);
      }
      const up = await over('mutation($e: String!, $p: String!) { signUp(email: $e, password: $p) { id } }', {
        e: 'never@example.com',
        p: PASSWORD,
      });
      expect(up.errors[0].message).toMatch(/^Signing up works over HTTP only/);
      const reset = await over('mutation($e: String!) { requestPasswordReset(email: $e) }', { e: 'sock@example.com' });
      expect(reset.errors[0].message).toMatch(/^A password reset works over HTTP only/);
      const out = await over('mutation { signOut }', {});
      expect([out.errors?.[0].extensions.code, out.errors?.[0].message]).toEqual([
        'invalid_request',
        expect.stringMatching(/^Signing out works over HTTP only/),
      ]);
    } finally {
      await client.dispose();
    }
    // The account was not created: it can still sign up over HTTP.
    const later = await gql(s, 'mutation($e: String!, $p: String!) { signUp(email: $e, password: $p) { account { email } } }', {
      e: 'never@example.com',
      p: PASSWORD,
    });
    expect(later.body.data.signUp.account.email).toBe('never@example.com');
  });

  it('revokes a session from another sign-in: its open subscription ends, its later requests are anonymous', async () => {
    const up = await gql(s, 'mutation($e: String!, $p: String!) { signUp(email: $e, password: $p) { id } }', {
      e: 'two@example.com',
      p: PASSWORD,
    });
    const first = cookieOf(up.setCookie);
    const again = await gql(s, 'mutation($e: String!, $p: String!) { signIn(email: $e, password: $p) { id } }', {
      e: 'two@example.com',
      p: PASSWORD,
    });
    const second = cookieOf(again.setCookie);
    const client = createClient({
      url: `${s.url.replace('http', 'ws')}/graphql`,
      webSocketImpl: class extends WebSocket {
        constructor(url: string, protocols: string[]) {
          super(url, protocols, { headers: { cookie: first, origin: s.url } });
        }
      },
      retryAttempts: 0,
    });
    try {
      const watchedBefore = s.services.keyWatch.size;
      // The key guard ends the operation with an error result, then completes it.
      const results: any[] = [];
      const ended = new Promise<any[]>((resolve, reject) => {
        client.subscribe(
          { query: 'subscription { walletUpdated { balance } }' },
          { next: (r) => results.push(r), error: reject, complete: () => resolve(results) },
        );
      });
      // The subscription is open once the server watches its session.
      await waitUntil(() => s.services.keyWatch.size > watchedBefore);
      // The second browser lists the sessions and ends the first one.
      const listed = await gql(s, '{ session { account { sessions { id current } } } }', {}, { cookie: second });
      const sessions = listed.body.data.session.account.sessions as { id: string; current: boolean }[];
      expect(sessions).toHaveLength(2);
      const other = sessions.find((x) => !x.current)!;
      // Another account's session, or a made-up id, is not this account's to end: 404, as revokeMyApiKey answers.
      const stranger = await gql(s, 'mutation($e: String!, $p: String!) { signUp(email: $e, password: $p) { id } }', {
        e: 'stranger@example.com',
        p: PASSWORD,
      });
      const strangers = cookieOf(stranger.setCookie);
      for (const [what, cookie, id] of [
        ["another account's", strangers, other.id],
        ['a made-up', second, 'ses_nope'],
      ] as const) {
        const foreign = await gql(s, 'mutation($id: ID!) { revokeSession(id: $id) }', { id }, { cookie });
        expect({ what, status: foreign.status, data: foreign.body.data }).toEqual({ what, status: 404, data: null });
        expect(foreign.body.errors![0]).toMatchObject({
          message: `No session with id '${id}'.`,
          extensions: { code: 'not_found', param: 'id' },
        });
      }
      const revoked = await gql(s, 'mutation($id: ID!) { revokeSession(id: $id) }', { id: other.id }, { cookie: second });
      expect(revoked.body.data.revokeSession).toBe(true);
      // Ended already: not found either.
      const twice = await gql(s, 'mutation($id: ID!) { revokeSession(id: $id) }', { id: other.id }, { cookie: second });
      expect(twice.body.errors![0].extensions.code).toBe('not_found');
      const errors = (await ended).flatMap((r) => r.errors ?? []);
      expect(errors).toHaveLength(1);
      expect(errors[0].extensions.code).toBe('session_required');
      expect(errors[0].message).toContain('has ended (signed out or revoked)');
      // The revoked cookie no longer signs anything in; the second one still does.
      expect((await gql(s, '{ session { id } }', {}, { cookie: first })).body.data.session).toBeNull();
      expect((await gql(s, '{ viewer { email } }', {}, { cookie: second })).body.data.viewer.email).toBe('two@example.com');
    } finally {
      await client.dispose();
    }
  });

  it("keeps an account's 30 most recently used sessions: signing in past that signs the least recently used out", async () => {
    const up = await gql(s, 'mutation($e: String!, $p: String!) { signUp(email: $e, password: $p) { id } }', {
      e: 'browsers@example.com',
      p: PASSWORD,
    });
    expect(up.body.errors).toBeUndefined();
    const tokens: string[] = [cookieOf(up.setCookie)];
    // From as many client addresses: the throttle of one client is another test's.
    for (let i = 0; i < MAX_SESSIONS + 1; i++) {
      const signed = await s.services.auth.signIn({ email: 'browsers@example.com', password: PASSWORD, clientAddress: `10.9.${i}.1` });
      tokens.push(`tollgate_session=${signed.token}`);
    }
    const signedInAs = async (cookie: string) => (await gql(s, '{ session { id } }', {}, { cookie })).body.data.session !== null;
    const listed = await gql(s, '{ session { account { sessions { id } } } }', {}, { cookie: tokens.at(-1)! });
    expect(listed.body.data.session.account.sessions).toHaveLength(MAX_SESSIONS);
    expect(await signedInAs(tokens[0]!)).toBe(false);
    expect(await signedInAs(tokens[1]!)).toBe(false);
    expect(await signedInAs(tokens[2]!)).toBe(true);
    expect(await signedInAs(tokens.at(-1)!)).toBe(true);
  });

  it('refuses a NUL, a control character or a letter outside ASCII in an address, and a control character in a key name, with a 4xx that changes nothing', async () => {
    const SIGN_UP = 'mutation($e: String!, $p: String!) { signUp(email: $e, password: $p) { id } }';
    const codeOf = (r: { body: { errors?: any[] } }) => r.body.errors?.[0]?.extensions.code ?? 'ok';
    const before = (await s.services.auth.searchAccounts('', 200)).length;
    for (const e of ['nul@example.com\u0000', 'ctl\u0001@example.com', '\u00c9ric@example.com', '\u212aelvin@example.com']) {
      const r = await gql(s, SIGN_UP, { e, p: PASSWORD });
      expect([r.status, codeOf(r)], JSON.stringify(e)).toEqual([400, 'invalid_value']);
      expect(r.body.errors?.[0].message).toContain('in ASCII');
      const signIn = await gql(s, 'mutation($e: String!, $p: String!) { signIn(email: $e, password: $p) { id } }', { e, p: PASSWORD });
      expect(codeOf(signIn), JSON.stringify(e)).toBe('invalid_credentials');
      // A reset looks up an address made before the ASCII rule too; a control character never.
      const reset = await gql(s, 'mutation($e: String!) { requestPasswordReset(email: $e) }', { e });
      expect(codeOf(reset), JSON.stringify(e)).toBe([...e].some((c) => c.charCodeAt(0) < 0x20) ? 'invalid_value' : 'ok');
    }
    expect((await s.services.auth.searchAccounts('', 200)).length).toBe(before);
    // An address in ASCII, its domain in its xn-- form, signs up and in.
    const up = await gql(s, SIGN_UP, { e: 'eric@xn--caf-dma.example', p: PASSWORD });
    expect(codeOf(up)).toBe('ok');
    const cookie = cookieOf(up.setCookie);
    const changed = await gql(
      s,
      'mutation($e: String!, $p: String!) { changeEmail(email: $e, password: $p) { email } }',
      {
        e: 'eric\u0000@example.com',
        p: PASSWORD,
      },
      { cookie },
    );
    expect(codeOf(changed)).toBe('invalid_value');
    for (const name of ['n\u0000x', 'tab\there', 'lone \ud800']) {
      const key = await gql(s, 'mutation($n: String) { createMyApiKey(name: $n) { apiKey } }', { n: name }, { cookie });
      expect([codeOf(key), key.body.errors?.[0].message], JSON.stringify(name)).toEqual([
        'invalid_value',
        'name must be text of at most 255 characters, without control characters.',
      ]);
    }
    const keys = await gql(s, '{ viewer { apiKeys { id } } }', {}, { cookie });
    expect(keys.body.data.viewer.apiKeys).toHaveLength(0);

    // An account, and an alert recipient, from before addresses had to be ASCII keep working:
    // its password can be reset, and its alert settings changed without removing the recipient.
    const [eric] = await s.services.auth.searchAccounts('eric@xn--caf-dma.example');
    const knex = getKnex(s.services.orm);
    await knex('accounts').where('id', eric!.id).update({ email: 'josé@example.com' });
    const legacyReset = await gql(s, 'mutation($e: String!) { requestPasswordReset(email: $e) }', { e: 'josé@example.com' });
    expect([legacyReset.status, codeOf(legacyReset)]).toEqual([200, 'ok']);
    await s.services.alerts.notifications.updateSettings(eric!.id, { enabled: {}, extraRecipients: ['ok@example.com'] });
    await knex('alert_settings')
      .where('account_id', eric!.id)
      .update({ extra_recipients: JSON.stringify(['ok@example.com', 'zoë@example.com']) });
    const UPDATE = 'mutation($i: AlertSettingsInput!) { updateAlertSettings(input: $i) { lowBalance extraRecipients } }';
    const kept = await gql(s, UPDATE, { i: { lowBalance: false, extraRecipients: ['ok@example.com', 'zoë@example.com'] } }, { cookie });
    expect(kept.body.errors).toBeUndefined();
    expect(kept.body.data.updateAlertSettings).toEqual({ lowBalance: false, extraRecipients: ['ok@example.com', 'zoë@example.com'] });
    // A new one outside ASCII is still refused.
    const added = await gql(s, UPDATE, { i: { extraRecipients: ['ok@example.com', 'zoë@example.com', 'chloé@example.com'] } }, { cookie });
    expect(codeOf(added)).toBe('invalid_value');
  });

  it('throttles failed sign-ins per address, and signs out', async () => {
    await gql(s, 'mutation($e: String!, $p: String!) { signUp(email: $e, password: $p) { id } }', { e: 'slow@example.com', p: PASSWORD });
    const codes: string[] = [];
    for (let i = 0; i < 6; i++) {
      const r = await gql(s, 'mutation($e: String!, $p: String!) { signIn(email: $e, password: $p) { id } }', {
        e: 'slow@example.com',
        p: 'wrong password!',
      });
      codes.push(r.body.errors?.[0].extensions.code);
    }
    expect(codes).toEqual([
      'invalid_credentials',
      'invalid_credentials',
      'invalid_credentials',
      'invalid_credentials',
      'invalid_credentials',
      'too_many_attempts',
    ]);
    const blocked = await gql(s, 'mutation($e: String!, $p: String!) { signIn(email: $e, password: $p) { id } }', {
      e: 'slow@example.com',
      p: PASSWORD,
    });
    expect(blocked.status).toBe(429);
    await gql(s, 'mutation($e: String!, $p: String!) { signUp(email: $e, password: $p) { id } }', { e: 'out@example.com', p: PASSWORD });
    const signedIn = await gql(s, 'mutation($e: String!, $p: String!) { signIn(email: $e, password: $p) { id } }', {
      e: 'out@example.com',
      p: PASSWORD,
    });
    const cookie = cookieOf(signedIn.setCookie);
    const out = await gql(s, 'mutation { signOut }', {}, { cookie });
    expect(out.setCookie[0]).toMatch(/^tollgate_session=; .*Expires=Thu, 01 Jan 1970/);
    expect((await gql(s, '{ session { id } }', {}, { cookie })).body.data.session).toBeNull();
  });

  it('counts wrong passwords given to changeEmail and changePassword against the sign-in limit: a stolen session cannot guess on', async () => {
    const up = await gql(s, 'mutation($e: String!, $p: String!) { signUp(email: $e, password: $p) { id } }', {
      e: 'guess@example.com',
      p: PASSWORD,
    });
    const cookie = cookieOf(up.setCookie);
    const changeEmail = (password: string) =>
      gql(s, 'mutation($p: String!) { changeEmail(email: "guessed@example.com", password: $p) { email } }', { p: password }, { cookie });
    const changePassword = (password: string) =>
      gql(
        s,
        'mutation($p: String!) { changePassword(currentPassword: $p, newPassword: "another long password") }',
        { p: password },
        { cookie },
      );
    const codes: string[] = [];
    for (let i = 0; i < 3; i++) codes.push((await changeEmail(`wrong guess ${i}`)).body.errors?.[0].extensions.code);
    for (let i = 0; i < 2; i++) codes.push((await changePassword(`wrong guess ${i}`)).body.errors?.[0].extensions.code);
    codes.push((await changeEmail(PASSWORD)).body.errors?.[0].extensions.code);
    expect(codes).toEqual([...Array(5).fill('invalid_credentials'), 'too_many_attempts']);
    // Sign-in to the address is held back by the same count, and the right password changes nothing.
    const signIn = await gql(s, 'mutation($e: String!, $p: String!) { signIn(email: $e, password: $p) { id } }', {
      e: 'guess@example.com',
      p: PASSWORD,
    });
    expect([signIn.status, signIn.body.errors?.[0].extensions.code]).toEqual([429, 'too_many_attempts']);
    expect((await gql(s, '{ viewer { email } }', {}, { cookie })).body.data.viewer.email).toBe('guess@example.com');

    // Guesses sent at once get no more: each is counted before its password is verified.
    const many = await gql(s, 'mutation($e: String!, $p: String!) { signUp(email: $e, password: $p) { id } }', {
      e: 'many@example.com',
      p: PASSWORD,
    });
    const manyCookie = cookieOf(many.setCookie);
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        gql(
          s,
          'mutation($p: String!) { changeEmail(email: "many2@example.com", password: $p) { email } }',
          { p: `guess ${i}` },
          { cookie: manyCookie },
        ),
      ),
    );
    const tally = answers.map((r) => r.body.errors?.[0].extensions.code).filter((c) => c === 'invalid_credentials');
    expect(tally).toHaveLength(5);
  });

  it('e-mails a security notice to the address an account had when its e-mail address is changed, not to the new one', async () => {
    const up = await gql(s, 'mutation($e: String!, $p: String!) { signUp(email: $e, password: $p) { account { id } } }', {
      e: 'moving@example.com',
      p: PASSWORD,
    });
    const cookie = cookieOf(up.setCookie);
    const accountId = up.body.data.signUp.account.id as string;
    const dir = path.join(s.dir, 'mail');
    const notices = () => (existsSync(dir) ? readdirSync(dir).filter((f) => f.startsWith(`email-changed-${accountId}-`)) : []);
    const changed = await gql(
      s,
      'mutation($p: String!) { changeEmail(email: "moved@example.com", password: $p) { email } }',
      { p: PASSWORD },
      { cookie },
    );
    expect(changed.body.data.changeEmail.email).toBe('moved@example.com');
    await s.services.auth.idle();
    expect(notices()).toHaveLength(1);
    const eml = readFileSync(path.join(dir, notices()[0]!), 'utf8')
      .replace(/=\r?\n/g, '')
      .replace(/=3D/g, '=');
    expect(eml).toContain('To: moving@example.com');
    expect(eml).not.toMatch(/^(To|Cc): .*moved@example\.com/m);
    expect(eml).toContain('Subject: Your tollgate sign-in e-mail was changed');
    expect(eml).toContain('was changed from moving@example.com to moved@example.com');
    expect(eml).toContain("If this wasn't you");
    // A refused change (a wrong password) tells nobody anything.
    await gql(s, 'mutation { changeEmail(email: "third@example.com", password: "not the password") { email } }', {}, { cookie });
    await s.services.auth.idle();
    expect(notices()).toHaveLength(1);
  });

  it('creates a key of its own with an optional expiry (a day read strictly, in the future), which the key list shows', async () => {
    const up = await gql(s, 'mutation($e: String!, $p: String!) { signUp(email: $e, password: $p) { id } }', {
      e: 'expiring@example.com',
      p: PASSWORD,
    });
    const cookie = cookieOf(up.setCookie);
    const create = (expiresAt: string | null) =>
      gql(s, 'mutation($x: DateTime) { createMyApiKey(name: "temp", expiresAt: $x) { id apiKey } }', { x: expiresAt }, { cookie });
    const made = await create('2099-01-31');
    expect(made.body.errors).toBeUndefined();
    const keys = await gql(s, '{ viewer { apiKeys { id expiresAt } } }', {}, { cookie });
    expect(keys.body.data.viewer.apiKeys).toEqual([{ id: made.body.data.createMyApiKey.id, expiresAt: '2099-01-31T00:00:00.000Z' }]);
    expect((await create(null)).body.errors).toBeUndefined();
    const past = await create('2001-01-01');
    expect(past.body.errors?.[0].extensions).toMatchObject({ code: 'invalid_value', param: 'expiresAt' });
    // The message names the argument as GraphQL does, as the param does (not /v1's expires_at).
    expect(past.body.errors?.[0].message).toBe('expiresAt must be in the future.');
    expect((await create('2099-02-30')).body.errors?.[0].extensions.code).toBe('invalid_value');
  });

  it('resets a password through the link of the .eml file; the link works once', async () => {
    await gql(s, 'mutation($e: String!, $p: String!) { signUp(email: $e, password: $p) { id } }', { e: 'forgot@example.com', p: PASSWORD });
    const asked = await gql(s, 'mutation { requestPasswordReset(email: "forgot@example.com") }');
    expect(asked.body.data.requestPasswordReset).toBe(true);
    expect((await gql(s, 'mutation { requestPasswordReset(email: "nobody@example.com") }')).body.data.requestPasswordReset).toBe(true);
    await s.services.auth.idle();
    const dir = path.join(s.dir, 'mail');
    // This account's reset (other tests of the file ask for theirs too).
    const eml = readdirSync(dir)
      .filter((f) => f.startsWith('password-reset-'))
      .map((f) =>
        readFileSync(path.join(dir, f), 'utf8')
          .replace(/=\r?\n/g, '')
          .replace(/=3D/g, '='),
      )
      .find((text) => text.includes('To: forgot@example.com'))!;
    expect(eml).toContain('To: forgot@example.com');
    const token = /reset-password\?token=(tgr_[\w-]+)/.exec(eml)![1]!;
    const reset = await gql(s, 'mutation($t: String!, $p: String!) { resetPassword(token: $t, password: $p) { account { email } } }', {
      t: token,
      p: 'a brand new password',
    });
    expect(reset.body.data.resetPassword.account.email).toBe('forgot@example.com');
    const twice = await gql(s, 'mutation($t: String!, $p: String!) { resetPassword(token: $t, password: $p) { id } }', {
      t: token,
      p: 'another new password',
    });
    expect(twice.body.errors?.[0].extensions.code).toBe('invalid_token');
    const signIn = await gql(s, 'mutation($e: String!, $p: String!) { signIn(email: $e, password: $p) { id } }', {
      e: 'forgot@example.com',
      p: 'a brand new password',
    });
    expect(signIn.body.errors).toBeUndefined();
  });

  it('answers a password-reset request before its e-mail is sent: how long it takes says nothing about the address', async () => {
    // An SMTP server that takes connections and never says a word: a send would wait for it.
    const sockets = new Set<Socket>();
    const silent = createNetServer((socket) => {
      sockets.add(socket);
      socket.on('error', () => {});
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const smtpPort = (silent.address() as AddressInfo).port;
    const quiet = await startTestServer({ env: { SMTP_URL: `smtp://127.0.0.1:${smtpPort}`, MAIL_FROM: 'Tollgate <a@tollgate.test>' } });
    try {
      await gql(quiet, 'mutation($e: String!, $p: String!) { signUp(email: $e, password: $p) { id } }', {
        e: 'held@example.com',
        p: PASSWORD,
      });
      const known = await gql(quiet, 'mutation { requestPasswordReset(email: "held@example.com") }');
      const unknown = await gql(quiet, 'mutation { requestPasswordReset(email: "nobody@example.com") }');
      expect(known.body).toEqual({ data: { requestPasswordReset: true } });
      expect(unknown.body).toEqual(known.body);
      // Answered, and the e-mail is still on its way: its connection is open and unanswered.
      await waitUntil(() => sockets.size === 1);
    } finally {
      for (const socket of sockets) socket.destroy();
      await quiet.close();
      await new Promise((resolve) => silent.close(resolve));
    }
  });

  it('uses up every open reset link of an account when its password is set (by a link or changed in a session)', async () => {
    await gql(s, 'mutation($e: String!, $p: String!) { signUp(email: $e, password: $p) { id } }', { e: 'links@example.com', p: PASSWORD });
    const dir = path.join(s.dir, 'mail');
    const linksSent = () =>
      readdirSync(dir)
        .filter((f) => f.startsWith('password-reset-'))
        .map((f) =>
          readFileSync(path.join(dir, f), 'utf8')
            .replace(/=\r?\n/g, '')
            .replace(/=3D/g, '='),
        )
        .filter((eml) => eml.includes('To: links@example.com'))
        .map((eml) => /reset-password\?token=(tgr_[\w-]+)/.exec(eml)![1]!);
    const reset = (t: string, p: string) =>
      gql(s, 'mutation($t: String!, $p: String!) { resetPassword(token: $t, password: $p) { id } }', { t, p });
    await gql(s, 'mutation { requestPasswordReset(email: "links@example.com") }');
    await gql(s, 'mutation { requestPasswordReset(email: "links@example.com") }');
    await s.services.auth.idle();
    const [first, second] = linksSent();
    expect(second).toBeDefined();
    expect((await reset(first!, 'the first new password')).body.errors).toBeUndefined();
    expect((await reset(second!, 'the second new password')).body.errors?.[0].extensions.code).toBe('invalid_token');
    // A link asked for before the password is changed in a session no longer works after it.
    const before = linksSent().length;
    await gql(s, 'mutation { requestPasswordReset(email: "links@example.com") }');
    await s.services.auth.idle();
    const third = linksSent().find((t) => t !== first && t !== second)!;
    expect(linksSent()).toHaveLength(before + 1);
    const signedIn = await gql(s, 'mutation($e: String!, $p: String!) { signIn(email: $e, password: $p) { id } }', {
      e: 'links@example.com',
      p: 'the first new password',
    });
    const changed = await gql(
      s,
      'mutation { changePassword(currentPassword: "the first new password", newPassword: "the third new password") }',
      {},
      { cookie: cookieOf(signedIn.setCookie) },
    );
    expect(changed.body.errors).toBeUndefined();
    expect((await reset(third, 'an attacker password')).body.errors?.[0].extensions.code).toBe('invalid_token');
  });

  it('prints a set-password link for an account an operator creates with the CLI; set-admin makes its sign-ins operator sessions', async () => {
    let out = '';
    const io = {
      stdout: (t: string) => void (out += t),
      stderr: () => {},
      env: { DATABASE_URL: `sqlite:${path.join(s.dir, 'tollgate.db')}`, PUBLIC_URL: s.url, CONFIG: path.join(s.dir, 'config.yaml') },
    };
    expect(await runCli(['node', 'tollgate', 'accounts', 'create', '--email', 'made@example.com', '--tier', 'developer'], io)).toBe(0);
    const token = /reset-password\?token=(tgp_[\w-]+)/.exec(out)![1]!;
    const set = await gql(
      s,
      'mutation($t: String!, $p: String!) { resetPassword(token: $t, password: $p) { operator account { id email tier } } }',
      { t: token, p: PASSWORD },
    );
    expect(set.body.data.resetPassword).toMatchObject({ operator: false, account: { email: 'made@example.com', tier: 'developer' } });
    const id = set.body.data.resetPassword.account.id;
    expect(await runCli(['node', 'tollgate', 'accounts', 'set-admin', '--account', id], io)).toBe(0);
    const again = await gql(s, 'mutation($e: String!, $p: String!) { signIn(email: $e, password: $p) { operator } }', {
      e: 'made@example.com',
      p: PASSWORD,
    });
    expect(again.body.data.signIn.operator).toBe(true);
    const list = await gql(s, '{ accounts(search: "made@") { email } }', {}, { cookie: cookieOf(again.setCookie) });
    expect(list.body.data.accounts).toEqual([{ email: 'made@example.com' }]);
  });

  it('exchanges ADMIN_TOKEN for an operator session that lists accounts and changes a tier', async () => {
    const bad = await gql(s, 'mutation { signInAsOperator(token: "nope") { id } }');
    expect(bad.body.errors?.[0].extensions.code).toBe('invalid_credentials');
    const r = await gql(s, 'mutation($t: String!) { signInAsOperator(token: $t) { operator account { id } } }', { t: ADMIN_TOKEN });
    expect(r.body.data.signInAsOperator).toEqual({ operator: true, account: null });
    const cookie = cookieOf(r.setCookie);
    const list = await gql(s, '{ accounts(search: "ANN@") { id email tier } }', {}, { cookie });
    expect(list.body.data.accounts).toHaveLength(1);
    const set = await gql(
      s,
      'mutation($id: ID!) { setAccountTier(accountId: $id, tier: startup) { tier } }',
      { id: list.body.data.accounts[0].id },
      { cookie },
    );
    expect(set.body.data.setAccountTier.tier).toBe('startup');
    const denied = await gql(s, '{ accounts { id } }');
    expect(denied.body.errors?.[0].extensions.code).toBe('admin_required');
  });

  it("pages the operator's account list newest first with after, every account once, and refuses a cursor that is no account", async () => {
    // Created in one burst: several share a creation millisecond, which the id breaks.
    const made = await Promise.all(
      Array.from({ length: 7 }, (_, i) =>
        s.graphql(
          'mutation($e: String!) { createAccount(email: $e, tier: free) { account { id } } }',
          { e: `pager-${i}@ex.com` },
          ADMIN_TOKEN,
        ),
      ),
    ).then((rs) => rs.map((r) => r.body.data.createAccount.account.id as string));
    const page = async (after: string | null) =>
      (await s.graphql('query($a: ID) { accounts(search: "pager-", first: 3, after: $a) { id } }', { a: after }, ADMIN_TOKEN)).body;
    const seen: string[] = [];
    let after: string | null = null;
    for (let round = 0; round < 5; round++) {
      const body = await page(after);
      expect(body.errors).toBeUndefined();
      const ids = body.data.accounts.map((a: { id: string }) => a.id);
      seen.push(...ids);
      if (ids.length < 3) break;
      after = ids.at(-1);
    }
    expect(seen).toHaveLength(7);
    expect(new Set(seen)).toEqual(new Set(made));
    const all = (await s.graphql('{ accounts(search: "pager-", first: 10) { id } }', {}, ADMIN_TOKEN)).body.data.accounts.map(
      (a: { id: string }) => a.id,
    );
    expect(seen).toEqual(all);
    const bad = await page('acct_not_there');
    expect(bad.errors[0].extensions.code).toBe('invalid_value');
    expect(bad.errors[0].message).toContain("'after' must be an account id");
  });

  it('ends an operator session when ADMIN_TOKEN is changed or unset (it is good only while the token it came from is)', async () => {
    const r = await gql(s, 'mutation($t: String!) { signInAsOperator(token: $t) { operator } }', { t: ADMIN_TOKEN });
    const cookie = cookieOf(r.setCookie);
    const canList = async () => {
      const list = await gql(s, '{ session { operator } accounts(first: 1) { id } }', {}, { cookie });
      return [list.body.data?.session?.operator ?? null, list.body.errors?.[0]?.extensions.code ?? 'ok'];
    };
    expect(await canList()).toEqual([true, 'ok']);
    const config = s.services.config;
    try {
      config.adminToken = 'another-admin-token-0123456789';
      expect(await canList()).toEqual([null, 'admin_required']);
      config.adminToken = null;
      expect(await canList()).toEqual([null, 'admin_required']);
    } finally {
      config.adminToken = ADMIN_TOKEN;
    }
  });

  it('throttles wrong operator tokens per client: five from one address do not lock the operator out elsewhere', async () => {
    // Each from its own loopback address (node:http binds the client's end to it).
    const signIn = (token: string, localAddress: string) =>
      new Promise<string>((resolve, reject) => {
        const body = JSON.stringify({
          query: 'mutation($t: String!) { signInAsOperator(token: $t) { operator } }',
          variables: { t: token },
        });
        const req = httpRequest(
          `${s.url}/graphql`,
          { method: 'POST', localAddress, headers: { 'content-type': 'application/json' } },
          (res) => {
            let text = '';
            res.on('data', (c) => (text += c));
            res.on('end', () => resolve((JSON.parse(text) as { errors?: any[] }).errors?.[0]?.extensions.code ?? 'ok'));
          },
        );
        req.on('error', reject);
        req.end(body);
      });
    const attacker = '127.0.0.7';
    const operator = '127.0.0.8';
    const codes: string[] = [];
    for (let i = 0; i < 6; i++) codes.push(await signIn(`wrong-token-${i}-0123456789`, attacker));
    expect(codes).toEqual([...Array(5).fill('invalid_credentials'), 'too_many_attempts']);
    expect(await signIn(ADMIN_TOKEN, operator)).toBe('ok');
  });
});

describe('sign-up policies', () => {
  it('closed refuses sign-up; invite needs a configured code', async () => {
    const closed = await startTestServer({ yaml: (u) => `accounts: { signup: closed }\n${catalogYaml(u)}` });
    try {
      const r = await gql(closed, 'mutation { signUp(email: "a@example.com", password: "long enough pw") { id } }');
      expect(r.body.errors?.[0].extensions.code).toBe('signup_closed');
      expect((await gql(closed, '{ signupPolicy }')).body.data.signupPolicy).toBe('closed');
    } finally {
      await closed.close();
    }
  });
});

describe('changing plan from a session', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({ yaml: (u) => `${catalogYaml(u)}tiers:\n  startup: { monthly_fee: 5 }\n` });
  });
  afterAll(async () => s?.close());

  const changePlan = (cookie: string, tier: string) =>
    gql(s, `mutation { changePlan(tier: ${tier}) { tier wallet { balance } } }`, {}, cookie ? { cookie } : {});

  it('refuses a fee the wallet cannot pay (402, tier unchanged), then charges it once as a subscription transaction', async () => {
    const up = await gql(s, 'mutation($e: String!, $p: String!) { signUp(email: $e, password: $p) { id } }', {
      e: 'plan@example.com',
      p: PASSWORD,
    });
    const cookie = cookieOf(up.setCookie);
    const accountId = (await gql(s, '{ viewer { id } }', {}, { cookie })).body.data.viewer.id as string;
    // No credit yet: the startup fee (5) cannot be paid.
    const poor = await changePlan(cookie, 'startup');
    expect(poor.status).toBe(402);
    expect(poor.body.errors?.[0].extensions.code).toBe('insufficient_balance');
    expect((await gql(s, '{ viewer { tier } }', {}, { cookie })).body.data.viewer.tier).toBe('free');
    const feePaid = async () =>
      (await gql(s, '{ viewer { allocation { feePaidTier } } }', {}, { cookie })).body.data.viewer.allocation.feePaidTier;
    expect(await feePaid()).toBeNull();
    // A feeless tier needs no credit.
    expect((await changePlan(cookie, 'developer')).body.data.changePlan).toEqual({ tier: 'developer', wallet: { balance: '0' } });
    const credit = await s.graphql(
      'mutation($i: CreditWalletInput!) { creditWallet(input: $i) { id } }',
      { i: { accountId, amount: '8', type: 'bonus', description: 'start' } },
      ADMIN_TOKEN,
    );
    expect(credit.body.errors).toBeUndefined();
    const paid = await changePlan(cookie, 'startup');
    expect(paid.body.errors).toBeUndefined();
    expect(paid.body.data.changePlan).toEqual({ tier: 'startup', wallet: { balance: '3' } });
    // Back and forth within the month: the fee already paid for startup is not taken twice, as
    // allocation.feePaidTier tells the Plan page before it asks to confirm.
    await changePlan(cookie, 'developer');
    expect(await feePaid()).toBe('startup');
    expect((await changePlan(cookie, 'startup')).body.data.changePlan.wallet.balance).toBe('3');
    const ledger = await gql(s, '{ viewer { wallet { transactions(first: 10) { edges { node { type amount } } } } } }', {}, { cookie });
    const types = ledger.body.data.viewer.wallet.transactions.edges.map((e: any) => `${e.node.type} ${e.node.amount}`);
    expect(types.sort()).toEqual(['bonus 8', 'subscription -5']);
  });

  it('refuses a tier the operator arranges (enterprise by default, or self_service: false), which an operator can still set', async () => {
    const up = await gql(s, 'mutation($e: String!, $p: String!) { signUp(email: $e, password: $p) { id } }', {
      e: 'free-rider@example.com',
      p: PASSWORD,
    });
    const cookie = cookieOf(up.setCookie);
    const accountId = (await gql(s, '{ viewer { id } }', {}, { cookie })).body.data.viewer.id as string;
    const plans = (await gql(s, '{ plans { tier selfService } }')).body.data.plans;
    expect(plans).toEqual([
      { tier: 'free', selfService: true },
      { tier: 'developer', selfService: true },
      { tier: 'startup', selfService: true },
      { tier: 'enterprise', selfService: false },
    ]);
    const refused = await changePlan(cookie, 'enterprise');
    expect(refused.status).toBe(403);
    expect(refused.body.errors?.[0].extensions.code).toBe('tier_not_self_service');
    expect(refused.body.errors?.[0].message).toContain('arranged with the operator');
    expect((await gql(s, '{ viewer { tier } }', {}, { cookie })).body.data.viewer.tier).toBe('free');
    // The operator moves it; from there the customer may still move down to a tier they choose.
    const moved = await s.graphql(
      'mutation($id: ID!) { setAccountTier(accountId: $id, tier: enterprise) { tier } }',
      { id: accountId },
      ADMIN_TOKEN,
    );
    expect(moved.body.errors).toBeUndefined();
    expect((await changePlan(cookie, 'developer')).body.data.changePlan.tier).toBe('developer');

    const open = await startTestServer({
      yaml: (u) => `${catalogYaml(u)}tiers:\n  enterprise: { self_service: true }\n  developer: { self_service: false }\n`,
    });
    try {
      const o = await gql(open, 'mutation($e: String!, $p: String!) { signUp(email: $e, password: $p) { id } }', {
        e: 'o@example.com',
        p: PASSWORD,
      });
      const c = cookieOf(o.setCookie);
      expect((await gql(open, 'mutation { changePlan(tier: enterprise) { tier } }', {}, { cookie: c })).body.data.changePlan.tier).toBe(
        'enterprise',
      );
      expect(
        (await gql(open, 'mutation { changePlan(tier: developer) { tier } }', {}, { cookie: c })).body.errors?.[0].extensions.code,
      ).toBe('tier_not_self_service');
    } finally {
      await open.close();
    }
  });

  it('is for a signed-in person only, and refuses an unknown tier', async () => {
    const { apiKey } = await s.account('free');
    const withKey = await gql(s, 'mutation { changePlan(tier: startup) { tier } }', {}, { authorization: `Bearer ${apiKey}` });
    expect(withKey.body.errors?.[0].extensions.code).toBe('session_required');
    const anonymous = await changePlan('', 'startup');
    expect(anonymous.body.errors?.[0].extensions.code).toBe('session_required');
    const unknown = await gql(s, 'mutation { changePlan(tier: platinum) { tier } }');
    expect(unknown.status).toBe(400);
  });
});
