// The rate limiter and its Metering around billing, on the in-memory store with a hand-moved
// clock: 429s that name their limit and place no hold, refunds when billing refuses, correction to
// the real usage, the headers handed to the doors, the alert, and fail-open / fail-closed.
import { describe, expect, it } from 'vitest';
import type { ModelConfig } from '../src/config.js';
import { DomainError } from '../src/domain/errors.js';
import type { Caller, CallOutcome, MeterRequest, MeterTicket, Metering } from '../src/domain/inference/inference-service.js';
import type { Usage } from '../src/domain/inference/engine.js';
import { MemoryRateLimitStore } from '../src/domain/ratelimit/memory-store.js';
import { MemoryNotificationSink } from '../src/domain/ratelimit/notification-sink.js';
import { RateLimitMetering } from '../src/domain/ratelimit/rate-limit-metering.js';
import { RateLimiter } from '../src/domain/ratelimit/rate-limiter.js';
import type { LimiterState, RateLimits, RateLimitStore } from '../src/domain/ratelimit/types.js';
import { setRateLimitHeaders } from '../src/web/rate-limit-headers.js';
import { manualClock } from './support/ratelimit-store-suite.js';

/** The headers a door sends for a state. */
function headersOf(state: LimiterState): Record<string, string> {
  const headers: Record<string, string> = {};
  setRateLimitHeaders({ setHeader: (name: string, value: string) => (headers[name] = value) }, state);
  return headers;
}

/** A billing stand-in that records what it was asked and can refuse or lower the output. */
class RecordingMetering implements Metering {
  admitted: MeterRequest[] = [];
  settled: { usage: Usage; outcome: CallOutcome }[] = [];
  refuse: DomainError | null = null;
  lowerOutputTo: number | null = null;

  async admit(req: MeterRequest): Promise<MeterTicket> {
    if (this.refuse) throw this.refuse;
    this.admitted.push(req);
    return {
      maxOutputTokens: this.lowerOutputTo ?? req.requestedOutputTokens ?? req.maxOutputTokens,
      settle: async (usage, outcome) => {
        this.settled.push({ usage, outcome });
      },
    };
  }
}

const model = { id: 'chat-test', category: 'chat' } as unknown as ModelConfig;

function setup(opts: { limits?: RateLimits; alertThreshold?: number; store?: RateLimitStore; failClosed?: boolean } = {}) {
  const clock = manualClock();
  const store = opts.store ?? new MemoryRateLimitStore({ now: clock.now, sweepIntervalMs: 0 });
  const notifications = new MemoryNotificationSink();
  const warnings: string[] = [];
  const limiter = new RateLimiter(store, {
    alertThreshold: opts.alertThreshold ?? 100,
    notifications,
    failClosed: opts.failClosed,
    logger: { warn: (_obj, msg) => warnings.push(msg) },
  });
  const billing = new RecordingMetering();
  const limits = opts.limits ?? { rpm: 3, tpm: 10_000 };
  const metering = new RateLimitMetering(billing, limiter, () => limits);
  const headers: Record<string, string>[] = [];
  const caller: Caller = { accountId: 'acct_1', requestId: 'req_1', onRateLimit: (state) => headers.push(headersOf(state)) };
  const request = (promptTokens: number, requestedOutputTokens: number | null, maxOutputTokens = 256): MeterRequest => ({
    caller,
    model,
    promptTokens,
    requestedOutputTokens,
    maxOutputTokens,
  });
  return { clock, store, limiter, billing, metering, headers, request, notifications, warnings, limits };
}

const usage = (promptTokens: number, completionTokens: number): Usage => ({
  promptTokens,
  completionTokens,
  totalTokens: promptTokens + completionTokens,
});

async function rejection(p: Promise<unknown>): Promise<DomainError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(DomainError);
    return err as DomainError;
  }
  throw new Error('expected a refusal');
}

