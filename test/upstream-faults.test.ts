// The seven findings of the upstream fault probe (issue 18), through the running server, streamed
// and not: a fake upstream switched between faulty behaviours, a wallet-paid key, and each test
// ending with the exact balance, the ledger's invariants and no hold left.
//
// Every chat model here costs $1 per million prompt tokens and $2 per million completion tokens
// (1,000 and 2,000 nanos a token), and the developer tier has no allocation, so every token is
// paid from the wallet. The fake counts a prompt as 4 + words; admission counts it with o200k
// (`est`), which is never less here: the bill's prompt is the fake's count unless it lies.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, parseConfigText } from '../src/config.js';
import { formatDecimal, parseDecimal } from '../src/domain/billing/money.js';
import { countChatTokens, countTextTokens, truncateTextTokens } from '../src/domain/inference/tokenizer.js';
import { startFakeUpstream, type FakeUpstream } from './support/fake-upstream.js';
import { embeddingModelYaml, moderationModelYaml, startTestServer, type TestServer, forwardedChatModelYaml } from './support/harness.js';
import { client, seed } from './support/seed.js';
import { until } from './support/wait.js';

const IN = 1_000n;
const OUT = 2_000n;
const START = '1.00';
const est = (content: string) => countChatTokens([{ role: 'user', content }]);
const fakePrompt = (content: string) => 4 + content.trim().split(/\s+/).length;
const words = (n: number) => Array.from({ length: n }, (_, i) => `w${i}`).join(' ');

/** The balance after calls that cost these tokens, from START. */
const balanceAfter = (...calls: { prompt: number; completion: number }[]) =>
  formatDecimal(parseDecimal(START) - calls.reduce((n, c) => n + BigInt(c.prompt) * IN + BigInt(c.completion) * OUT, 0n));

const chatModel = (id: string, engine: string) => forwardedChatModelYaml(id, engine);

/** Parses an SSE body into its data payloads. */
function sseData(text: string): string[] {
  return text
    .split('\n\n')
    .filter((e) => e.startsWith('data: '))
    .map((e) => e.slice('data: '.length));
}

