// In-process publish/subscribe of wallet changes, for Subscription.walletUpdated. Changes are
// published only after their database transaction committed. With REDIS_URL set, a bus
// (src/events/redis-wallet-events.ts) carries them to the subscribers of every other process.
import type { TransactionView } from '../ledger/ledger.js';
import { pushFeed } from '../push-iterator.js';

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

  /** The account's changes from now on, until the signal aborts or the consumer calls return() (../push-iterator.ts). */
  subscribe(accountId: string, signal?: AbortSignal): AsyncIterableIterator<WalletChange> {
    const feed = pushFeed<WalletChange>(signal);
    let set = this.listeners.get(accountId);
    if (!set) this.listeners.set(accountId, (set = new Set()));
    const listeners = set;
    listeners.add(feed.push);
    feed.onEnd(() => {
      listeners.delete(feed.push);
      if (listeners.size === 0 && this.listeners.get(accountId) === listeners) this.listeners.delete(accountId);
    });
    return feed.iterator;
  }

  /** Subscribers currently listening (tests, metrics). */
  get size(): number {
    let n = 0;
    for (const set of this.listeners.values()) n += set.size;
    return n;
  }
}
