// GET /metrics: the Prometheus text format with the metrics the operator's dashboards use, moving
// after a chat, an embedding and a 429; refused without its token when METRICS_TOKEN is set; no
// account id, key or end user in any label.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rows, run } from '../src/domain/billing/sql.js';
import { retryFailed } from '../src/domain/notifications/notification-store.js';
import { enqueueNotification } from '../src/domain/notifications/outbox.js';
import { catalogYaml, startTestServer, type TestServer } from './support/harness.js';

let s: TestServer;

beforeAll(async () => {
  // A tier with 2 RPM, so a 429 is easy to provoke.
  s = await startTestServer({ yaml: (u) => `tiers:\n  free: { rpm: 2 }\n${catalogYaml(u)}` });
});
afterAll(() => s.close());

async function scrape(server = s, headers: Record<string, string> = {}) {
  const res = await fetch(`${server.url}/metrics`, { headers });
  return { status: res.status, type: res.headers.get('content-type') ?? '', text: await res.text() };
}

/** The value of one sample, e.g. value(text, 'tollgate_tokens_total{model="chat-test",kind="prompt"}'). */
function value(text: string, sample: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${sample} `));
  return line ? Number(line.slice(sample.length + 1)) : 0;
}

const post = (path: string, key: string, body: unknown) =>
  fetch(`${s.v1}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify(body),
  });

describe('metrics', () => {
  it('serves the Prometheus text format with the named metrics and the process defaults', async () => {
    const m = await scrape();
    expect(m.status).toBe(200);
    expect(m.type).toContain('text/plain');
    for (const name of [
      'tollgate_http_requests_total',
      'tollgate_http_request_duration_seconds',
      'tollgate_tokens_total',
      'tollgate_spend_total',
      'tollgate_holds_open',
      'tollgate_rate_limit_refusals_total',
      'tollgate_upstream_errors_total',
      'tollgate_upstream_duration_seconds',
      'tollgate_llamacpp_queue_depth',
      'tollgate_outbox_pending',
      'tollgate_outbox_failed',
      'process_cpu_seconds_total',
      'nodejs_eventloop_lag_seconds',
    ]) {
      expect(m.text).toContain(`# TYPE ${name} `);
    }
  });

  it('moves after a chat, an embedding and a 429, without account ids or keys in labels', async () => {
    const { id, apiKey, keyId } = await s.account('developer');
    const before = (await scrape()).text;
    const chat = await post('/chat/completions', apiKey, {
      model: 'chat-test',
      messages: [{ role: 'user', content: 'hello #tokens=5' }],
      user: 'end-user-42',
    });
    expect(chat.status).toBe(200);
    const usage = (await chat.json()).usage;
    const embed = await post('/embeddings', apiKey, { model: 'embed-test', input: ['one', 'two'] });
    expect(embed.status).toBe(200);
    const free = await s.account('free');
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) statuses.push((await post('/moderations', free.apiKey, { model: 'guard-test', input: 'x' })).status);
    expect(statuses).toContain(429);
    const after = (await scrape()).text;

    const delta = (sample: string) => value(after, sample) - value(before, sample);
    expect(delta('tollgate_tokens_total{model="chat-test",kind="prompt"}')).toBe(usage.prompt_tokens);
    expect(delta('tollgate_tokens_total{model="chat-test",kind="completion"}')).toBe(usage.completion_tokens);
    // chat-test costs 1 / 2 USD per million prompt / completion tokens.
    expect(delta('tollgate_spend_total{model="chat-test",currency="USD"}')).toBeCloseTo(
      (usage.prompt_tokens * 1 + usage.completion_tokens * 2) / 1e6,
      12,
    );
    expect(delta('tollgate_tokens_total{model="embed-test",kind="prompt"}')).toBeGreaterThan(0);
    expect(delta('tollgate_http_requests_total{door="v1",route="/v1/chat/completions",status="200"}')).toBe(1);
    expect(delta('tollgate_http_requests_total{door="v1",route="/v1/moderations",status="429"}')).toBe(
      statuses.filter((st) => st === 429).length,
    );
    expect(delta('tollgate_http_request_duration_seconds_count{door="v1",route="/v1/embeddings"}')).toBe(1);
    expect(delta('tollgate_rate_limit_refusals_total{limit="rpm"}')).toBeGreaterThanOrEqual(1);
    expect(delta('tollgate_upstream_duration_seconds_count{model="chat-test"}')).toBe(1);
    for (const secret of [id, apiKey, keyId, free.id, 'end-user-42']) expect(after).not.toContain(secret);
  });

  it('counts e-mails that failed for good apart from pending ones, until they are retried', async () => {
    const { id } = await s.account('developer');
    const db = s.services.billing.db;
    await enqueueNotification(db, {
      accountId: id,
      kind: 'auto_topup_failed',
      dedupeKey: `metrics-failed:${id}`,
      payload: { top_up_id: 'x', amount: '25.00', currency: 'USD', reason: 'x', consecutive_failures: 1 },
      now: new Date(),
    });
    const before = (await scrape()).text;
    // The delivery worker's tries used up (the mail server refused it each time).
    await run(db, "update notifications set delivery = 'failed', attempts = 10 where dedupe_key = ?", [`metrics-failed:${id}`]);
    const failed = (await scrape()).text;
    expect(value(failed, 'tollgate_outbox_failed') - value(before, 'tollgate_outbox_failed')).toBe(1);
    const [row] = await rows<{ id: string }>(db, 'select id from notifications where dedupe_key = ?', [`metrics-failed:${id}`]);
    await retryFailed(db, [row!.id]);
    expect(value((await scrape()).text, 'tollgate_outbox_failed')).toBe(value(before, 'tollgate_outbox_failed'));
  });

  it('counts upstream failures, not the client', async () => {
    const { apiKey } = await s.account('developer');
    const before = value((await scrape()).text, 'tollgate_upstream_errors_total{model="chat-test"}');
    s.upstream.setFailMode('500', 1);
    const res = await post('/chat/completions', apiKey, { model: 'chat-test', messages: [{ role: 'user', content: 'hi' }] });
    expect(res.status).toBeGreaterThanOrEqual(500);
    expect(value((await scrape()).text, 'tollgate_upstream_errors_total{model="chat-test"}')).toBe(before + 1);
  });

  it('with METRICS_TOKEN set, refuses a scrape without the token and serves one with it', async () => {
    const guarded = await startTestServer({ env: { METRICS_TOKEN: 'scrape-token-123' } });
    try {
      expect((await scrape(guarded)).status).toBe(401);
      expect((await scrape(guarded, { authorization: 'Bearer wrong' })).status).toBe(401);
      const ok = await scrape(guarded, { authorization: 'Bearer scrape-token-123' });
      expect(ok.status).toBe(200);
      expect(ok.text).toContain('tollgate_http_requests_total');
    } finally {
      await guarded.close();
    }
  });
});
