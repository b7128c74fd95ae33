// One base URL's circuit breaker: after `failureThreshold` failures in a row (refused or timed-out
// connections, no response head in time, resets, garbage) the URL is ejected (open) for
// `cooldownMs`; then one call at a time may probe it (half-open): a success closes the breaker,
// a failure opens it again. An HTTP status answer (429, 503, a 400) is an answer, not a failure.

export type BreakerState = 'closed' | 'open' | 'half_open';

export interface BreakerSnapshot {
  state: BreakerState;
  /** Failures in a row so far. */
  failures: number;
  /** While open: milliseconds until a call may probe the URL again. */
  retryInMs?: number;
}

export interface BreakerSettings {
  failureThreshold: number;
  cooldownMs: number;
}

export class CircuitBreaker {
  private state: BreakerState = 'closed';
  private failures = 0;
  private openUntil = 0;
  /** Half-open: whether a probe is in flight (only one at a time). */
  private probing = false;

  constructor(
    private readonly settings: BreakerSettings,
    /** Hears every change of state, for the logs. */
    private readonly onChange: (state: BreakerState, failures: number) => void,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Whether a call may use the URL now. Every `true` must be followed by exactly one of
   * `succeeded`, `failed` or `released`, since in half-open it takes the one probe.
   */
  tryAcquire(): boolean {
    if (this.state === 'open') {
      if (this.now() < this.openUntil) return false;
      this.move('half_open');
    }
    if (this.state === 'half_open') {
      if (this.probing) return false;
      this.probing = true;
    }
    return true;
  }

  succeeded(): void {
    this.probing = false;
    this.failures = 0;
    if (this.state !== 'closed') this.move('closed');
  }

  failed(): void {
    this.probing = false;
    this.failures++;
    if (this.state === 'half_open' || (this.state === 'closed' && this.failures >= this.settings.failureThreshold)) {
      this.openUntil = this.now() + this.settings.cooldownMs;
      this.move('open');
    }
  }

  /** The call ended without telling anything about the URL (the client left, an HTTP error status). */
  released(): void {
    this.probing = false;
  }

  /** Milliseconds until a call may try the URL (0 when it may now). */
  waitMs(): number {
    if (this.state === 'open') return Math.max(0, this.openUntil - this.now());
    return this.state === 'half_open' && this.probing ? this.settings.cooldownMs : 0;
  }

  snapshot(): BreakerSnapshot {
    const out: BreakerSnapshot = { state: this.state, failures: this.failures };
    if (this.state === 'open') out.retryInMs = this.waitMs();
    return out;
  }

  private move(state: BreakerState): void {
    this.state = state;
    this.onChange(state, this.failures);
  }
}
