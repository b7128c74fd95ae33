// The Redis backend: any number of tollgate instances share one limit per account. Each account
// has a hash of per-second slots (`r<slot>` requests, `t<slot>` tokens) with running totals of the
// window (`R`, `T`), the oldest slot that may still hold counts (`O`) and the newest admission's
// slot (`N`); a hash of per-minute 429 counts; and an alert marker. All of an account's keys share
// one hash tag (one cluster slot) and have a TTL, so idle state disappears on its own.
//
// Every operation is one Lua script, so a check and its count are atomic however many instances
// admit at once. The totals make the hot path O(1): a call only deletes the slots that left the
// window since the last one (usually none or one) instead of reading the whole window, and the
// reply is a handful of integers; the per-slot counts are read only to compute a refusal's
// Retry-After. Time is Redis's own clock (TIME), so the instances' clocks need not agree; tests
// may pass a clock instead.
import { Redis, type RedisOptions } from 'ioredis';
import {
  ALERT_INTERVAL_SECONDS,
  type AdmissionRef,
  type AdmitResult,
  type Dimension,
  HITS_SLOT_SECONDS,
  HITS_WINDOW_SECONDS,
  type LimiterState,
  type RateLimits,
  type RateLimitStore,
  WINDOW_SECONDS,
  WINDOW_SLOTS,
} from './types.js';

const WINDOW_TTL_MS = (WINDOW_SLOTS + 1) * 1000;
const HITS_TTL_MS = (HITS_WINDOW_SECONDS + 2 * HITS_SLOT_SECONDS) * 1000;
const HIT_SLOTS_BACK = HITS_WINDOW_SECONDS / HITS_SLOT_SECONDS;

// Shared prelude: the clock (ARGV[1] in ms, or Redis's TIME when empty), and `prune`, which
// removes from the totals and deletes the slots that have left the window.
const PRELUDE = `
local now
if ARGV[1] ~= '' then
  now = tonumber(ARGV[1])
else
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local cur = math.floor(now / 1000)
local oldest = cur - ${WINDOW_SECONDS}
local function prune(key)
  local head = redis.call('HMGET', key, 'O', 'N', 'R', 'T')
  local o, n = tonumber(head[1]), tonumber(head[2])
  if not o or not n then return 0, 0, -1 end
  if n < oldest then
    -- Even the newest admission has left the window: nothing of this state counts any more.
    redis.call('DEL', key)
    return 0, 0, -1
  end
  local used_r, used_t = tonumber(head[3]) or 0, tonumber(head[4]) or 0
  if o < oldest then
    local fields = {}
    for s = o, oldest - 1 do
      fields[#fields + 1] = 'r' .. s
      fields[#fields + 1] = 't' .. s
    end
    local values = redis.call('HMGET', key, unpack(fields))
    local gone_r, gone_t = 0, 0
    for i = 1, #fields, 2 do
      gone_r = gone_r + (tonumber(values[i]) or 0)
      gone_t = gone_t + (tonumber(values[i + 1]) or 0)
    end
    redis.call('HDEL', key, unpack(fields))
    if gone_r ~= 0 then used_r = redis.call('HINCRBY', key, 'R', -gone_r) end
    if gone_t ~= 0 then used_t = redis.call('HINCRBY', key, 'T', -gone_t) end
    redis.call('HSET', key, 'O', oldest)
  end
  return used_r, used_t, n
end
-- Applies the corrections in ARGV[from], ARGV[from + 1], … (slot, delta pairs) to the token
-- counts, never below zero; slots that left the window are skipped. No TTL to refresh: the key
-- lives at least a window past its newest admission, so past any slot still in the window.
-- Returns the new token total.
local function apply_corrections(key, from, used_t, newest)
  if newest < 0 then return used_t end
  for i = from, #ARGV - 1, 2 do
    local slot, delta = tonumber(ARGV[i]), tonumber(ARGV[i + 1])
    if slot >= oldest and slot <= cur and delta ~= 0 then
      local field = 't' .. slot
      local after = redis.call('HINCRBY', key, field, delta)
      -- Below zero: only what the slot held is given back.
      if after <= 0 then
        redis.call('HDEL', key, field)
        delta = delta - after
      end
      if delta ~= 0 then used_t = redis.call('HINCRBY', key, 'T', delta) end
    end
  end
  return used_t
end
`;

