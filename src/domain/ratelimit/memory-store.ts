// The in-memory backend: the embedded default for one instance. Each account has a ring of
// per-second slots (fixed size, so memory per account is bounded) and a ring of per-minute 429
// counts. Node runs one piece of JavaScript at a time and no method awaits in the middle, so each
// call is atomic. Memory is bounded twice: a sweep drops states with nothing left in any window,
// and past `maxKeys` the least recently used state is dropped (forgetting its usage; with the
// default bound that takes 100 000 accounts active within one minute).
import {
  ALERT_INTERVAL_SECONDS,
  type AdmissionRef,
  type AdmitResult,
  HITS_SLOT_SECONDS,
  HITS_WINDOW_SECONDS,
  type LimiterState,
  type RateLimits,
  type RateLimitStore,
  WINDOW_SLOTS,
} from './types.js';
import { exceededLimits, oldestSlot, retryAfterSeconds, type SlotCount, slotExpiry, slotOf, stateFromTotals } from './window.js';

const HIT_SLOTS = HITS_WINDOW_SECONDS / HITS_SLOT_SECONDS + 1;

class AccountWindow {
  /** The absolute slot each ring cell holds (-1: none yet). */
  readonly slotIds = new Float64Array(WINDOW_SLOTS).fill(-1);
  readonly requests = new Float64Array(WINDOW_SLOTS);
  readonly tokens = new Float64Array(WINDOW_SLOTS);
  /** What the slots from `oldest` on hold, in total (kept as they change: admitting is O(1)). */
  usedRequests = 0;
  usedTokens = 0;
  /** The oldest slot the totals may still include. */
  oldest = -1;
  /** The slot of the newest admission (-1: none yet). */
  newest = -1;
  readonly hitSlotIds = new Float64Array(HIT_SLOTS).fill(-1);
  readonly hits = new Float64Array(HIT_SLOTS);
  alertUntilMs = 0;
  /** When nothing of this state matters any more (the sweep may drop it). */
  expiresAtMs = 0;

  /** The slots still in the window at `nowMs`. */
  live(nowMs: number): SlotCount[] {
    const cur = slotOf(nowMs);
    const oldest = oldestSlot(nowMs);
    const out: SlotCount[] = [];
    for (let i = 0; i < WINDOW_SLOTS; i++) {
      const slot = this.slotIds[i]!;
      if (slot >= oldest && slot <= cur) out.push({ slot, requests: this.requests[i]!, tokens: this.tokens[i]! });
    }
    return out;
  }

  /** Takes the slots that have left the window at `nowMs` out of the totals. */
  advance(nowMs: number) {
    const oldest = oldestSlot(nowMs);
    if (oldest <= this.oldest) return;
    if (oldest - this.oldest >= WINDOW_SLOTS) {
      // Everything counted has left (an idle minute): start over.
      this.usedRequests = 0;
      this.usedTokens = 0;
    } else {
      for (let slot = this.oldest; slot < oldest; slot++) {
        const i = slot % WINDOW_SLOTS;
        if (this.slotIds[i] !== slot) continue;
        this.usedRequests -= this.requests[i]!;
        this.usedTokens -= this.tokens[i]!;
        this.slotIds[i] = -1;
      }
    }
    this.oldest = oldest;
  }

  /** The header state at `nowMs` (after `advance`). */
  state(nowMs: number, limits: RateLimits): LimiterState {
    return stateFromTotals(limits, nowMs, this.usedRequests, this.usedTokens, this.newest);
  }

  /** Counts an admission in the current slot (after `advance`). */
  admit(slot: number, tokens: number) {
    const i = slot % WINDOW_SLOTS;
    if (this.slotIds[i] !== slot) {
      this.slotIds[i] = slot;
      this.requests[i] = 0;
      this.tokens[i] = 0;
    }
    this.requests[i]! += 1;
    this.tokens[i]! += tokens;
    this.usedRequests += 1;
    this.usedTokens += tokens;
    this.newest = slot;
  }

  /** Adds `delta` tokens to a slot still in the window (after `advance`), never below zero. */
  correct(slot: number, delta: number) {
    const i = slot % WINDOW_SLOTS;
    if (slot < this.oldest || this.slotIds[i] !== slot) return;
    const after = Math.max(0, this.tokens[i]! + delta);
    this.usedTokens += after - this.tokens[i]!;
    this.tokens[i] = after;
  }

  recordHit(nowMs: number): number {
    const h = Math.floor(nowMs / (HITS_SLOT_SECONDS * 1000));
    const i = h % HIT_SLOTS;
    if (this.hitSlotIds[i] !== h) {
      this.hitSlotIds[i] = h;
      this.hits[i] = 0;
    }
    this.hits[i]! += 1;
    return this.recentHits(nowMs);
  }

