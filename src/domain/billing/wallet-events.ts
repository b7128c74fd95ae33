// In-process publish/subscribe of wallet changes, for Subscription.walletUpdated. Changes are
// published only after their database transaction committed. With REDIS_URL set, a bus
// (src/events/redis-wallet-events.ts) carries them to the subscribers of every other process.
import type { TransactionView } from '../ledger/ledger.js';

export interface WalletChange {
  accountId: string;
  balance: bigint;
  transaction: TransactionView;
}

type Listener = (change: WalletChange) => void;

export class WalletEvents {
  private readonly listeners = new Map<string, Set<Listener>>();
  private readonly observers = new Set<Listener>();

  private forward: ((change: WalletChange) => void) | undefined;

  publish(change: WalletChange): void {
    for (const observer of this.observers) observer(change);
    for (const listener of this.listeners.get(change.accountId) ?? []) listener(change);
    this.forward?.(change);
  }

  /**
   * A change committed by another server process, brought by a shared bus (src/events/): this
   * process's subscribers see it; observers do not (they react where the change was made).
   */
  deliverRemote(change: WalletChange): void {
    for (const listener of this.listeners.get(change.accountId) ?? []) listener(change);
  }

  /** Hands every change published here to a bus that carries it to the other processes. */
  forwardTo(forward: ((change: WalletChange) => void) | undefined): void {
    this.forward = forward;
  }

  /**
   * Every account's changes, for in-process reactions after a commit (payments: automatic top-up
   * when a charge leaves the balance below its threshold). Observers must return at once and not
   * throw; returns the function that stops observing.
   */
  observe(observer: Listener): () => void {
    this.observers.add(observer);
    return () => this.observers.delete(observer);
  }

  /**
   * The account's changes from now on, until the signal aborts or the consumer calls return().
   * A hand-written iterator rather than an async generator: a generator waiting for the next
   * change could not be stopped (its return() waits for a yield), and would keep its listener.
   */
  subscribe(accountId: string, signal?: AbortSignal): AsyncIterableIterator<WalletChange> {
    const queue: WalletChange[] = [];
    let waiting: ((r: IteratorResult<WalletChange>) => void) | undefined;
    let done = false;
    const listener: Listener = (change) => {
      if (waiting) {
        const resolve = waiting;
        waiting = undefined;
        resolve({ value: change, done: false });
        return;
      }
      // A consumer that never reads must not grow memory without bound: keep the latest 100.
      if (queue.length >= 100) queue.shift();
      queue.push(change);
    };
    let set = this.listeners.get(accountId);
    if (!set) this.listeners.set(accountId, (set = new Set()));
    set.add(listener);
    const finish = (): Promise<IteratorResult<WalletChange>> => {
      if (!done) {
        done = true;
        signal?.removeEventListener('abort', onAbort);
        set.delete(listener);
        if (set.size === 0 && this.listeners.get(accountId) === set) this.listeners.delete(accountId);
        queue.length = 0;
        waiting?.({ value: undefined, done: true });
        waiting = undefined;
      }
      return Promise.resolve({ value: undefined, done: true });
    };
    const onAbort = () => void finish();
    signal?.addEventListener('abort', onAbort, { once: true });
    if (signal?.aborted) void finish();
    const iterator: AsyncIterableIterator<WalletChange> = {
      next: () => {
        if (done) return Promise.resolve({ value: undefined, done: true });
        const change = queue.shift();
        if (change) return Promise.resolve({ value: change, done: false });
        return new Promise((resolve) => (waiting = resolve));
      },
      return: finish,
      throw: async (err?: unknown) => {
        await finish();
        throw err;
      },
      [Symbol.asyncIterator]: () => iterator,
    };
    return iterator;
  }

  /** Subscribers currently listening (tests, metrics). */
  get size(): number {
    let n = 0;
    for (const set of this.listeners.values()) n += set.size;
    return n;
  }
}
