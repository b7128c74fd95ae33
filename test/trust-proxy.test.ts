// Behind a reverse proxy (compose.yaml's Caddy), every client comes from the proxy's address:
// server.trust_proxy (or TRUST_PROXY) says whose X-Forwarded-For names the client, so that sign-in
// is throttled per client and not for everyone at once; without it the header is not believed.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import express from 'express';
import { loadConfig, parseConfigText } from '../src/config.js';
import { ADMIN_TOKEN, catalogYaml, startTestServer, type TestServer } from './support/harness.js';

const SIGN_IN = 'mutation($e: String!, $p: String!) { signIn(email: $e, password: $p) { id } }';
const OPERATOR = 'mutation($t: String!) { signInAsOperator(token: $t) { operator } }';

/** A GraphQL request from this process (127.0.0.1, one socket address for all), saying it forwards `forwardedFor`. */
async function gqlFor(s: TestServer, forwardedFor: string, query: string, variables: Record<string, unknown>) {
  const res = await fetch(`${s.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-forwarded-for': forwardedFor },
    body: JSON.stringify({ query, variables }),
  });
  const body = (await res.json()) as { errors?: { extensions: { code: string } }[] };
  return body.errors?.[0]?.extensions.code ?? 'ok';
}

/** Failed sign-ins for made-up addresses (each address once: only the client's count grows) until refused. */
async function failedSignInsUntilRefused(s: TestServer, forwardedFor: string): Promise<string[]> {
  const codes: string[] = [];
  for (let i = 0; i < 11; i++)
    codes.push(await gqlFor(s, forwardedFor, SIGN_IN, { e: `made-up-${forwardedFor}-${i}@example.com`, p: 'a wrong password' }));
  return codes;
}

/** Signs up `email` and answers its session cookie (`name=value`). */
async function signUpCookie(s: TestServer, email: string): Promise<string> {
  const up = await fetch(`${s.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      query: 'mutation($e: String!) { signUp(email: $e, password: "a long enough password") { id } }',
      variables: { e: email },
    }),
  });
  return up.headers.getSetCookie()[0]!.split(';')[0]!;
}