  recentHits(nowMs: number): number {
    const h = Math.floor(nowMs / (HITS_SLOT_SECONDS * 1000));
    let sum = 0;
    for (let i = 0; i < HIT_SLOTS; i++) {
      const slot = this.hitSlotIds[i]!;
      if (slot >= h - (HIT_SLOTS - 1) && slot <= h) sum += this.hits[i]!;
    }
    return sum;
  }

  keepUntil(ms: number) {
    if (ms > this.expiresAtMs) this.expiresAtMs = ms;
  }
}

export interface MemoryStoreOptions {
  /** Milliseconds since the epoch; tests move it. */
  now?: () => number;
  /** Most accounts kept; past it the least recently used is dropped. */
  maxKeys?: number;
  /** How often expired states are dropped (0: only when `sweep()` is called). */
  sweepIntervalMs?: number;
}

export class MemoryRateLimitStore implements RateLimitStore {
  readonly name = 'memory';
  private readonly windows = new Map<string, AccountWindow>();
  private readonly now: () => number;
  private readonly maxKeys: number;
  private readonly timer: NodeJS.Timeout | undefined;
  private lastFullSweepMs = -Infinity;

  constructor(opts: MemoryStoreOptions = {}) {
    this.now = opts.now ?? Date.now;
    this.maxKeys = opts.maxKeys ?? 100_000;
    const every = opts.sweepIntervalMs ?? 30_000;
    if (every > 0) this.timer = setInterval(() => this.sweep(), every).unref();
  }

  /** Accounts with state held (for tests and metrics). */
  get size(): number {
    return this.windows.size;
  }

  admit(key: string, limits: RateLimits, tokens: number, alertThreshold: number): AdmitResult {
    const nowMs = this.now();
    const w = this.touch(key);
    w.advance(nowMs);
    if (w.usedRequests + 1 <= limits.rpm && w.usedTokens + tokens <= limits.tpm) {
      const slot = slotOf(nowMs);
      w.admit(slot, tokens);
      w.keepUntil(slotExpiry(slot) * 1000);
      return { admitted: true, ref: { key, slot }, state: w.state(nowMs, limits) };
    }
    // Refused: the per-slot counts tell how long until it would fit.
    const live = w.live(nowMs);
    const exceeded = exceededLimits(live, limits, tokens);
    const recentHits = w.recordHit(nowMs);
    w.keepUntil(nowMs + (HITS_WINDOW_SECONDS + HITS_SLOT_SECONDS) * 1000);
    let alert = false;
    if (recentHits > alertThreshold && w.alertUntilMs <= nowMs) {
      w.alertUntilMs = nowMs + ALERT_INTERVAL_SECONDS * 1000;
      w.keepUntil(w.alertUntilMs);
      alert = true;
    }
    return {
      admitted: false,
      exceeded,
      retryAfter: retryAfterSeconds(live, nowMs, limits, tokens, exceeded),
      state: w.state(nowMs, limits),
      recentHits,
      alert,
    };
  }

  correct(ref: AdmissionRef, limits: RateLimits, deltaTokens: number): LimiterState {
    const nowMs = this.now();
    const w = this.windows.get(ref.key);
    if (!w) return stateFromTotals(limits, nowMs, 0, 0, -1);
    w.advance(nowMs);
    w.correct(ref.slot, deltaTokens);
    return w.state(nowMs, limits);
  }

  async recentHits(key: string): Promise<number> {
    return this.windows.get(key)?.recentHits(this.now()) ?? 0;
  }

  /** Drops every state with nothing left to count. */
  sweep(): void {
    const nowMs = this.now();
    for (const [key, w] of this.windows) if (w.expiresAtMs <= nowMs) this.windows.delete(key);
  }

  reachable(): boolean {
    return true;
  }

  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.windows.clear();
  }

  /** The key's state, moved to the most recently used end (a Map iterates in insertion order). */
  private touch(key: string): AccountWindow {
    let w = this.windows.get(key);
    if (w) {
      this.windows.delete(key);
    } else {
      w = new AccountWindow();
      if (this.windows.size >= this.maxKeys) this.evictOldest();
    }
    this.windows.set(key, w);
    return w;
  }

  private evictOldest() {
    // Expired states first (a full sweep at most once a second, so a full map stays cheap); then
    // the least recently used.
    const nowMs = this.now();
    if (nowMs - this.lastFullSweepMs >= 1000) {
      this.lastFullSweepMs = nowMs;
      this.sweep();
      if (this.windows.size < this.maxKeys) return;
    }
    const oldest = this.windows.keys().next();
    if (!oldest.done) this.windows.delete(oldest.value);
  }
}
