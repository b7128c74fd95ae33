// The Redis backend: any number of tollgate instances share one limit per account. Each account
// has a hash of per-second slots (`r<slot>` requests, `t<slot>` tokens) with running totals of the
// window (`R`, `T`), the oldest slot that may still hold counts (`O`) and the newest admission's
// slot (`N`); a hash of per-minute 429 counts; and an alert marker. All of an account's keys share
// one hash tag (one cluster slot) and have a TTL, so idle state disappears on its own.
//
// Every operation is one Lua script, so a check and its count are atomic however many instances
// admit at once. The totals make the hot path O(1): a call only deletes the slots that left the
// window since the last one (usually none or one) instead of reading the whole window, reads and
// writes the state in two commands, and replies a handful of integers per admission; the
// per-slot counts are read only to compute a refusal's Retry-After. An account has at most one
// admit call out per instance: admissions that arrive meanwhile go together in the next one
// (decided one by one inside it), so under load the round trip and the script's fixed cost are
// shared. Time is Redis's own clock (TIME), so the instances' clocks need not agree; tests may
// pass a clock instead.
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
import { stateFromTotals } from './window.js';

const WINDOW_TTL_MS = (WINDOW_SLOTS + 1) * 1000;
const HITS_TTL_MS = (HITS_WINDOW_SECONDS + 2 * HITS_SLOT_SECONDS) * 1000;
const HIT_SLOTS_BACK = HITS_WINDOW_SECONDS / HITS_SLOT_SECONDS;
/** Integers per admission in the admit script's reply. */
const REPLY_SIZE = 9;
/** The most admissions of one account sent in one script call. */
const MAX_BATCH = 64;

// Shared prelude: the clock (ARGV[1] in ms, or Redis's TIME when empty), and the window state
// of an account read into Lua (`load`), changed there (`prune`, `apply_corrections`, admissions)
// and written back in one HSET (`save`). The hot path is two Redis calls (HMGET, HSET) however
// many admissions and corrections a call carries; pruning the slots that left the window costs
// two more, at most once a second.
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
-- Reads the totals, the current slot and the token slots of the corrections in ARGV[from], …
-- (slot, delta pairs). A state whose newest admission has left the window counts nothing any more
-- and is deleted.
local function load(key, from)
  local fields = {'O', 'N', 'R', 'T', 'r' .. cur, 't' .. cur}
  for i = from, #ARGV - 1, 2 do fields[#fields + 1] = 't' .. ARGV[i] end
  local v = redis.call('HMGET', key, unpack(fields))
  local s = {key = key, t = {}, changed = {}, newest = -1, R = 0, T = 0, rc = 0}
  local o, n = tonumber(v[1]), tonumber(v[2])
  if not o or not n or n < oldest then
    if o or n then redis.call('DEL', key) end
    s.t[cur] = 0
    return s
  end
  s.o, s.newest = o, n
  s.R, s.T = tonumber(v[3]) or 0, tonumber(v[4]) or 0
  s.rc = tonumber(v[5]) or 0
  local j = 7
  for i = from, #ARGV - 1, 2 do
    s.t[tonumber(ARGV[i])] = tonumber(v[j]) or 0
    j = j + 1
  end
  s.t[cur] = tonumber(v[6]) or 0
  return s
