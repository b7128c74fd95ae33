// The custom scalars at the GraphQL door: a Decimal amount in variables is read from a string only
// (a JSON number has already been through the JSON parser's float by the time the scalar sees it),
// and a bad literal of any custom scalar in the document is the client's mistake (400
// invalid_value, saying what is wrong), never a masked internal error.
import { GraphQLObjectType, GraphQLScalarType, GraphQLSchema, GraphQLString, parse, validate } from 'graphql';
import { createClient } from 'graphql-ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { isUnexpectedError, toPublicGraphQLError } from '../src/graphql/errors.js';
import { ADMIN_TOKEN, startTestServer, type TestServer } from './support/harness.js';
import { seed } from './support/seed.js';

let s: TestServer;

beforeAll(async () => {
  s = await startTestServer();
});
afterAll(async () => {
  await s?.close();
});

/** Posts a request body as written: JSON.stringify would round a number before the server saw it. */
async function rawGraphql(body: string, auth: string) {
  const res = await fetch(`${s.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${auth}` },
    body,
  });
  return { status: res.status, body: (await res.json()) as { data?: any; errors?: any[] } };
}

const topUps = async (apiKey: string) =>
  (await s.graphql('{ viewer { topUps { nodes { amount } } } }', {}, apiKey)).body.data.viewer.topUps.nodes;
const balance = async (apiKey: string) =>
  (await s.graphql('{ viewer { wallet { balance } } }', {}, apiKey)).body.data.viewer.wallet.balance;

describe('Decimal variables', () => {
  it('refuses a JSON number for a Decimal variable, asking for a string, and starts no checkout', async () => {
    const a = await seed(s).account();
    const query = 'mutation($a: Decimal!) { topUp(amount: $a) { amount } }';
    // JSON.parse reads 49.99999999999999999 as 50: taken, it opened a checkout for 50.
    for (const written of ['49.99999999999999999', '20', '12.5']) {
      const r = await rawGraphql(`{"query":${JSON.stringify(query)},"variables":{"a":${written}}}`, a.apiKey);
      expect(r.status, written).toBe(400);
      expect(r.body.data ?? null).toBeNull();
      expect(r.body.errors![0].extensions).toMatchObject({ code: 'invalid_value', type: 'invalid_request_error', status: 400, param: 'a' });
      expect(r.body.errors![0].message).toMatch(
        /Decimal amounts in variables must be strings such as "12\.50": a JSON number may already have been rounded/,
      );
    }
    expect(await topUps(a.apiKey)).toEqual([]);
    // The same inside an input object.
    const credit = await rawGraphql(
      `{"query":"mutation($i: CreditWalletInput!) { creditWallet(input: $i) { id } }","variables":{"i":{"accountId":"${a.id}","amount":5,"type":"bonus","description":"x"}}}`,
      ADMIN_TOKEN,
    );
    expect(credit.status).toBe(400);
    expect(credit.body.errors![0].extensions).toMatchObject({ code: 'invalid_value', param: 'i' });
    expect(credit.body.errors![0].message).toMatch(/must be strings/);
    expect(await balance(a.apiKey)).toBe('0');
  });

  it('reads a string digit for digit: too many decimals are refused, not rounded', async () => {
    const a = await seed(s).account();
    const r = await s.graphql('mutation($a: Decimal!) { topUp(amount: $a) { amount } }', { a: '49.99999999999999999' }, a.apiKey);
    expect(r.status).toBe(400);
    expect(r.body.errors[0].extensions).toMatchObject({ code: 'invalid_value', param: 'a' });
    expect(r.body.errors[0].message).toContain('"49.99999999999999999"');
    expect(await topUps(a.apiKey)).toEqual([]);
    const ok = await s.graphql('mutation($a: Decimal!) { topUp(amount: $a) { amount } }', { a: '20.50' }, a.apiKey);
    expect(ok.body.errors).toBeUndefined();
    expect(ok.body.data.topUp.amount).toBe('20.5');
    expect(await topUps(a.apiKey)).toEqual([{ amount: '20.5' }]);
  });

  it('still takes numbers written in the document itself, digit for digit', async () => {
    const a = await seed(s).account();
    const quote = await s.graphql('{ topUpQuote(amount: 120) { amount credits } }', {}, a.apiKey);
    expect(quote.body.errors).toBeUndefined();
    expect(quote.body.data.topUpQuote).toEqual({ amount: '120', credits: '132' });
    // The literal's own digits: past 9 decimals it is refused, never rounded to 50.
    const r = await rawGraphql('{"query":"mutation { topUp(amount: 49.99999999999999999) { amount } }"}', a.apiKey);
    expect(r.status).toBe(400);
    expect(r.body.errors![0].message).toMatch(/9 decimal places/);
    expect(await topUps(a.apiKey)).toEqual([]);
  });
});

