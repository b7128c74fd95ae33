// The behaviour every rate-limit store must have, run against the in-memory and the Redis
// backend alike. Time is an injected clock, never the wall clock: nothing here depends on how
// fast the machine is.
import { describe, expect, it } from 'vitest';
import type { AdmitResult, RateLimits, RateLimitStore } from '../../src/domain/ratelimit/types.js';

/** A clock tests move by hand (ms since the epoch), starting half-way through a second. */
export function manualClock(startMs = 1_800_000_000_500) {
  let now = startMs;
  return {
    now: () => now,
    set: (ms: number) => {
      now = ms;
    },
    advance: (ms: number) => {
      now += ms;
    },
  };
}

export type Clock = ReturnType<typeof manualClock>;

function admitted(r: AdmitResult): asserts r is Extract<AdmitResult, { admitted: true }> {
  expect(r.admitted).toBe(true);
}
function refused(r: AdmitResult): asserts r is Extract<AdmitResult, { admitted: false }> {
  expect(r.admitted).toBe(false);
}

/** A correction applied at once (the shared suite runs the Redis store without deferral). */
async function correctNow(store: RateLimitStore, ...args: Parameters<RateLimitStore['correct']>) {
  const state = await store.correct(...args);
  expect(state).not.toBeNull();
  return state!;
}

let counter = 0;
const uniqueKey = () => `acct_${process.pid}_${Date.now()}_${counter++}`;

