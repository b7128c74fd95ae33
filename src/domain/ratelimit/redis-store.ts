// The Redis backend: any number of tollgate instances share one limit per account. Each account
// has a hash of per-second slots (`r<slot>` requests, `t<slot>` tokens), a hash of per-minute 429
// counts and an alert marker, all under one hash tag (one cluster slot) and all with a TTL, so
// idle state disappears on its own. Every operation is one Lua script, so a check and its count
// are atomic however many instances admit at once. Time is Redis's own clock (TIME), so the
// instances' clocks need not agree; tests may pass a clock instead.
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
} from './types.js';
import { retryAfterSeconds, type SlotCount, windowState } from './window.js';

// Shared prelude: the clock (ARGV[1] in ms, or Redis's TIME when empty) and the reading of the
// window hash, which deletes slots that have left the window and returns the rest.
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
local function read_window(key)
  local raw = redis.call('HGETALL', key)
  local live, stale = {}, {}
  local used_r, used_t = 0, 0
  for i = 1, #raw, 2 do
    local field = raw[i]
    local slot = tonumber(string.sub(field, 2))
    local value = tonumber(raw[i + 1])
    if slot < oldest then
      stale[#stale + 1] = field
    else
      live[#live + 1] = field
      live[#live + 1] = value
      if string.sub(field, 1, 1) == 'r' then used_r = used_r + value else used_t = used_t + value end
    end
  end
  if #stale > 0 then redis.call('HDEL', key, unpack(stale)) end
  return live, used_r, used_t
end
`;

const WINDOW_TTL_MS = (WINDOW_SECONDS + 2) * 1000;
const HITS_TTL_MS = (HITS_WINDOW_SECONDS + 2 * HITS_SLOT_SECONDS) * 1000;
const HIT_SLOTS_BACK = HITS_WINDOW_SECONDS / HITS_SLOT_SECONDS;

// KEYS: window, hits, alert. ARGV: now|'', rpm, tpm, tokens, alert threshold.
// Returns {admitted, now, slot, recent hits, alert, field, value, field, value, …} (the live slots
// after the admission).
const ADMIT = `${PRELUDE}
local rpm, tpm, tokens, threshold = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local live, used_r, used_t = read_window(KEYS[1])
if used_r + 1 <= rpm and used_t + tokens <= tpm then
  redis.call('HINCRBY', KEYS[1], 'r' .. cur, 1)
  if tokens > 0 then redis.call('HINCRBY', KEYS[1], 't' .. cur, tokens) end
  redis.call('PEXPIRE', KEYS[1], ${WINDOW_TTL_MS})
  live[#live + 1] = 'r' .. cur
  live[#live + 1] = 1
  live[#live + 1] = 't' .. cur
  live[#live + 1] = tokens
  local out = {1, now, cur, 0, 0}
  for i = 1, #live do out[#out + 1] = live[i] end
  return out
end
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
local out = {0, now, cur, hits, alert}
for i = 1, #live do out[#out + 1] = live[i] end
return out
`;

// KEYS: window. ARGV: now|'', slot, delta tokens. Returns {now, field, value, …}.
const CORRECT = `${PRELUDE}
local slot, delta = tonumber(ARGV[2]), tonumber(ARGV[3])
if slot >= oldest and slot <= cur and delta ~= 0 then
  local field = 't' .. slot
  local v = redis.call('HINCRBY', KEYS[1], field, delta)
  if v <= 0 then redis.call('HDEL', KEYS[1], field) else redis.call('PEXPIRE', KEYS[1], ${WINDOW_TTL_MS}) end
end
local live = read_window(KEYS[1])
local out = {now}
for i = 1, #live do out[#out + 1] = live[i] end
return out
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

type ScriptReply = (string | number)[];

interface ScriptedRedis extends Redis {
  tollgateAdmit(window: string, hits: string, alert: string, now: string, rpm: number, tpm: number, tokens: number, threshold: number): Promise<ScriptReply>;
  tollgateCorrect(window: string, now: string, slot: number, delta: number): Promise<ScriptReply>;
  tollgateHits(hits: string, now: string): Promise<number>;
}

/** The live slots of a script reply, from `from` on: field/value pairs. */
function slotsOf(reply: ScriptReply, from: number): SlotCount[] {
  const bySlot = new Map<number, SlotCount>();
  for (let i = from; i + 1 < reply.length; i += 2) {
    const field = String(reply[i]);
    const slot = Number(field.slice(1));
    const value = Number(reply[i + 1]);
    let s = bySlot.get(slot);
    if (!s) bySlot.set(slot, (s = { slot, requests: 0, tokens: 0 }));
    if (field[0] === 'r') s.requests += value;
    else s.tokens += value;
  }
  return [...bySlot.values()];
}

export interface RedisStoreOptions {
  /** Prepended to every key (tests use one per run). */
  prefix?: string;
  /** Milliseconds since the epoch; by default Redis's own clock. */
  now?: () => number;
  /** Passed to ioredis after tollgate's defaults (fail fast, no offline queue). */
  redis?: RedisOptions;
  /** Connection errors (ioredis emits them while Redis is away); by default ignored here. */
  onConnectionError?: (err: Error) => void;
}

export class RedisRateLimitStore implements RateLimitStore {
  readonly name = 'redis';
  readonly client: Redis;
  private readonly scripted: ScriptedRedis;
  private readonly prefix: string;
  private readonly now: (() => number) | undefined;

  constructor(url: string, opts: RedisStoreOptions = {}) {
    this.prefix = opts.prefix ?? 'tollgate:';
    this.now = opts.now;
    // A limiter must not make requests wait on a Redis that is away: commands fail at once while
    // disconnected (no offline queue, no retries) and after a short timeout when Redis hangs, and
    // the limiter fails open or closed by config. The connection keeps retrying in the background.
    this.client = new Redis(url, {
      lazyConnect: true,
      enableOfflineQueue: false,
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
    const reply = await this.scripted.tollgateAdmit(k.window, k.hits, k.alert, this.clock(), limits.rpm, limits.tpm, tokens, alertThreshold);
    const [admitted, nowMs, slot, hits, alert] = reply.slice(0, 5).map(Number) as [number, number, number, number, number];
    const live = slotsOf(reply, 5);
    if (admitted === 1) return { admitted: true, ref: { key, slot }, state: windowState(live, nowMs, limits) };
    // The refused request was not counted: the live slots are the state it met.
    const exceeded: Dimension[] = [];
    const usedR = live.reduce((a, s) => a + s.requests, 0);
    const usedT = live.reduce((a, s) => a + s.tokens, 0);
    if (usedR + 1 > limits.rpm) exceeded.push('rpm');
    if (usedT + tokens > limits.tpm) exceeded.push('tpm');
    return {
      admitted: false,
      exceeded,
      retryAfter: retryAfterSeconds(live, nowMs, limits, tokens, exceeded),
      state: windowState(live, nowMs, limits),
      recentHits: hits,
      alert: alert === 1,
    };
  }

  async correct(ref: AdmissionRef, limits: RateLimits, deltaTokens: number): Promise<LimiterState> {
    const reply = await this.scripted.tollgateCorrect(this.keys(ref.key).window, this.clock(), ref.slot, Math.round(deltaTokens));
    return windowState(slotsOf(reply, 1), Number(reply[0]), limits);
  }

  async recentHits(key: string): Promise<number> {
    return Number(await this.scripted.tollgateHits(this.keys(key).hits, this.clock()));
  }

  async close(): Promise<void> {
    if (this.client.status === 'ready') {
      await this.client.quit().catch(() => this.client.disconnect());
    } else {
      this.client.disconnect();
    }
  }
}
