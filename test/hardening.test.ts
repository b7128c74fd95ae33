// Hostile and careless clients: work bounded by the model rather than by the input, one body
// limit on every door, keys that end their open operations when revoked or expired, client
// mistakes answered 4xx (never 500, never logged with their values), WebSocket limits that refuse
// one operation rather than the socket, and safe exposure (loopback by default, CORS allow-list).
import { connect } from 'node:net';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.js';
import { startServer } from '../src/server.js';
import { MAX_CHARS_PER_TOKEN } from '../src/domain/inference/bounded-count.js';
import type { Engine } from '../src/domain/inference/engine.js';
import { ADMIN_TOKEN, catalogYaml, startTestServer, type TestServer } from './support/harness.js';
import { until, waitUntil } from './support/wait.js';
import { operation, wsClient as wsClientOf } from './support/ws.js';
import { MAX_OPERATIONS_PER_SOCKET } from '../src/server.js';
import { getKnex } from '../src/db/orm.js';

const CONTEXT_WINDOW = 4096; // chat-test's, in the harness catalog

/** Random words, as the probe sent them: dense in tokens (about 0.6 a character). */
const randomWords = (chars: number) => {
  const words: string[] = [];
  for (let n = 0; n < chars; n += 8) words.push(Math.random().toString(36).slice(2, 9).padEnd(7, 'x'));
  return words.join(' ');
};

/** Words of 100 random letters: few words, many tokens (about one per two letters). */
const longWords = (chars: number) => {
  const words: string[] = [];
  for (let n = 0; n < chars; n += 101)
    words.push(Array.from({ length: 100 }, () => String.fromCharCode(97 + Math.floor(Math.random() * 26))).join(''));
  return words.join(' ');
};

/** Counts what the engine of `model` is asked to tokenize. */
function spyOnTokenizer(s: TestServer, model: string) {
  const engine = s.services.engines.get(model) as Engine;
  const counted = { calls: 0, chars: 0, tokens: 0 };
  const countTokens = engine.countTokens.bind(engine);
  const countChatTokens = engine.countChatTokens.bind(engine);
  engine.countTokens = async (text: string) => {
    const n = await countTokens(text);
    counted.calls++;
    counted.chars += text.length;
    counted.tokens += n;
    return n;
  };
  engine.countChatTokens = async (messages) => {
    const n = await countChatTokens(messages);
    counted.calls++;
    for (const m of messages) counted.chars += m.content.length;
    counted.tokens += n;
    return n;
  };
  return {
    counted,
    reset: () => Object.assign(counted, { calls: 0, chars: 0, tokens: 0 }),
    restore: () => Object.assign(engine, { countTokens, countChatTokens }),
  };
}

const logLines: Record<string, unknown>[] = [];
const logStream = new Writable({
  write(chunk, _enc, done) {
    for (const line of String(chunk).split('\n')) if (line) logLines.push(JSON.parse(line));
    done();
  },
});

let s: TestServer;

beforeAll(async () => {
  s = await startTestServer({
    logger: pino({ level: 'info', base: { service: 'tollgate' } }, logStream),
    // The bound on one socket's operations is tested with standing subscriptions of one account.
    yaml: (u) => catalogYaml(u, 'graphql: { max_subscriptions_per_account: 200 }'),
  });
});
afterAll(() => s.close());

