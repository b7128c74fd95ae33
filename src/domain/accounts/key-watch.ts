// Ends open operations of keys that stop being valid. Authentication runs once per operation, so a
// subscription or a stream opened before its key was revoked (by the CLI, another instance or the
// API) or before it expired would otherwise run on. Every second, while any operation is open, one
// query asks which of their keys can no longer be used; each operation of such a key hears why and
// ends with `invalid_api_key`. Every instance does the same, so the bound is the same everywhere:
// about one check interval after the revocation or the expiry.
import { DomainError } from '../errors.js';

export interface KeyStatusSource {
  /** The keys of `keyIds` that cannot be used any more, each with the reason. */
  unusableKeys(keyIds: readonly string[]): Promise<Map<string, string>>;
}

export interface KeyWatchLogger {
  warn(obj: object, msg: string): void;
}

type Listener = (error: DomainError) => void;

export class KeyWatch {
  private readonly watched = new Map<string, Set<Listener>>();
  private timer: NodeJS.Timeout | undefined;
  private checking = false;

  constructor(
    private readonly keys: KeyStatusSource,
    private readonly opts: { intervalMs?: number; logger?: KeyWatchLogger } = {},
  ) {}

  /** Calls `onInvalid` once if the key stops being usable while watched; returns the unwatch function. */
  watch(keyId: string, onInvalid: Listener): () => void {
    let listeners = this.watched.get(keyId);
    if (!listeners) this.watched.set(keyId, (listeners = new Set()));
    listeners.add(onInvalid);
    this.timer ??= setInterval(() => void this.check(), this.opts.intervalMs ?? 1000).unref();
    return () => this.unwatch(keyId, onInvalid);
  }

  /** Operations watched now (for tests and metrics). */
  get size(): number {
    let n = 0;
    for (const set of this.watched.values()) n += set.size;
    return n;
  }

  /** Asks once which watched keys are unusable and ends their operations. */
  async check(): Promise<void> {
    if (this.checking || this.watched.size === 0) return;
    this.checking = true;
    try {
      const unusable = await this.keys.unusableKeys([...this.watched.keys()]);
      for (const [keyId, reason] of unusable) {
        const listeners = this.watched.get(keyId);
        if (!listeners) continue;
        this.watched.delete(keyId);
        const error = new DomainError('invalid_api_key', `${reason} Open operations of this key have ended.`);
        for (const listener of listeners) listener(error);
      }
    } catch (err) {
      // The database is away: operations go on, and the next tick asks again.
      this.opts.logger?.warn({ err }, 'key watch: could not check the keys of open operations');
    } finally {
      this.checking = false;
      this.stopWhenIdle();
    }
  }

  close(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.watched.clear();
  }

  private unwatch(keyId: string, listener: Listener) {
    const listeners = this.watched.get(keyId);
    if (!listeners) return;
    listeners.delete(listener);
    if (listeners.size === 0) this.watched.delete(keyId);
    this.stopWhenIdle();
  }

  private stopWhenIdle() {
    if (this.watched.size > 0 || !this.timer) return;
    clearInterval(this.timer);
    this.timer = undefined;
  }
}
