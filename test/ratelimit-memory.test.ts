// The in-memory rate-limit store: the shared behaviour (test/support/ratelimit-store-suite.ts) and
// what only it has, bounded memory.
import { describe, expect, it } from 'vitest';
import { MemoryRateLimitStore } from '../src/domain/ratelimit/memory-store.js';
import { describeRateLimitStore, manualClock } from './support/ratelimit-store-suite.js';

describeRateLimitStore('in-memory', async (clock) => new MemoryRateLimitStore({ now: clock.now, sweepIntervalMs: 0 }));

describe('in-memory rate-limit store memory', () => {
  it('drops an account state on its own once nothing of it counts any more', async () => {
    const clock = manualClock();
    const store = new MemoryRateLimitStore({ now: clock.now, sweepIntervalMs: 0 });
    await store.admit('acct_a', { rpm: 10, tpm: 100 }, 1, 100);
    await store.admit('acct_b', { rpm: 10, tpm: 100 }, 1, 100);
    expect(store.size).toBe(2);
    clock.advance(30_000);
    store.sweep();
    expect(store.size).toBe(2);
    clock.advance(31_000);
    store.sweep();
    expect(store.size).toBe(0);
    await store.close();
  });

  it('keeps the state of an account with recent 429s until its hits and alert have expired', async () => {
    const clock = manualClock();
    const store = new MemoryRateLimitStore({ now: clock.now, sweepIntervalMs: 0 });
    const limits = { rpm: 1, tpm: 100 };
    await store.admit('acct_a', limits, 1, 100);
    await store.admit('acct_a', limits, 1, 100);
    clock.advance(5 * 60_000);
    store.sweep();
    expect(await store.recentHits('acct_a')).toBe(1);
    clock.advance(6 * 60_000);
    store.sweep();
    expect(store.size).toBe(0);
    await store.close();
  });

  it('holds at most maxKeys accounts, dropping the least recently used', async () => {
    const clock = manualClock();
    const store = new MemoryRateLimitStore({ now: clock.now, sweepIntervalMs: 0, maxKeys: 3 });
    const limits = { rpm: 1, tpm: 100 };
    for (const key of ['a', 'b', 'c']) await store.admit(key, limits, 1, 100);
    // Touch "a" so that "b" is the least recently used.
    expect((await store.admit('a', limits, 1, 100)).admitted).toBe(false);
    await store.admit('d', limits, 1, 100);
    expect(store.size).toBe(3);
    // "b" was forgotten (it is admitted again); "a" and "c" were kept (still refused).
    expect((await store.admit('b', limits, 1, 100)).admitted).toBe(true);
    expect((await store.admit('a', limits, 1, 100)).admitted).toBe(false);
    await store.close();
  });
});