// KEYS: window, hits, alert. ARGV: now|'', rpm, tpm, tokens, alert threshold, then the account's
// pending corrections (slot, delta pairs), applied first. Admitted: {1, now, R, T, N}. Refused: {0, now, R, T, N, recent hits, alert, wait ms for RPM, wait
// ms for TPM} (a wait of -1: never; 0: that limit was not exceeded).
const ADMIT = `${PRELUDE}
local rpm, tpm, tokens, threshold = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local key = KEYS[1]
local used_r, used_t, newest = prune(key)
used_t = apply_corrections(key, 6, used_t, newest)
if used_r + 1 <= rpm and used_t + tokens <= tpm then
  redis.call('HINCRBY', key, 'r' .. cur, 1)
  redis.call('HINCRBY', key, 'R', 1)
  if tokens > 0 then
    redis.call('HINCRBY', key, 't' .. cur, tokens)
    redis.call('HINCRBY', key, 'T', tokens)
  end
  if newest < 0 then redis.call('HSET', key, 'O', cur) end
  -- The TTL follows the newest admission: refreshed once per second is enough.
  if newest ~= cur then
    redis.call('HSET', key, 'N', cur)
    redis.call('PEXPIRE', key, ${WINDOW_TTL_MS})
  end
  return {1, now, used_r + 1, used_t + tokens, cur}
end
-- How long until enough has left the window, per exceeded limit: walk the slots oldest first.
local fields = {}
for s = oldest, cur do
  fields[#fields + 1] = 'r' .. s
  fields[#fields + 1] = 't' .. s
end
local values = redis.call('HMGET', key, unpack(fields))
local function wait_for(offset, used, cost, limit)
  if used + cost <= limit then return 0 end
  if cost > limit then return -1 end
  local left, wait = used, 0
  for i = 1, #fields, 2 do
    if left + cost <= limit then break end
    left = left - (tonumber(values[i + offset]) or 0)
    wait = (oldest + (i - 1) / 2 + ${WINDOW_SLOTS}) * 1000 - now
  end
  return wait
end
local wait_r = wait_for(0, used_r, 1, rpm)
local wait_t = wait_for(1, used_t, tokens, tpm)
local h = math.floor(now / ${HITS_SLOT_SECONDS * 1000})
redis.call('HINCRBY', KEYS[2], h, 1)
redis.call('PEXPIRE', KEYS[2], ${HITS_TTL_MS})
local raw = redis.call('HGETALL', KEYS[2])
local hits, stale = 0, {}
for i = 1, #raw, 2 do
  if tonumber(raw[i]) < h - ${HIT_SLOTS_BACK} then stale[#stale + 1] = raw[i] else hits = hits + tonumber(raw[i + 1]) end
end
if #stale > 0 then redis.call('HDEL', KEYS[2], unpack(stale)) end
local alert = 0
if hits > threshold then
  -- The marker holds when the last alert was raised (on the scripts' clock); its TTL only cleans up.
  local last = tonumber(redis.call('GET', KEYS[3]) or '')
  if not last or now - last >= ${ALERT_INTERVAL_SECONDS * 1000} then
    redis.call('SET', KEYS[3], now, 'PX', ${ALERT_INTERVAL_SECONDS * 1000})
    alert = 1
  end
end
return {0, now, used_r, used_t, newest, hits, alert, wait_r, wait_t}
`;

// KEYS: window. ARGV: now|'', then corrections (slot, delta pairs). Returns {now, R, T, N}.
const CORRECT = `${PRELUDE}
local key = KEYS[1]
local used_r, used_t, newest = prune(key)
used_t = apply_corrections(key, 2, used_t, newest)
return {now, used_r, used_t, newest}
`;

// KEYS: hits. ARGV: now|''. Returns the 429s of the hits window.
const HITS = `${PRELUDE}
local h = math.floor(now / ${HITS_SLOT_SECONDS * 1000})
local raw = redis.call('HGETALL', KEYS[1])
local hits = 0
for i = 1, #raw, 2 do
  if tonumber(raw[i]) >= h - ${HIT_SLOTS_BACK} then hits = hits + tonumber(raw[i + 1]) end
end
return hits
`;

