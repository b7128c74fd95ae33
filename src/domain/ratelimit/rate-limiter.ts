// The rate limiter of accounts: admits a call against its account's RPM and TPM in a store
// (memory or Redis), refuses with 429 and Retry-After, counts hits for the "frequent rate-limit
// hits" alert, and decides what happens when the store cannot be reached: fail open (serve
// unlimited, warn in the log, count it) or, with `failClosed`, refuse with 503. After a failure
// (a Redis that is away, or that hangs until the command times out) the store is not asked again
// for `storeRetryMs`, then by one call at a time, so that a hung Redis costs its timeout to one
// call a second rather than to every call; /readyz reads it as unreachable until it answers again.
import { DomainError } from '../errors.js';
import type { NotificationSink } from './notification-sink.js';
import {
  type AdmissionRef,
  type AdmitResult,
  type Dimension,
  HITS_WINDOW_SECONDS,
  type LimiterState,
  type RateLimits,
  type RateLimitStore,
} from './types.js';

/** The subset of a pino logger the limiter uses. */
export interface WarnLogger {
  warn(obj: object, msg: string): void;
  info?(obj: object, msg: string): void;
}

export interface RateLimiterOptions {
  /** Refuse calls (503) while the store is unreachable, instead of serving them unlimited. */
  failClosed?: boolean;
  /** The alert fires when an account gets more than this many 429s in 10 minutes. */
  alertThreshold?: number;
  notifications?: NotificationSink;
  logger?: WarnLogger;
  /** After the store failed, how long calls go on without asking it before one call asks again (default 1000 ms). */
  storeRetryMs?: number;
}

/** RateLimiterOptions.storeRetryMs when not given. */
const STORE_RETRY_MS = 1000;

/** A call the limiter admitted. */
export interface Admission {
  /** The state after counting the call; null when the store could not be asked (fail-open). */
  readonly state: LimiterState | null;
  /** The tokens counted for the call now. */
  readonly counted: number;
  /**
   * Counts `tokens` for the call instead (its real usage, or a lower estimate); returns the new
   * state (at once when the store answers at once).
   */
  recount(tokens: number): LimiterState | null | Promise<LimiterState | null>;
  /**
   * The call did not run (refused after admission, e.g. by billing): its tokens are given back. The
   * request itself stays counted: the server did handle it, and a client hammering with calls
   * that billing refuses must still meet the RPM limit.
   */
  refund(): LimiterState | null | Promise<LimiterState | null>;
}

export const ALERT_KIND = 'rate_limit_hits';

const NAMES: Record<Dimension, string> = { rpm: 'requests per minute (RPM)', tpm: 'tokens per minute (TPM)' };

/** How long between two "store unreachable" warnings in the log. */
const WARN_EVERY_MS = 10_000;

/** The most accounts remembered as over their RPM (the oldest entry goes first beyond it). */
const MAX_BLOCKED = 10_000;

/** An account the store refused for its RPM alone, until its oldest request leaves the window. */
interface Blocked {
  untilMs: number;
  rpm: number;
  state: LimiterState;
}

export class RateLimiter {
  /** Counters since start (for metrics and tests). */
  readonly stats = { admitted: 0, refused: 0, failOpen: 0, storeErrors: 0, alerts: 0, refusedBy: { rpm: 0, tpm: 0 } };
  private readonly failClosed: boolean;
  private readonly alertThreshold: number;
  private readonly storeRetryMs: number;
  private lastWarnMs = -Infinity;
  private unwarned = 0;
  /** Since when the store has failed (Date.now()), and its last error; null while it answers. */
  private failing: { sinceMs: number; err: unknown } | null = null;
  /** While failing: when the next call may ask the store again. */
  private retryAtMs = 0;
  /**
   * Accounts this instance saw refused for RPM: until the Retry-After it was given passes, another
   * call of theirs cannot fit (counts only grow meanwhile, on every instance), so `precheck`
   * refuses it without asking the store and before the call does any work.
   */
  private readonly blocked = new Map<string, Blocked>();

  constructor(
    readonly store: RateLimitStore,
    private readonly opts: RateLimiterOptions = {},
  ) {
    this.failClosed = opts.failClosed ?? false;
    this.alertThreshold = opts.alertThreshold ?? 100;
    this.storeRetryMs = opts.storeRetryMs ?? STORE_RETRY_MS;
  }