const chat = (key: string, content: string, extra: Record<string, unknown> = {}) =>
  fetch(`${s.v1}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ model: 'chat-test', messages: [{ role: 'user', content }], ...extra }),
  });

const wsClient = (key: string | null) => wsClientOf(s.url, key);

describe('work bounded by the model, not by the input', () => {
  it('refuses an input that cannot fit after tokenizing no more than the context window, and counts the refusal against RPM', async () => {
    const { apiKey } = await s.account('developer');
    const spy = spyOnTokenizer(s, 'chat-test');
    try {
      // Under the length bound, and fewer words than the window: counted, until the window is passed.
      const text = longWords(300_000);
      expect(text.length).toBeLessThan(CONTEXT_WINDOW * MAX_CHARS_PER_TOKEN);
      expect(text.split(' ').length).toBeLessThan(CONTEXT_WINDOW);
      const first = await chat(apiKey, 'hello');
      const before = Number(first.headers.get('x-ratelimit-remaining-rpm'));
      spy.reset();
      const res = await chat(apiKey, text);
      expect(res.status).toBe(400);
      expect((await res.json()).error).toMatchObject({ code: 'input_too_long', type: 'invalid_request_error', param: 'messages' });
      // Counting stopped once the window was passed: at most the window and one piece more.
      expect(spy.counted.tokens).toBeGreaterThan(CONTEXT_WINDOW - 1);
      expect(spy.counted.tokens).toBeLessThanOrEqual(CONTEXT_WINDOW + 1024);
      expect(spy.counted.chars).toBeLessThan(text.length / 10);
      // The refusal counted as a request.
      expect(Number(res.headers.get('x-ratelimit-remaining-rpm'))).toBe(before - 1);
    } finally {
      spy.restore();
    }
  });

  it('refuses more words than the window holds without tokenizing any of their text', async () => {
    const { apiKey } = await s.account('developer');
    const spy = spyOnTokenizer(s, 'chat-test');
    try {
      const res = await chat(apiKey, randomWords(300_000));
      expect(res.status).toBe(400);
      expect((await res.json()).error.code).toBe('input_too_long');
      expect(spy.counted.chars).toBe(0);
    } finally {
      spy.restore();
    }
  });

  it('bounds the same work through the GraphQL mutation', async () => {
    const { apiKey } = await s.account('developer');
    const spy = spyOnTokenizer(s, 'chat-test');
    try {
      const text = longWords(300_000);
      const res = await s.graphql(
        'mutation($i: ChatCompletionInput!) { createChatCompletion(input: $i) { id } }',
        { i: { model: 'chat-test', messages: [{ role: 'user', content: text }] } },
        apiKey,
      );
      expect(res.status).toBe(400);
      expect(res.body.errors[0].extensions).toMatchObject({ code: 'input_too_long', status: 400 });
      expect(spy.counted.tokens).toBeLessThanOrEqual(CONTEXT_WINDOW + 1024);
      expect(spy.counted.chars).toBeLessThan(text.length / 10);
    } finally {
      spy.restore();
    }
  });

  it('refuses an input whose length alone proves it cannot fit without tokenizing any of it', async () => {
    const { apiKey } = await s.account('developer');
    const spy = spyOnTokenizer(s, 'chat-test');
    try {
      const res = await chat(apiKey, 'a'.repeat(CONTEXT_WINDOW * MAX_CHARS_PER_TOKEN + 1));
      expect(res.status).toBe(400);
      expect((await res.json()).error.code).toBe('input_too_long');
      expect(spy.counted.chars).toBe(0);
    } finally {
      spy.restore();
    }
  });

  it('counts one unbroken 200 KB word in pieces instead of one call', async () => {
    const { apiKey } = await s.account('developer');
    const spy = spyOnTokenizer(s, 'chat-test');
    try {
      const res = await chat(apiKey, 'ab'.repeat(100_000));
      expect(res.status).toBe(400);
      expect(spy.counted.calls).toBeGreaterThan(1);
      expect(spy.counted.chars).toBeLessThan(200_000 / 4);
    } finally {
      spy.restore();
    }
  });

  it('refuses a key past its RPM with 429 before tokenizing anything, when its earlier calls were all refused inputs', async () => {
    const { apiKey } = await s.account('free'); // 20 RPM, and no balance
    const spy = spyOnTokenizer(s, 'chat-test');
    try {
      const text = randomWords(100_000);
      const statuses: number[] = [];
      for (let i = 0; i < 21; i++) statuses.push((await chat(apiKey, text)).status);
      expect(statuses.filter((st) => st === 400)).toHaveLength(21);
      spy.reset();
      const res = await chat(apiKey, text);
      expect(res.status).toBe(429);
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
      expect((await res.json()).error).toMatchObject({ code: 'rate_limit_exceeded', type: 'rate_limit_error' });
      expect(spy.counted.calls).toBe(0);
      // An ordinary call of that key is refused the same way.
      expect((await chat(apiKey, 'hello')).status).toBe(429);
    } finally {
      spy.restore();
    }
  });

  it('refuses oversize embedding, rerank and moderation inputs after bounded counting', async () => {
    const { apiKey } = await s.account('developer');
    const post = (path: string, body: unknown) =>
      fetch(`${s.v1}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` },
        body: JSON.stringify(body),
      });
    const big = randomWords(200_000);
    const r1 = await post('/embeddings', { model: 'embed-test', input: [big] });
    expect(r1.status).toBe(400);
    expect((await r1.json()).error).toMatchObject({ code: 'input_too_long', param: 'input' });
    const r2 = await post('/rerank', { model: 'rerank-test', query: 'q', documents: ['short', big] });
    expect(r2.status).toBe(400);
    expect((await r2.json()).error).toMatchObject({ code: 'input_too_long', param: 'documents' });
    const r3 = await post('/moderations', { model: 'guard-test', input: big });
    expect(r3.status).toBe(400);
    expect((await r3.json()).error).toMatchObject({ code: 'input_too_long', param: 'input' });
  });
});

describe('one body limit on every door', () => {
  const overLimit = () => JSON.stringify({ query: '{ models { id } }', variables: { pad: 'x'.repeat(1_100_000) } });

  it('answers a /graphql body over server.body_limit with 413 request_too_large, before authentication', async () => {
    const res = await fetch(`${s.url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: overLimit() });
    expect(res.status).toBe(413);
    const body = await res.json();
    expect(body.errors[0].extensions).toEqual({ code: 'request_too_large', type: 'invalid_request_error', status: 413, param: null });
  });

  it('answers a /v1 body over the limit with 413 in the /v1 error body', async () => {
    const res = await fetch(`${s.v1}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: overLimit(),
    });
    expect(res.status).toBe(413);
    expect((await res.json()).error.code).toBe('request_too_large');
  });

  it('answers headers over node:http limit with 431 in the error body, and a request that is not HTTP with 400', async () => {
    const huge = await fetch(`${s.v1}/models`, { headers: { authorization: `Bearer ${'k'.repeat(70_000)}` } });
    expect(huge.status).toBe(431);
    expect((await huge.json()).error).toMatchObject({ code: 'request_headers_too_large', type: 'invalid_request_error' });
    // A request line that is not HTTP, written on a raw socket.
    const { port } = new URL(s.url);
    const raw = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(port), '127.0.0.1', () => socket.write('NOT HTTP AT ALL\r\n\r\n'));
      let text = '';
      socket.on('data', (d) => (text += d.toString()));
      socket.on('end', () => resolve(text));
      socket.on('error', reject);
    });
    expect(raw).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4)).error).toMatchObject({ code: 'invalid_request' });
    expect((await fetch(`${s.url}/healthz`)).status).toBe(200);
  });

  it('still serves /graphql bodies under the limit', async () => {
    const res = await s.graphql('{ models { id } }');
    expect(res.status).toBe(200);
    expect(res.body.data.models.length).toBeGreaterThan(0);
  });

  it('closes a WebSocket that sends a frame over the limit with 1009, without a key', async () => {
    const ws = new WebSocket(s.url.replace('http', 'ws') + '/graphql', 'graphql-transport-ws');
    await new Promise((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', reject);
    });
    const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
    ws.send('x'.repeat(1_100_000));
    expect(await closed).toBe(1009);
  });
});

describe('revocation and expiry reach open operations', () => {
  const WALLET = 'subscription { walletUpdated { balance } }';

  it('ends an open walletUpdated subscription with invalid_api_key when its key is revoked, and refuses later operations on that socket', async () => {
    const { apiKey, keyId } = await s.account('developer');
    const client = wsClient(apiKey);
    try {
      const open = operation(client, WALLET);
      // The subscription is registered once the server watches the key.
      await waitUntil(() => s.services.keyWatch.size > 0);
      const r = await s.graphql('mutation($id: ID!) { revokeApiKey(id: $id) }', { id: keyId }, ADMIN_TOKEN);
      expect(r.body.data.revokeApiKey).toBe(true);
      const ended = await open;
      const errors = ended.error ?? ended.events.flatMap((e) => e.errors ?? []);
      expect(JSON.stringify(errors)).toContain('invalid_api_key');
      const later = await operation(client, '{ viewer { id } }');
      expect(JSON.stringify(later.error ?? later.events)).toContain('invalid_api_key');
    } finally {
      await client.dispose();
    }
  });

  it('ends an open subscription when its key expires', async () => {
    const { id } = await s.account('developer');
    const created = await s.graphql(
      'mutation($a: ID!, $e: DateTime) { createApiKey(accountId: $a, expiresAt: $e) { apiKey } }',
      { a: id, e: new Date(Date.now() + 1500).toISOString() },
      ADMIN_TOKEN,
    );
    const apiKey = created.body.data.createApiKey.apiKey as string;
    const client = wsClient(apiKey);
    try {
      const ended = await operation(client, WALLET);
      expect(JSON.stringify(ended.error ?? ended.events)).toContain('has expired');
    } finally {
      await client.dispose();
    }
  });

  it('ends a long /v1 chat stream with an invalid_api_key error event when its key is revoked', async () => {
    const { apiKey, keyId } = await s.account('enterprise');
    const res = await chat(apiKey, 'a long answer #tokens=200 #delay=50', { stream: true, max_tokens: 250 });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    let revoked = false;
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
      if (!revoked && text.split('data: ').length > 3) {
        revoked = true;
        await s.services.accounts.revokeKey(keyId);
      }
    }
    expect(revoked).toBe(true);
    expect(text).toContain('"code":"invalid_api_key"');
    expect(text).not.toContain('[DONE]');
    // The server ended it, not the client: billed for what it delivered, as failed mid-stream.
    const knex = getKnex(s.services.orm);
    let event: { outcome: string } | undefined;
    await waitUntil(() => {
      void knex('usage_events')
        .where({ key_id: keyId })
        .first()
        .then((row: { outcome: string } | undefined) => (event = row));
      return event !== undefined;
    });
    expect(event!.outcome).toBe('failed_mid_stream');
  });
});

describe('client mistakes are 4xx', () => {
  it('answers a GraphQL variable of the wrong type with 400 invalid_value naming the variable, and logs no unexpected error', async () => {
    const { apiKey } = await s.account('developer');
    logLines.length = 0;
    const res = await s.graphql(
      'query($f: Int) { viewer { wallet { transactions(first: $f) { nodes { id } } } } }',
      { f: 'x-secret-value' },
      apiKey,
    );
    expect(res.status).toBe(400);
    expect(res.body.errors[0].extensions).toMatchObject({ code: 'invalid_value', type: 'invalid_request_error', status: 400, param: 'f' });
    expect(JSON.stringify(res.body)).not.toContain('stack');
    await waitUntil(() => logLines.some((l) => l.msg === 'request'));
    expect(logLines.filter((l) => l.level === 50)).toEqual([]);
    expect(JSON.stringify(logLines)).not.toContain('x-secret-value');
    const line = logLines.find((l) => l.msg === 'request')!;
    expect(line).toMatchObject({ path: '/graphql', status: 400 });
    expect(typeof line.reqId).toBe('string');
  });

  it('writes one access line per request with door, route, status, model and tokens, and no key', async () => {
    const { apiKey } = await s.account('developer');
    logLines.length = 0;
    const res = await chat(apiKey, 'hello #tokens=3');
    expect(res.status).toBe(200);
    const { usage } = await res.json();
    await waitUntil(() => logLines.some((l) => l.msg === 'request'));
    const line = logLines.find((l) => l.msg === 'request')!;
    expect(line).toMatchObject({
      door: 'v1',
      route: '/v1/chat/completions',
      path: '/v1/chat/completions',
      status: 200,
      model: 'chat-test',
      prompt_tokens: usage.prompt_tokens,
      completion_tokens: usage.completion_tokens,
    });
    expect(typeof line.ms).toBe('number');
    expect(JSON.stringify(logLines)).not.toContain(apiKey);
    expect(JSON.stringify(logLines)).not.toContain('hello #tokens');
  });

  it('answers parse and validation errors with 400 and the same extensions shape', async () => {
    for (const query of ['{ viewer {', '{ nope }', '{ models { id nope } }']) {
      const res = await s.graphql(query);
      expect({ query, status: res.status }).toEqual({ query, status: 400 });
      const ext = res.body.errors[0].extensions;
      expect(ext.type).toBe('invalid_request_error');
      expect(ext.status).toBe(400);
      expect(typeof ext.code).toBe('string');
      expect(ext).toHaveProperty('param');
    }
  });

  it('answers /v1 integers beyond 32 bits with 400 naming the parameter', async () => {
    const { apiKey } = await s.account('developer');
    for (const field of ['max_tokens', 'max_completion_tokens']) {
      const res = await chat(apiKey, 'hi', { [field]: 2 ** 31 });
      expect(res.status).toBe(400);
      expect((await res.json()).error).toMatchObject({ type: 'invalid_request_error', param: field });
    }
    const res = await fetch(`${s.v1}/rerank`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` },
      body: JSON.stringify({ model: 'rerank-test', query: 'q', documents: ['a'], top_n: 2 ** 40 }),
    });
    expect(res.status).toBe(400);
    expect((await res.json()).error.param).toBe('top_n');
  });

  it('logs no error when a client goes away before its answer, plain or streamed: a 499 request line, a disconnect in usage', async () => {
    const { apiKey, keyId } = await s.account('developer');
    logLines.length = 0;
    for (const stream of [false, true]) {
      const gone = new AbortController();
      setTimeout(() => gone.abort(), 300);
      await fetch(`${s.v1}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` },
        body: JSON.stringify({ model: 'chat-test', messages: [{ role: 'user', content: 'slow #delay=3000' }], stream, max_tokens: 5 }),
        signal: gone.signal,
      }).catch(() => undefined);
    }
    const knex = getKnex(s.services.orm);
    await waitUntil(() => logLines.filter((l) => l.msg === 'request' && l.status === 499).length === 2, 10_000);
    // Each call is settled once its engine has stopped, a moment after its client left.
    const outcomes = async () =>
      (await knex('usage_events').where({ key_id: keyId }).select('outcome')).map((r: { outcome: string }) => r.outcome);
    await until(async () => (await outcomes()).length === 2);
    expect(await outcomes()).toEqual(['client_disconnected', 'client_disconnected']);
    // GraphQL over HTTP too.
    const gone = new AbortController();
    setTimeout(() => gone.abort(), 300);
    await fetch(`${s.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` },
      body: JSON.stringify({
        query: 'mutation($i: ChatCompletionInput!) { createChatCompletion(input: $i) { id } }',
        variables: { i: { model: 'chat-test', messages: [{ role: 'user', content: 'slow #delay=3000' }], maxTokens: 5 } },
      }),
      signal: gone.signal,
    }).catch(() => undefined);
    await waitUntil(() => logLines.some((l) => l.msg === 'request' && l.status === 499 && l.path === '/graphql'), 10_000);
    await until(async () => (await outcomes()).length === 3);
    expect(logLines.filter((l) => Number(l.level) >= 50).map((l) => JSON.stringify(l).slice(0, 600))).toEqual([]);
  });

  it("writes a 499's access line once its call is settled, with the model and the tokens it was billed", async () => {
    const { apiKey, keyId } = await s.account('developer');
    logLines.length = 0;
    const gone = new AbortController();
    const res = await fetch(`${s.v1}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` },
      body: JSON.stringify({ model: 'chat-test', messages: [{ role: 'user', content: 'hello #tokens=40 #delay=100' }], stream: true }),
      signal: gone.signal,
    });
    // Some of the answer is delivered, then the client leaves.
    const reader = res.body!.getReader();
    let text = '';
    while ((text.match(/"content":"[^"]/g) ?? []).length < 3) {
      const { value, done } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    gone.abort();
    await waitUntil(() => logLines.some((l) => l.msg === 'request' && l.status === 499), 10_000);
    const line = logLines.find((l) => l.msg === 'request' && l.status === 499)!;
    const knex = getKnex(s.services.orm);
    const [billed] = (await knex('usage_events').where({ key_id: keyId }).select('outcome', 'prompt_tokens', 'completion_tokens')) as {
      outcome: string;
      prompt_tokens: number;
      completion_tokens: number;
    }[];
    expect(billed!.outcome).toBe('client_disconnected');
    expect(billed!.completion_tokens).toBeGreaterThan(0);
    expect([line.model, line.prompt_tokens, line.completion_tokens]).toEqual([
      'chat-test',
      billed!.prompt_tokens,
      billed!.completion_tokens,
    ]);
  });

  it('stops and bills nothing for a WebSocket stream completed at once, even when its id is subscribed again right after', async () => {
    const { apiKey, keyId } = await s.account('developer');
    const socket = new WebSocket(`${s.url.replace('http', 'ws')}/graphql`, 'graphql-transport-ws');
    const messages: { id?: string; type: string; payload?: any }[] = [];
    socket.on('message', (d) => messages.push(JSON.parse(String(d))));
    await new Promise((r) => socket.once('open', r));
    socket.send(JSON.stringify({ type: 'connection_init', payload: { authorization: `Bearer ${apiKey}` } }));
    await waitUntil(() => messages.some((m) => m.type === 'connection_ack'));
    const subscribe = (content: string, maxTokens: number) =>
      JSON.stringify({
        id: 'a',
        type: 'subscribe',
        payload: {
          query: 'subscription($i: ChatCompletionInput!) { chatCompletionStream(input: $i) { choices { delta { content } } } }',
          variables: { i: { model: 'chat-test', messages: [{ role: 'user', content }], maxTokens } },
        },
      });
    try {
      // Back to back: the first is completed before its operation has even started.
      socket.send(subscribe('first #tokens=8 #delay=100', 8));
      socket.send(JSON.stringify({ id: 'a', type: 'complete' }));
      socket.send(subscribe('second #tokens=3', 3));
      const knex = getKnex(s.services.orm);
      const events = async () =>
        (await knex('usage_events').where({ key_id: keyId }).select('outcome', 'completion_tokens')) as {
          outcome: string;
          completion_tokens: number;
        }[];
      await until(async () => (await events()).length >= 1);
      await new Promise((r) => setTimeout(r, 1200)); // the first one's 8 tokens would have come by now
      const billed = await events();
      // The second is billed; the first is billed nothing (never started, or stopped before any output).
      expect(billed.filter((e) => e.outcome === 'completed').map((e) => Number(e.completion_tokens))).toEqual([3]);
      expect(billed.filter((e) => e.outcome !== 'completed').every((e) => Number(e.completion_tokens) === 0)).toBe(true);
      expect(messages.filter((m) => m.id === 'a' && m.type === 'complete')).toHaveLength(1);
    } finally {
      socket.close();
    }
  });

  it('logs an unexpected error once, with the request id and the path with its mount', async () => {
    const { apiKey } = await s.account('developer');
    // /v1 reads one wallet, GraphQL's Account.wallet a batch of them (DataLoader).
    const billing = s.services.billing as unknown as { getWallet: (...a: unknown[]) => unknown; getWallets: (...a: unknown[]) => unknown };
    const { getWallet: wallet, getWallets: wallets } = billing;
    billing.getWallet = billing.getWallets = () => {
      throw new TypeError('injected fault');
    };
    try {
      logLines.length = 0;
      const v1 = await fetch(`${s.v1}/wallet/balance`, { headers: { authorization: `Bearer ${apiKey}` } });
      expect(v1.status).toBe(500);
      const gql = await s.graphql('{ viewer { wallet { balance } } }', {}, apiKey);
      expect(gql.body.errors[0].extensions.code).toBe('internal_error');
      await waitUntil(() => logLines.filter((l) => l.level === 50).length >= 2);
      const errors = logLines.filter((l) => l.level === 50);
      expect(errors.map((l) => l.path).sort()).toEqual(['/graphql', '/v1/wallet/balance']);
      for (const l of errors) expect(typeof l.reqId).toBe('string');
    } finally {
      billing.getWallet = wallet;
      billing.getWallets = wallets;
    }
  });
});

