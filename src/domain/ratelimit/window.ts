// The arithmetic of the sliding window, shared by both backends: given the per-second slots of an
// account still in the window, what the client is told (remaining, reset) and how long a refused
// request must wait. The admission decision itself happens inside each store (atomically); the
// stores keep running totals and this module derives the rest, so both backends report the same
// numbers for the same counts.
import { type Dimension, type LimiterState, type RateLimits, WINDOW_SECONDS, WINDOW_SLOTS } from './types.js';

/** One second of the window: what was admitted during it. */
export interface SlotCount {
  slot: number;
  requests: number;
  tokens: number;
}

export const slotOf = (nowMs: number) => Math.floor(nowMs / 1000);

/** The oldest slot that still counts at `nowMs`. */
export const oldestSlot = (nowMs: number) => slotOf(nowMs) - WINDOW_SECONDS;

/** Unix seconds at which a slot stops counting. */
export const slotExpiry = (slot: number) => slot + WINDOW_SLOTS;

const amount = (s: SlotCount, d: Dimension) => (d === 'rpm' ? s.requests : s.tokens);

export function used(slots: readonly SlotCount[], d: Dimension): number {
  let sum = 0;
  for (const s of slots) sum += amount(s, d);
  return sum;
}

/**
 * The header state of both dimensions from what the window holds in total and the slot of the newest
 * admission (-1: none). Reset is when the newest admission leaves the window: by then everything
 * counted now has left it.
 */
export function stateFromTotals(limits: RateLimits, nowMs: number, usedRequests: number, usedTokens: number, newest: number): LimiterState {
  return {
    rpm: { limit: limits.rpm, remaining: Math.max(0, limits.rpm - usedRequests), reset: resetAt(usedRequests, newest, nowMs) },
    tpm: { limit: limits.tpm, remaining: Math.max(0, limits.tpm - usedTokens), reset: resetAt(usedTokens, newest, nowMs) },
  };
}

function resetAt(used: number, newest: number, nowMs: number): number {
  return used > 0 && newest >= 0 ? slotExpiry(newest) : slotOf(nowMs);
}

/** Which limits a request of `tokens` would break now (empty: it fits). */
export function exceededLimits(slots: readonly SlotCount[], limits: RateLimits, tokens: number): Dimension[] {
  const out: Dimension[] = [];
  if (used(slots, 'rpm') + 1 > limits.rpm) out.push('rpm');
  if (used(slots, 'tpm') + tokens > limits.tpm) out.push('tpm');
  return out;
}

/**
 * Whole seconds until a request of `tokens` fits in every dimension of `exceeded`, waiting for the
 * oldest slots to leave the window; null when it never fits (its estimate is over the TPM limit).
 */
export function retryAfterSeconds(
  slots: readonly SlotCount[],
  nowMs: number,
  limits: RateLimits,
  tokens: number,
  exceeded: readonly Dimension[],
): number | null {
  const ordered = [...slots].sort((a, b) => a.slot - b.slot);
  let wait = 0;
  for (const d of exceeded) {
    const cost = d === 'rpm' ? 1 : tokens;
    if (cost > limits[d]) return null;
    let left = used(ordered, d);
    for (const s of ordered) {
      if (left + cost <= limits[d]) break;
      left -= amount(s, d);
      // This slot's expiry is the earliest moment enough has left the window.
      wait = Math.max(wait, slotExpiry(s.slot) * 1000 - nowMs);
    }
  }
  return Math.max(1, Math.ceil(wait / 1000));
}
