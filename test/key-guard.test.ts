// src/graphql/key-guard.ts: the guarded stream's own rules, on a source of plain items and a
// context with just what the guard reads (the principal, the key watch, the client's signal).
import { describe, expect, it } from 'vitest';
import type { GraphQLContext, Principal } from '../src/graphql/context.js';
import { CONCURRENT_NEXT, untilKeyInvalid } from '../src/graphql/key-guard.js';

function contextWith(onWatch: (end: (error: unknown) => void) => void): GraphQLContext {
  const principal = { keyId: 'key_1', account: { id: 'acct_1' }, rateLimitOverride: {} } as unknown as Principal;
  return {
    signal: new AbortController().signal,
    session: null,
    principal: async () => principal,
    services: {
      keyWatch: {
        watch: (_what: unknown, end: (error: unknown) => void) => {
          onWatch(end);
          return () => {};
        },
      },
    },
  } as unknown as GraphQLContext;
}

async function* numbers(signal: AbortSignal) {
  for (let i = 0; i < 3; i++) {
    await new Promise((r) => setTimeout(r, 5));
    if (signal.aborted) return;
    yield i;
  }
}

describe('untilKeyInvalid', () => {
  it('yields the source in order and refuses a second next() while one waits, losing no item', async () => {
    const guarded = untilKeyInvalid(
      contextWith(() => {}),
      (signal) => numbers(signal),
    );
    expect(await guarded.next()).toEqual({ value: 0, done: false });
    const a = guarded.next();
    await expect(guarded.next()).rejects.toThrow(CONCURRENT_NEXT);
    expect(await a).toEqual({ value: 1, done: false });
    expect(await guarded.next()).toEqual({ value: 2, done: false });
    expect(await guarded.next()).toEqual({ value: undefined, done: true });
  });

  it('refuses a second next() while the first is still starting the source', async () => {
    const guarded = untilKeyInvalid(
      contextWith(() => {}),
      (signal) => numbers(signal),
    );
    const first = guarded.next();
    await expect(guarded.next()).rejects.toThrow(CONCURRENT_NEXT);
    expect(await first).toEqual({ value: 0, done: false });
  });

  it("ends with the key's error item, at once for a next() that waits", async () => {
    let end: ((error: unknown) => void) | undefined;
    const guarded = untilKeyInvalid(
      contextWith((e) => {
        end = e;
      }),
      (signal) => numbers(signal),
    );
    expect(await guarded.next()).toEqual({ value: 0, done: false });
    const waiting = guarded.next();
    end!(new Error('key revoked'));
    const item = await waiting;
    expect(item.done).toBe(false);
    expect((item.value as { streamError: Error }).streamError.message).toBe('key revoked');
    expect(await guarded.next()).toEqual({ value: undefined, done: true });
  });
});
