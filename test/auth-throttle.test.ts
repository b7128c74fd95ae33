// The throttle of sign-in, sign-up and password resets: what it keeps (a digest of each key, at most
// so many keys), what each operation counts per client, and what it says when it refuses.
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { clientOf, LoginThrottle } from '../src/domain/auth/login-throttle.js';
import { DomainError } from '../src/domain/errors.js';
import { ADMIN_TOKEN, catalogYaml, startTestServer, type TestServer } from './support/harness.js';

const PASSWORD = 'correct horse battery';

// argon2 as it is, counting its hashes: what a refused sign-up cost.
const argon2 = vi.hoisted(() => ({ hashes: 0 }));
vi.mock('@node-rs/argon2', async (original) => {
  const m = await original<typeof import('@node-rs/argon2')>();
  return {
    ...m,
    hash: (...args: Parameters<typeof m.hash>) => {
      argon2.hashes++;
      return m.hash(...args);
    },
  };
});

async function gql(s: TestServer, query: string, variables: Record<string, unknown> = {}, headers: Record<string, string> = {}) {
  const res = await fetch(`${s.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ query, variables }),
  });
  return { status: res.status, body: (await res.json()) as { data?: any; errors?: any[] } };
}
const codeOf = (r: { body: { errors?: any[] } }) => r.body.errors?.[0]?.extensions.code ?? 'ok';

/** The refusal `fn` throws, or null. */
function refusalOf(fn: () => void): DomainError | null {
  try {
    fn();
    return null;
  } catch (e) {
    if (e instanceof DomainError) return e;
    throw e;
  }
}

const tooMany = (wait: string) => `Too many tries; wait ${wait}.`;

/** The keys the throttle holds (they are private: what a client sent must not be among them). */
const throttleOf = (s: TestServer) => (s.services.auth as unknown as { throttle: LoginThrottle }).throttle;
const failuresOf = (t: LoginThrottle) => (t as unknown as { failures: Map<string, number[]> }).failures;
const keysOf = (t: LoginThrottle) => [...failuresOf(t).keys()];
/** Every attempt the throttle counts, over all its keys. */
const countedOf = (t: LoginThrottle) => [...failuresOf(t).values()].reduce((n, at) => n + at.length, 0);
/** A SHA-256 digest in base64url: what the throttle keeps instead of a key. */
const DIGEST = /^[A-Za-z0-9_-]{43}$/;

describe('the throttle', () => {
  it('keeps a digest of each key, never what the client sent', () => {
    const throttle = new LoginThrottle(5);
    const huge = `reset:${'x'.repeat(900_000)}@example.com`;
    throttle.fail([huge, 'email:ann@example.com']);
    expect(keysOf(throttle)).toHaveLength(2);
    for (const key of keysOf(throttle)) expect(key).toMatch(DIGEST);
    // Counted all the same: four more and it is over the limit.
    throttle.fail([huge, huge, huge, huge]);
    expect(refusalOf(() => throttle.check([huge], tooMany))?.code).toBe('too_many_attempts');
  });

  it('holds at most its cap of keys: the least recently counted go first, but never one refusing now', () => {
    let now = 1_000_000;
    const throttle = new LoginThrottle(2, () => now, 100);
    throttle.fail(['email:first@example.com', 'email:first@example.com']);
    throttle.fail(['email:second@example.com']);
    expect(refusalOf(() => throttle.check(['email:first@example.com'], tooMany))?.code).toBe('too_many_attempts');
    for (let i = 0; i < 250; i++) {
      now += 1;
      throttle.fail([`email:${i}@example.com`]);
      expect(throttle.size).toBeLessThanOrEqual(100);
    }
    // A flood of new keys does not free a locked-out address: the stalest keys below their limit made room.
    expect(refusalOf(() => throttle.check(['email:first@example.com'], tooMany))?.code).toBe('too_many_attempts');
    throttle.fail(['email:second@example.com']);
    expect(refusalOf(() => throttle.check(['email:second@example.com'], tooMany))).toBeNull();
    throttle.fail(['email:249@example.com']);
    expect(refusalOf(() => throttle.check(['email:249@example.com'], tooMany))?.code).toBe('too_many_attempts');
    expect(throttle.size).toBe(100);
  });

  it('counts an IPv6 client by its /64: a host does not become a new client with each of its addresses', () => {
    expect(clientOf('2001:db8:aaaa:bbbb:1::2')).toBe(clientOf('2001:db8:aaaa:bbbb:ffff:eeee:dddd:cccc'));
    expect(clientOf('2001:db8:aaaa:bbbb::1')).not.toBe(clientOf('2001:db8:aaaa:bbbc::1'));
    expect(clientOf('203.0.113.7')).toBe('203.0.113.7');
    expect(clientOf('::ffff:203.0.113.7')).toBe('::ffff:203.0.113.7');
  });

  it('words its refusal as the caller asks, with the wait', () => {
    let now = 1_000_000;
    const throttle = new LoginThrottle(1, () => now);
    throttle.fail(['reset:ann@example.com']);
    now += 60_000;
    const refusal = refusalOf(() => throttle.check(['reset:ann@example.com'], (wait) => `Too many resets; try again in ${wait}.`));
    expect([refusal?.code, refusal?.message, refusal?.retryAfter]).toEqual([
      'too_many_attempts',
      'Too many resets; try again in 14 minutes.',
      840,
    ]);
  });

  it('drops keys whose window has passed as it counts new ones, without waiting for the cap', () => {
    let now = 1_000_000;
    const throttle = new LoginThrottle(5, () => now);
    for (let i = 0; i < 20; i++) throttle.fail([`email:old-${i}@example.com`]);
    expect(throttle.size).toBe(20);
    now += 16 * 60_000;
    for (let i = 0; i < 10; i++) throttle.fail([`email:new-${i}@example.com`]);
    expect(throttle.size).toBe(10);
  });
});

describe('password resets and sign-in through GraphQL', () => {
  let s: TestServer;
  beforeAll(async () => {
    // One failed try per address, ten per client address.
    s = await startTestServer({ yaml: (u) => `accounts: { max_failed_logins: 1 }\n${catalogYaml(u)}` });
  });
  afterAll(async () => s?.close());

  const RESET = 'mutation($e: String!) { requestPasswordReset(email: $e) }';
  const reset = (e: string) => gql(s, RESET, { e });
  const resetFrom = (localAddress: string, e: string) => gqlFrom(s, localAddress, RESET, { e });

  it('refuses a reset for what is not an e-mail address (a megabyte of it too), before anything is kept of it', async () => {
    const before = throttleOf(s).size;
    for (const e of [`0${'x'.repeat(900_000)}`, `${'a'.repeat(400)}@example.com`, 'not an address']) {
      const r = await reset(e);
      expect([r.status, r.body.errors?.[0]?.extensions]).toEqual([400, expect.objectContaining({ code: 'invalid_value', param: 'email' })]);
    }
    // Only the client's count was added.
    expect(throttleOf(s).size).toBe(before + 1);
  });

  it('counts every reset request against its client, whatever the address, and answers each the same way until then', async () => {
    const localAddress = '127.0.0.21';
    const codes: string[] = [];
    for (let i = 0; i < 11; i++) codes.push(codeOf(await resetFrom(localAddress, `someone-${i}@example.com`)));
    // The three refused addresses of the test above were another client's (127.0.0.1).
    expect(codes).toEqual([...Array(10).fill('ok'), 'too_many_attempts']);
    // Another client is not held back.
    expect(codeOf(await resetFrom('127.0.0.22', 'someone-else@example.com'))).toBe('ok');
  });

  it('says what was refused: a reset, a sign-in, an operator token (which has no password to reset)', async () => {
    const messageOf = (r: { status: number; body: { errors?: any[] } }) => [r.status, codeOf(r), r.body.errors?.[0]?.message];
    expect(codeOf(await resetFrom('127.0.0.31', 'twice@example.com'))).toBe('ok');
    expect(messageOf(await resetFrom('127.0.0.31', 'twice@example.com'))).toEqual([
      429,
      'too_many_attempts',
      'Too many password-reset requests; try again in 15 minutes.',
    ]);
    const SIGN_IN = 'mutation($e: String!, $p: String!) { signIn(email: $e, password: $p) { id } }';
    expect(codeOf(await gqlFrom(s, '127.0.0.32', SIGN_IN, { e: 'twice@example.com', p: 'a wrong password' }))).toBe('invalid_credentials');
    expect(messageOf(await gqlFrom(s, '127.0.0.32', SIGN_IN, { e: 'twice@example.com', p: 'a wrong password' }))).toEqual([
      429,
      'too_many_attempts',
      'Too many failed sign-ins; try again in 15 minutes, or reset the password.',
    ]);
    const OPERATOR = 'mutation($t: String!) { signInAsOperator(token: $t) { id } }';
    expect(codeOf(await gqlFrom(s, '127.0.0.33', OPERATOR, { t: 'a-wrong-operator-token' }))).toBe('invalid_credentials');
    expect(messageOf(await gqlFrom(s, '127.0.0.33', OPERATOR, { t: 'a-wrong-operator-token' }))).toEqual([
      429,
      'too_many_attempts',
      'Too many failed sign-ins from this address; try again in 15 minutes.',
    ]);
  });

  it('counts a right password against its client too: signing in again and again is limited as guessing is', async () => {
    const SIGN_IN = 'mutation($e: String!, $p: String!) { signIn(email: $e, password: $p) { id } }';
    const SIGN_UP = 'mutation($e: String!, $p: String!) { signUp(email: $e, password: $p) { id } }';
    expect(codeOf(await gqlFrom(s, '127.0.0.51', SIGN_UP, { e: 'often@example.com', p: PASSWORD }))).toBe('ok');
    const codes: string[] = [];
    for (let i = 0; i < 11; i++) codes.push(codeOf(await gqlFrom(s, '127.0.0.52', SIGN_IN, { e: 'often@example.com', p: PASSWORD })));
    // Ten per client address here (max_failed_logins 1): the right password each time.
    expect(codes).toEqual([...Array(10).fill('ok'), 'too_many_attempts']);
    // Said as the address's limit, where resetting the password would not help.
    const refused = await gqlFrom(s, '127.0.0.52', SIGN_IN, { e: 'often@example.com', p: PASSWORD });
    expect(refused.body.errors?.[0]?.message).toBe(
      'Too many sign-ins from this network address (every sign-in from it counts, whoever makes it); try again in 15 minutes.',
    );
    // The operator signing in from that address is not held back by its customers' sign-ins.
    const operator = await gqlFrom(s, '127.0.0.52', 'mutation($t: String!) { signInAsOperator(token: $t) { operator } }', {
      t: ADMIN_TOKEN,
    });
    expect(codeOf(operator)).toBe('ok');
    // The address's own count was cleared by each success: another client signs in to it.
    expect(codeOf(await gqlFrom(s, '127.0.0.53', SIGN_IN, { e: 'often@example.com', p: PASSWORD }))).toBe('ok');
  });

  it('refuses a sign-in with a megabyte-long address as a wrong password, and keeps none of it', async () => {
    const before = throttleOf(s).size;
    const counted = countedOf(throttleOf(s));
    const r = await gql(s, 'mutation($e: String!, $p: String!) { signIn(email: $e, password: $p) { id } }', {
      e: `${'x'.repeat(900_000)}@example.com`,
      p: PASSWORD,
    });
    expect([r.status, codeOf(r)]).toEqual([401, 'invalid_credentials']);
    for (const key of keysOf(throttleOf(s))) expect(key).toMatch(DIGEST);
    // Counted once, against its client only: the address itself is no key.
    expect(countedOf(throttleOf(s))).toBe(counted + 1);
    expect(throttleOf(s).size).toBeLessThanOrEqual(before + 1);
  });
});

describe('sign-up', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({ yaml: (u) => `accounts: { max_failed_logins: 1 }\n${catalogYaml(u)}` });
  });
  afterAll(async () => s?.close());

  const SIGN_UP = 'mutation($e: String!, $p: String!) { signUp(email: $e, password: $p) { id } }';

  it('counts every attempt against its client: asking which addresses have accounts is limited', async () => {
    const from = '127.0.0.41';
    const codes: string[] = [];
    codes.push(codeOf(await gqlFrom(s, from, SIGN_UP, { e: 'alice@example.com', p: PASSWORD })));
    for (let i = 0; i < 9; i++) codes.push(codeOf(await gqlFrom(s, from, SIGN_UP, { e: 'alice@example.com', p: PASSWORD })));
    expect(codes).toEqual(['ok', ...Array(9).fill('email_taken')]);
    const refused = await gqlFrom(s, from, SIGN_UP, { e: 'bob@example.com', p: PASSWORD });
    expect([refused.status, codeOf(refused), refused.body.errors?.[0]?.message]).toEqual([
      429,
      'too_many_attempts',
      'Too many sign-ups from this address; try again in 15 minutes.',
    ]);
    // Another client is not held back (and email_taken stays: a neutral answer is another matter).
    expect(codeOf(await gqlFrom(s, '127.0.0.42', SIGN_UP, { e: 'alice@example.com', p: PASSWORD }))).toBe('email_taken');
    expect(codeOf(await gqlFrom(s, '127.0.0.42', SIGN_UP, { e: 'bob@example.com', p: PASSWORD }))).toBe('ok');
  });

  it('checks the address, taken or not one at all, before it hashes the password', async () => {
    await gqlFrom(s, '127.0.0.43', SIGN_UP, { e: 'carol@example.com', p: PASSWORD });
    const before = argon2.hashes;
    expect(codeOf(await gqlFrom(s, '127.0.0.43', SIGN_UP, { e: 'Carol@Example.com', p: PASSWORD }))).toBe('email_taken');
    expect(codeOf(await gqlFrom(s, '127.0.0.43', SIGN_UP, { e: 'not an address', p: PASSWORD }))).toBe('invalid_value');
    expect(argon2.hashes).toBe(before);
    expect(codeOf(await gqlFrom(s, '127.0.0.43', SIGN_UP, { e: 'dave@example.com', p: PASSWORD }))).toBe('ok');
    expect(argon2.hashes).toBe(before + 1);
  });
});

/**
 * A GraphQL request sent from `localAddress` (a loopback address of its own: another client, as
 * the server sees it), with `headers`.
 */
function gqlFrom(
  s: TestServer,
  localAddress: string,
  query: string,
  variables: Record<string, unknown>,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: { data?: any; errors?: any[] } }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      `${s.url}/graphql`,
      { method: 'POST', localAddress, headers: { 'content-type': 'application/json', ...headers } },
      (res) => {
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(text) }));
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify({ query, variables }));
  });
}
