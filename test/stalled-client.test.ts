// A /v1 stream whose client stops reading (its socket and Node's buffer full) is disconnected after
// server.stalled_client_ms: the call ends, billed for what was delivered, instead of holding the
// call (an in-process model's slot) for as long as the client keeps its connection, past its hold.
// On any door, a stream whose consumer stopped pulling is settled for what was delivered shortly
// after its model's max_duration_ms (the engine's deadline cannot reach a generator at a yield).
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/harness.js';
import { seed } from './support/seed.js';
import { until } from './support/wait.js';

const chunk = (content: string) =>
  `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: { content }, finish_reason: null }] })}\n\n`;
// About 16 MB of answer: more than the loopback sockets' buffers and Node's hold together.
const PIECE = 'lorem ipsum dolor sit amet, '.repeat(146); // 4,088 characters
const BIG = Array.from({ length: 4000 }, () => chunk(PIECE)).join('');

const bigModel = (id: string, url: string, engine = '') => `
  - id: ${id}
    category: chat
    owned_by: tests
    created: 1735689600
    version: "1"
    status: active
    capabilities: { chat_completion: true, streaming: true, function_calling: false }
    pricing: { input_price_per_million: 1.0, output_price_per_million: 2.0, currency: usd }
    specifications: { context_window: 10000000, max_output_tokens: 9000000, training_cutoff: "2024-10" }
    engine: { type: openai, model: upstream-chat, base_url: "${url}"${engine} }
`;

/** Sends `body` to `path` with this response paused at once; resolves when the connection closes, with what it then read. */
function pausedRequest(url: string, apiKey: string, body: unknown, accept: string, resumeWhen: Promise<unknown>): Promise<string> {
  const received: Buffer[] = [];
  return new Promise<string>((resolve, reject) => {
    const req = request(
      url,
      { method: 'POST', headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json', accept } },
      (res) => {
        expect(res.statusCode).toBe(200);
        res.pause(); // reads nothing more: the server's writes back up
        res.on('data', (b: Buffer) => received.push(b));
        res.on('close', () => resolve(Buffer.concat(received).toString()));
        resumeWhen.then(() => res.resume(), reject);
      },
    );
    req.on('error', () => resolve(Buffer.concat(received).toString())); // closed under the paused response
    req.end(JSON.stringify(body));
  });
}

describe('a streaming client that stops reading', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({
      yaml: (url) => `
server: { stalled_client_ms: 300 }
models:${bigModel('chat-big', url)}`,
    });
  });
  afterAll(async () => {
    await s?.close();
  });

  it('is disconnected after server.stalled_client_ms, and its call is billed for what was delivered', async () => {
    const a = await seed(s).account({ tier: 'enterprise' });
    s.upstream.setFault({ raw: `${BIG}data: [DONE]\n\n`, type: 'text/event-stream' });
    const received: Buffer[] = [];
    const closed = new Promise<void>((resolve, reject) => {
      const req = request(
        `${s.v1}/chat/completions`,
        { method: 'POST', headers: { authorization: `Bearer ${a.apiKey}`, 'content-type': 'application/json' } },
        (res) => {
          expect(res.statusCode).toBe(200);
          res.pause(); // reads nothing more: the server's writes back up
          res.on('data', (b: Buffer) => received.push(b));
          res.on('close', () => resolve());
          // Once the call is settled, read what reached this side.
          void until(async () => (await s.services.billing.listUsageEvents(a.id)).length > 0, 20_000).then(() => res.resume(), reject);
        },
      );
      req.on('error', () => resolve()); // the connection closed under the paused response
      req.end(JSON.stringify({ model: 'chat-big', messages: [{ role: 'user', content: 'hi' }], stream: true, max_tokens: 8_000_000 }));
    });
    await closed;
    const [event] = await s.services.billing.listUsageEvents(a.id);
    expect(event).toMatchObject({ outcome: 'client_disconnected' });
    // Billed for part of the answer: more than nothing, less than all of it.
    expect(event!.completionTokens).toBeGreaterThan(0);
    const text = Buffer.concat(received).toString();
    expect(text).not.toContain('[DONE]');
    expect(text.length).toBeLessThan(BIG.length);
  });
});

describe("a stream whose consumer stopped pulling, past its model's max_duration_ms", () => {
  let s: TestServer;
  beforeAll(async () => {
    // The /v1 stall timeout out of the way (60 s): the call deadline is what ends these.
    s = await startTestServer({ yaml: (url) => `models:${bigModel('chat-bounded', url, ', max_duration_ms: 500')}` });
  });
  afterAll(async () => {
    await s?.close();
  });

  // The watchdog is the domain's (InferenceService.chatCompletionStream), shared by both doors; /v1
  // waits for its client (GraphQL over SSE buffers what a paused client does not read), so it shows it.
  it.each([
    ['/v1', (s: TestServer) => `${s.v1}/chat/completions`, (input: object) => ({ ...input, stream: true }), 'text/event-stream'] as const,
  ])('%s: is settled for what was delivered, and the rest ends with the deadline', async (_door, url, body, accept) => {
    const a = await seed(s).account({ tier: 'enterprise' });
    s.upstream.setFault({ raw: `${BIG}data: [DONE]\n\n`, type: 'text/event-stream' });
    const settled = until(async () => (await s.services.billing.listUsageEvents(a.id)).length > 0, 20_000);
    const text = await pausedRequest(
      url(s),
      a.apiKey,
      body({ model: 'chat-bounded', messages: [{ role: 'user', content: 'hi' }], max_tokens: 8_000_000 }),
      accept,
      settled,
    );
    const [event] = await s.services.billing.listUsageEvents(a.id);
    // Settled by the watchdog (the stream stuck at a write), or by the engine's own deadline when it
    // came while the server was still writing into the socket's buffers (a loaded machine): either
    // way for what was delivered, and not left to the hold's expiry.
    expect(['client_disconnected', 'failed_mid_stream']).toContain(event!.outcome);
    expect(event!.completionTokens).toBeGreaterThan(0);
    // Resumed, the client gets what was written, then the deadline's error: not the whole answer.
    expect(text).not.toContain('[DONE]');
    expect(text).toContain('The call ran past its time limit');
    expect(text.length).toBeLessThan(BIG.length);
    // Settled once.
    expect(await s.services.billing.listUsageEvents(a.id)).toHaveLength(1);
  });
});
