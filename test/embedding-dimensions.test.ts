// Embedding `dimensions` (issue 16): a model declaring `specifications.supported_dimensions`
// answers a request for one of those sizes (or its full size) with its vectors cut to it and
// L2-renormalised, on both engines (the openai engine asks its upstream for the full vectors and
// cuts them here), over /v1 (float and base64, `dimensions` or `output_dimensions`, the openai SDK)
// and GraphQL; any other size is 400 invalid_value naming `dimensions`, before anything is billed.
import { print } from 'graphql';
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfigText } from '../src/config.js';
import { shorten } from '../src/domain/inference/embedding-dimensions.js';
import { CreateEmbeddingsDocument } from '../src/generated/graphql.js';
import { catalogYaml, embeddingModelYaml, type TestServer } from './support/harness.js';
import { makeFixtureDir, withLoadedServer } from './support/llamacpp.js';
import { client as v1 } from './support/seed.js';

const fixtures = makeFixtureDir();

const yaml = (url: string) =>
  catalogYaml(
    url,
    embeddingModelYaml(
      'embed-mrl',
      '{ max_tokens: 512, output_dimensions: 768, supported_dimensions: [256, 512] }',
      `{ type: openai, base_url: "${url}", model: upstream-embed }`,
    ) +
      embeddingModelYaml(
        'tiny-embed-mrl',
        '{ max_tokens: 512, output_dimensions: 64, supported_dimensions: [16, 32] }',
        `{ type: llamacpp, file: "${fixtures.files.embedding}", threads: 1 }`,
      ),
  );

let s: TestServer;
let key: string;
let accountId: string;
withLoadedServer(yaml, fixtures, (server, account) => {
  s = server;
  ({ key, accountId } = account);
});

const norm = (v: number[]) => Math.hypot(...v);
const decode = (b64: string) => Array.from(new Float32Array(new Uint8Array(Buffer.from(b64, 'base64')).buffer));

