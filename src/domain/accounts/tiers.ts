// The pricing tiers: their names (defined here only), and what each one means for billing (the
// monthly allocation, overage, a monthly fee) and for rate limits. The config may override any
// value of any tier (src/config.ts); these are the defaults.

export const TIERS = ['free', 'developer', 'startup', 'enterprise'] as const;
export type Tier = (typeof TIERS)[number];

export function isTier(value: unknown): value is Tier {
  return typeof value === 'string' && (TIERS as readonly string[]).includes(value);
}

export interface TierPolicy {
  /** Tokens per calendar month (UTC); null = unlimited and not billed. */
  monthly_tokens: number | null;
  /** Whether usage beyond the allocation is paid from the wallet (false: refused with 402). */
  overage: boolean;
  /** A subscription fee in currency units, charged when the tier is taken and at each period start. */
  monthly_fee: number;
  /**
   * Whether customers may move themselves to this tier (the dashboard's Plan page); an operator
   * moves accounts to any tier. Enterprise, unlimited and not billed, is arranged with the operator.
   */
  self_service: boolean;
}

/** A tier's rate limits, per account (README, "Rate limits"). */
export interface TierRateLimits {
  rpm: number;
  tpm: number;
}

/** Everything about one tier: billing's policy and the rate limits. */
export type TierConfig = TierPolicy & TierRateLimits;

export const TIER_DEFAULTS: Record<Tier, TierConfig> = {
  free: { monthly_tokens: 100_000, overage: false, monthly_fee: 0, self_service: true, rpm: 20, tpm: 40_000 },
  developer: { monthly_tokens: 5_000_000, overage: true, monthly_fee: 0, self_service: true, rpm: 500, tpm: 1_000_000 },
  startup: { monthly_tokens: 25_000_000, overage: true, monthly_fee: 0, self_service: true, rpm: 2_000, tpm: 5_000_000 },
  enterprise: { monthly_tokens: null, overage: false, monthly_fee: 0, self_service: false, rpm: 10_000, tpm: 20_000_000 },
};