  /**
   * Counts one request and `tokens` for the account, or throws `rate_limit_exceeded` (429). `onState`
   * sees the state the client is told about: after the admission, or the one that refused it. At
   * once (the admission, or the refusal thrown) when the store answers at once, as the memory
   * store does; else a promise.
   */
  admit(accountId: string, limits: RateLimits, tokens: number, onState?: (state: LimiterState) => void): Admission | Promise<Admission> {
    if (this.failing) {
      const now = Date.now();
      // Not asked: the store failed a moment ago. Past the wait this call asks, alone.
      if (now < this.retryAtMs) return this.storeUnavailable(this.failing.err, false);
      this.retryAtMs = now + this.storeRetryMs;
    }
    let answer: AdmitResult | Promise<AdmitResult>;
    try {
      answer = this.store.admit(accountId, limits, tokens, this.alertThreshold);
    } catch (err) {
      return this.storeUnavailable(err);
    }
    if (answer instanceof Promise) {
      return answer.then(
        (result) => this.decide(accountId, limits, tokens, result, onState),
        (err: unknown) => this.storeUnavailable(err),
      );
    }
    return this.decide(accountId, limits, tokens, answer, onState);
  }

  /** What admit() makes of the store's answer. */
  private decide(
    accountId: string,
    limits: RateLimits,
    tokens: number,
    result: AdmitResult,
    onState: ((state: LimiterState) => void) | undefined,
  ): Admission {
    if (this.failing) this.answersAgain();
    onState?.(result.state);
    if (result.admitted) {
      this.stats.admitted++;
      return new CountedAdmission(this, result.ref, limits, tokens, result.state, onState);
    }
    this.stats.refused++;
    for (const limit of result.exceeded) this.stats.refusedBy[limit]++;
    if (result.alert) this.raiseAlert(accountId, result.recentHits);
    if (result.retryAfter !== null && result.exceeded.length === 1 && result.exceeded[0] === 'rpm') {
      if (this.blocked.size >= MAX_BLOCKED) this.blocked.delete(this.blocked.keys().next().value!);
      this.blocked.set(accountId, { untilMs: Date.now() + result.retryAfter * 1000, rpm: limits.rpm, state: result.state });
    }
    throw refusal(result.exceeded, result.retryAfter, limits, tokens, result.state);
  }

  /** Whether `precheck` may refuse the account: this instance saw it refused for its RPM (cheap; no state changes). */
  mayRefuse(accountId: string): boolean {
    return this.blocked.size > 0 && this.blocked.has(accountId);
  }

  /**
   * Refuses (429) a call of an account this instance knows to be over its RPM, before the call
   * does any work; does nothing otherwise. The refusal is counted as a hit for the alert before
   * it is answered, as a refusal by the store is. A refusal made under another RPM limit than the
   * account's now (an operator's override, a tier change) is dropped: the store decides again.
   */
  async precheck(accountId: string, limits: RateLimits, onState?: (state: LimiterState) => void): Promise<void> {
    const blocked = this.blocked.get(accountId);
    if (!blocked) return;
    const left = blocked.untilMs - Date.now();
    if (left <= 0 || blocked.rpm !== limits.rpm) {
      this.blocked.delete(accountId);
      return;
    }
    this.stats.refused++;
    this.stats.refusedBy.rpm++;
    await this.recordHit(accountId, limits);
    onState?.(blocked.state);
    const retryAfter = Math.ceil(left / 1000);
    throw new DomainError(
      'rate_limit_exceeded',
      `Rate limit reached: this account's ${NAMES.rpm} limit of ${blocked.rpm}. Retry after ${retryAfter} s.`,
      { retryAfter },
    );
  }

  /**
   * Counts a 429 decided without the store: asks the store to admit more tokens than the TPM limit,
   * which it always refuses, counting nothing but the hit (and raising the alert when due).
   */
  private async recordHit(accountId: string, limits: RateLimits): Promise<void> {
    try {
      const result = await this.store.admit(accountId, limits, limits.tpm + 1, this.alertThreshold);
      if (!result.admitted && result.alert) this.raiseAlert(accountId, result.recentHits);
    } catch (err) {
      this.backgroundError(err);
    }
  }

  /** 429s of the account in the last 10 minutes. */
  recentHits(accountId: string): Promise<number> {
    return this.store.recentHits(accountId);
  }

  close(): Promise<void> {
    return this.store.close();
  }

  /**
   * How the limiter stands, for /readyz: its store, whether that can be asked now, and what calls
   * get while it cannot (fail-open: served without limits; fail_closed: refused with 503).
   */
  async health(): Promise<{ backend: 'memory' | 'redis'; reachable: boolean; failClosed: boolean }> {
    // A failing store is asked here too (a PING, at most once per storeRetryMs): an instance that
    // /readyz took out of a load balancer's rotation gets no calls that would find it back.
    if (this.failing && this.store.ping && Date.now() >= this.retryAtMs) {
      this.retryAtMs = Date.now() + this.storeRetryMs;
      try {
        await this.store.ping();
        if (this.failing) this.answersAgain();
      } catch (err) {
        if (this.failing) this.failing.err = err;
      }
    }
    return { backend: this.store.name, reachable: this.failing === null && this.store.reachable(), failClosed: this.failClosed };
  }

  /** The store answered after failing: said once, with how long it was out. */
  private answersAgain(): void {
    const downMs = Date.now() - this.failing!.sinceMs;
    this.failing = null;
    this.opts.logger?.info?.({ downMs, failOpenTotal: this.stats.failOpen }, 'rate limiter: store answers again; rate limits apply');
  }