describe('over WebSocket, limits refuse the operation, not the socket', () => {
  it('answers an operation over the alias limit with an error for that operation while another subscription on the socket goes on', async () => {
    const { id, apiKey } = await s.account('developer');
    const client = wsClient(apiKey);
    try {
      let got: () => void;
      const gotEvent = new Promise<void>((resolve) => (got = resolve));
      const wallet = operation(client, 'subscription { walletUpdated { balance } }', {}, () => got());
      await waitUntil(() => s.services.keyWatch.size > 0);
      const aliases = Array.from({ length: 40 }, (_, i) => `a${i}: models { id }`).join(' ');
      const refused = await operation(client, `{ ${aliases} }`);
      expect(JSON.stringify(refused.error ?? refused.events)).toMatch(/alias/i);
      const fine = await operation(client, '{ viewer { id } }');
      expect(fine.events[0].data.viewer.id).toBe(id);
      const credit = await s.graphql(
        'mutation($a: ID!) { creditWallet(input: {accountId: $a, amount: "1", type: bonus, description: "test"}) { id } }',
        { a: id },
        ADMIN_TOKEN,
      );
      expect(credit.body.errors).toBeUndefined();
      await gotEvent;
      await client.dispose();
      const ended = await wallet;
      expect(Number(ended.events[0].data.walletUpdated.balance)).toBe(1);
    } finally {
      await client.dispose();
    }
  });
});

