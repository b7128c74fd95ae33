// Throttling of sign-in and the other unauthenticated account operations: attempts are counted per
// key (an e-mail address, a client address, what each caller chooses) in a sliding window; past the
// limit, the operation is refused (429 too_many_attempts, worded by the caller) until the window has
// moved on. A success clears the address's count. In memory, per instance: with several instances
// behind a balancer an attacker gets the limit once per instance, still a small number.
//
// What a client sends never becomes a key as it is: each key is kept as its SHA-256 digest, so a
// megabyte-long "e-mail address" costs the map 43 characters, and the map holds at most `maxKeys`
// keys. Keys are kept in the order they were last counted (a key counted again moves to the end),
// so the stalest are at the front: expired ones are dropped from there a few at a time, and past
// the cap the stalest one goes, without walking the map.
import { createHash } from 'node:crypto';
import { DomainError } from '../errors.js';

const WINDOW_MS = 15 * 60_000;
/** The most keys held: about 100 bytes each, plus the instants of a client key's attempts. */
export const MAX_THROTTLE_KEYS = 100_000;
/** Expired keys dropped from the front of the map per attempt counted (more than one is added). */
const PRUNE_PER_COUNT = 4;

/** The refusal's message, given the wait ("15 minutes", "1 minute") and the key that is over its limit. */
export type Refusal = (wait: string, key: string) => string;

export class LoginThrottle {
  /** Digest of a key → the instants of its recent attempts, oldest first, and the key's limit. */
  private readonly failures = new Map<string, number[]>();
  private readonly limits = new Map<string, number>();

  constructor(
    private readonly max: number,
    private readonly now: () => number = Date.now,
    private readonly maxKeys = MAX_THROTTLE_KEYS,
  ) {}

  /** How many keys are held (tests). */
  get size(): number {
    return this.failures.size;
  }

  /**
   * Throws too_many_attempts, with `refusal`'s message, when any of `keys` is over the limit. A
   * client address (key `ip:…`: many people behind one NAT) gets ten times the limit of the others.
   */
  check(keys: string[], refusal: Refusal): void {
    for (const key of keys) {
      const recent = this.recent(digest(key));
      if (recent.length >= this.limitOf(key)) {
        const retryAfter = Math.max(1, Math.ceil((recent[0]! + WINDOW_MS - this.now()) / 1000));
        throw new DomainError('too_many_attempts', refusal(minutes(retryAfter), key), { retryAfter });
      }
    }
  }

  /**
   * check, then the attempt counted as failed before it is decided: attempts made at once cannot
   * all pass the check while their passwords are being verified. A right password takes its count
   * back with `succeeded`.
   */
  attempt(keys: string[], refusal: Refusal): { succeeded(): void } {
    this.check(keys, refusal);
    this.fail(keys);
    return {
      succeeded: () => {
        for (const key of keys) this.failures.get(digest(key))?.pop();
      },
    };
  }

  fail(keys: string[]): void {
    for (const key of keys) {
      const d = digest(key);
      const recent = this.recent(d);
      recent.push(this.now());
      // Deleted first, so that the key moves to the end: the map stays in the order of last use.
      this.failures.delete(d);
      this.failures.set(d, recent);
      this.limits.set(d, this.limitOf(key));
    }
    this.prune();
  }

  succeed(key: string): void {
    const d = digest(key);
    this.failures.delete(d);
    this.limits.delete(d);
  }

  /** A client address (key `ip:…`: many people behind one NAT) gets ten times the limit of the others. */
  private limitOf(key: string): number {
    return key.startsWith('ip:') ? this.max * 10 : this.max;
  }

  private recent(d: string): number[] {
    const since = this.now() - WINDOW_MS;
    return (this.failures.get(d) ?? []).filter((t) => t > since);
  }

  /**
   * Drops expired keys from the front (the least recently counted), a few per call; then, while
   * there are more than `maxKeys`, the stalest keys that are not refusing now: a flood of new keys
   * cannot push out a locked-out address's count (one refusing is moved to the back instead, at most
   * PRUNE_PER_COUNT looked at per call; past twice `maxKeys` the stalest goes whatever it holds).
   * The cost of a call does not grow with the map.
   */
  private prune(): void {
    const since = this.now() - WINDOW_MS;
    let dropped = 0;
    for (const [d, instants] of this.failures) {
      if (dropped >= PRUNE_PER_COUNT || (instants.at(-1) ?? 0) > since) break;
      this.forget(d);
      dropped++;
    }
    let looked = 0;
    while (this.failures.size > this.maxKeys && looked < PRUNE_PER_COUNT) {
      const [stalest, instants] = this.failures.entries().next().value ?? [];
      if (stalest === undefined || instants === undefined) break;
      looked++;
      if (instants.filter((t) => t > since).length >= (this.limits.get(stalest) ?? this.max)) {
        this.failures.delete(stalest);
        this.failures.set(stalest, instants);
      } else this.forget(stalest);
    }
    while (this.failures.size > 2 * this.maxKeys) {
      const stalest = this.failures.keys().next().value;
      if (stalest === undefined) break;
      this.forget(stalest);
    }
  }

  private forget(d: string): void {
    this.failures.delete(d);
    this.limits.delete(d);
  }
}

/**
 * The client part of an address for throttling: an IPv4 address as it is, an IPv6 one by its /64
 * (one host commonly holds a whole /64, and would otherwise be a new client per address).
 */
export function clientOf(address: string): string {
  if (!address.includes(':') || /^::ffff:\d+\.\d+\.\d+\.\d+$/i.test(address)) return address;
  const [head = '', tail = ''] = address.split('::');
  const left = head ? head.split(':') : [];
  const right = address.includes('::') && tail ? tail.split(':') : [];
  const groups = address.includes('::') ? [...left, ...Array(Math.max(0, 8 - left.length - right.length)).fill('0'), ...right] : left;
  return `${groups
    .slice(0, 4)
    .map((g) => Number.parseInt(g || '0', 16).toString(16))
    .join(':')}::/64`;
}

const digest = (key: string) => createHash('sha256').update(key).digest('base64url');

/** 60 s → "1 minute", 900 s → "15 minutes". */
function minutes(seconds: number): string {
  const n = Math.ceil(seconds / 60);
  return `${n} minute${n === 1 ? '' : 's'}`;
}
