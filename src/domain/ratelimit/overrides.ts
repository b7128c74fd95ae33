// The operator's per-account overrides of the tier's requests and tokens per minute
// (rate_limit_overrides): set from the CLI, read with the key at authentication (one left join in
// the accounts store) or here for calls made without a key. Applies from the next request on.
import type { MikroORM } from '@mikro-orm/core';
import { getKnex } from '../../db/connection.js';
import type { Tier } from '../accounts/tiers.js';
import { DomainError } from '../errors.js';

/** The operator's per-account rate limits; null keeps the tier's. */
export interface RateLimitOverride {
  rpm: number | null;
  tpm: number | null;
}

/** Counts as the drivers return them (PostgreSQL gives bigints as text). */
const countOrNull = (v: unknown): number | null => (v == null ? null : Number(v));

const accountNotFound = (id: string) => new DomainError('not_found', `No account with id '${id}'.`, { param: 'account_id' });

export class RateLimitOverrides {
  constructor(
    private readonly orm: MikroORM,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /** The account's tier and override (for calls made without a key, e.g. by tools). */
  async profile(accountId: string): Promise<{ tier: Tier } & RateLimitOverride> {
    const found = await getKnex(this.orm)
      .select('a.tier', 'o.rpm', 'o.tpm')
      .from('accounts as a')
      .leftJoin('rate_limit_overrides as o', 'o.account_id', 'a.id')
      .where('a.id', accountId);
    const row = found[0] as { tier: Tier; rpm: unknown; tpm: unknown } | undefined;
    if (!row) throw accountNotFound(accountId);
    return { tier: row.tier, rpm: countOrNull(row.rpm), tpm: countOrNull(row.tpm) };
  }

  /**
   * Sets the override of an account's RPM and TPM: a number replaces the tier's value, null goes
   * back to it, undefined keeps what is set.
   */
  async set(accountId: string, limits: { rpm?: number | null; tpm?: number | null }): Promise<RateLimitOverride> {
    for (const param of ['rpm', 'tpm'] as const) {
      const v = limits[param];
      if (v != null && (!Number.isSafeInteger(v) || v < 1)) {
        throw new DomainError('invalid_value', `${param} must be a positive integer, or null for the tier's limit.`, { param });
      }
    }
    return getKnex(this.orm).transaction(async (trx) => {
      const accounts = await trx('accounts').select('id').where('id', accountId);
      if (accounts.length === 0) throw accountNotFound(accountId);
      const current = (await trx('rate_limit_overrides').select('rpm', 'tpm').where('account_id', accountId))[0] as { rpm: unknown; tpm: unknown } | undefined;
      const next: RateLimitOverride = {
        rpm: limits.rpm === undefined ? countOrNull(current?.rpm) : limits.rpm,
        tpm: limits.tpm === undefined ? countOrNull(current?.tpm) : limits.tpm,
      };
      if (next.rpm === null && next.tpm === null) {
        await trx('rate_limit_overrides').where('account_id', accountId).delete();
      } else {
        await trx('rate_limit_overrides')
          .insert({ account_id: accountId, rpm: next.rpm, tpm: next.tpm, updated_at: this.now() })
          .onConflict('account_id')
          .merge(['rpm', 'tpm', 'updated_at']);
      }
      return next;
    });
  }
}
