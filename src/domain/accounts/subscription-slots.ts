// How many standing subscriptions (the wallet's changes, the notifications feed) an account may
// hold open on one server process, across every WebSocket and GraphQL-over-SSE request. These
// cost nothing per minute and pass no rate limit, yet each holds memory on the server (about
// 20 KB) until it ends: without a bound, one key could open them until the process ran out of
// memory. Chat streams are not counted here: each is a metered call, bounded by the rate limits.
import { DomainError } from '../errors.js';

export class SubscriptionSlots {
  private readonly open = new Map<string, number>();

  constructor(private readonly max: number) {}

  /**
   * Takes one of the account's slots until `signal` aborts (the subscription's end, however it
   * comes); refuses (429 too_many_subscriptions) when the account holds them all.
   */
  take(accountId: string, signal: AbortSignal): void {
    if (signal.aborted) return;
    const held = this.open.get(accountId) ?? 0;
    if (held >= this.max) {
      throw new DomainError(
        'too_many_subscriptions',
        `This account already has ${this.max} wallet and notification subscriptions open on this server, the most it may (graphql.max_subscriptions_per_account): end some, or share one between the parts of an app.`,
      );
    }
    this.open.set(accountId, held + 1);
    signal.addEventListener('abort', () => this.release(accountId), { once: true });
  }

  /** The account's subscriptions open now (for tests and metrics). */
  held(accountId: string): number {
    return this.open.get(accountId) ?? 0;
  }

  private release(accountId: string): void {
    const left = (this.open.get(accountId) ?? 1) - 1;
    if (left <= 0) this.open.delete(accountId);
    else this.open.set(accountId, left);
  }
}