/** Defines the shared tests; `make` returns a store on the given clock. */
export function describeRateLimitStore(name: string, make: (clock: Clock) => Promise<RateLimitStore>) {
  const withStore = async (fn: (store: RateLimitStore, clock: Clock) => Promise<void>) => {
    const clock = manualClock();
    const store = await make(clock);
    try {
      await fn(store, clock);
    } finally {
      await store.close();
    }
  };

  describe(`${name} rate-limit store`, () => {
    it('admits exactly the RPM limit in a window, then refuses the next with Retry-After and headers state', () =>
      withStore(async (store, clock) => {
        const key = uniqueKey();
        const limits: RateLimits = { rpm: 5, tpm: 1_000_000 };
        const second = Math.floor(clock.now() / 1000);
        for (let i = 0; i < 5; i++) {
          const r = await store.admit(key, limits, 10, 100);
          admitted(r);
          expect(r.state.rpm).toEqual({ limit: 5, remaining: 4 - i, reset: second + 61 });
          expect(r.state.tpm).toEqual({ limit: 1_000_000, remaining: 1_000_000 - 10 * (i + 1), reset: second + 61 });
        }
        const sixth = await store.admit(key, limits, 10, 100);
        refused(sixth);
        expect(sixth.exceeded).toEqual(['rpm']);
        // Counted in the slot of `second`, which stops counting at second + 61; the clock is at second + 0.5.
        expect(sixth.retryAfter).toBe(61);
        expect(sixth.state.rpm.remaining).toBe(0);
        expect(sixth.state.tpm.remaining).toBe(1_000_000 - 50);
        expect(sixth.recentHits).toBe(1);
        // A refused request is not counted: the state is the same on the next try.
        const seventh = await store.admit(key, limits, 10, 100);
        refused(seventh);
        expect(seventh.state).toEqual(sixth.state);
      }));

    it('admits token estimates up to the TPM limit exactly and refuses one that does not fit', () =>
      withStore(async (store, clock) => {
        const key = uniqueKey();
        const limits: RateLimits = { rpm: 100, tpm: 10_000 };
        admitted(await store.admit(key, limits, 4_000, 100));
        clock.advance(10_000);
        admitted(await store.admit(key, limits, 4_000, 100));
        const third = await store.admit(key, limits, 4_000, 100);
        refused(third);
        expect(third.exceeded).toEqual(['tpm']);
        expect(third.state.tpm.remaining).toBe(2_000);
        // Enough leaves when the first slot does: 61 s after its second began, the clock is 10.5 s in.
        expect(third.retryAfter).toBe(51);
        const exact = await store.admit(key, limits, 2_000, 100);
        admitted(exact);
        expect(exact.state.tpm.remaining).toBe(0);
      }));

    it('refuses an estimate larger than the whole TPM limit with no Retry-After, even on an empty window', () =>
      withStore(async (store) => {
        const r = await store.admit(uniqueKey(), { rpm: 100, tpm: 10_000 }, 10_001, 100);
        refused(r);
        expect(r.exceeded).toEqual(['tpm']);
        expect(r.retryAfter).toBeNull();
        expect(r.state.tpm.remaining).toBe(10_000);
      }));

    it('names both limits when both are exceeded', () =>
      withStore(async (store) => {
        const key = uniqueKey();
        const limits = { rpm: 1, tpm: 100 };
        admitted(await store.admit(key, limits, 100, 100));
        const r = await store.admit(key, limits, 1, 100);
        refused(r);
        expect(r.exceeded).toEqual(['rpm', 'tpm']);
      }));

    it('corrects a count to the real usage, downwards and upwards, never below zero', () =>
      withStore(async (store, clock) => {
        const key = uniqueKey();
        const limits = { rpm: 100, tpm: 10_000 };
        const a = await store.admit(key, limits, 8_000, 100);
        admitted(a);
        refused(await store.admit(key, limits, 7_000, 100));
        clock.advance(5_000);
        const down = await correctNow(store, a.ref, limits, -6_000);
        expect(down.tpm.remaining).toBe(8_000);
        expect(down.rpm.remaining).toBe(99); // the request itself stays counted
        const b = await store.admit(key, limits, 7_000, 100);
        admitted(b);
        expect(b.state.tpm.remaining).toBe(1_000);
        const up = await correctNow(store, b.ref, limits, 500);
        expect(up.tpm.remaining).toBe(500);
        const floor = await correctNow(store, a.ref, limits, -1_000_000);
        expect(floor.tpm.remaining).toBe(10_000 - 7_500);
      }));

    it('ignores a correction of a slot that has already left the window', () =>
      withStore(async (store, clock) => {
        const key = uniqueKey();
        const limits = { rpm: 100, tpm: 10_000 };
        const old = await store.admit(key, limits, 1_000, 100);
        admitted(old);
        clock.advance(61_000);
        const fresh = await store.admit(key, limits, 2_000, 100);
        admitted(fresh);
        expect(fresh.state.tpm.remaining).toBe(8_000);
        const after = await correctNow(store, old.ref, limits, 5_000);
        expect(after.tpm.remaining).toBe(8_000);
      }));

    it('lets a request in again exactly when the oldest counted second leaves the window', () =>
      withStore(async (store, clock) => {
        const key = uniqueKey();
        const limits = { rpm: 3, tpm: 1_000_000 };
        const start = clock.now();
        for (let i = 0; i < 3; i++) admitted(await store.admit(key, limits, 1, 100));
        const r = await store.admit(key, limits, 1, 100);
        refused(r);
        const opensAt = (Math.floor(start / 1000) + 61) * 1000;
        clock.set(opensAt - 1);
        refused(await store.admit(key, limits, 1, 100));
        clock.set(opensAt);
        const again = await store.admit(key, limits, 1, 100);
        admitted(again);
        // All three left together (one second held them); this one is counted.
        expect(again.state.rpm.remaining).toBe(2);
        expect(again.state.rpm.reset).toBe(Math.floor(opensAt / 1000) + 61);
      }));

    it('keeps exact totals as seconds leave the window one by one, and after an idle spell starts from zero', () =>
      withStore(async (store, clock) => {
        const key = uniqueKey();
        const limits = { rpm: 100, tpm: 100_000 };
        // One admission per second for 10 s, each of 100 + i tokens.
        for (let i = 0; i < 10; i++) {
          admitted(await store.admit(key, limits, 100 + i, 100));
          clock.advance(1_000);
        }
        // 61 s after the first: it has left, the other nine still count.
        clock.advance(51_000);
        let r = await store.admit(key, limits, 1, 100);
        admitted(r);
        const nine = 9 * 100 + (1 + 2 + 3 + 4 + 5 + 6 + 7 + 8 + 9);
        expect(r.state.rpm.remaining).toBe(100 - 10);
        expect(r.state.tpm.remaining).toBe(100_000 - nine - 1);
        // Five seconds later five more have left (the second to the sixth); four remain.
        clock.advance(5_000);
        r = await store.admit(key, limits, 1, 100);
        admitted(r);
        expect(r.state.rpm.remaining).toBe(100 - 6);
        expect(r.state.tpm.remaining).toBe(100_000 - (106 + 107 + 108 + 109) - 2);
        // Ten idle minutes later nothing of before counts.
        clock.advance(600_000);
        r = await store.admit(key, limits, 7, 100);
        admitted(r);
        expect(r.state.rpm.remaining).toBe(99);
        expect(r.state.tpm.remaining).toBe(100_000 - 7);
      }));

    it('never admits more than the limit in any 60-second span, even at window edges', () =>
      withStore(async (store, clock) => {
        const key = uniqueKey();
        const limits = { rpm: 7, tpm: 1_000_000 };
        const admittedAt: number[] = [];
        // A client retrying every 250 ms for 5 minutes, with an irregular phase.
        for (let i = 0; i < 1200; i++) {
          clock.advance(i % 3 === 0 ? 130 : 310);
          const r = await store.admit(key, limits, 1, 1_000_000);
          if (r.admitted) admittedAt.push(clock.now());
        }
        let worst = 0;
        for (let i = 0; i < admittedAt.length; i++) {
          let j = i;
          while (j < admittedAt.length && admittedAt[j]! - admittedAt[i]! <= 60_000) j++;
          worst = Math.max(worst, j - i);
        }
        expect(worst).toBe(7);
        // …and the limit is really given: 7 per window of 61 s over about 300 s of traffic.
        expect(admittedAt.length).toBeGreaterThanOrEqual(7 * 4);
      }));

    it('counts 429s over 10 minutes and raises the alert once an hour at most', () =>
      withStore(async (store, clock) => {
        const key = uniqueKey();
        const limits = { rpm: 1, tpm: 1_000_000 };
        admitted(await store.admit(key, limits, 1, 3));
        const alerts: boolean[] = [];
        for (let i = 0; i < 6; i++) {
          const r = await store.admit(key, limits, 1, 3);
          refused(r);
          expect(r.recentHits).toBe(i + 1);
          alerts.push(r.alert);
        }
        // More than 3 hits: the fourth raises it; the next ones do not.
        expect(alerts).toEqual([false, false, false, true, false, false]);
        expect(await store.recentHits(key)).toBe(6);
        clock.advance(11 * 60_000);
        expect(await store.recentHits(key)).toBe(0);
        // Twenty minutes after the alert, hits over the threshold again: still within the hour.
        clock.advance(9 * 60_000);
        admitted(await store.admit(key, limits, 1, 3));
        const again: boolean[] = [];
        for (let i = 0; i < 5; i++) {
          const r = await store.admit(key, limits, 1, 3);
          refused(r);
          again.push(r.alert);
        }
        expect(again).toEqual([false, false, false, false, false]);
        // An hour after the alert, it may be raised again.
        clock.advance(40 * 60_000);
        admitted(await store.admit(key, limits, 1, 3));
        const later: boolean[] = [];
        for (let i = 0; i < 5; i++) {
          const r = await store.admit(key, limits, 1, 3);
          refused(r);
          later.push(r.alert);
        }
        expect(later).toEqual([false, false, false, true, false]);
        expect(await store.recentHits(`${key}_never_seen`)).toBe(0);
      }));

    it('keeps accounts apart', () =>
      withStore(async (store) => {
        const a = uniqueKey();
        const b = uniqueKey();
        const limits = { rpm: 1, tpm: 1_000 };
        admitted(await store.admit(a, limits, 1, 100));
        refused(await store.admit(a, limits, 1, 100));
        admitted(await store.admit(b, limits, 1, 100));
      }));
  });
}