end
-- Takes the slots that have left the window out of the totals and deletes them.
local function prune(s)
  if s.newest < 0 or s.o >= oldest then return end
  local fields = {}
  for slot = s.o, oldest - 1 do
    fields[#fields + 1] = 'r' .. slot
    fields[#fields + 1] = 't' .. slot
  end
  local values = redis.call('HMGET', s.key, unpack(fields))
  for i = 1, #fields, 2 do
    s.R = s.R - (tonumber(values[i]) or 0)
    s.T = s.T - (tonumber(values[i + 1]) or 0)
  end
  redis.call('HDEL', s.key, unpack(fields))
  s.o = oldest
  s.o_changed, s.dirty = true, true
end
-- Applies the corrections in ARGV[from], … to the token counts, never below zero (only what a
-- slot held is given back); slots that left the window, or of a state that expired, are skipped.
local function apply_corrections(s, from)
  if s.newest < 0 then return end
  for i = from, #ARGV - 1, 2 do
    local slot, delta = tonumber(ARGV[i]), tonumber(ARGV[i + 1])
    if slot >= oldest and slot <= cur and delta ~= 0 then
      local before = s.t[slot] or 0
      local after = math.max(0, before + delta)
      s.T = s.T + after - before
      s.t[slot] = after
      s.changed[slot], s.dirty = true, true
    end
  end
end
-- Writes what changed in one HSET (and an HDEL for token slots corrected to zero), then starts
-- over with nothing changed. The TTL follows the newest admission, so it is refreshed when that
-- moves to a new second; corrections need none (the key lives a window past its newest admission).
local function save(s)
  if not s.dirty then return end
  local set, del = {'R', s.R, 'T', s.T}, {}
  if s.rc_changed then
    set[#set + 1] = 'r' .. cur
    set[#set + 1] = s.rc
  end
  for slot in pairs(s.changed) do
    if s.t[slot] > 0 then
      set[#set + 1] = 't' .. slot
      set[#set + 1] = s.t[slot]
    else
      del[#del + 1] = 't' .. slot
    end
  end
  if s.admitted and s.newest < 0 then s.o, s.o_changed = cur, true end
  if s.o_changed then
    set[#set + 1] = 'O'
    set[#set + 1] = s.o
  end
  local refresh = s.admitted and s.newest ~= cur
  if refresh then
    set[#set + 1] = 'N'
    set[#set + 1] = cur
    s.newest = cur
  end
  redis.call('HSET', s.key, unpack(set))
  if #del > 0 then redis.call('HDEL', s.key, unpack(del)) end
  if refresh then redis.call('PEXPIRE', s.key, ${WINDOW_TTL_MS}) end
  s.changed, s.dirty, s.rc_changed, s.o_changed, s.admitted = {}, false, false, false, false
end
`;

// KEYS: window, hits, alert. ARGV: now|'', n, then n admissions (rpm, tpm, tokens, alert threshold
// each), decided in order, then the account's pending corrections (slot, delta pairs), applied
// first. Returns ${REPLY_SIZE} integers per admission: {1, now, R, T, N, 0, 0, 0, 0} when admitted,
// {0, now, R, T, N, recent hits, alert, wait ms for RPM, wait ms for TPM} when refused (a wait of -1:
// never; 0: that limit was not exceeded).
const ADMIT = `${PRELUDE}
local key, n = KEYS[1], tonumber(ARGV[2])
local from = 3 + 4 * n
local s = load(key, from)
prune(s)
apply_corrections(s, from)
-- The per-slot counts of the window, read at the first refusal (for Retry-After).
local fields, values
local function wait_for(offset, used, cost, limit)
  if used + cost <= limit then return 0 end
  if cost > limit then return -1 end
  local left, wait = used, 0
  for i = 1, #fields, 2 do
    if left + cost <= limit then break end
    local count
    if i == #fields - 1 then
      -- The current second: as counted by this call so far.
      count = offset == 0 and s.rc or s.t[cur]
    else
      count = tonumber(values[i + offset]) or 0
    end
    left = left - count
    wait = (oldest + (i - 1) / 2 + ${WINDOW_SLOTS}) * 1000 - now
  end
  return wait
end
local function refuse(rpm, tpm, tokens, threshold)
  if not fields then
    save(s)
    fields = {}
    for slot = oldest, cur do
      fields[#fields + 1] = 'r' .. slot
      fields[#fields + 1] = 't' .. slot
    end
    values = redis.call('HMGET', key, unpack(fields))
  end
  local wait_r = wait_for(0, s.R, 1, rpm)
  local wait_t = wait_for(1, s.T, tokens, tpm)
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
  return hits, alert, wait_r, wait_t
end
local out = {}
for i = 0, n - 1 do
  local rpm, tpm = tonumber(ARGV[3 + 4 * i]), tonumber(ARGV[4 + 4 * i])
  local tokens, threshold = tonumber(ARGV[5 + 4 * i]), tonumber(ARGV[6 + 4 * i])
  local reply
  if s.R + 1 <= rpm and s.T + tokens <= tpm then
    s.R, s.T, s.rc = s.R + 1, s.T + tokens, s.rc + 1
    s.rc_changed, s.admitted, s.dirty = true, true, true
    if tokens > 0 then
      s.t[cur] = s.t[cur] + tokens
      s.changed[cur] = true
    end
    reply = {1, now, s.R, s.T, cur, 0, 0, 0, 0}
  else
    local hits, alert, wait_r, wait_t = refuse(rpm, tpm, tokens, threshold)
    local newest = s.newest
    if s.admitted then newest = cur end
    reply = {0, now, s.R, s.T, newest, hits, alert, wait_r, wait_t}
  end
  for j = 1, ${REPLY_SIZE} do out[#out + 1] = reply[j] end
end
save(s)
return out
`;

// KEYS: window. ARGV: now|'', then corrections (slot, delta pairs). Returns {now, R, T, N}.
const CORRECT = `${PRELUDE}
local s = load(KEYS[1], 2)
prune(s)
apply_corrections(s, 2)
save(s)
return {now, s.R, s.T, s.newest}
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
  /** After `now`: the count of admissions, 4 numbers per admission, then the corrections. */
  tollgateAdmit(window: string, hits: string, alert: string, now: string, ...numbers: number[]): Promise<number[]>;
  tollgateCorrect(window: string, now: string, ...corrections: number[]): Promise<number[]>;
  tollgateHits(hits: string, now: string): Promise<number>;
}

/** One admission's part of the admit script's reply. */
function admitResult(key: string, limits: RateLimits, reply: number[]): AdmitResult {
  const [admitted, nowMs, usedR, usedT, newest, hits, alert, waitR, waitT] = reply as [
    number,
    number,
    number,
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const state = stateFromTotals(limits, nowMs, usedR, usedT, newest);
  if (admitted === 1) return { admitted: true, ref: { key, slot: newest }, state };
  const exceeded: Dimension[] = [];
  if (waitR !== 0) exceeded.push('rpm');
  if (waitT !== 0) exceeded.push('tpm');
  const never = waitR < 0 || waitT < 0;
  return {
    admitted: false,
    exceeded,
    retryAfter: never ? null : Math.max(1, Math.ceil(Math.max(waitR, waitT) / 1000)),
    state,
    recentHits: hits,
    alert: alert === 1,
  };
}

interface AdmitQueue {
  /** A call of this account is out. */
  sending: boolean;
  waiting: {
    limits: RateLimits;
    tokens: number;
    alertThreshold: number;
    resolve: (result: AdmitResult) => void;
    reject: (err: unknown) => void;
  }[];
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
  /**
   * Corrections not sent yet, per account: slot → delta, and since when the oldest has waited
   * (performance.now()). In insertion order, so the first entry has waited longest.
   */
  private readonly pending = new Map<string, { since: number; slots: Map<number, number> }>();
  /** Admissions per account waiting for that account's call to Redis. */
  private readonly admitQueues = new Map<string, AdmitQueue>();
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

  /**
   * Admissions of one account go to Redis one call at a time: the first at once, and those that
   * arrive while a call is out wait for it and then go together in the next (each still decided on
   * its own, in arrival order, inside the script). Under load an account's calls share the round
   * trip and the script's fixed cost; when idle, nothing waits.
   */
  admit(key: string, limits: RateLimits, estimate: number, alertThreshold: number): Promise<AdmitResult> {
    const tokens = Math.max(0, Math.round(estimate));
    return new Promise((resolve, reject) => {
      let queue = this.admitQueues.get(key);
      if (!queue) this.admitQueues.set(key, (queue = { sending: false, waiting: [] }));
      queue.waiting.push({ limits, tokens, alertThreshold, resolve, reject });
      if (!queue.sending) void this.sendAdmissions(key, queue);
    });
  }

  private async sendAdmissions(key: string, queue: AdmitQueue): Promise<void> {
    queue.sending = true;
    const k = this.keys(key);
    while (queue.waiting.length > 0) {
      const batch = queue.waiting.splice(0, MAX_BATCH);
      const args: number[] = [batch.length];
      for (const a of batch) args.push(a.limits.rpm, a.limits.tpm, a.tokens, a.alertThreshold);
      const corrections = this.takePending(key);
      let reply: number[];
      try {
        reply = (await this.scripted.tollgateAdmit(k.window, k.hits, k.alert, this.clock(), ...args, ...corrections)).map(Number);
      } catch (err) {
        this.addPending(key, corrections);
        // Redis just failed this account's call (down, or silent past the command timeout): the
        // admissions that queued meanwhile get the same answer now, not one timeout per batch.
        for (const a of [...batch, ...queue.waiting.splice(0)]) a.reject(err);
        continue;
      }
      for (const [i, a] of batch.entries()) a.resolve(admitResult(key, a.limits, reply.slice(i * REPLY_SIZE, (i + 1) * REPLY_SIZE)));
    }
    queue.sending = false;
    this.admitQueues.delete(key);
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
      this.addPending(ref.key, [ref.slot, delta]);
      return null;
    }
    return this.sendCorrections(ref.key, limits, [ref.slot, delta]);
  }

  /** Sends every queued correction now (each account's in one call). */
  flush(): Promise<void> {
    return this.sendPending(Infinity);
  }

  /**
   * Sends the corrections that have waited correctionDelayMs (those of an account still admitting
   * calls ride with its next admission instead and are gone from the queue by now), then waits for
   * the next to come due.
   */
  private async flushDue(): Promise<void> {
    this.flushTimer = undefined;
    await this.sendPending(performance.now() - this.correctionDelayMs);
  }

  private async sendPending(waitingSince: number): Promise<void> {
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    const due: [string, number[]][] = [];
    for (const [key, entry] of this.pending) {
      if (entry.since > waitingSince) break;
      due.push([key, []]);
    }
    for (const item of due) item[1] = this.takePending(item[0]);
    this.armFlush();
    await Promise.all(
      due.map(async ([key, corrections]) => {
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

  /** Sets the timer for the correction that has waited longest, unless one is set. */
  private armFlush() {
    if (this.flushTimer) return;
    const first = this.pending.values().next();
    if (first.done) return;
    const wait = Math.max(0, first.value.since + this.correctionDelayMs - performance.now());
    this.flushTimer = setTimeout(() => void this.flushDue(), wait);
  }

  private async sendCorrections(key: string, limits: RateLimits | null, corrections: number[]): Promise<LimiterState | null> {
    const reply = (await this.scripted.tollgateCorrect(this.keys(key).window, this.clock(), ...corrections)).map(Number);
    const [nowMs, usedR, usedT, newest] = reply as [number, number, number, number];
    return limits ? stateFromTotals(limits, nowMs, usedR, usedT, newest) : null;
  }

  private takePending(key: string): number[] {
    const entry = this.pending.get(key);
    if (!entry) return [];
    this.pending.delete(key);
    const out: number[] = [];
    for (const [slot, delta] of entry.slots) if (delta !== 0) out.push(slot, delta);
    return out;
  }

  /** Queues corrections (slot, delta pairs) for the account's next call, or the flush. */
  private addPending(key: string, corrections: number[]) {
    if (corrections.length === 0) return;
    let entry = this.pending.get(key);
    if (!entry) this.pending.set(key, (entry = { since: performance.now(), slots: new Map() }));
    for (let i = 0; i < corrections.length; i += 2)
      entry.slots.set(corrections[i]!, (entry.slots.get(corrections[i]!) ?? 0) + corrections[i + 1]!);
    this.armFlush();
  }

  async recentHits(key: string): Promise<number> {
    return Number(await this.scripted.tollgateHits(this.keys(key).hits, this.clock()));
  }

  reachable(): boolean {
    return this.client.status === 'ready';
  }

  async ping(): Promise<void> {
    await this.client.ping();
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