describe('over WebSocket, a bound on open operations', () => {
  it(`refuses the operation past ${MAX_OPERATIONS_PER_SOCKET} open on one socket, and takes more once some end`, async () => {
    const { apiKey } = await s.account('developer');
    const client = wsClient(apiKey);
    const ends: (() => void)[] = [];
    try {
      const before = s.services.keyWatch.size;
      for (let i = 0; i < MAX_OPERATIONS_PER_SOCKET; i++) {
        ends.push(
          client.subscribe(
            { query: 'subscription { walletUpdated { balance } }' },
            { next: () => {}, error: () => {}, complete: () => {} },
          ),
        );
      }
      await waitUntil(() => s.services.keyWatch.size >= before + MAX_OPERATIONS_PER_SOCKET);
      const refused = await operation(client, '{ viewer { id } }');
      expect(refused.error?.[0]?.message).toMatch(/already has 100 operations open/);
      expect(refused.error?.[0]?.extensions).toMatchObject({ code: 'invalid_request', status: 400 });
      // One ends: another is taken.
      ends.pop()!();
      await waitUntil(() => s.services.keyWatch.size < before + MAX_OPERATIONS_PER_SOCKET);
      const taken = await operation(client, '{ viewer { id } }');
      expect(taken.events[0]?.data?.viewer?.id).toBeTruthy();
      // Documents whose operation cannot be picked are refused, and leave nothing open behind them.
      for (let i = 0; i < 3; i++) {
        const unnamed = await operation(client, 'query A { viewer { id } } query B { models { id } }');
        expect(unnamed.error?.[0]?.message).toBe('The document has several operations: name the one to run in operationName.');
      }
      const stillOne = await operation(client, '{ viewer { id } }');
      expect(stillOne.events[0]?.data?.viewer?.id).toBeTruthy();
    } finally {
      for (const end of ends) end();
      await client.dispose();
    }
  });
});

