// An async iterator fed by pushes from a listener, for subscriptions to in-process events (wallet
// changes, notifications). Hand-written rather than an async generator: a generator waiting for
// its next item could not be stopped (its return() waits for a yield) and would keep its listener.
// It ends when the signal aborts or the consumer calls return(); a consumer that never reads keeps
// only the latest `maxQueued` items, so memory stays bounded.

export interface PushFeed<T> {
  /** Hands an item to the consumer (queued while it is not waiting). */
  push(item: T): void;
  /** Runs `cleanup` once when the iterator ends (at once if it has already ended). */
  onEnd(cleanup: () => void): void;
  iterator: AsyncIterableIterator<T>;
}

export function pushFeed<T>(signal?: AbortSignal, maxQueued = 100): PushFeed<T> {
  const queue: T[] = [];
  let waiting: ((r: IteratorResult<T>) => void) | undefined;
  let done = false;
  const cleanups: (() => void)[] = [];
  const finish = (): Promise<IteratorResult<T>> => {
    if (!done) {
      done = true;
      signal?.removeEventListener('abort', onAbort);
      queue.length = 0;
      waiting?.({ value: undefined, done: true });
      waiting = undefined;
      for (const cleanup of cleanups.splice(0)) cleanup();
    }
    return Promise.resolve({ value: undefined, done: true });
  };
  const onAbort = () => void finish();
  signal?.addEventListener('abort', onAbort, { once: true });
  if (signal?.aborted) void finish();
  const iterator: AsyncIterableIterator<T> = {
    next: () => {
      if (done) return Promise.resolve({ value: undefined, done: true });
      if (queue.length > 0) return Promise.resolve({ value: queue.shift()!, done: false });
      return new Promise((resolve) => (waiting = resolve));
    },
    return: finish,
    throw: async (err?: unknown) => {
      await finish();
      throw err;
    },
    [Symbol.asyncIterator]: () => iterator,
  };
  return {
    push(item) {
      if (done) return;
      if (waiting) {
        const resolve = waiting;
        waiting = undefined;
        resolve({ value: item, done: false });
        return;
      }
      if (queue.length >= maxQueued) queue.shift();
      queue.push(item);
    },
    onEnd(cleanup) {
      if (done) cleanup();
      else cleanups.push(cleanup);
    },
    iterator,
  };
}
