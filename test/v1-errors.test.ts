// Every refusal of the /v1 API: its HTTP status and its {error:{message,type,param,code}} body.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { documents, OperationError, run } from '../compat/operations.js';
import type { ChatCompletionInput } from '../src/generated/graphql.js';
import type { GraphQLContext } from '../src/graphql/context.js';
import { startTestServer, type TestServer } from './support/harness.js';
import { violations } from './support/oracle.js';
import { contractFailures } from './support/openapi-contract.js';

let s: TestServer;
let key: string;

beforeAll(async () => {
  s = await startTestServer();
  key = (await s.account('developer')).apiKey;
});
afterAll(() => s.close());

async function post(path: string, body: unknown, auth: string | null = key, raw = false) {
  const res = await fetch(`${s.v1}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(auth ? { authorization: `Bearer ${auth}` } : {}) },
    body: raw ? (body as string) : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: JSON.parse(text), headers: res.headers };
}

const chat = (extra: Record<string, unknown>) => ({ model: 'chat-test', messages: [{ role: 'user', content: 'hi' }], ...extra });

async function expectError(p: Promise<{ status: number; body: any }>, status: number, type: string, code: string | null, param?: string) {
  const r = await p;
  expect(r.status).toBe(status);
  expect(r.body.error.type).toBe(type);
  expect(r.body.error.code).toBe(code);
  expect(typeof r.body.error.message).toBe('string');
  expect(r.body.error.message.length).toBeGreaterThan(5);
  if (param !== undefined) expect(r.body.error.param).toBe(param);
  expect(violations('ErrorResponse', r.body)).toEqual([]);
  return r;
}

describe('authentication', () => {
  it('refuses a missing key with 401 invalid_api_key', () =>
    expectError(post('/chat/completions', chat({}), null), 401, 'authentication_error', 'invalid_api_key'));

  it('refuses a wrong key without echoing it', async () => {
    const bad = 'ask_ThisIsNotARealKeyButLooksLikeOne123456';
    const r = await expectError(post('/chat/completions', chat({}), bad), 401, 'authentication_error', 'invalid_api_key');
    expect(JSON.stringify(r.body)).not.toContain(bad);
    expect(JSON.stringify(r.body)).not.toContain('ThisIsNotAReal');
  });

  it('checks the key before the body', () =>
    expectError(post('/embeddings', '{broken', 'ask_nope', true), 401, 'authentication_error', 'invalid_api_key'));

  it('refuses a revoked key from the next request on', async () => {
    const a = await s.account('developer');
    expect((await post('/moderate', { model: 'guard-test', input: 'ok' }, a.apiKey)).status).toBe(200);
    await s.services.accounts.revokeKey(a.keyId);
    await expectError(post('/moderate', { model: 'guard-test', input: 'ok' }, a.apiKey), 401, 'authentication_error', 'invalid_api_key');
  });

  it('answers the wallet paths with 401 without a key', async () => {
    for (const [method, path] of [
      ['GET', '/wallet/balance'],
      ['POST', '/wallet/top-up'],
      ['GET', '/wallet/transactions'],
    ] as const) {
      const res = await fetch(`${s.v1}${path}`, {
        method,
        headers: { 'content-type': 'application/json' },
        body: method === 'POST' ? '{}' : undefined,
      });
      expect(res.status).toBe(401);
      expect((await res.json()).error.code).toBe('invalid_api_key');
    }
  });

  it('serves the model list without a key', async () => {
    expect((await fetch(`${s.v1}/models`)).status).toBe(200);
    expect((await fetch(`${s.v1}/models/chat-test`)).status).toBe(200);
  });
});

describe('chat request rules', () => {
  const bad = (body: Record<string, unknown>, code: string, param?: string) =>
    expectError(post('/chat/completions', chat(body)), 400, 'invalid_request_error', code, param);

  it('refuses an unknown model', () => bad({ model: 'nope' }, 'invalid_model', 'model'));
  it('refuses a model of another category', () => bad({ model: 'embed-test' }, 'invalid_model', 'model'));
  it('refuses temperature above 2', () => bad({ temperature: 2.5 }, 'invalid_value', 'temperature'));
  it('refuses temperature below 0', () => bad({ temperature: -0.1 }, 'invalid_value', 'temperature'));
  it('refuses top_p above 1', () => bad({ top_p: 1.01 }, 'invalid_value', 'top_p'));
  it('refuses presence_penalty below -2', () => bad({ presence_penalty: -2.5 }, 'invalid_value', 'presence_penalty'));
  it('refuses frequency_penalty above 2', () => bad({ frequency_penalty: 3 }, 'invalid_value', 'frequency_penalty'));
  it('refuses five stop sequences', () => bad({ stop: ['a', 'b', 'c', 'd', 'e'] }, 'too_many_stop_sequences', 'stop'));
  it('refuses a stop sequence over 1,000 characters, and takes one of 1,000', async () => {
    const r = await bad({ stop: ['end', 'x'.repeat(1001)] }, 'invalid_value', 'stop');
    expect(r.body.error.message).toBe("'stop' sequences may be at most 1000 characters long; got one of 1001.");
    expect((await post('/chat/completions', chat({ stop: ['x'.repeat(1000)] }))).status).toBe(200);
  });
  it('refuses chat_template_kwargs nested deeper than 64 levels (it was forwarded, or a 500 when deeper still)', async () => {
    const nest = (depth: number): unknown => (depth === 0 ? 1 : { a: nest(depth - 1) });
    const r = await bad({ chat_template_kwargs: nest(65) }, 'invalid_value', 'chat_template_kwargs');
    expect(r.body.error.message).toBe("'chat_template_kwargs' nests deeper than 64 levels of objects and arrays.");
    expect((await post('/chat/completions', chat({ chat_template_kwargs: nest(64) }))).status).toBe(200);
  });
  it('refuses max_tokens of 0', () => bad({ max_tokens: 0 }, 'invalid_value', 'max_tokens'));
  it("refuses max_tokens over the model's max_output_tokens", () => bad({ max_tokens: 257 }, 'invalid_value', 'max_tokens'));
  it('refuses a non-integer max_tokens', () => bad({ max_tokens: 1.5 }, 'invalid_type', 'max_tokens'));
  it('refuses a role outside system/user/assistant/tool', () =>
    bad({ messages: [{ role: 'function', content: 'x' }] }, 'invalid_value', 'messages[0].role'));
  it("reads OpenAI's developer role as a system message", async () => {
    s.upstream.reset();
    const r = await post(
      '/chat/completions',
      chat({
        messages: [
          { role: 'developer', content: 'Be brief.' },
          { role: 'user', content: 'hi' },
        ],
      }),
    );
    expect(r.status).toBe(200);
    const sent = s.upstream.requests.find((q) => q.path.endsWith('/chat/completions'))!.body as { messages: { role: string }[] };
    expect(sent.messages.map((m) => m.role)).toEqual(['system', 'user']);
  });
  for (const [type, extra] of [
    ['image_url', { image_url: { url: 'https://example.com/a.png' } }],
    ['input_audio', { input_audio: { data: 'AAAA', format: 'wav' } }],
    ['file', { file: { file_id: 'f' } }],
  ] as const) {
    it(`refuses a content part of type ${type}, naming the type`, async () => {
      const parts = [
        { type: 'text', text: 'What is this?' },
        { type, ...extra },
      ];
      const r = await bad({ messages: [{ role: 'user', content: parts }] }, 'invalid_value', 'messages[0].content[1].type');
      expect(r.body.error.message).toContain(`type '${type}'`);
    });
  }
  it('accepts content as a list of text parts', async () => {
    const r = await post(
      '/chat/completions',
      chat({
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'a' },
              { type: 'text', text: 'b' },
            ],
          },
        ],
      }),
    );
    expect(r.status).toBe(200);
  });
  it('refuses empty messages', () => bad({ messages: [] }, 'invalid_value', 'messages'));
  it('refuses a missing model', () =>
    expectError(post('/chat/completions', { messages: [] }), 400, 'invalid_request_error', 'missing_required_parameter', 'model'));
  it('refuses a string temperature', () => bad({ temperature: 'hot' }, 'invalid_type', 'temperature'));
  it('refuses n above the configured maximum (4 by default), naming the field', async () => {
    const r = await bad({ n: 5 }, 'invalid_value', 'n');
    expect(r.body.error.message).toContain('from 1 to 4');
  });
  it('refuses tools on a model without function calling, naming the field', async () => {
    const r = await bad({ tools: [{ type: 'function', function: { name: 'f', parameters: {} } }] }, 'unsupported_parameter', 'tools');
    expect(r.body.error.message).toContain('function calling');
  });
  it('refuses messages longer than the context window, without a figure its count could not know', async () => {
    const r = await bad({ messages: [{ role: 'user', content: 'word '.repeat(20000) }] }, 'input_too_long', 'messages');
    expect(r.body.error.message).toMatch(/^The messages take at least \d+ tokens; the model's context window is \d+ tokens/);
  });
  it('ignores fields the specification does not name', async () => {
    const r = await post(
      '/chat/completions',
      // Each of these asks for nothing this server does not do: function_call "none", top_logprobs 0.
      chat({
        logit_bias: {},
        modalities: ['text'],
        metadata: { a: 1 },
        store: false,
        service_tier: 'auto',
        function_call: 'none',
        top_logprobs: 0,
      }),
    );
    expect(r.status).toBe(200);
  });
  it('refuses the OpenAI fields it does not serve and that would change the answer, naming each', async () => {
    for (const [param, value] of [
      ['logit_bias', { '50256': -100 }],
      ['modalities', ['text', 'audio']],
      ['audio', { voice: 'alloy', format: 'wav' }],
      ['web_search_options', {}],
    ] as const) {
      const before = s.upstream.requests.length;
      const r = await bad({ [param]: value }, 'unsupported_parameter', param);
      expect(r.body.error.message).toContain(`'${param}' is not supported`);
      expect(s.upstream.requests.length).toBe(before);
    }
  });
  it('takes seed, response_format text and n = 1, and forwards the seed (none of them is dropped silently)', async () => {
    const r = await post('/chat/completions', chat({ seed: 7, response_format: { type: 'text' }, n: 1 }));
    expect(r.status).toBe(200);
    const sent = s.upstream.requests.at(-1)!.body as Record<string, unknown>;
    expect(sent.seed).toBe(7);
  });
  it("forwards reasoning_effort to a forwarded model's upstream (reasoning models: vLLM, Ollama), and refuses a value OpenAI does not take", async () => {
    const r = await post('/chat/completions', chat({ reasoning_effort: 'low' }));
    expect(r.status).toBe(200);
    expect((s.upstream.requests.at(-1)!.body as Record<string, unknown>).reasoning_effort).toBe('low');
    const before = s.upstream.requests.length;
    const wrong = await bad({ reasoning_effort: 'maximum' }, 'invalid_value', 'reasoning_effort');
    expect(wrong.body.error.message).toBe("'reasoning_effort' must be one of none, minimal, low, medium, high, xhigh; got 'maximum'.");
    expect(s.upstream.requests.length).toBe(before);
    // GraphQL's chat takes it too, through the same rules.
    const g = await s.graphql(
      'mutation($i: ChatCompletionInput!) { createChatCompletion(input: $i) { id } }',
      { i: { model: 'chat-test', messages: [{ role: 'user', content: 'hi' }], reasoningEffort: 'high' } },
      key,
    );
    expect(g.body.errors).toBeUndefined();
    expect((s.upstream.requests.at(-1)!.body as Record<string, unknown>).reasoning_effort).toBe('high');
  });
  it("forwards top_k, min_p, repetition_penalty and chat_template_kwargs to a forwarded model's upstream, as vLLM and llama.cpp's server name them", async () => {
    const extras = { top_k: 40, min_p: 0.05, repetition_penalty: 1.1, chat_template_kwargs: { enable_thinking: false } };
    const r = await post('/chat/completions', chat(extras));
    expect(r.status).toBe(200);
    expect(s.upstream.requests.at(-1)!.body).toMatchObject(extras);
    // Values that ask for nothing are not sent on.
    const off = await post('/chat/completions', chat({ top_k: -1, min_p: 0, repetition_penalty: 1, chat_template_kwargs: {} }));
    expect(off.status).toBe(200);
    const sent = s.upstream.requests.at(-1)!.body as Record<string, unknown>;
    for (const k of Object.keys(extras)) expect(sent).not.toHaveProperty(k);
    // GraphQL takes them under its own names, through the same rules.
    const g = await s.graphql(
      'mutation($i: ChatCompletionInput!) { createChatCompletion(input: $i) { id } }',
      {
        i: {
          model: 'chat-test',
          messages: [{ role: 'user', content: 'hi' }],
          topK: 5,
          minP: 0.1,
          repetitionPenalty: 1.3,
          chatTemplateKwargs: { thinking: true },
        },
      },
      key,
    );
    expect(g.body.errors).toBeUndefined();
    expect(s.upstream.requests.at(-1)!.body).toMatchObject({
      top_k: 5,
      min_p: 0.1,
      repetition_penalty: 1.3,
      chat_template_kwargs: { thinking: true },
    });
  });
  it('refuses top_k, min_p, repetition_penalty and chat_template_kwargs out of range, naming each, before the upstream', async () => {
    const before = s.upstream.requests.length;
    const cases: [object, string, string][] = [
      [{ top_k: -2 }, 'top_k', "'top_k' must be a whole number of tokens (0 or -1: no limit); got -2."],
      [{ min_p: 1.5 }, 'min_p', "'min_p' must be a number from 0 to 1; got 1.5."],
      [
        { repetition_penalty: 0 },
        'repetition_penalty',
        "'repetition_penalty' must be a number above 0 and at most 2 (1: no penalty); got 0.",
      ],
      [
        { repetition_penalty: 3 },
        'repetition_penalty',
        "'repetition_penalty' must be a number above 0 and at most 2 (1: no penalty); got 3.",
      ],
    ];
    for (const [extra, param, message] of cases as [Record<string, unknown>, string, string][]) {
      const r = await bad(extra, 'invalid_value', param);
      expect(r.body.error.message).toBe(message);
    }
    await bad({ top_k: 2.5 }, 'invalid_type', 'top_k');
    const list = await post('/chat/completions', chat({ chat_template_kwargs: ['enable_thinking'] }));
    expect(list.status).toBe(400);
    expect(list.body.error.param).toBe('chat_template_kwargs');
    expect(s.upstream.requests.length).toBe(before);
  });
  it('accepts the boundaries of every range', async () => {
    const r = await post(
      '/chat/completions',
      chat({ temperature: 2, top_p: 0, presence_penalty: -2, frequency_penalty: 2, max_tokens: 256, stop: ['a', 'b', 'c', 'd'] }),
    );
    expect(r.status).toBe(200);
  });
  it('refuses a stream on a bad request with a JSON error, not an event stream', async () => {
    const r = await post('/chat/completions', chat({ stream: true, temperature: 9 }));
    expect(r.status).toBe(400);
    expect(r.headers.get('content-type')).toContain('application/json');
  });
});

describe('embeddings, rerank and moderation rules', () => {
  it('refuses 101 embedding inputs, saying how to batch them', async () => {
    const r = await expectError(
      post('/embeddings', { model: 'embed-test', input: Array.from({ length: 101 }, (_, i) => `t${i}`) }),
      400,
      'invalid_request_error',
      'too_many_inputs',
    );
    expect(r.body.error.message).toMatch(
      /at most 100 strings; got 101\. Send them in requests of at most 100 \(LangChain.*batchSize: 100; the AI SDK's embedMany, which sends up to 2,048: call it on slices of 100\)/,
    );
  });
  it("refuses an embedding input over the model's token limit", () =>
    expectError(
      post('/embeddings', { model: 'embed-test', input: ['ok', 'token '.repeat(600)] }),
      400,
      'invalid_request_error',
      'input_too_long',
    ));
  it('refuses token ids as embedding input, saying to send the text', async () => {
    // OpenAI takes lists of token ids too (Python LangChain's OpenAIEmbeddings sends them by default);
    // ids mean nothing to another model's tokenizer.
    for (const input of [
      [1, 2, 3],
      [[1, 2], [3]],
    ]) {
      const r = await expectError(
        post('/embeddings', { model: 'embed-test', input }),
        400,
        'invalid_request_error',
        'invalid_type',
        'input',
      );
      expect(r.body.error.message).toContain('token ids');
      expect(r.body.error.message).toContain('send the text');
    }
  });
  it('refuses an embedding request for a chat model, in plain words', async () => {
    const r = await post('/embeddings', { model: 'chat-test', input: 'x' });
    await expectError(Promise.resolve(r), 400, 'invalid_request_error', 'invalid_model');
    expect(r.body.error.message).toBe("The model 'chat-test' is a chat model and cannot be used for embeddings.");
    const e = await post('/rerank', { model: 'embed-test', query: 'q', documents: ['d'] });
    expect(e.body.error.message).toMatch(/^The model 'embed-test' is an embedding model and cannot be used for /);
  });
  it('names a missing input as missing, as it does a missing model', async () => {
    for (const path of ['/embeddings', '/moderate', '/moderations'])
      await expectError(
        post(path, { model: path === '/embeddings' ? 'embed-test' : 'guard-test' }),
        400,
        'invalid_request_error',
        'missing_required_parameter',
        'input',
      );
  });
  it('refuses an unknown encoding_format', () =>
    expectError(
      post('/embeddings', { model: 'embed-test', input: 'x', encoding_format: 'int8' }),
      400,
      'invalid_request_error',
      'invalid_value',
    ));
  it('refuses 101 rerank documents', () =>
    expectError(
      post('/rerank', { model: 'rerank-test', query: 'q', documents: Array.from({ length: 101 }, () => 'd') }),
      400,
      'invalid_request_error',
      'too_many_documents',
    ));
  it('refuses an empty rerank query', () =>
    expectError(post('/rerank', { model: 'rerank-test', query: '', documents: ['d'] }), 400, 'invalid_request_error', 'empty_query'));
  it('refuses a blank rerank query', () =>
    expectError(post('/rerank', { model: 'rerank-test', query: '   ', documents: ['d'] }), 400, 'invalid_request_error', 'empty_query'));
  it("refuses a rerank document over the model's token limit", () =>
    expectError(
      post('/rerank', { model: 'rerank-test', query: 'q', documents: ['word '.repeat(600)] }),
      400,
      'invalid_request_error',
      'input_too_long',
    ));
  it('refuses a moderation request for a reranking model', () =>
    expectError(post('/moderate', { model: 'rerank-test', input: 'x' }), 400, 'invalid_request_error', 'invalid_model'));

  it("takes OpenAI's multimodal moderation input as one text, and refuses an image part by its type", async () => {
    const parts = await post('/moderations', {
      model: 'guard-test',
      input: [
        { type: 'text', text: 'first' },
        { type: 'text', text: 'second' },
      ],
    });
    expect(parts.status).toBe(200);
    expect(parts.body.results).toHaveLength(1);
    expect(s.upstream.requests.at(-1)!.body).toMatchObject({ input: 'first\nsecond' });
    await expectError(
      post('/moderations', {
        model: 'guard-test',
        input: [
          { type: 'text', text: 'a' },
          { type: 'image_url', image_url: { url: 'https://x/y.png' } },
        ],
      }),
      400,
      'invalid_request_error',
      'invalid_value',
      'input[1].type',
    );
  });

  it('reranks sorted by relevance, honouring top_n and return_documents', async () => {
    const r = await post('/rerank', {
      model: 'rerank-test',
      query: 'red apple',
      documents: ['blue sky', { text: 'red apple pie' }, 'apple'],
      top_n: 2,
      return_documents: false,
    });
    expect(r.status).toBe(200);
    expect(r.body.results).toHaveLength(2);
    expect(r.body.results[0].index).toBe(1);
    expect(r.body.results[0].relevance_score).toBeGreaterThanOrEqual(r.body.results[1].relevance_score);
    expect(r.body.results[0]).not.toHaveProperty('document');
    expect(r.body.usage.prompt_tokens).toBe(r.body.usage.total_tokens);
    const withDocs = await post('/rerank', { model: 'rerank-test', query: 'red apple', documents: ['blue sky', 'red apple pie'] });
    expect(withDocs.body.results[0].document).toEqual({ text: 'red apple pie' });
    for (const x of withDocs.body.results)
      expect(x.relevance_score).toBeGreaterThanOrEqual(0), expect(x.relevance_score).toBeLessThanOrEqual(1);
  });
});

describe('malformed requests', () => {
  it('answers broken JSON with 400 invalid_json', () =>
    expectError(post('/chat/completions', '{"model":', key, true), 400, 'invalid_request_error', 'invalid_json'));
  it('answers a JSON array body with 400', () =>
    expectError(post('/chat/completions', '[1,2]', key, true), 400, 'invalid_request_error', 'invalid_json'));
  it('answers a body over the limit with 413', async () => {
    const big = JSON.stringify(chat({ messages: [{ role: 'user', content: 'x'.repeat(12 * 1024 * 1024) }] }));
    const r = await post('/chat/completions', big, key, true);
    expect(r.status).toBe(413);
    expect(r.body.error.code).toBe('request_too_large');
  });
  it('answers an unknown path with a 404 error body that lists the endpoints there are', async () => {
    const res = await fetch(`${s.v1}/nothing-here`);
    expect(res.status).toBe(404);
    const body = await res.json();
    expect(body.error.type).toBe('invalid_request_error');
    expect(body.error.message).toContain('there is no endpoint GET /v1/nothing-here');
    for (const endpoint of ['POST /v1/chat/completions', 'POST /v1/embeddings', 'GET /v1/models', 'POST /v1/wallet/top-up'])
      expect(body.error.message).toContain(endpoint);
    expect(violations('ErrorResponse', body)).toEqual([]);
  });
  it('answers /v1/completions and /v1/responses with a 404 that points to chat completions', async () => {
    for (const path of ['/completions', '/responses']) {
      const r = await expectError(post(path, { model: 'chat-test', prompt: 'hi', input: 'hi' }), 404, 'invalid_request_error', 'not_found');
      expect(r.body.error.message).toContain('is not served');
      expect(r.body.error.message).toContain('POST /v1/chat/completions');
    }
  });
});

describe('deprecated models', () => {
  it('carry Deprecation and Sunset headers', async () => {
    const r = await post('/chat/completions', chat({ model: 'chat-old' }));
    expect(r.status).toBe(200);
    expect(r.headers.get('deprecation')).toBe('true');
    expect(new Date(r.headers.get('sunset')!).toISOString()).toBe('2027-03-01T00:00:00.000Z');
    const m = await fetch(`${s.v1}/models/chat-old`);
    expect(m.headers.get('sunset')).toBe(r.headers.get('sunset'));
    const active = await fetch(`${s.v1}/models/chat-test`);
    expect(active.headers.get('deprecation')).toBeNull();
  });
});

describe('the model listing cache', () => {
  it('sends Cache-Control and an ETag, and 304 for a matching If-None-Match', async () => {
    const first = await fetch(`${s.v1}/models`);
    expect(first.headers.get('cache-control')).toBe('public, max-age=300');
    const etag = first.headers.get('etag')!;
    expect(etag).toMatch(/^".+"$/);
    const again = await fetch(`${s.v1}/models`, { headers: { 'if-none-match': etag } });
    expect(again.status).toBe(304);
    const other = await fetch(`${s.v1}/models`, { headers: { 'if-none-match': '"other"' } });
    expect(other.status).toBe(200);
  });
});

describe('request ids', () => {
  it("echoes the client's x-request-id and makes one otherwise", async () => {
    const a = await fetch(`${s.v1}/models`, { headers: { 'x-request-id': 'abc-123' } });
    expect(a.headers.get('x-request-id')).toBe('abc-123');
    const b = await fetch(`${s.v1}/models`);
    expect(b.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe('route matching (compat/router.ts)', () => {
  it('matches a path case-insensitively and with a trailing slash, serves HEAD as GET, and labels the metrics by the route', async () => {
    const upper = await post('/Chat/Completions/', chat({}));
    expect(upper.status).toBe(200);
    expect(upper.body.object).toBe('chat.completion');
    const head = await fetch(`${s.v1}/models`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(await head.text()).toBe('');
    const metrics = await (await fetch(`${s.url}/metrics`)).text();
    expect(metrics).toMatch(/route="\/v1\/chat\/completions"/);
    // The OpenAPI document declares the canonical forms only; these variants are matched as
    // express's router always matched them, and are not contract failures.
    for (const variant of ['POST /v1/Chat/Completions/ → 200', 'HEAD /v1/models → 200']) {
      const i = contractFailures.findIndex((f) => f.startsWith(variant));
      expect(i).toBeGreaterThanOrEqual(0);
      contractFailures.splice(i, 1);
    }
  });

  it('reads a model id with slashes and percent-encoding, and refuses broken percent-encoding with 400', async () => {
    const ids = ((await (await fetch(`${s.v1}/models`)).json()) as { data: { id: string }[] }).data.map((m) => m.id);
    const one = await fetch(`${s.v1}/models/${encodeURIComponent(ids[0]!)}`);
    expect(one.status).toBe(200);
    expect(((await one.json()) as { id: string }).id).toBe(ids[0]);
    const missing = await fetch(`${s.v1}/models/some-org/no%20such-model`);
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { error: { message: string } }).error.message).toContain("'some-org/no such-model'");
    await expectError(
      fetch(`${s.v1}/models/%E0%A4%A`).then(async (r) => ({ status: r.status, body: await r.json() })),
      400,
      'invalid_request_error',
      'invalid_value',
    );
  });

  it('serves the /v1 mount from its own entry as express mounted it: any case, the bare mount, a query, a request id', async () => {
    const upper = await fetch(`${s.url}/V1/models?limit=1`);
    expect(upper.status).toBe(200);
    expect(((await upper.json()) as { object: string }).object).toBe('list');
    for (const bare of ['/v1', '/v1?x=1', '/v1/']) {
      const r = await fetch(`${s.url}${bare}`);
      expect(r.status).toBe(404);
      expect(((await r.json()) as { error: { message: string } }).error.message).toContain('there is no endpoint GET /v1/');
    }
    // Not the mount: a path that merely starts with "/v1" is the server's, not the door's.
    const other = await fetch(`${s.url}/v1x/models`);
    expect(other.status).toBe(404);
    expect(((await other.json()) as { error: { message: string } }).error.message).toBe('No route for GET /v1x/models.');
    const given = await fetch(`${s.url}/v1/models`, { headers: { 'x-request-id': 'trace-42' } });
    expect(given.headers.get('x-request-id')).toBe('trace-42');
    const metrics = await (await fetch(`${s.url}/metrics`)).text();
    expect(metrics).toMatch(/door="v1",route="\/v1\/models",status="200"/);
    for (const variant of ['GET /v1/models?limit=1', 'GET /V1/models']) {
      const i = contractFailures.findIndex((f) => f.startsWith(variant));
      if (i >= 0) contractFailures.splice(i, 1);
    }
  });

  it('answers a known path with the wrong method, and an unknown path, with 404 naming the endpoints', async () => {
    const wrong = await fetch(`${s.v1}/chat/completions`, { headers: { authorization: `Bearer ${key}` } });
    expect(wrong.status).toBe(404);
    expect(((await wrong.json()) as { error: { message: string } }).error.message).toContain('GET /v1/chat/completions');
    await expectError(post('/nope', {}), 404, 'invalid_request_error', 'not_found');
  });
});

describe('input the GraphQL variables refuse', () => {
  // compat runs its operations compiled (graphql-jit); an input that fails coercion gets the
  // message graphql-js gives, the same as over /graphql: the scalar's reason, the input's path.
  it('says why a top-up amount is refused: more than 9 decimal places', async () => {
    // /v1 reads the amount exactly and refuses it first (invalid_amount, below), so this is run on
    // compat's operation runner directly: the scalar's reason, in graphql-js's words.
    const refused = await run(documents.topUp, { amount: '10.0000000001', idempotencyKey: null }, {} as GraphQLContext).catch(
      (e: unknown) => e,
    );
    expect(refused).toBeInstanceOf(OperationError);
    expect((refused as OperationError).message).toContain('more than 9 decimal places');
  });

  it('reads a top-up amount digit for digit: what JSON.parse would round is refused, never paid as another amount', async () => {
    for (const amount of ['49.99999999999999999', '10.000000000000001', '10.0000000001', '10.001']) {
      const r = await post('/wallet/top-up', `{"amount": ${amount}}`, key, true);
      expect([r.status, r.body.error.code], amount).toEqual([400, 'invalid_amount']);
      expect(r.body.error.message).toContain(amount);
    }
    // Exponents, and one past a double's range (JSON.parse makes it Infinity): an amount written wrong.
    for (const amount of ['1e2', '1e309', '-1e309']) {
      const exp = await post('/wallet/top-up', `{"amount": ${amount}}`, key, true);
      expect([exp.status, exp.body.error.code], amount).toEqual([400, 'invalid_amount']);
      expect(exp.body.error.message).toContain(amount);
    }
    const missing = await post('/wallet/top-up', '{"currency": "usd"}', key, true);
    expect([missing.status, missing.body.error.code]).toEqual([400, 'missing_required_parameter']);
    const text = await post('/wallet/top-up', '{"amount": "25"}', key, true);
    expect([text.status, text.body.error.code]).toEqual([400, 'invalid_type']);
    const twice = await post('/wallet/top-up', '{"amount": 20, "amount": 30}', key, true);
    expect([twice.status, twice.body.error.code]).toEqual([400, 'invalid_json']);
    // Bodies body-parser reads (no declared length, a byte-order mark, another charset) are read exactly too.
    const send = (body: BodyInit, type: string) =>
      fetch(`${s.v1}/wallet/top-up`, {
        method: 'POST',
        headers: { 'content-type': type, authorization: `Bearer ${key}` },
        body,
        duplex: 'half',
      } as RequestInit);
    const chunked = new ReadableStream({
      start(c) {
        c.enqueue(new TextEncoder().encode('\uFEFF{"amount": 25.5'));
        c.enqueue(new TextEncoder().encode('0}'));
        c.close();
      },
    });
    const bom = await send(chunked, 'application/json');
    expect(bom.status).toBe(200);
    expect((await bom.json()).amount).toBe(25.5);
    const utf16 = await send(Buffer.from('{"amount": 30.25}', 'utf16le'), 'application/json; charset=utf-16le');
    expect(utf16.status).toBe(200);
    expect((await utf16.json()).amount).toBe(30.25);
  });

  it('names the path of a field an input may not have, as the GraphQL door does', async () => {
    // /v1 maps every nested input field by field (a tool call's extra keys are left out), so this
    // is run on compat's operation runner directly: graphql-jit refuses the variables, and the
    // message is graphql-js's, with the input's path. Nothing runs past coercion: no context needed.
    const input = {
      model: 'chat-test',
      messages: [
        { role: 'user', content: 'hi' },
        {
          role: 'assistant',
          content: null,
          toolCalls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' }, extra: 1 }],
        },
      ],
    } as unknown as ChatCompletionInput;
    const refused = await run(documents.createChatCompletion, { input }, {} as GraphQLContext).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(OperationError);
    expect((refused as OperationError).message).toContain('at "input.messages[1].toolCalls[0]"');
    expect((refused as OperationError).message).toContain('Field "extra" is not defined by type "ToolCallInput"');
  });
});