/** Whether the cookie signs the request in, sent with these headers (an Origin, an X-Forwarded-Host). */
async function signedIn(s: TestServer, cookie: string, headers: Record<string, string>): Promise<boolean> {
  const res = await fetch(`${s.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', cookie, ...headers },
    body: JSON.stringify({ query: '{ session { id } }' }),
  });
  return ((await res.json()) as { data: { session: unknown } }).data.session !== null;
}

// One failed sign-in per address, ten per client.
const yaml = (server: string) => (u: string) => `server: ${server}\naccounts: { max_failed_logins: 1 }\n${catalogYaml(u)}`;

describe('with server.trust_proxy naming the proxy', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({ yaml: yaml('{ trust_proxy: loopback }') });
  });
  afterAll(async () => s?.close());

  it('throttles two clients behind the same proxy separately: one locked out does not lock out the other, nor the operator', async () => {
    expect(await failedSignInsUntilRefused(s, '203.0.113.5')).toEqual([...Array(10).fill('invalid_credentials'), 'too_many_attempts']);
    expect(await gqlFor(s, '198.51.100.7', SIGN_IN, { e: 'someone@example.com', p: 'a wrong password' })).toBe('invalid_credentials');
    expect(await gqlFor(s, '198.51.100.8', OPERATOR, { t: ADMIN_TOKEN })).toBe('ok');
    // The proxy appends what it saw to what the client sent: the client's own entries are not believed.
    expect(await gqlFor(s, '198.51.100.9, 203.0.113.5', SIGN_IN, { e: 'other@example.com', p: 'a wrong password' })).toBe(
      'too_many_attempts',
    );
  });

  it('serves /metrics without METRICS_TOKEN to a loopback client only, not to whoever the proxy forwards', async () => {
    expect((await fetch(`${s.url}/metrics`)).status).toBe(200);
    expect((await fetch(`${s.url}/metrics`, { headers: { 'x-forwarded-for': '203.0.113.5' } })).status).toBe(403);
  });

  it("believes X-Forwarded-Host from the proxy it trusts: a session cookie from the proxy's public name is same-site", async () => {
    const cookie = await signUpCookie(s, 'proxied@example.com');
    expect(await signedIn(s, cookie, { origin: 'https://tollgate.example', 'x-forwarded-host': 'tollgate.example' })).toBe(true);
    expect(await signedIn(s, cookie, { origin: 'https://evil.example', 'x-forwarded-host': 'tollgate.example' })).toBe(false);
  });
});

describe('with server.trust_proxy naming other proxies than the connection', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({ yaml: yaml('{ trust_proxy: "10.0.0.0/8" }') });
  });
  afterAll(async () => s?.close());

  it("does not believe X-Forwarded-Host from a connection that is not the trusted proxy's", async () => {
    const cookie = await signUpCookie(s, 'direct@example.com');
    expect(await signedIn(s, cookie, { origin: 'https://evil.example', 'x-forwarded-host': 'evil.example' })).toBe(false);
  });
});

describe('without server.trust_proxy', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({ yaml: yaml('{}') });
  });
  afterAll(async () => s?.close());

  it('serves /metrics to a loopback client only under a loopback name or an address: not to a page whose name resolves to 127.0.0.1', async () => {
    const port = new URL(s.url).port;
    const scrape = (host: string) =>
      new Promise<number>((resolve, reject) => {
        const req = httpRequest({ host: '127.0.0.1', port, path: '/metrics', headers: { host } }, (res) => {
          res.resume();
          resolve(res.statusCode!);
        });
        req.on('error', reject);
        req.end();
      });
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, 'localhost', `[::1]:${port}`]) expect(await scrape(host), host).toBe(200);
    for (const host of [`rebind.evil.example:${port}`, 'evil.example']) expect(await scrape(host), host).toBe(403);
  });

  it('ignores a forged X-Forwarded-For: the connection is the client', async () => {
    expect(await failedSignInsUntilRefused(s, '203.0.113.5')).toEqual([...Array(10).fill('invalid_credentials'), 'too_many_attempts']);
    expect(await gqlFor(s, '198.51.100.7', SIGN_IN, { e: 'someone@example.com', p: 'a wrong password' })).toBe('too_many_attempts');
  });
});

describe('the setting', () => {
  const parsed = (value: string) => parseConfigText(`server: { trust_proxy: ${value} }\n`, 'c.yaml').server.trust_proxy;
  const refusal = (value: string) => {
    try {
      parsed(value);
      return null;
    } catch (e) {
      return (e as Error).message;
    }
  };

  it('takes false, a number of proxies, or their names, addresses and subnets; refuses true and what is none of them', () => {
    expect(parseConfigText('', 'c.yaml').server.trust_proxy).toBe(false);
    expect(parsed('1')).toBe(1);
    expect(parsed('"loopback, uniquelocal"')).toBe('loopback, uniquelocal');
    expect(parsed('["10.0.0.0/8", "fc00::/7", "192.168.1.1", "172.16.0.0/255.240.0.0"]')).toEqual([
      '10.0.0.0/8',
      'fc00::/7',
      '192.168.1.1',
      '172.16.0.0/255.240.0.0',
    ]);
    // An entry of a list written with a comma is two entries, as express takes each item whole.
    expect(parsed('["10.0.0.1, 10.0.0.2", "loopback"]')).toEqual(['10.0.0.1', '10.0.0.2', 'loopback']);
    expect(() => express().set('trust proxy', parsed('["10.0.0.1, 10.0.0.2"]'))).not.toThrow();
    expect(refusal('true')).toContain("server.trust_proxy: true would believe any client's X-Forwarded-For");
    expect(refusal('"caddy"')).toContain('server.trust_proxy: "caddy" is not loopback, linklocal, uniquelocal');
    expect(refusal('"10.0.0.0/33"')).toContain('"10.0.0.0/33" is not');
    expect(refusal('0')).toContain('server.trust_proxy');
  });

  it('is overridden by TRUST_PROXY, which compose.yaml sets for its proxy', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'tollgate-trust-'));
    try {
      const config = path.join(dir, 'config.yaml');
      writeFileSync(config, 'server: { trust_proxy: 2 }\n');
      const env = { CONFIG: config, DATABASE_URL: `sqlite:${path.join(dir, 'db')}`, MAIL_DIR: dir };
      expect(loadConfig(env).server.trust_proxy).toBe(2);
      expect(loadConfig({ ...env, TRUST_PROXY: 'uniquelocal' }).server.trust_proxy).toBe('uniquelocal');
      expect(loadConfig({ ...env, TRUST_PROXY: '1' }).server.trust_proxy).toBe(1);
      expect(loadConfig({ ...env, TRUST_PROXY: 'false' }).server.trust_proxy).toBe(false);
      expect(() => loadConfig({ ...env, TRUST_PROXY: 'caddy' })).toThrow(/^TRUST_PROXY=caddy: "caddy" is not/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