describe('bounds on what one account or client holds open', () => {
  let b: TestServer;
  beforeAll(async () => {
    b = await startTestServer({
      yaml: (u) => `server: { max_websockets_per_client: 3 }\n${catalogYaml(u, 'graphql: { max_subscriptions_per_account: 3 }')}`,
    });
  });
  afterAll(() => b.close());
  const watch = 'subscription { walletUpdated { balance } }';
  const feed = 'subscription { notificationAdded { id } }';

  it('refuses an account its standing subscription past the bound, over WebSocket and SSE together, and takes another once one ends', async () => {
    const { apiKey, id } = await b.account('developer');
    const other = await b.account('developer');
    const client = wsClientOf(b.url, apiKey);
    const ends: (() => void)[] = [];
    const sse = new AbortController();
    try {
      // Two over one WebSocket, one over SSE: the account's three.
      for (const query of [watch, feed]) ends.push(client.subscribe({ query }, { next: () => {}, error: () => {}, complete: () => {} }));
      const streamed = await fetch(`${b.url}/graphql`, {
        method: 'POST',
        headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json', accept: 'text/event-stream' },
        body: JSON.stringify({ query: watch }),
        signal: sse.signal,
      });
      expect(streamed.status).toBe(200);
      await waitUntil(() => b.services.subscriptionSlots.held(id) === 3);
      // A fourth, over WebSocket: refused with its own code, the socket and the others go on.
      const refused = await operation(client, feed);
      const [error] = refused.events[0]?.errors ?? [];
      expect(error?.extensions).toMatchObject({ code: 'too_many_subscriptions', status: 429 });
      expect(error?.message).toMatch(/already has 3 wallet and notification subscriptions open on this server/);
      // Over SSE too.
      const overSse = await fetch(`${b.url}/graphql`, {
        method: 'POST',
        headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json', accept: 'text/event-stream' },
        body: JSON.stringify({ query: feed }),
      });
      expect(await overSse.text()).toContain('too_many_subscriptions');
      // Queries, and another account's subscriptions, are not counted.
      expect((await operation(client, '{ viewer { id } }')).events[0]?.data?.viewer?.id).toBe(id);
      const theirs = wsClientOf(b.url, other.apiKey);
      const theirEnd = theirs.subscribe({ query: watch }, { next: () => {}, error: () => {}, complete: () => {} });
      await waitUntil(() => b.services.subscriptionSlots.held(other.id) === 1);
      theirEnd();
      await theirs.dispose();
      // The SSE request ends (its client goes): its slot comes back, and a new subscription is taken.
      sse.abort();
      await waitUntil(() => b.services.subscriptionSlots.held(id) === 2);
      ends.push(client.subscribe({ query: feed }, { next: () => {}, error: () => {}, complete: () => {} }));
      await waitUntil(() => b.services.subscriptionSlots.held(id) === 3);
    } finally {
      for (const end of ends) end();
      sse.abort();
      await client.dispose();
    }
    await waitUntil(() => b.services.subscriptionSlots.held(id) === 0);
  });

  it('refuses a client its WebSocket past the bound with 429 too_many_connections before the handshake, and takes another once one closes', async () => {
    const url = `${b.url.replace('http', 'ws')}/graphql`;
    const open = (): Promise<WebSocket> =>
      new Promise((resolve, reject) => {
        const ws = new WebSocket(url, 'graphql-transport-ws');
        ws.once('open', () => resolve(ws));
        ws.once('error', reject);
      });
    const refusal = (): Promise<{ status: number; type: string; body: string }> =>
      new Promise((resolve, reject) => {
        const ws = new WebSocket(url, 'graphql-transport-ws');
        ws.once('open', () => reject(new Error('a WebSocket past the bound was opened')));
        ws.once('unexpected-response', (_req, res) => {
          let body = '';
          res.on('data', (d: Buffer) => (body += d));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, type: String(res.headers['content-type']), body }));
        });
      });
    const sockets = [await open(), await open(), await open()];
    try {
      const refused = await refusal();
      expect(refused.status).toBe(429);
      expect(refused.type).toContain('application/json');
      expect(JSON.parse(refused.body).errors[0].extensions).toMatchObject({
        code: 'too_many_connections',
        type: 'rate_limit_error',
        status: 429,
      });
      expect(JSON.parse(refused.body).errors[0].message).toMatch(/already has 3 WebSockets open/);
      // One closes: another is taken.
      await new Promise((resolve) => {
        sockets[0]!.once('close', resolve);
        sockets[0]!.close();
      });
      await until(async () => {
        try {
          sockets[0] = await open();
          return true;
        } catch {
          return false;
        }
      });
    } finally {
      for (const ws of sockets) ws.terminate();
    }
  });
});

