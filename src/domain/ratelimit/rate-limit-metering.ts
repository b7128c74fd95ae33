// Rate limits as a Metering around another one (billing): the limiter admits first, so a call it
// refuses (429) places no hold and is never billed; then the inner metering admits; when the call
// ends, the tokens counted at admission (prompt + maximum output) are corrected to the real usage
// before the inner settlement runs. Every state the limiter reaches is handed to the caller's
// `onRateLimit` as X-RateLimit-* headers, before the engine runs, so both doors can set them
// before the first byte of a response (a stream's included).
import type { Caller, MeterRequest, MeterTicket, Metering } from '../inference/inference-service.js';
import type { RateLimiter } from './rate-limiter.js';
import { type LimiterState, type RateLimits, rateLimitHeaders } from './types.js';

/** A caller that wants to hear about rate-limit state (the doors set it; see README, "Rate limits"). */
export type RateLimitedCaller = Caller & { onRateLimit?: (headers: Record<string, string>) => void };

/** The limits of the account making a call (its tier's, or the operator's override). */
export type LimitsResolver = (caller: Caller) => RateLimits | Promise<RateLimits>;

export class RateLimitMetering implements Metering {
  constructor(
    private readonly inner: Metering,
    private readonly limiter: RateLimiter,
    private readonly limitsFor: LimitsResolver,
  ) {}

  async admit(req: MeterRequest): Promise<MeterTicket> {
    const caller = req.caller as RateLimitedCaller;
    const limits = await this.limitsFor(caller);
    // A client that gave no max_tokens gets at most what one minute's TPM leaves beside its prompt,
    // so the call can be admitted at all; an explicit max_tokens is counted as given.
    const outputCap = req.requestedOutputTokens ?? Math.min(req.maxOutputTokens, Math.max(0, limits.tpm - req.promptTokens));
    const onState = caller.onRateLimit ? (s: LimiterState) => caller.onRateLimit!(rateLimitHeaders(s)) : undefined;
    const admission = await this.limiter.admit(caller.accountId, limits, req.promptTokens + outputCap, onState);

    let ticket: MeterTicket;
    try {
      ticket = await this.inner.admit(req.requestedOutputTokens === null ? { ...req, maxOutputTokens: outputCap } : req);
    } catch (err) {
      await admission.refund();
      throw err;
    }
    // Billing may have lowered the maximum output to what the account can pay: count that instead.
    if (req.promptTokens + ticket.maxOutputTokens < admission.counted) await admission.recount(req.promptTokens + ticket.maxOutputTokens);
    return {
      maxOutputTokens: ticket.maxOutputTokens,
      settle: async (usage, outcome) => {
        await admission.recount(usage.totalTokens);
        await ticket.settle(usage, outcome);
      },
    };
  }
}
