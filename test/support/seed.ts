// Seed builders for billing tests: `await seed(s).account({ tier: 'developer' }).wallet('10.00')`
// creates the account through the admin GraphQL mutation and credits its wallet (a bonus), the
// way an operator would; `client(s, key)` calls /v1 and GraphQL with the account's key.
import { ADMIN_TOKEN, type TestServer } from './harness.js';

export type TierName = 'free' | 'developer' | 'startup' | 'enterprise';

export interface SeededAccount {
  id: string;
  apiKey: string;
  keyId: string;
}

class AccountSeed implements PromiseLike<SeededAccount> {
  private readonly credits: string[] = [];

  constructor(
    private readonly s: TestServer,
    private readonly tier: TierName,
  ) {}

  /** Credits the wallet with this amount (a decimal string, in USD) after creating the account. */
  wallet(amount: string): this {
    this.credits.push(amount);
    return this;
  }

  private async create(): Promise<SeededAccount> {
    const account = await this.s.account(this.tier);
    for (const amount of this.credits) await credit(this.s, account.id, amount);
    return account;
  }

  then<A = SeededAccount, B = never>(
    onFulfilled?: ((value: SeededAccount) => A | PromiseLike<A>) | null,
    onRejected?: ((reason: unknown) => B | PromiseLike<B>) | null,
  ): Promise<A | B> {
    return this.create().then(onFulfilled, onRejected);
  }
}

export function seed(s: TestServer) {
  return {
    account: (opts: { tier?: TierName } = {}) => new AccountSeed(s, opts.tier ?? 'developer'),
  };
}

/** Credits an account through the admin mutation; returns the transaction. */
export async function credit(
  s: TestServer,
  accountId: string,
  amount: string,
  type: 'bonus' | 'refund' = 'bonus',
  idempotencyKey?: string,
) {
  const r = await s.graphql(
    'mutation($i: CreditWalletInput!) { creditWallet(input: $i) { id type amount balanceAfter createdAt description } }',
    { i: { accountId, amount, type, description: `test ${type}`, idempotencyKey } },
    ADMIN_TOKEN,
  );
  if (!r.body.data) throw new Error(`creditWallet failed: ${JSON.stringify(r.body)}`);
  return r.body.data.creditWallet as {
    id: string;
    type: string;
    amount: string;
    balanceAfter: string;
    createdAt: string;
    description: string;
  };
}

export interface HttpResult<T = any> {
  status: number;
  body: T;
  text: string;
}

/** /v1 and GraphQL calls with an account's key. */
export function client(s: TestServer, apiKey: string) {
  const headers = { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' };
  const send = async (method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<HttpResult> => {
    const res = await fetch(`${s.v1}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      // SSE or plain text: keep the text
    }
    return { status: res.status, body: parsed, text };
  };
  return {
    get: (path: string) => send('GET', path),
    post: (path: string, body: unknown, signal?: AbortSignal) => send('POST', path, body, signal),
    /** One user message; `max_tokens` when given. */
    chat: (content: string, opts: { max_tokens?: number; model?: string } = {}) =>
      send('POST', '/chat/completions', {
        model: opts.model ?? 'chat-test',
        messages: [{ role: 'user', content }],
        ...(opts.max_tokens ? { max_tokens: opts.max_tokens } : {}),
      }),
    graphql: (query: string, variables?: Record<string, unknown>) => s.graphql(query, variables, apiKey),
    /** The exact balance, as GraphQL's Decimal string. */
    balance: async (): Promise<string> => {
      const r = await s.graphql('{ viewer { wallet { balance } } }', {}, apiKey);
      if (!r.body.data) throw new Error(JSON.stringify(r.body));
      return r.body.data.viewer.wallet.balance as string;
    },
  };
}

const sessions = new WeakMap<TestServer, Map<string, Promise<string>>>();

/**
 * GraphQL as the account's owner signed in to the dashboard (a session cookie): what only a session
 * may do (automatic top-up, spending limit, alerts). The session comes the way an operator's
 * set-password link gives one (`tollgate accounts password-link`), once per account and server.
 */
export async function signedIn(s: TestServer, accountId: string) {
  let known = sessions.get(s);
  if (!known) sessions.set(s, (known = new Map()));
  let cookie = known.get(accountId);
  if (!cookie) {
    cookie = (async () => {
      const link = await s.services.auth.passwordLink(accountId, 'set');
      const token = new URL(link).searchParams.get('token')!;
      const session = await s.services.auth.resetPassword({ token, password: 'correct horse battery staple' });
      return `tollgate_session=${session.token}`;
    })();
    known.set(accountId, cookie);
  }
  const header = await cookie;
  return {
    cookie: header,
    graphql: async (query: string, variables: Record<string, unknown> = {}): Promise<HttpResult> => {
      const res = await fetch(`${s.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', cookie: header },
        body: JSON.stringify({ query, variables }),
      });
      const text = await res.text();
      return { status: res.status, body: JSON.parse(text), text };
    },
  };
}