describe.each([
  ['openai', 'embed-mrl', 768, [256, 512]],
  ['llamacpp', 'tiny-embed-mrl', 64, [16, 32]],
] as const)('dimensions on the %s engine', (_engine, model, full, supported) => {
  it('cuts each vector to a supported size and renormalises it: the full vector’s first components, scaled', async () => {
    const c = v1(s, key);
    const whole = await c.post('/embeddings', { model, input: ['green tea', 'black coffee'] });
    expect(whole.status).toBe(200);
    for (const size of supported) {
      const r = await c.post('/embeddings', { model, input: ['green tea', 'black coffee'], dimensions: size });
      expect(r.status).toBe(200);
      expect(r.body.usage).toEqual(whole.body.usage);
      for (const [i, d] of r.body.data.entries()) {
        expect(d.embedding).toHaveLength(size);
        expect(norm(d.embedding)).toBeCloseTo(1, 6);
        const prefix: number[] = whole.body.data[i].embedding.slice(0, size);
        const scale = 1 / norm(prefix);
        for (const [j, x] of d.embedding.entries()) expect(x).toBeCloseTo(prefix[j]! * scale, 6);
      }
    }
    // The full size is always allowed, and changes nothing.
    const same = await c.post('/embeddings', { model, input: ['green tea', 'black coffee'], dimensions: full });
    expect(same.body.data).toEqual(whole.body.data);
  });

  it('reads output_dimensions as dimensions, and base64 vectors are cut the same way', async () => {
    const c = v1(s, key);
    const size = supported[0];
    const float = await c.post('/embeddings', { model, input: 'green tea', dimensions: size });
    const alias = await c.post('/embeddings', { model, input: 'green tea', output_dimensions: size });
    expect(alias.body.data).toEqual(float.body.data);
    const b64 = await c.post('/embeddings', { model, input: 'green tea', dimensions: size, encoding_format: 'base64' });
    const decoded = decode(b64.body.data[0].embedding);
    expect(decoded).toHaveLength(size);
    for (const [i, x] of decoded.entries()) expect(x).toBeCloseTo(float.body.data[0].embedding[i], 6);
  });

  it('works with the openai SDK, which sends dimensions as given (and asks for base64)', async () => {
    const sdk = new OpenAI({ apiKey: key, baseURL: s.v1, maxRetries: 0 });
    const r = await sdk.embeddings.create({ model, input: 'green tea', dimensions: supported[1] });
    expect(r.data[0]!.embedding).toHaveLength(supported[1]);
    expect(norm(r.data[0]!.embedding)).toBeCloseTo(1, 5);
  });

  it('refuses any other size with 400 invalid_value naming dimensions and the sizes, billing nothing', async () => {
    const c = v1(s, key);
    const before = (await s.services.billing.listUsageEvents(accountId)).length;
    for (const size of [supported[0] + 1, full + 1, 0, -1]) {
      const r = await c.post('/embeddings', { model, input: 'green tea', dimensions: size });
      expect(r.status).toBe(400);
      expect(r.body.error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_value', param: 'dimensions' });
      expect(r.body.error.message).toContain(`${supported.join(', ')}, ${full}`);
    }
    const both = await c.post('/embeddings', { model, input: 'x', dimensions: supported[0], output_dimensions: supported[1] });
    expect(both.status).toBe(400);
    expect(both.body.error).toMatchObject({ code: 'invalid_value', param: 'dimensions' });
    const text = await c.post('/embeddings', { model, input: 'x', dimensions: '256' });
    expect(text.body.error).toMatchObject({ code: 'invalid_type', param: 'dimensions' });
    expect((await s.services.billing.listUsageEvents(accountId)).length).toBe(before);
  });

  it('takes dimensions over GraphQL, with the same vectors as /v1, and refuses a bad one with the same code', async () => {
    const size = supported[0];
    const g = await s.graphql(print(CreateEmbeddingsDocument), { input: { model, input: ['green tea'], dimensions: size } }, key);
    expect(g.body.errors).toBeUndefined();
    const r = await v1(s, key).post('/embeddings', { model, input: 'green tea', dimensions: size });
    expect(g.body.data.createEmbeddings.data[0].embedding).toEqual(r.body.data[0].embedding);
    const bad = await s.graphql(print(CreateEmbeddingsDocument), { input: { model, input: ['x'], dimensions: 3 } }, key);
    expect(bad.body.errors[0].extensions).toMatchObject({ code: 'invalid_value', param: 'dimensions', status: 400 });
  });
});

describe('dimensions on a model without supported_dimensions', () => {
  it('allows only its full size', async () => {
    const c = v1(s, key);
    expect((await c.post('/embeddings', { model: 'embed-test', input: 'x', dimensions: 768 })).status).toBe(200);
    const r = await c.post('/embeddings', { model: 'embed-test', input: 'x', dimensions: 256 });
    expect(r.status).toBe(400);
    expect(r.body.error.param).toBe('dimensions');
    expect(r.body.error.message).toContain('declares no shorter sizes');
  });
});

describe('the catalog', () => {
  it('lists supported_dimensions on /v1/models and GraphQL', async () => {
    const m = await (await fetch(`${s.v1}/models/embed-mrl`)).json();
    expect(m.specifications).toEqual({ max_tokens: 512, output_dimensions: 768, supported_dimensions: [256, 512] });
    const g = await s.graphql('{ model(id: "tiny-embed-mrl") { specifications { supportedDimensions } } }');
    expect(g.body.data.model.specifications.supportedDimensions).toEqual([16, 32]);
  });

  const config = (dims: string) =>
    `models:\n${embeddingModelYaml('e', `{ max_tokens: 512, output_dimensions: 768, supported_dimensions: ${dims} }`, '{ type: openai, base_url: "http://127.0.0.1:1/v1", model: m }')}`;
  it.each([
    ['[256, 768]', 'every size must be below output_dimensions'],
    ['[1024]', 'every size must be below output_dimensions'],
    ['[256, 256]', 'each size once'],
    ['[]', 'specifications.supported_dimensions'],
    ['[0]', 'specifications.supported_dimensions'],
  ])('refuses supported_dimensions %s at start-up, naming the model and key', (dims, message) => {
    expect(() => parseConfigText(config(dims), 't.yaml')).toThrow(ConfigError);
    expect(() => parseConfigText(config(dims), 't.yaml')).toThrow(message);
    expect(() => parseConfigText(config(dims), 't.yaml')).toThrow('model "e"');
  });
});

describe('shorten', () => {
  it('keeps a zero vector zero and scales any other to unit length', () => {
    expect(shorten([0, 0, 3], 2)).toEqual([0, 0]);
    const [x, y] = shorten([3, 4, 12], 2);
    expect(x).toBeCloseTo(0.6, 12);
    expect(y).toBeCloseTo(0.8, 12);
  });
});