  /** Reports a correction the store could not make (at once, or deferred and given up on). */
  backgroundError(err: unknown): void {
    this.stats.storeErrors++;
    this.warn(err, 'rate limiter: could not correct a token count; the estimate stays counted');
  }

  /** A call the store could not admit (`asked`), or was not asked for while it fails. */
  private storeUnavailable(err: unknown, asked = true): Admission {
    if (asked) {
      this.stats.storeErrors++;
      const now = Date.now();
      if (this.failing) this.failing.err = err;
      else this.failing = { sinceMs: now, err };
      this.retryAtMs = now + this.storeRetryMs;
    }
    if (this.failClosed) {
      this.warn(err, 'rate limiter: store unreachable; refusing calls (rate_limits.fail_closed)');
      throw new DomainError('rate_limiter_unavailable', 'Rate limiting is unavailable right now, so calls are refused; retry shortly.', {
        retryAfter: 1,
        cause: err,
      });
    }
    this.stats.failOpen++;
    this.warn(err, 'rate limiter: store unreachable; serving calls without rate limits (fail-open)');
    return { state: null, counted: 0, recount: () => null, refund: () => null };
  }

  private raiseAlert(accountId: string, recentHits: number) {
    this.stats.alerts++;
    const payload = { recent_hits: recentHits, window_seconds: HITS_WINDOW_SECONDS, threshold: this.alertThreshold };
    // Not awaited: the 429 answers now, whatever the outbox does.
    this.opts.notifications
      ?.notify(accountId, ALERT_KIND, payload)
      .catch((err) => this.opts.logger?.warn({ err, accountId }, 'rate limiter: could not queue the rate-limit alert'));
  }

  private warn(err: unknown, msg: string) {
    this.unwarned++;
    const now = Date.now();
    if (now - this.lastWarnMs < WARN_EVERY_MS) return;
    this.opts.logger?.warn({ err, occurrences: this.unwarned, failOpenTotal: this.stats.failOpen }, msg);
    this.lastWarnMs = now;
    this.unwarned = 0;
  }
}

/** An admission counted in the store (a class, not closures: one is made per call). */
class CountedAdmission implements Admission {
  constructor(
    private readonly limiter: RateLimiter,
    private readonly ref: AdmissionRef,
    private readonly limits: RateLimits,
    public counted: number,
    public readonly state: LimiterState,
    private readonly onState: ((state: LimiterState) => void) | undefined,
  ) {
    this.known = state;
  }

  /** The last state this call saw. */
  private known: LimiterState;

  recount(real: number): LimiterState | null | Promise<LimiterState | null> {
    const delta = real - this.counted;
    if (delta === 0) return null;
    this.counted = real;
    try {
      const answer = this.limiter.store.correct(this.ref, this.limits, delta);
      if (answer instanceof Promise) return answer.then((after) => this.corrected(after, delta)).catch((err: unknown) => this.failed(err));
      return this.corrected(answer, delta);
    } catch (err) {
      return this.failed(err);
    }
  }

  /**
   * The state after a correction. A store that applies the correction later answers null: the
   * call's own change is applied to the last state it saw (other calls' meanwhile are not in it).
   */
  private corrected(answer: LimiterState | null, delta: number): LimiterState {
    const after = answer ?? withTokens(this.known, delta);
    this.known = after;
    this.onState?.(after);
    return after;
  }

  /** The call itself went through; only its count stays at the estimate (or misses a rise). */
  private failed(err: unknown): null {
    this.limiter.backgroundError(err);
    return null;
  }

  refund(): LimiterState | null | Promise<LimiterState | null> {
    return this.recount(0);
  }
}

function withTokens(state: LimiterState, delta: number): LimiterState {
  const remaining = Math.min(state.tpm.limit, Math.max(0, state.tpm.remaining - delta));
  return { ...state, tpm: { ...state.tpm, remaining } };
}

function refusal(exceeded: Dimension[], retryAfter: number | null, limits: RateLimits, tokens: number, state: LimiterState): DomainError {
  if (retryAfter === null) {
    return new DomainError(
      'rate_limit_exceeded',
      `This request counts ${tokens} tokens (prompt + maximum output), more than this account's ${NAMES.tpm} limit of ${limits.tpm}, so it can never be admitted: lower max_tokens or shorten the input.`,
    );
  }
  const which = exceeded.map((d) => `${NAMES[d]} limit of ${limits[d]}`).join(' and ');
  const detail = exceeded.includes('tpm')
    ? ` ${limits.tpm - state.tpm.remaining} tokens counted in the last minute; this request counts ${tokens} (prompt + maximum output).`
    : '';
  return new DomainError('rate_limit_exceeded', `Rate limit reached: this account's ${which}.${detail} Retry after ${retryAfter} s.`, {
    retryAfter,
  });
}