interface ScriptedRedis extends Redis {
  tollgateAdmit(window: string, hits: string, alert: string, now: string, rpm: number, tpm: number, tokens: number, threshold: number, ...corrections: number[]): Promise<number[]>;
  tollgateCorrect(window: string, now: string, ...corrections: number[]): Promise<number[]>;
  tollgateHits(hits: string, now: string): Promise<number>;
}

/**
 * The header state from the window's totals. Reset: when the newest admission leaves the window,
 * after which everything counted now has left it.
 */
function stateOf(limits: RateLimits, nowMs: number, usedR: number, usedT: number, newest: number): LimiterState {
  const reset = (used: number) => (used > 0 && newest >= 0 ? newest + WINDOW_SLOTS : Math.floor(nowMs / 1000));
  return {
    rpm: { limit: limits.rpm, remaining: Math.max(0, limits.rpm - usedR), reset: reset(usedR) },
    tpm: { limit: limits.tpm, remaining: Math.max(0, limits.tpm - usedT), reset: reset(usedT) },
  };
}

export interface RedisStoreOptions {
  /** Prepended to every key (tests use one per run). */
  prefix?: string;
  /** Milliseconds since the epoch; by default Redis's own clock. */
  now?: () => number;
  /** Passed to ioredis after tollgate's defaults (fail fast, no offline queue, auto-pipelining). */
  redis?: RedisOptions;
  /** Connection errors (ioredis emits them while Redis is away); by default ignored here. */
  onConnectionError?: (err: Error) => void;
  /**
   * How long a correction may wait to ride along with the account's next admission (one script
   * call per request instead of two under load) before it is sent on its own. 0: sent at once.
   */
  correctionDelayMs?: number;
  /** A deferred correction that could not be sent (the limiter counts and logs it). */
  onDeferredError?: (err: unknown) => void;
}

export class RedisRateLimitStore implements RateLimitStore {
  readonly name = 'redis';
  readonly client: Redis;
  private readonly scripted: ScriptedRedis;
  private readonly prefix: string;
  private readonly now: (() => number) | undefined;
  private readonly correctionDelayMs: number;
  private readonly onDeferredError: (err: unknown) => void;
  /** Corrections not sent yet, per account: slot → delta. */
  private readonly pending = new Map<string, Map<number, number>>();
  private flushTimer: NodeJS.Timeout | undefined;

  constructor(url: string, opts: RedisStoreOptions = {}) {
    this.prefix = opts.prefix ?? 'tollgate:';
    this.now = opts.now;
    this.correctionDelayMs = opts.correctionDelayMs ?? 20;
    this.onDeferredError = opts.onDeferredError ?? (() => {});
    // A limiter must not make requests wait on a Redis that is away: commands fail at once while
    // disconnected (no offline queue, no retries) and after a short timeout when Redis hangs, and
    // the limiter fails open or closed by config. The connection keeps retrying in the background.
    // Auto-pipelining sends the scripts of one event-loop turn in one write.
    this.client = new Redis(url, {
      lazyConnect: true,
      enableOfflineQueue: false,
      enableAutoPipelining: true,
      maxRetriesPerRequest: 0,
      commandTimeout: 1000,
      connectTimeout: 2000,
      retryStrategy: (times) => Math.min(100 * times, 2000),
      ...opts.redis,
    });
    // Without a listener, ioredis prints every failed reconnection to stderr.
    this.client.on('error', opts.onConnectionError ?? (() => {}));
    this.client.defineCommand('tollgateAdmit', { numberOfKeys: 3, lua: ADMIT });
    this.client.defineCommand('tollgateCorrect', { numberOfKeys: 1, lua: CORRECT });
    this.client.defineCommand('tollgateHits', { numberOfKeys: 1, lua: HITS });
    this.scripted = this.client as ScriptedRedis;
  }

  /** Connects; resolves false (and keeps retrying in the background) when Redis cannot be reached. */
  async connect(): Promise<boolean> {
    try {
      await this.client.connect();
      return true;
    } catch {
      return false;
    }
  }

  private keys(key: string) {
    // The hash tag keeps an account's keys in one cluster slot, as the scripts need.
    const base = `${this.prefix}rl:{${key}}`;
    return { window: `${base}:w`, hits: `${base}:h`, alert: `${base}:a` };
  }

