// Login throttling: failed sign-ins are counted per e-mail address and per client address in a
// sliding window; past the limit, sign-in is refused (429 too_many_attempts) until the window has
// moved on. A success clears the address's count. In memory, per instance: with several
// instances behind a balancer an attacker gets the limit once per instance, still a small number.
import { DomainError } from '../errors.js';

const WINDOW_MS = 15 * 60_000;

export class LoginThrottle {
  private readonly failures = new Map<string, number[]>();

  constructor(
    private readonly max: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Throws too_many_attempts when any of `keys` is over the limit. */
  check(keys: string[]): void {
    for (const key of keys) {
      const recent = this.recent(key);
      // A client address (many people behind one NAT) gets ten times an e-mail address's limit.
      if (recent.length >= (key.startsWith('ip:') ? this.max * 10 : this.max)) {
        const retryAfter = Math.max(1, Math.ceil((recent[0]! + WINDOW_MS - this.now()) / 1000));
        throw new DomainError(
          'too_many_attempts',
          `Too many failed sign-ins; try again in ${minutes(retryAfter)}, or reset the password.`,
          { retryAfter },
        );
      }
    }
  }

  /**
   * check, then the attempt counted as failed before it is decided: attempts made at once cannot
   * all pass the check while their passwords are being verified. A right password takes its count
   * back with `succeeded`.
   */
  attempt(keys: string[]): { succeeded(): void } {
    this.check(keys);
    this.fail(keys);
    return {
      succeeded: () => {
        for (const key of keys) this.failures.get(key)?.pop();
      },
    };
  }

  fail(keys: string[]): void {
    for (const key of keys) {
      const recent = this.recent(key);
      recent.push(this.now());
      this.failures.set(key, recent);
    }
    if (this.failures.size > 10_000) this.sweep();
  }

  succeed(key: string): void {
    this.failures.delete(key);
  }

  private recent(key: string): number[] {
    const since = this.now() - WINDOW_MS;
    return (this.failures.get(key) ?? []).filter((t) => t > since);
  }

  private sweep(): void {
    for (const key of [...this.failures.keys()]) if (this.recent(key).length === 0) this.failures.delete(key);
  }
}

/** 60 s → "1 minute", 900 s → "15 minutes". */
function minutes(seconds: number): string {
  const n = Math.ceil(seconds / 60);
  return `${n} minute${n === 1 ? '' : 's'}`;
}