describe('safe exposure', () => {
  const baseEnv = (extra: Record<string, string>) => ({ CONFIG: 'config/default.yaml', PORT: '0', ...extra });

  it('binds loopback by default and refuses the sandbox processor on another address unless allowed', () => {
    expect(loadConfig(baseEnv({})).host).toBe('127.0.0.1');
    expect(() => loadConfig(baseEnv({ HOST: '0.0.0.0' }))).toThrow(ConfigError);
    expect(() => loadConfig(baseEnv({ HOST: '0.0.0.0' }))).toThrow(/allow_sandbox/);
    expect(loadConfig(baseEnv({ HOST: '::1' })).host).toBe('::1');
  });

  it('takes a PORT of decimal digits only', () => {
    for (const port of ['1e4', '0x1F90', ' 80', '8080.0', '65536', '-1'])
      expect(() => loadConfig(baseEnv({ PORT: port })), port).toThrow(`PORT: not a port number: ${port}`);
    expect(loadConfig(baseEnv({ PORT: '8081' })).port).toBe(8081);
  });

  it('refuses an ADMIN_TOKEN shorter than 16 characters at start-up, naming it', () => {
    expect(() => loadConfig(baseEnv({ ADMIN_TOKEN: 'change-me' }))).toThrow(/^ADMIN_TOKEN is 9 characters long: use at least 16/);
    expect(loadConfig(baseEnv({ ADMIN_TOKEN: '0123456789abcdef' })).adminToken).toBe('0123456789abcdef');
    expect(loadConfig(baseEnv({})).adminToken).toBeNull();
  });

  it('refuses a PUBLIC_URL that is no address a browser opens (checkout and e-mail links are made from it), naming it', () => {
    for (const bad of ['api.example.com', 'ftp://api.example.com', 'https://user:pw@api.example.com', 'https://api.example.com/?x=1'])
      expect(() => loadConfig(baseEnv({ PUBLIC_URL: bad })), bad).toThrow(
        new RegExp(`^PUBLIC_URL=${bad.replace(/[?.]/g, '\\$&')}: the address clients reach`),
      );
    expect(loadConfig(baseEnv({ PUBLIC_URL: 'https://api.example.com/tollgate/' })).publicUrl).toBe('https://api.example.com/tollgate');
  });

  it('answers a static file refused or missing, or a path that does not decode, with the error body: no stack trace, no server path', async () => {
    const cases: [string, number, string][] = [
      ['/dashboard/assets/..%2f..%2fpackage.json', 404, 'not_found'],
      ['/dashboard/assets/missing.js', 404, 'not_found'],
      ['/checkout/%E0%A4%A', 400, 'invalid_request'],
    ];
    for (const [path, status, code] of cases) {
      const res = await fetch(`${s.url}${path}`);
      const text = await res.text();
      expect([res.status, res.headers.get('content-type')], path).toEqual([status, 'application/json; charset=utf-8']);
      expect(JSON.parse(text).error.code, path).toBe(code);
      expect(text, path).not.toMatch(/node_modules|\bat \w+ \(|<pre>/);
      expect(text, path).not.toContain(process.cwd());
    }
  });

  it('sends no CORS headers to an origin that is not allowed (the default allows none)', async () => {
    const res = await fetch(`${s.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: 'https://evil.example' },
      body: JSON.stringify({ query: '{ models { id } }' }),
    });
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
    expect(res.headers.get('access-control-allow-credentials')).toBeNull();
    const v1 = await fetch(`${s.v1}/models`, { headers: { origin: 'https://evil.example' } });
    expect(v1.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('answers preflights and sends CORS headers for allowed origins on /v1 and /graphql, never credentials for *', async () => {
    const allowed = await startTestServer({ yaml: (u) => `server: { cors_origins: ["https://app.example.com"] }\n${catalogYaml(u)}` });
    const any = await startTestServer({ yaml: (u) => `server: { cors_origins: ["*"] }\n${catalogYaml(u)}` });
    try {
      for (const path of ['/v1/chat/completions', '/graphql']) {
        const pre = await fetch(`${allowed.url}${path}`, {
          method: 'OPTIONS',
          headers: {
            origin: 'https://app.example.com',
            'access-control-request-method': 'POST',
            'access-control-request-headers': 'authorization,content-type',
          },
        });
        expect(pre.status).toBeLessThan(300);
        expect(pre.headers.get('access-control-allow-origin')).toBe('https://app.example.com');
        expect(pre.headers.get('access-control-allow-headers')?.toLowerCase()).toContain('authorization');
        // The headers the official OpenAI SDKs send on every call from a browser page.
        const sdk = 'authorization,content-type,x-stainless-os,x-stainless-lang,x-stainless-retry-count,x-stainless-timeout,openai-project';
        const fromSdk = await fetch(`${allowed.url}${path}`, {
          method: 'OPTIONS',
          headers: { origin: 'https://app.example.com', 'access-control-request-method': 'POST', 'access-control-request-headers': sdk },
        });
        expect(fromSdk.status).toBeLessThan(300);
        const granted = new Set(
          fromSdk.headers
            .get('access-control-allow-headers')
            ?.toLowerCase()
            .split(/\s*,\s*/),
        );
        for (const h of sdk.split(',')) expect(granted.has(h), h).toBe(true);
        // An origin not listed gets no CORS header at all, its preflight included.
        for (const origin of ['https://evil.example', 'null', 'https://app.example.com.evil.example']) {
          const other = await fetch(`${allowed.url}${path}`, {
            method: 'OPTIONS',
            headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization' },
          });
          const cors = [...other.headers.keys()].filter((h) => h.startsWith('access-control-'));
          expect(cors, `${path} ${origin}`).toEqual([]);
          expect(other.headers.get('vary')?.toLowerCase()).toContain('origin');
        }
      }
      const models = await fetch(`${allowed.v1}/models`, { headers: { origin: 'https://app.example.com' } });
      expect(models.headers.get('access-control-allow-origin')).toBe('https://app.example.com');
      expect(models.headers.get('access-control-expose-headers')?.toLowerCase()).toContain('x-ratelimit-remaining-rpm');
      const star = await fetch(`${any.v1}/models`, { headers: { origin: 'https://whoever.example' } });
      expect(star.headers.get('access-control-allow-origin')).toBe('*');
      expect(star.headers.get('access-control-allow-credentials')).toBeNull();
    } finally {
      await allowed.close();
      await any.close();
    }
  });

  it('names the address actually bound', async () => {
    const everywhere = await startServer(s.services, { port: 0, host: '0.0.0.0' });
    try {
      expect(everywhere.url).toMatch(/^http:\/\/0\.0\.0\.0:\d+$/);
    } finally {
      await everywhere.shutdown();
    }
  });
});

describe('/readyz and the database', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  });
  afterAll(() => s.close());

  it('answers 503 database_unavailable while the database does not answer, and ready again once it does', async () => {
    const readyz = async () => {
      const res = await fetch(`${s.url}/readyz`);
      return { status: res.status, body: (await res.json()) as { status: string } };
    };
    expect(await readyz()).toMatchObject({ status: 200, body: { status: 'ready' } });
    const db = s.services.billing.db;
    const rows = db.rows.bind(db);
    db.rows = async () => {
      throw new Error('SQLITE_IOERR: disk I/O error');
    };
    try {
      // Its answer about the database is reused for a second (probes never pile queries up).
      const down = await until(async () => {
        const r = await readyz();
        return r.status === 503 && r;
      });
      expect(down.body.status).toBe('database_unavailable');
      // /healthz says only that the process is up.
      expect((await fetch(`${s.url}/healthz`)).status).toBe(200);
    } finally {
      db.rows = rows;
    }
    expect(await until(async () => (await readyz()).status === 200)).toBe(true);
  });

  it('sends one query at a time however many probes come while the database hangs', async () => {
    const db = s.services.billing.db;
    const rows = db.rows.bind(db);
    let asked = 0;
    let answer!: () => void;
    const hung = new Promise<void>((r) => (answer = r));
    db.rows = (async (...args: Parameters<typeof rows>) => {
      // Only /readyz's query hangs (the server's background work reads the database too).
      if (args[0] === 'select 1 as ok') {
        asked++;
        await hung;
      }
      return rows(...args);
    }) as typeof db.rows;
    try {
      await new Promise((r) => setTimeout(r, 1_100)); // past the last answer's reuse
      const probes = await Promise.all(Array.from({ length: 20 }, () => fetch(`${s.url}/readyz`).then((r) => r.status)));
      expect(probes.every((status) => status === 503)).toBe(true);
      expect(asked).toBe(1);
    } finally {
      answer();
      db.rows = rows;
    }
  });
});