  private clock(): string {
    return this.now ? String(Math.floor(this.now())) : '';
  }

  async admit(key: string, limits: RateLimits, estimate: number, alertThreshold: number): Promise<AdmitResult> {
    const k = this.keys(key);
    const tokens = Math.max(0, Math.round(estimate));
    const corrections = this.takePending(key);
    let reply: number[];
    try {
      reply = (await this.scripted.tollgateAdmit(k.window, k.hits, k.alert, this.clock(), limits.rpm, limits.tpm, tokens, alertThreshold, ...corrections)).map(Number);
    } catch (err) {
      this.restorePending(key, corrections);
      throw err;
    }
    const [admitted, nowMs, usedR, usedT, newest] = reply as [number, number, number, number, number];
    const state = stateOf(limits, nowMs, usedR, usedT, newest);
    if (admitted === 1) return { admitted: true, ref: { key, slot: newest }, state };
    const [, , , , , hits, alert, waitR, waitT] = reply as number[];
    const exceeded: Dimension[] = [];
    if (waitR !== 0) exceeded.push('rpm');
    if (waitT !== 0) exceeded.push('tpm');
    const never = waitR! < 0 || waitT! < 0;
    return {
      admitted: false,
      exceeded,
      retryAfter: never ? null : Math.max(1, Math.ceil(Math.max(waitR!, waitT!) / 1000)),
      state,
      recentHits: hits!,
      alert: alert === 1,
    };
  }

  /**
   * Sends the correction at once (correctionDelayMs 0), or queues it for the account's next
   * admission, or for the flush a moment later, and resolves null: the limiter then derives the
   * state from the admission's.
   */
  async correct(ref: AdmissionRef, limits: RateLimits, deltaTokens: number): Promise<LimiterState | null> {
    const delta = Math.round(deltaTokens);
    if (delta === 0) return null;
    if (this.correctionDelayMs > 0) {
      let slots = this.pending.get(ref.key);
      if (!slots) this.pending.set(ref.key, (slots = new Map()));
      slots.set(ref.slot, (slots.get(ref.slot) ?? 0) + delta);
      this.flushTimer ??= setTimeout(() => void this.flush(), this.correctionDelayMs);
      return null;
    }
    return this.sendCorrections(ref.key, limits, [ref.slot, delta]);
  }

  /** Sends every queued correction now (each account's in one call). */
  async flush(): Promise<void> {
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    const keys = [...this.pending.keys()];
    await Promise.all(
      keys.map(async (key) => {
        const corrections = this.takePending(key);
        if (corrections.length === 0) return;
        try {
          await this.sendCorrections(key, null, corrections);
        } catch (err) {
          // Given up: these calls stay counted at their estimates until their slots leave the window.
          this.onDeferredError(err);
        }
      }),
    );
  }

  private async sendCorrections(key: string, limits: RateLimits | null, corrections: number[]): Promise<LimiterState | null> {
    const reply = (await this.scripted.tollgateCorrect(this.keys(key).window, this.clock(), ...corrections)).map(Number);
    const [nowMs, usedR, usedT, newest] = reply as [number, number, number, number];
    return limits ? stateOf(limits, nowMs, usedR, usedT, newest) : null;
  }

  private takePending(key: string): number[] {
    const slots = this.pending.get(key);
    if (!slots) return [];
    this.pending.delete(key);
    const out: number[] = [];
    for (const [slot, delta] of slots) if (delta !== 0) out.push(slot, delta);
    return out;
  }

  private restorePending(key: string, corrections: number[]) {
    if (corrections.length === 0) return;
    let slots = this.pending.get(key);
    if (!slots) this.pending.set(key, (slots = new Map()));
    for (let i = 0; i < corrections.length; i += 2) slots.set(corrections[i]!, (slots.get(corrections[i]!) ?? 0) + corrections[i + 1]!);
    this.flushTimer ??= setTimeout(() => void this.flush(), this.correctionDelayMs);
  }

  async recentHits(key: string): Promise<number> {
    return Number(await this.scripted.tollgateHits(this.keys(key).hits, this.clock()));
  }

  async close(): Promise<void> {
    await this.flush();
    if (this.client.status === 'ready') {
      await this.client.quit().catch(() => this.client.disconnect());
    } else {
      this.client.disconnect();
    }
  }
}
