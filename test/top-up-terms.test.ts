// The top-up rules a customer sees before paying (Query.topUpTerms) and the operator's sales
// contact for amounts of 500 and more: in the terms, and in the message of the refusal on both doors.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { termsHint } from '../src/dashboard/lib/top-up-amount.js';
import { catalogYaml, startTestServer, type TestServer } from './support/harness.js';
import { signedIn } from './support/seed.js';

const TERMS = '{ topUpTerms { minimumAmount salesThreshold currency bonusTable { minAmount percent } salesContact } }';

async function refusal(s: TestServer, apiKey: string) {
  const gql = await s.graphql('mutation { topUp(amount: "600") { id } }', {}, apiKey);
  const v1 = await fetch(`${s.url}/v1/wallet/top-up`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ amount: 600 }),
  });
  return { gql: gql.body.errors?.[0], v1: { status: v1.status, body: (await v1.json()) as { error: { code: string; message: string } } } };
}

describe('top-up terms with a sales contact and a bonus table of the operator', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({
      yaml: (u) =>
        catalogYaml(
          u,
          'payments:\n  sales_contact: sales@acme.example\n  bonus_table: [{ min_amount: 20, percent: 2.5 }, { min_amount: 200, percent: 12 }]\n',
        ),
    });
  });
  afterAll(async () => s?.close());

  it('lists the amounts, the bonus table and the contact, without signing in', async () => {
    const r = await s.graphql(TERMS);
    expect(r.body.errors).toBeUndefined();
    expect(r.body.data.topUpTerms).toEqual({
      minimumAmount: '10',
      salesThreshold: '500',
      currency: 'USD',
      bonusTable: [
        { minAmount: '20', percent: 2.5 },
        { minAmount: '200', percent: 12 },
      ],
      salesContact: 'mailto:sales@acme.example',
    });
    // The dashboard's hint is written from these terms.
    expect(termsHint(r.body.data.topUpTerms)).toBe('10.00 to 499.99, in USD. Bonus: 2.5% from 20, 12% from 200.');
  });

  it('names the contact when 500 or more is refused, on GraphQL and /v1', async () => {
    const { apiKey, id } = await s.account('developer');
    const { gql, v1 } = await refusal(s, apiKey);
    expect(gql.extensions.code).toBe('amount_requires_sales');
    expect(gql.message).toContain('please contact sales at sales@acme.example');
    expect(v1.status).toBe(400);
    expect(v1.body.error.code).toBe('amount_requires_sales');
    expect(v1.body.error.message).toBe(gql.message);
    // The automatic top-up's amount says the same.
    const auto = await (await signedIn(s, id)).graphql(
      'mutation { updateAutoTopup(input: { enabled: true, threshold: "5", amount: "600" }) { enabled } }',
    );
    expect(auto.body.errors?.[0]?.extensions.code).toBe('amount_requires_sales');
    expect(auto.body.errors?.[0]?.message).toBe(gql.message);
  });
});

describe('top-up terms without a sales contact', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  });
  afterAll(async () => s?.close());

  it('has no contact, the specification bonus table, and a refusal that points to the operator', async () => {
    const r = await s.graphql(TERMS);
    expect(r.body.data.topUpTerms.salesContact).toBeNull();
    expect(termsHint(r.body.data.topUpTerms)).toBe('10.00 to 499.99, in USD. Bonus: 5% from 50, 10% from 100, 15% from 250.');
    const { apiKey } = await s.account('developer');
    const { gql } = await refusal(s, apiKey);
    expect(gql.message).toContain('please contact the operator of this service');
    expect(gql.message).not.toContain('mailto');
  });
});