describe('bad literals of custom scalars', () => {
  const chat = (extra: string) =>
    `mutation { createChatCompletion(input: {model: "chat-test", messages: [{role: "user", content: "x"}], ${extra}}) { id } }`;
  const cases: [string, string, RegExp][] = [
    [
      'DateTime',
      'mutation { createApiKey(accountId: "ACCOUNT", expiresAt: "tomorrow") { id } }',
      /DateTime must be an ISO 8601.*got "tomorrow"/,
    ],
    // A day that does not exist, which JavaScript's Date would read as 2 March.
    [
      'DateTime (30 February)',
      'mutation { createApiKey(accountId: "ACCOUNT", expiresAt: "2030-02-30") { id } }',
      /DateTime must be an ISO 8601.*got "2030-02-30"/,
    ],
    ['DateTime (a number)', 'mutation { createApiKey(accountId: "ACCOUNT", expiresAt: 5) { id } }', /DateTime must be an ISO 8601.*got 5/],
    ['Decimal', '{ topUpQuote(amount: "ten") { amount } }', /Decimal: not a decimal number/],
    ['Decimal (an enum value)', '{ topUpQuote(amount: ten) { amount } }', /Decimal must be a string/],
    ['SafeInt', chat('seed: 1.5'), /SafeInt must be a whole number/],
    // Whole, yet past 2^53: the message gives the range, not only "whole".
    ['SafeInt (past 2^53)', chat('seed: 9007199254740993'), /SafeInt must be a whole number from -\(2\^53 - 1\) to 2\^53 - 1\./],
    ['JSON', chat('tools: [{type: "function", function: {name: "f", parameters: ANY}}]'), /JSON cannot represent/],
  ];

  it.each(cases)('answers a bad %s literal with 400 invalid_value and a message naming the type', async (_name, document, message) => {
    const a = await seed(s).account();
    const r = await s.graphql(document.replace('ACCOUNT', a.id), {}, ADMIN_TOKEN);
    expect(r.status).toBe(400);
    expect(r.body.data ?? null).toBeNull();
    expect(r.body.errors[0].extensions).toMatchObject({ code: 'invalid_value', type: 'invalid_request_error', status: 400 });
    expect(r.body.errors[0].message).toMatch(message);
  });

  it('answers the same over WebSocket', async () => {
    const a = await seed(s).account();
    const client = createClient({
      url: `${s.url.replace('http', 'ws')}/graphql`,
      webSocketImpl: WebSocket,
      connectionParams: { authorization: `Bearer ${ADMIN_TOKEN}` },
      retryAttempts: 0,
    });
    try {
      const errors = await new Promise<any[]>((resolve, reject) => {
        client.subscribe(
          { query: `mutation { createApiKey(accountId: "${a.id}", expiresAt: "tomorrow") { id } }` },
          { next: () => reject(new Error('answered')), error: (e) => resolve(e as any[]), complete: () => reject(new Error('completed')) },
        );
      });
      expect(errors[0].extensions).toMatchObject({ code: 'invalid_value', status: 400 });
      expect(errors[0].message).toMatch(/DateTime must be an ISO 8601/);
    } finally {
      await client.dispose();
    }
  });

  it('takes a good DateTime literal', async () => {
    const a = await seed(s).account();
    const r = await s.graphql(
      `mutation { createApiKey(accountId: "${a.id}", expiresAt: "2099-01-01T00:00:00Z") { apiKey } }`,
      {},
      ADMIN_TOKEN,
    );
    expect(r.body.errors).toBeUndefined();
    const keys = await s.graphql('{ viewer { apiKeys { expiresAt } } }', {}, r.body.data.createApiKey.apiKey);
    expect(keys.body.data.viewer.apiKeys.map((k: { expiresAt: string | null }) => k.expiresAt)).toContain('2099-01-01T00:00:00.000Z');
  });
});

describe('the error mapping of a refused literal', () => {
  it('maps a literal that a scalar refused with a plain error to 400 invalid_value, not a masked internal error', () => {
    // As DateTime was: no parseLiteral, so graphql-js's default hands the literal to parseValue, and
    // validation wraps its plain error, keeping it as originalError.
    const strict = new GraphQLScalarType({
      name: 'Strict',
      parseValue: () => {
        throw new TypeError('Strict takes nothing');
      },
    });
    const tiny = new GraphQLSchema({
      query: new GraphQLObjectType({
        name: 'Query',
        fields: { f: { type: GraphQLString, args: { x: { type: strict } }, resolve: () => 'ok' } },
      }),
    });
    const [error] = validate(tiny, parse('{ f(x: "no") }'));
    expect(error?.originalError).toBeInstanceOf(TypeError);
    expect(isUnexpectedError(error)).toBe(false);
    const pub = toPublicGraphQLError(error, () => expect.unreachable('logged as unexpected'));
    expect(pub.message).toMatch(/Strict takes nothing/);
    expect(pub.extensions).toMatchObject({ code: 'invalid_value', type: 'invalid_request_error', status: 400 });
  });
});
