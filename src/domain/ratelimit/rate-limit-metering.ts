// Rate limits as a Metering around another one (billing): the limiter admits first, so a call it
// refuses (429) places no hold and is never billed; then the inner metering admits; when the call
// ends, the tokens counted at admission (prompt + maximum output) are corrected to the real usage
// before the inner settlement runs. Every state the limiter reaches is handed to the caller's
// `onRateLimit`, the first before the engine runs, so both doors can send X-RateLimit-* headers
// with the head of any response (a stream's included).
import { DomainError } from '../errors.js';
import type { Caller, CallOutcome, MeterRequest, MeterTicket, Metering, Undelivered } from '../inference/inference-service.js';
import type { Usage } from '../inference/engine.js';
import type { Admission, RateLimiter } from './rate-limiter.js';
import type { RateLimits } from './types.js';

/** The limits of the account making a call (its tier's, or the operator's override). */
export type LimitsResolver = (caller: Caller) => RateLimits | Promise<RateLimits>;

export class RateLimitMetering implements Metering {
  constructor(
    private readonly inner: Metering,
    private readonly limiter: RateLimiter,
    private readonly limitsFor: LimitsResolver,
  ) {}

  /** Nothing to wait for (undefined) unless this instance has seen the account refused for its RPM. */
  precheck(caller: Caller): void | Promise<void> {
    if (!this.limiter.mayRefuse(caller.accountId)) return;
    return this.precheckBlocked(caller);
  }

  private async precheckBlocked(caller: Caller): Promise<void> {
    await this.limiter.precheck(caller.accountId, await this.limitsFor(caller), caller.onRateLimit);
  }

  /** One request with no tokens; a refusal of it only marks the account over its RPM for `precheck`. */
  async countRefused(caller: Caller): Promise<void> {
    try {
      await this.limiter.admit(caller.accountId, await this.limitsFor(caller), 0, caller.onRateLimit);
    } catch (err) {
      if (!(err instanceof DomainError)) throw err;
    }
  }

  async admit(req: MeterRequest): Promise<MeterTicket> {
    const caller = req.caller;
    const resolved = this.limitsFor(caller);
    const limits = resolved instanceof Promise ? await resolved : resolved;
    // A client that gave no max_tokens gets at most what one minute's TPM leaves beside its prompt,
    // so the call can be admitted at all; an explicit max_tokens is counted as given.
    const outputCap = req.requestedOutputTokens ?? Math.min(req.maxOutputTokens, Math.max(0, limits.tpm - req.promptTokens));
    const admitted = this.limiter.admit(caller.accountId, limits, req.promptTokens + outputCap, caller.onRateLimit);
    const admission = admitted instanceof Promise ? await admitted : admitted;

    let ticket: MeterTicket;
    try {
      ticket = await this.inner.admit(req.requestedOutputTokens === null ? { ...req, maxOutputTokens: outputCap } : req);
    } catch (err) {
      await admission.refund();
      throw err;
    }
    // Billing may have lowered the maximum output to what the account can pay: count that instead.
    if (req.promptTokens + ticket.maxOutputTokens < admission.counted) await admission.recount(req.promptTokens + ticket.maxOutputTokens);
    return new RateLimitedTicket(admission, ticket);
  }
}

/** The inner ticket, with the rate-limit count corrected to the real usage before it settles. */
class RateLimitedTicket implements MeterTicket {
  readonly maxOutputTokens: number;

  constructor(
    private readonly admission: Admission,
    private readonly inner: MeterTicket,
  ) {
    this.maxOutputTokens = inner.maxOutputTokens;
  }

  settle(usage: Usage, outcome: CallOutcome, undelivered?: Undelivered): Promise<void> {
    // The memory store corrects at once: the inner settlement then starts without a promise of its own.
    const recounted = this.admission.recount(usage.totalTokens);
    if (recounted instanceof Promise) return recounted.then(() => this.inner.settle(usage, outcome, undelivered));
    return this.inner.settle(usage, outcome, undelivered);
  }
}

/** What a caller's account is, for its limits: its tier and the operator's override (null: the tier's). */
export interface RateLimitProfile {
  tier: string;
  rpm: number | null;
  tpm: number | null;
}

/**
 * Limits from the tiers of the config and the account's override, taken from the caller (read
 * with its key) or else looked up.
 */
export function tierLimits(tiers: Record<string, RateLimits>, lookup: (accountId: string) => Promise<RateLimitProfile>): LimitsResolver {
  const limitsOf = (p: RateLimitProfile): RateLimits => {
    // A tier the config does not know (renamed since) gets the most restrictive contract tier's.
    const tier = tiers[p.tier] ?? tiers.free!;
    // Without an override, the tier's own (read-only) limits: no object per call.
    if ((p.rpm === null || p.rpm === undefined) && (p.tpm === null || p.tpm === undefined)) return tier;
    return { rpm: p.rpm ?? tier.rpm, tpm: p.tpm ?? tier.tpm };
  };
  return (caller) => (caller.rateLimitProfile ? limitsOf(caller.rateLimitProfile) : lookup(caller.accountId).then(limitsOf));
}