describe('an upstream that misbehaves', () => {
  let s: TestServer;
  let hung: FakeUpstream;
  let garbage: FakeUpstream;
  let flaky: FakeUpstream;
  let busy: FakeUpstream;

  beforeAll(async () => {
    hung = await startFakeUpstream();
    hung.setFault('hang');
    garbage = await startFakeUpstream();
    garbage.setFault('garbage');
    flaky = await startFakeUpstream();
    busy = await startFakeUpstream();
    busy.setFault({ status: 429, retryAfter: '7' });
    s = await startTestServer({
      yaml: (url) => `
tiers:
  developer: { monthly_tokens: 0 }
models:
${chatModel('chat-test', `base_url: "${url}", timeout_ms: 5000`)}${chatModel('chat-deadline', `base_url: "${url}", timeout_ms: 30000, max_duration_ms: 1500`)}${chatModel(
  'chat-idle',
  `base_url: "${url}", timeout_ms: 400`,
)}${chatModel('chat-hung', `base_urls: ["${hung.url}", "${url}"], first_byte_timeout_ms: 1000, circuit_breaker: { failure_threshold: 1, cooldown_ms: 600000 }`)}${chatModel(
  'chat-garbage',
  `base_urls: ["${garbage.url}", "${url}"], circuit_breaker: { failure_threshold: 1, cooldown_ms: 600000 }`,
)}${chatModel('chat-flaky', `base_urls: ["${flaky.url}", "${url}"], first_byte_timeout_ms: 1000, circuit_breaker: { failure_threshold: 1, cooldown_ms: 200 }`)}${chatModel(
  'chat-busy',
  `base_urls: ["${busy.url}", "${url}"]`,
)}${chatModel('chat-only-busy', `base_url: "${busy.url}"`)}${embeddingModelYaml(
  'embed-test',
  '{ max_tokens: 512, output_dimensions: 4 }',
  `{ type: openai, base_url: "${url}", model: upstream-embed }`,
)}${moderationModelYaml('guard-paid', `{ type: openai, base_url: "${url}", model: upstream-guard }`, { price: 'price_per_million_tokens: 1, ' })}`,
    });
  });
  afterAll(async () => {
    await s?.close();
    for (const f of [hung, garbage, flaky, busy]) await f?.close();
  });
  afterEach(async () => {
    s.upstream.setFault(null);
    // Settlement of a call whose client left runs after the response closed: wait for it.
    await until(async () => (await s.services.billing.countOpenHolds()) === 0);
    expect(await s.services.billing.verifyLedger()).toEqual([]);
  });

  const account = () => seed(s).account({ tier: 'developer' }).wallet(START);
  const chat = (c: ReturnType<typeof client>, model: string, content: string, extra: Record<string, unknown> = {}) =>
    c.post('/chat/completions', { model, messages: [{ role: 'user', content }], ...extra });
  const stream = (c: ReturnType<typeof client>, model: string, content: string, extra: Record<string, unknown> = {}) =>
    chat(c, model, content, { stream: true, stream_options: { include_usage: true }, ...extra });
  const transactions = async (accountId: string) => (await s.services.billing.listTransactions(accountId, { limit: 100 })).transactions;
  const events = (accountId: string) => s.services.billing.listUsageEvents(accountId);

  it('1. an absurd usage (3e9 tokens) is clamped: the call answers 200 with the usage that was billed, streamed or not', async () => {
    const a = await account();
    const c = client(s, a.apiKey);
    s.upstream.setFault({ usage: 3_000_000_000 });
    const content = 'count #tokens=5';

    const plain = await chat(c, 'chat-test', content, { max_tokens: 5 });
    expect(plain.status).toBe(200);
    // The prompt as counted at admission, at most max_tokens of output.
    const billed = { prompt: est(content), completion: 5 };
    expect(plain.body.usage).toEqual({ prompt_tokens: billed.prompt, completion_tokens: 5, total_tokens: billed.prompt + 5 });
    // A claim beyond max_tokens is a claim of having overrun it: the text is cut at max_tokens
    // (by the server's tokenizer) and ends with 'length'. A stream is cut by its chunks instead.
    expect(plain.body.choices[0]).toMatchObject({ finish_reason: 'length', message: { content: truncateTextTokens(words(5), 5) } });

    const streamed = await stream(c, 'chat-test', content, { max_tokens: 5 });
    expect(streamed.status).toBe(200);
    const data = sseData(streamed.text);
    expect(data.at(-1)).toBe('[DONE]');
    expect(data.some((d) => d.includes('"error"'))).toBe(false);
    expect(
      data
        .slice(0, -2)
        .map((d) => JSON.parse(d).choices[0]?.delta?.content ?? '')
        .join(''),
    ).toBe(words(5));
    expect(JSON.parse(data.at(-2)!).usage).toEqual({ prompt_tokens: billed.prompt, completion_tokens: 5, total_tokens: billed.prompt + 5 });

    expect(await c.balance()).toBe(balanceAfter(billed, billed));
    expect((await transactions(a.id)).filter((t) => t.type === 'usage').map((t) => t.description)).toEqual([
      `chat-test: ${billed.prompt} prompt + 5 completion tokens`,
      `chat-test: ${billed.prompt} prompt + 5 completion tokens`,
    ]);
  });

  it('2. an absurd usage (1e9 tokens) does not lock the account out of its rate limit, nor show in its usage', async () => {
    const a = await account();
    const c = client(s, a.apiKey);
    s.upstream.setFault({ usage: 1_000_000_000 });
    const content = 'limit #tokens=4';
    const billed = { prompt: est(content), completion: 4 };
    expect((await chat(c, 'chat-test', content, { max_tokens: 4 })).status).toBe(200);
    expect((await stream(c, 'chat-test', content, { max_tokens: 4 })).status).toBe(200);

    // The developer tier allows 1,000,000 tokens a minute: a believed 1e9 would refuse these.
    s.upstream.setFault(null);
    const after = await chat(c, 'chat-test', content, { max_tokens: 4 });
    expect(after.status).toBe(200);
    const honest = { prompt: fakePrompt(content), completion: 4 };
    expect(after.body.usage).toEqual({ prompt_tokens: honest.prompt, completion_tokens: 4, total_tokens: honest.prompt + 4 });
    const afterStream = await stream(c, 'chat-test', content, { max_tokens: 4 });
    expect(afterStream.status).toBe(200);

    const usage = await c.get('/usage');
    const total = usage.body.data.reduce((n: number, d: { total_tokens: number }) => n + d.total_tokens, 0);
    expect(total).toBe(2 * (billed.prompt + 4) + 2 * (honest.prompt + 4));
    expect(await c.balance()).toBe(balanceAfter(billed, billed, honest, honest));
  });

  describe('3. every call is bounded', () => {
    it('a stream kept open with comments ends at engine.max_duration_ms with an error event, billed for what was delivered', async () => {
      const a = await account();
      const c = client(s, a.apiKey);
      s.upstream.setFault('trickle'); // two tokens, then ": ping" forever
      const content = 'trickle #tokens=8';
      const r = await stream(c, 'chat-deadline', content, { max_tokens: 8 });
      expect(r.status).toBe(200);
      const data = sseData(r.text);
      expect(data).not.toContain('[DONE]');
      const deltas = data.slice(0, -1).map((d) => JSON.parse(d).choices[0]?.delta?.content ?? '');
      expect(deltas.join('')).toBe('w0 w1');
      const last = JSON.parse(data.at(-1)!);
      expect(last.error).toMatchObject({ code: 'upstream_timeout', message: 'The call ran past its time limit and was ended.' });

      // No usage came from the upstream: the prompt as counted, and the delivered text counted.
      const billed = { prompt: est(content), completion: countTextTokens('w0 w1') };
      await until(async () => (await events(a.id)).length === 1);
      expect((await events(a.id))[0]).toMatchObject({
        outcome: 'failed_mid_stream',
        promptTokens: billed.prompt,
        completionTokens: billed.completion,
      });
      expect(await c.balance()).toBe(balanceAfter(billed));
    });

    it('a plain answer trickled a byte at a time ends at engine.max_duration_ms with 504, billed nothing', async () => {
      const a = await account();
      const c = client(s, a.apiKey);
      s.upstream.setFault('trickle');
      const r = await chat(c, 'chat-deadline', 'slowly', { max_tokens: 8 });
      expect(r.status).toBe(504);
      expect(r.body.error).toMatchObject({ code: 'upstream_timeout', message: 'The call ran past its time limit and was ended.' });
      expect(await c.balance()).toBe(balanceAfter());
    });

    it('comments and keep-alives are not progress: the idle timeout ends a stream that sends only them', async () => {
      const a = await account();
      const c = client(s, a.apiKey);
      s.upstream.setFault('trickle');
      const r = await stream(c, 'chat-idle', 'idle #tokens=8', { max_tokens: 8 });
      const last = JSON.parse(sseData(r.text).at(-1)!);
      expect(last.error).toMatchObject({ code: 'upstream_timeout', message: "The model's upstream server did not answer in time." });
      const billed = { prompt: est('idle #tokens=8'), completion: countTextTokens('w0 w1') };
      expect(await c.balance()).toBe(balanceAfter(billed));
    });

    it("a stream's head goes out before its first token", async () => {
      const a = await account();
      const c = client(s, a.apiKey);
      let open!: () => void;
      s.upstream.setFault({ gate: new Promise<void>((r) => (open = r)) });
      const content = 'gated #tokens=3';
      const res = await fetch(`${s.v1}/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${a.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'chat-test', messages: [{ role: 'user', content }], max_tokens: 3, stream: true }),
      });
      // The upstream holds every token until the gate opens: the head came before any of them.
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toContain('text/event-stream');
      open();
      const data = sseData(await res.text());
      expect(data.at(-1)).toBe('[DONE]');
      expect(await c.balance()).toBe(balanceAfter({ prompt: fakePrompt(content), completion: 3 }));
    });

    it('start-up refuses a config where a call could outlive its hold, naming both keys', () => {
      const yaml = `
billing: { hold_expiry_seconds: 60 }
server: { stalled_client_ms: 30000 }
models:
${chatModel('slow', 'base_url: "http://127.0.0.1:1/v1", max_duration_ms: 60000')}`;
      expect(() => parseConfigText(yaml, 'config.yaml')).toThrow(ConfigError);
      expect(() => parseConfigText(yaml, 'config.yaml')).toThrow(
        /model "slow": engine\.max_duration_ms \(60000 ms\) must be below billing\.hold_expiry_seconds \(60 s\)/,
      );
      // The default deadline (5 min) needs a hold of more than 300 s.
      expect(() => parseConfigText(yaml.replace(', max_duration_ms: 60000', ''), 'config.yaml')).toThrow(
        /engine\.max_duration_ms \(300000 ms\)/,
      );
      expect(parseConfigText(yaml.replace('60000', '57999'), 'config.yaml').models).toHaveLength(1);
      // Within 2 s of the hold: a stream whose client stopped reading is settled 2 s after the deadline.
      expect(() => parseConfigText(yaml.replace('60000', '58000'), 'config.yaml')).toThrow(/by more than 2 s/);
      // An in-process model too: its calls (their wait in the queue included) end at its max_duration_ms.
      const inProcess = (engine: string) => `
billing: { hold_expiry_seconds: 60 }
server: { stalled_client_ms: 30000 }
models:
  - id: local
    category: chat
    owned_by: me
    created: 1735689600
    version: "1"
    status: active
    capabilities: { chat_completion: true, streaming: true, function_calling: false }
    pricing: { input_price_per_million: 1, output_price_per_million: 2, currency: usd }
    specifications: { context_window: 1024, max_output_tokens: 256, training_cutoff: "2025-01" }
    engine: { type: llamacpp, file: ./models/local.gguf${engine} }`;
      expect(() => parseConfigText(inProcess(''), 'config.yaml')).toThrow(
        /model "local": engine\.max_duration_ms \(300000 ms\) must be below billing\.hold_expiry_seconds \(60 s\)/,
      );
      expect(parseConfigText(inProcess(', max_duration_ms: 57999'), 'config.yaml').models[0]!.engine).toMatchObject({
        max_duration_ms: 57_999,
      });
      // And a stream whose client stopped reading ends at server.stalled_client_ms.
      expect(() => parseConfigText(yaml.replace('stalled_client_ms: 30000', 'stalled_client_ms: 60000'), 'config.yaml')).toThrow(
        /server\.stalled_client_ms \(60000 ms\) must be below billing\.hold_expiry_seconds \(60 s\)/,
      );
    });

    it('the new engine keys have defaults and are validated, naming the key', () => {
      const yaml = (engine: string) => `
models:
${chatModel('m', `base_url: "http://127.0.0.1:1/v1"${engine}`)}`;
      expect(parseConfigText(yaml(''), 'config.yaml').models[0]!.engine).toMatchObject({
        timeout_ms: 60_000,
        max_duration_ms: 300_000,
        connect_timeout_ms: 3_000,
        circuit_breaker: { failure_threshold: 3, cooldown_ms: 30_000 },
      });
      expect(() => parseConfigText(yaml(', circuit_breaker: { failure_threshold: 0 }'), 'config.yaml')).toThrow(
        /model "m": engine\.circuit_breaker\.failure_threshold/,
      );
      expect(() => parseConfigText(yaml(', connect_timeout_ms: -1'), 'config.yaml')).toThrow(/model "m": engine\.connect_timeout_ms/);
      expect(() => parseConfigText(yaml(', first_byte_timeout_ms: 1.5'), 'config.yaml')).toThrow(
        /model "m": engine\.first_byte_timeout_ms/,
      );
    });
  });

  describe('4. failover works on hangs and garbage, and ejects the base URL', () => {
    it('a base URL that sends no head in time is failed over, then skipped while its breaker is open; /readyz shows it', async () => {
      const a = await account();
      const c = client(s, a.apiKey);
      const content = 'hello #tokens=3';
      const usage = { prompt: fakePrompt(content), completion: 3 };
      for (let i = 0; i < 4; i++) {
        const r =
          i % 2 === 0 ? await chat(c, 'chat-hung', content, { max_tokens: 3 }) : await stream(c, 'chat-hung', content, { max_tokens: 3 });
        expect(r.status).toBe(200);
      }
      // Only the first call met the hung URL; it was ejected at its first failure.
      expect(hung.requests).toHaveLength(1);
      const ready = await (await fetch(`${s.url}/readyz`)).json();
      expect(ready.status).toBe('ready');
      expect(ready.upstreams['chat-hung']).toMatchObject([
        { index: 0, state: 'open', failures: 1 },
        { index: 1, state: 'closed', failures: 0 },
      ]);
      expect(await c.balance()).toBe(balanceAfter(usage, usage, usage, usage));
    });

    it('a 200 that is not JSON is failed over like a refused connection, streamed or not', async () => {
      const a = await account();
      const c = client(s, a.apiKey);
      const content = 'hello #tokens=2';
      const usage = { prompt: fakePrompt(content), completion: 2 };
      const plain = await chat(c, 'chat-garbage', content, { max_tokens: 2 });
      expect(plain.status).toBe(200);
      expect(plain.body.choices[0].message.content).toBe('w0 w1');
      const streamed = await stream(c, 'chat-garbage', content, { max_tokens: 2 });
      expect(sseData(streamed.text).at(-1)).toBe('[DONE]');
      expect(garbage.requests).toHaveLength(1);
      expect(await c.balance()).toBe(balanceAfter(usage, usage));
    });

    it('an ejected base URL is probed again after its cool-down and restored when it answers', async () => {
      const a = await account();
      const c = client(s, a.apiKey);
      const content = 'probe #tokens=2';
      const usage = { prompt: fakePrompt(content), completion: 2 };
      const health = async () => (await (await fetch(`${s.url}/readyz`)).json()).upstreams['chat-flaky'];
      flaky.setFault('hang');
      let calls = 0;
      // Round-robin: within two calls one starts on the flaky URL, fails over and ejects it.
      while ((await health())[0].state !== 'open') {
        expect((await chat(c, 'chat-flaky', content, { max_tokens: 2 })).status).toBe(200);
        calls++;
      }
      flaky.setFault(null);
      const seen = flaky.requests.length;
      await until(async () => (await health())[0].retryInMs === 0);
      // Calls go on; one of them probes the flaky URL, which now answers: its breaker closes.
      while ((await health())[0].state !== 'closed') {
        expect((await stream(c, 'chat-flaky', content, { max_tokens: 2 })).status).toBe(200);
        calls++;
      }
      expect(flaky.requests.length).toBeGreaterThan(seen);
      expect(await c.balance()).toBe(balanceAfter(...Array.from({ length: calls }, () => usage)));
    });
  });

  describe("5. the upstream's back-off is kept", () => {
    it('an upstream 429 with Retry-After: 7 becomes 503 model_overloaded with Retry-After: 7 when no other base URL can take the call', async () => {
      const a = await account();
      const c = client(s, a.apiKey);
      for (const extra of [{}, { stream: true }]) {
        const res = await fetch(`${s.v1}/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${a.apiKey}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'chat-only-busy', messages: [{ role: 'user', content: 'hi' }], max_tokens: 4, ...extra }),
        });
        expect(res.status).toBe(503);
        expect(res.headers.get('retry-after')).toBe('7');
        expect((await res.json()).error).toMatchObject({ code: 'model_overloaded', type: 'server_error' });
      }
      expect(await c.balance()).toBe(balanceAfter());
    });

    it('an upstream 429 is failed over when another base URL can take the call, and does not eject the busy one', async () => {
      const a = await account();
      const c = client(s, a.apiKey);
      const content = 'busy #tokens=2';
      const usage = { prompt: fakePrompt(content), completion: 2 };
      expect((await chat(c, 'chat-busy', content, { max_tokens: 2 })).status).toBe(200);
      expect((await stream(c, 'chat-busy', content, { max_tokens: 2 })).status).toBe(200);
      expect((await (await fetch(`${s.url}/readyz`)).json()).upstreams['chat-busy'][0].state).toBe('closed');
      expect(await c.balance()).toBe(balanceAfter(usage, usage));
    });
  });

  describe('6. nothing delivered, nothing charged', () => {
    it('a client that leaves a stream before any token reached it pays nothing', async () => {
      const a = await account();
      const c = client(s, a.apiKey);
      let open!: () => void;
      s.upstream.setFault({ gate: new Promise<void>((r) => (open = r)) });
      const ctl = new AbortController();
      const res = await fetch(`${s.v1}/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${a.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'chat-test', messages: [{ role: 'user', content: 'leave #tokens=5' }], max_tokens: 5, stream: true }),
        signal: ctl.signal,
      });
      expect(res.status).toBe(200);
      ctl.abort();
      await until(async () => (await events(a.id)).length === 1);
      open();
      expect((await events(a.id))[0]).toMatchObject({ outcome: 'client_disconnected', promptTokens: 0, completionTokens: 0 });
      expect(await c.balance()).toBe(balanceAfter());
    });

    it('a client that leaves a plain call before the answer pays nothing', async () => {
      const a = await account();
      const c = client(s, a.apiKey);
      s.upstream.setFault('stall');
      const before = s.upstream.requests.length;
      const ctl = new AbortController();
      const pending = c
        .post('/chat/completions', { model: 'chat-test', messages: [{ role: 'user', content: 'leave' }], max_tokens: 5 }, ctl.signal)
        .catch((e) => e);
      await until(() => s.upstream.requests.length > before);
      ctl.abort();
      await pending;
      await until(async () => (await events(a.id)).length === 1);
      expect((await events(a.id))[0]).toMatchObject({ outcome: 'client_disconnected', promptTokens: 0, completionTokens: 0 });
      expect(await c.balance()).toBe(balanceAfter());
    });
  });

  describe('7. max_tokens is enforced on what comes back', () => {
    it('a stream stops at max_tokens with finish_reason length and the upstream request closed', async () => {
      const a = await account();
      const c = client(s, a.apiKey);
      s.upstream.setFault('ignore-max-tokens'); // 400 words, whatever max_tokens says
      const aborted = s.upstream.aborted;
      const content = 'ramble #delay=5'; // paced, so that the upstream is still sending when we hang up
      const r = await stream(c, 'chat-test', content, { max_tokens: 8 });
      const data = sseData(r.text);
      expect(data.at(-1)).toBe('[DONE]');
      const chunks = data.slice(0, -1).map((d) => JSON.parse(d));
      expect(chunks.map((ch) => ch.choices[0]?.delta?.content ?? '').join('')).toBe(words(8));
      expect(chunks.at(-2).choices[0].finish_reason).toBe('length');
      // The upstream's usage never came (we hung up first): the prompt as counted, max_tokens of output.
      const billed = { prompt: est(content), completion: 8 };
      expect(chunks.at(-1).usage).toEqual({ prompt_tokens: billed.prompt, completion_tokens: 8, total_tokens: billed.prompt + 8 });
      await until(() => s.upstream.aborted > aborted);
      expect(await c.balance()).toBe(balanceAfter(billed));
    });

    it('a plain answer is cut at max_tokens with finish_reason length, and its usage is what was billed', async () => {
      const a = await account();
      const c = client(s, a.apiKey);
      s.upstream.setFault('ignore-max-tokens');
      const content = 'ramble';
      const r = await chat(c, 'chat-test', content, { max_tokens: 8 });
      expect(r.status).toBe(200);
      expect(r.body.choices[0]).toMatchObject({ finish_reason: 'length', message: { content: truncateTextTokens(words(400), 8) } });
      const billed = { prompt: fakePrompt(content), completion: 8 };
      expect(r.body.usage).toEqual({ prompt_tokens: billed.prompt, completion_tokens: 8, total_tokens: billed.prompt + 8 });
      expect(await c.balance()).toBe(balanceAfter(billed));
    });
  });

  describe('answers of the right shape with wrong values, and answers too large to hold, are 502 and billed nothing', () => {
    const healthy = async () => (await fetch(`${s.url}/healthz`)).status === 200;

    it('an answer over 64 MB ends at once with 502, and the server goes on serving', async () => {
      const a = await account();
      const c = client(s, a.apiKey);
      s.upstream.setFault({ huge: 80 * 1024 * 1024 });
      for (const r of [await chat(c, 'chat-test', 'big'), await c.post('/embeddings', { model: 'embed-test', input: 'big' })]) {
        expect(r.status).toBe(502);
        expect(r.body.error).toMatchObject({ code: 'upstream_error', message: expect.stringContaining('larger than 64 MB') });
      }
      // Streamed too: one JSON body answering a streamed request is read only up to the limit.
      const streamed = await chat(c, 'chat-test', 'big', { stream: true });
      expect(streamed.text).toContain('"message":"The model\'s upstream server sent an answer larger than 64 MB."');
      expect(streamed.text).not.toContain('[DONE]');
      s.upstream.setFault(null);
      expect(await healthy()).toBe(true);
      expect((await chat(c, 'chat-test', 'small #tokens=2', { max_tokens: 2 })).status).toBe(200);
      expect(await c.balance()).toBe(balanceAfter({ prompt: fakePrompt('small #tokens=2'), completion: 2 }));
    });

    it.each([
      ['a vector holding null', '[0.5, null, 0.1, 0.2]'],
      ['a vector holding a number beyond a double (1e999)', '[0.5, 1e999, 0.1, 0.2]'],
      ['a vector holding text', '[0.5, "x", 0.1, 0.2]'],
    ])('embeddings: %s', async (_name, vector) => {
      const a = await account();
      const c = client(s, a.apiKey);
      s.upstream.setFault({
        raw: `{"object":"list","data":[{"object":"embedding","index":0,"embedding":${vector}}],"usage":{"prompt_tokens":3,"total_tokens":3}}`,
      });
      const r = await c.post('/embeddings', { model: 'embed-test', input: 'some text' });
      expect(r.status).toBe(502);
      expect(r.body.error).toMatchObject({ code: 'upstream_error', message: "The model's upstream server sent an invalid response." });
      expect(await c.balance()).toBe(balanceAfter());
    });

    it('chat: content that is not text, or a streamed choice the request did not ask for', async () => {
      const a = await account();
      const c = client(s, a.apiKey);
      // A good call after each broken one, so the base URL's breaker (consecutive failures) stays closed.
      const good = async () => {
        s.upstream.setFault(null);
        expect((await chat(c, 'chat-test', 'ok #tokens=1', { max_tokens: 1 })).status).toBe(200);
      };
      const answer = (content: string) =>
        `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":${content}},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}`;
      for (const content of ['12345', '{"text":"hi"}', '["hi"]']) {
        await good();
        const before = await c.balance();
        s.upstream.setFault({ raw: answer(content) });
        const r = await chat(c, 'chat-test', 'hi');
        expect([r.status, r.body.error?.code], content).toEqual([502, 'upstream_error']);
        expect(await c.balance()).toBe(before);
      }
      const chunk = (choice: string) =>
        `data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[${choice}]}\n\n`;
      for (const bad of [
        '{"index":7,"delta":{"content":"hi"},"finish_reason":null}',
        '{"index":0,"delta":{"content":42},"finish_reason":null}',
      ]) {
        await good();
        const before = await c.balance();
        s.upstream.setFault({
          raw: `${chunk('{"index":0,"delta":{"role":"assistant"},"finish_reason":null}')}${chunk(bad)}data: [DONE]\n\n`,
          type: 'text/event-stream',
        });
        const r = await stream(c, 'chat-test', 'hi');
        const last = r.status === 200 ? JSON.parse(sseData(r.text).at(-1)!) : r.body;
        expect(last.error?.code, bad).toBe('upstream_error');
        expect(await c.balance()).toBe(before);
      }
    });

    it('moderation: a category named like an object property is a category; a score of 1e999 is a broken answer', async () => {
      const a = await account();
      const c = client(s, a.apiKey);
      s.upstream.setFault({
        raw: '{"id":"m","model":"g","results":[{"flagged":true,"categories":{"constructor":true,"toString":false,"violence":true},"category_scores":{"constructor":0.75,"violence":null}}]}',
      });
      const ok = await c.post('/moderations', { model: 'guard-paid', input: 'some text' });
      expect(ok.status).toBe(200);
      expect(ok.body.results[0]).toMatchObject({
        flagged: true,
        categories: { constructor: true, toString: false, hate: false, violence: true },
        category_scores: { constructor: 0.75, toString: 0, hate: 0, violence: 1 },
      });
      const paid = await c.balance();
      expect(paid).not.toBe(START);
      s.upstream.setFault({
        raw: '{"id":"m","model":"g","results":[{"flagged":false,"categories":{"hate":false},"category_scores":{"hate":1e999}}]}',
      });
      const broken = await c.post('/moderations', { model: 'guard-paid', input: 'some text' });
      expect(broken.status).toBe(502);
      expect(broken.body.error.code).toBe('upstream_error');
      expect(await c.balance()).toBe(paid);
    });
  });

  it('a reset after the upstream started answering is reported as a broken answer, not as unreachable, and billed nothing', async () => {
    const a = await account();
    const c = client(s, a.apiKey);
    s.upstream.setFault('reset-mid');
    const r = await chat(c, 'chat-test', 'cut #tokens=5', { max_tokens: 5 });
    expect(r.status).toBe(502);
    expect(r.body.error).toMatchObject({ code: 'upstream_error', message: "The model's upstream server broke off its answer." });
    expect(await c.balance()).toBe(balanceAfter());
  });
});