/** A store whose every call fails as an unreachable Redis does. */
function unreachableStore(): RateLimitStore {
  return {
    name: 'redis',
    admit: async () => {
      throw new Error('connect ECONNREFUSED');
    },
    correct: async () => {
      throw new Error('connect ECONNREFUSED');
    },
    recentHits: async () => 0,
    reachable: () => false,
    close: async () => {},
  };
}

describe('rate-limit metering', () => {
  it('refuses past the RPM limit with 429, Retry-After and a message naming RPM, without asking billing', async () => {
    const { metering, billing, request, headers, clock } = setup();
    const second = Math.floor(clock.now() / 1000);
    for (let i = 0; i < 3; i++) await metering.admit(request(10, 5));
    expect(billing.admitted).toHaveLength(3);
    const err = await rejection(metering.admit(request(10, 5)));
    expect(err.code).toBe('rate_limit_exceeded');
    expect(err.status).toBe(429);
    expect(err.type).toBe('rate_limit_error');
    expect(err.retryAfter).toBe(61);
    expect(err.message).toContain('requests per minute (RPM) limit of 3');
    expect(err.message).not.toContain('TPM');
    // No hold: billing never saw the refused call.
    expect(billing.admitted).toHaveLength(3);
    // The refusal's headers were handed over before the error.
    expect(headers.at(-1)).toEqual({
      'X-RateLimit-Limit-RPM': '3',
      'X-RateLimit-Limit-TPM': '10000',
      'X-RateLimit-Remaining-RPM': '0',
      'X-RateLimit-Remaining-TPM': String(10_000 - 3 * 15),
      'X-RateLimit-Reset-RPM': String(second + 61),
      'X-RateLimit-Reset-TPM': String(second + 61),
    });
  });

  it('counts prompt plus max_tokens at admission and refuses by TPM with a message naming TPM', async () => {
    const { metering, request, headers } = setup({ limits: { rpm: 100, tpm: 10_000 } });
    await metering.admit(request(1_000, 4_000));
    expect(headers.at(-1)!['X-RateLimit-Remaining-TPM']).toBe('5000');
    const err = await rejection(metering.admit(request(1_000, 4_500)));
    expect(err.code).toBe('rate_limit_exceeded');
    expect(err.message).toContain('tokens per minute (TPM) limit of 10000');
    expect(err.message).toContain('this request counts 5500');
    expect(err.retryAfter).toBeGreaterThanOrEqual(1);
  });

  it('refuses without Retry-After a call whose own estimate is over the TPM limit', async () => {
    const { metering, request, billing } = setup({ limits: { rpm: 100, tpm: 10_000 } });
    const err = await rejection(metering.admit(request(2_000, 9_000, 16_000)));
    expect(err.code).toBe('rate_limit_exceeded');
    expect(err.retryAfter).toBeUndefined();
    expect(err.message).toContain('can never be admitted');
    expect(billing.admitted).toHaveLength(0);
  });

  it('lowers the output maximum of a call without max_tokens to what the TPM limit leaves beside its prompt', async () => {
    const { metering, request, billing, headers } = setup({ limits: { rpm: 100, tpm: 10_000 } });
    const ticket = await metering.admit(request(4_000, null, 16_000));
    expect(ticket.maxOutputTokens).toBe(6_000);
    expect(billing.admitted[0]!.maxOutputTokens).toBe(6_000);
    expect(headers.at(-1)!['X-RateLimit-Remaining-TPM']).toBe('0');
  });

  it('corrects the count to the real usage when the call ends, then lets billing settle', async () => {
    const { metering, request, billing, headers } = setup({ limits: { rpm: 100, tpm: 10_000 } });
    const ticket = await metering.admit(request(1_000, 8_000));
    expect(headers.at(-1)!['X-RateLimit-Remaining-TPM']).toBe('1000');
    await expect(metering.admit(request(1_000, 500))).rejects.toThrow(/TPM/);
    await ticket.settle(usage(1_000, 200), 'completed');
    expect(headers.at(-1)!['X-RateLimit-Remaining-TPM']).toBe(String(10_000 - 1_200));
    expect(billing.settled).toEqual([{ usage: usage(1_000, 200), outcome: 'completed' }]);
    // The room given back is usable at once.
    await metering.admit(request(1_000, 7_000));
  });

  it('counts the output maximum billing lowered, not the one asked for', async () => {
    const { metering, request, billing, headers } = setup({ limits: { rpm: 100, tpm: 10_000 } });
    billing.lowerOutputTo = 100;
    const ticket = await metering.admit(request(1_000, null, 8_000));
    expect(ticket.maxOutputTokens).toBe(100);
    expect(headers.at(-1)!['X-RateLimit-Remaining-TPM']).toBe(String(10_000 - 1_100));
  });

  it('gives the tokens back but keeps the request counted when billing refuses the call', async () => {
    const { metering, request, billing, headers, limiter } = setup({ limits: { rpm: 2, tpm: 10_000 } });
    billing.refuse = new DomainError('insufficient_balance', 'The wallet is empty.');
    const err = await rejection(metering.admit(request(1_000, 5_000)));
    expect(err.code).toBe('insufficient_balance');
    expect(headers.at(-1)!['X-RateLimit-Remaining-TPM']).toBe('10000');
    expect(headers.at(-1)!['X-RateLimit-Remaining-RPM']).toBe('1');
    billing.refuse = null;
    await metering.admit(request(1_000, 9_000));
    await expect(metering.admit(request(1, 1))).rejects.toThrow(/RPM/);
    expect(limiter.stats).toMatchObject({ admitted: 2, refused: 1 });
  });

  it('writes one "frequent rate-limit hits" notification when 429s pass the threshold', async () => {
    const { metering, request, notifications, limiter } = setup({ limits: { rpm: 1, tpm: 10_000 }, alertThreshold: 2 });
    await metering.admit(request(1, 1));
    for (let i = 0; i < 5; i++) await expect(metering.admit(request(1, 1))).rejects.toThrow(/RPM/);
    await new Promise((r) => setImmediate(r));
    expect(notifications.sent).toEqual([
      { accountId: 'acct_1', kind: 'rate_limit_hits', payload: { recent_hits: 3, window_seconds: 600, threshold: 2 } },
    ]);
    expect(await limiter.recentHits('acct_1')).toBe(5);
  });

  it('prechecks an account it has not refused at once, with no promise; after an RPM refusal, refuses it', async () => {
    const { metering, request, headers } = setup();
    const caller = request(1, 1).caller;
    // Nothing to wait for: every call of an account within its limits asks this.
    expect(metering.precheck(caller)).toBeUndefined();
    for (let i = 0; i < 3; i++) await metering.admit(request(10, 5));
    expect(metering.precheck(caller)).toBeUndefined();
    const refused = await rejection(metering.admit(request(10, 5)));
    const before = headers.length;
    const err = await rejection(metering.precheck(caller) as Promise<void>);
    expect(err.code).toBe('rate_limit_exceeded');
    expect(err.message).toMatch(/RPM/);
    expect(err.retryAfter).toBeLessThanOrEqual(refused.retryAfter!);
    expect(headers.length).toBe(before + 1);
  });

  it('drops its own refusal at once when the account’s RPM limit changed (an override, a new tier)', async () => {
    const { metering, request, limits } = setup({ limits: { rpm: 3, tpm: 10_000 } });
    const caller = request(1, 1).caller;
    for (let i = 0; i < 3; i++) await metering.admit(request(10, 5));
    await rejection(metering.admit(request(10, 5)));
    expect((await rejection(metering.precheck(caller) as Promise<void>)).message).toMatch(/limit of 3\b/);
    limits.rpm = 1_000;
    // The next request is decided by the store with the new limit, not refused from memory.
    await metering.precheck(caller);
    await metering.admit(request(10, 5));
    expect(metering.precheck(caller)).toBeUndefined();
  });

  it('serves calls unlimited, warns and counts, when the store cannot be reached (fail-open)', async () => {
    const broken = unreachableStore();
    const { metering, request, billing, headers, limiter, warnings } = setup({ store: broken });
    for (let i = 0; i < 5; i++) {
      const ticket = await metering.admit(request(10, 10));
      await ticket.settle(usage(10, 3), 'completed');
    }
    expect(billing.settled).toHaveLength(5);
    expect(headers).toEqual([]);
    expect(limiter.stats.failOpen).toBe(5);
    // One warning, not one per call.
    expect(warnings).toEqual(['rate limiter: store unreachable; serving calls without rate limits (fail-open)']);
  });

  it('asks a failing store again once a second, one call at a time; reads unreachable until it answers, and says when it does', async () => {
    // A store that hangs until its command times out (here 30 ms), as a Redis that stopped answering.
    let hung = true;
    let asked = 0;
    const memory = new MemoryRateLimitStore({ sweepIntervalMs: 0 });
    const hanging: RateLimitStore = {
      ...unreachableStore(),
      admit: async (...args) => {
        asked++;
        if (!hung) return memory.admit(...args);
        await new Promise((r) => setTimeout(r, 30));
        throw new Error('Command timed out');
      },
      reachable: () => true, // the socket is still open
    };
    const infos: string[] = [];
    const limiter = new RateLimiter(hanging, {
      storeRetryMs: 200,
      logger: { warn: () => {}, info: (_obj, msg) => infos.push(msg) },
    });
    const limits = { rpm: 100, tpm: 100_000 };
    expect((await limiter.health()).reachable).toBe(true);
    expect((await limiter.admit('acct_1', limits, 1)).state).toBeNull(); // asked, timed out: fail-open
    expect((await limiter.health()).reachable).toBe(false);
    // Calls meanwhile go on at once without asking.
    const started = Date.now();
    for (let i = 0; i < 20; i++) expect((await limiter.admit('acct_1', limits, 1)).state).toBeNull();
    expect(Date.now() - started).toBeLessThan(150);
    expect(asked).toBe(1);
    expect(limiter.stats.failOpen).toBe(21);
    // Past the wait one call asks again, the others still do not; it answers: limits apply again.
    hung = false;
    await new Promise((r) => setTimeout(r, 220));
    const [first, second] = await Promise.all([limiter.admit('acct_1', limits, 1), limiter.admit('acct_1', limits, 1)]);
    expect(asked).toBe(2);
    expect(first.state?.rpm.remaining).toBe(99);
    expect(second.state).toBeNull();
    expect((await limiter.health()).reachable).toBe(true);
    expect(infos).toEqual(['rate limiter: store answers again; rate limits apply']);
    expect((await limiter.admit('acct_1', limits, 1)).state?.rpm.remaining).toBe(98);
    expect(asked).toBe(3);

    // Failing again with no calls coming (a load balancer took the instance out): /readyz's own
    // check asks the store (a PING, once per wait), and finds it back.
    hung = true;
    expect((await limiter.admit('acct_1', limits, 1)).state).toBeNull();
    let pinged = 0;
    hanging.ping = async () => {
      pinged++;
      if (hung) throw new Error('Command timed out');
    };
    expect((await limiter.health()).reachable).toBe(false);
    expect(pinged).toBe(0); // within the wait: not asked
    await new Promise((r) => setTimeout(r, 220));
    expect((await limiter.health()).reachable).toBe(false);
    expect(pinged).toBe(1);
    hung = false;
    await new Promise((r) => setTimeout(r, 220));
    expect((await limiter.health()).reachable).toBe(true);
    expect(pinged).toBe(2);
    expect(infos).toHaveLength(2);
  });

  it('refuses calls with 503 when the store cannot be reached and fail_closed is set', async () => {
    const broken = unreachableStore();
    const { metering, request, billing } = setup({ store: broken, failClosed: true });
    const err = await rejection(metering.admit(request(10, 10)));
    expect(err.status).toBe(503);
    expect(err.retryAfter).toBe(1);
    expect(billing.admitted).toHaveLength(0);
  });
});
