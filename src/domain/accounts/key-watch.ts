// Ends open operations of credentials that stop being valid: API keys, and the dashboard's sign-in
// sessions. Authentication runs once per operation, so a subscription or a stream opened before its
// key was revoked (by the CLI, another instance or the API) or expired, or before its session was
// signed out or revoked, would otherwise run on. Every second, while any operation is open, one
// query per kind asks which of their credentials can no longer be used; each operation of such a
// credential hears why and ends (`invalid_api_key` for a key, `session_required` for a session).
// Every instance does the same, so the bound is the same everywhere: about one check interval.
import { DomainError } from '../errors.js';
import { logBackgroundFailure } from '../../db/unavailable.js';

export interface KeyStatusSource {
  /** The keys of `keyIds` that cannot be used any more, each with the reason. */
  unusableKeys(keyIds: readonly string[]): Promise<Map<string, string>>;
}

export interface SessionStatusSource {
  /** The sessions of `sessionIds` that have ended (signed out, revoked, expired), each with the reason. */
  endedSessions(sessionIds: readonly string[]): Promise<Map<string, string>>;
}

/** What an open operation runs on: an API key, or a signed-in person's session. */
export type Credential = { keyId: string } | { sessionId: string };

export interface KeyWatchLogger {
  error(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

type Listener = (error: DomainError) => void;

export class KeyWatch {
  private readonly keys = new Map<string, Set<Listener>>();
  private readonly sessions = new Map<string, Set<Listener>>();
  private timer: NodeJS.Timeout | undefined;
  private checking = false;

  constructor(
    private readonly keySource: KeyStatusSource,
    private readonly opts: { intervalMs?: number; logger?: KeyWatchLogger; sessions?: SessionStatusSource } = {},
  ) {}

  /** Calls `onInvalid` once if the credential stops being usable while watched; returns the unwatch function. */
  watch(credential: Credential, onInvalid: Listener): () => void {
    const [map, id] = 'keyId' in credential ? [this.keys, credential.keyId] : [this.sessions, credential.sessionId];
    let listeners = map.get(id);
    if (!listeners) map.set(id, (listeners = new Set()));
    listeners.add(onInvalid);
    this.timer ??= setInterval(() => void this.check(), this.opts.intervalMs ?? 1000).unref();
    return () => this.unwatch(map, id, onInvalid);
  }

  /** Operations watched now (for tests and metrics). */
  get size(): number {
    let n = 0;
    for (const set of this.keys.values()) n += set.size;
    for (const set of this.sessions.values()) n += set.size;
    return n;
  }

  /** Asks once which watched credentials are unusable and ends their operations. */
  async check(): Promise<void> {
    if (this.checking || this.idle) return;
    this.checking = true;
    try {
      if (this.keys.size > 0) {
        const unusable = await this.keySource.unusableKeys([...this.keys.keys()]);
        this.end(this.keys, unusable, (reason) => new DomainError('invalid_api_key', `${reason} Open operations of this key have ended.`));
      }
      const sessions = this.opts.sessions;
      if (sessions && this.sessions.size > 0) {
        const ended = await sessions.endedSessions([...this.sessions.keys()]);
        this.end(
          this.sessions,
          ended,
          (reason) => new DomainError('session_required', `${reason} Open operations of this session have ended.`),
        );
      }
    } catch (err) {
      // The database is away: operations go on, and the next tick asks again.
      if (this.opts.logger) logBackgroundFailure(this.opts.logger, err, 'key watch: could not check the credentials of open operations');
    } finally {
      this.checking = false;
      this.stopWhenIdle();
    }
  }

  close(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.keys.clear();
    this.sessions.clear();
  }

  private end(map: Map<string, Set<Listener>>, unusable: Map<string, string>, errorFor: (reason: string) => DomainError) {
    for (const [id, reason] of unusable) {
      const listeners = map.get(id);
      if (!listeners) continue;
      map.delete(id);
      const error = errorFor(reason);
      for (const listener of listeners) listener(error);
    }
  }

  private get idle(): boolean {
    return this.keys.size === 0 && this.sessions.size === 0;
  }

  private unwatch(map: Map<string, Set<Listener>>, id: string, listener: Listener) {
    const listeners = map.get(id);
    if (!listeners) return;
    listeners.delete(listener);
    if (listeners.size === 0) map.delete(id);
    this.stopWhenIdle();
  }

  private stopWhenIdle() {
    if (!this.idle || !this.timer) return;
    clearInterval(this.timer);
    this.timer = undefined;
  }
}
