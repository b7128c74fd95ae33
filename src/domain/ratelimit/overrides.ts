// The operator's per-account overrides of the tier's requests and tokens per minute
// (rate_limit_overrides): set from the CLI, read with the key at authentication (one left join in
// the accounts store) or here for calls made without a key. Applies from the next request on.
// Through MikroORM: native statements in a connection-level transaction, no unit of work.
import type { MikroORM } from '@mikro-orm/core';
import { Account, RateLimitOverride as OverrideRow } from '../../entities/index.js';
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
    const [row] = await this.orm.em
      .getConnection()
      .execute<{ tier: Tier; rpm: unknown; tpm: unknown }[]>(
        'select a.tier, o.rpm, o.tpm from accounts a left join rate_limit_overrides o on o.account_id = a.id where a.id = ?',
        [accountId],
        'all',
      );
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
    // A connection-level transaction and native statements: no unit of work, no flush (see
    // test/persistence.test.ts on AsyncLocalStorage).
    const em = this.orm.em.fork();
    return em.getConnection().transactional(async (trx) => {
      if ((await em.count(Account, { id: accountId }, { ctx: trx })) === 0) throw accountNotFound(accountId);
      const current = await em.findOne(OverrideRow, { account: accountId }, { ctx: trx, disableIdentityMap: true });
      const next: RateLimitOverride = {
        rpm: limits.rpm === undefined ? (current?.rpm ?? null) : limits.rpm,
        tpm: limits.tpm === undefined ? countOrNull(current?.tpm) : limits.tpm,
      };
      if (next.rpm === null && next.tpm === null) {
        await em.nativeDelete(OverrideRow, { account: accountId }, { ctx: trx });
      } else {
        await em.upsert(
          OverrideRow,
          { account: accountId, rpm: next.rpm, tpm: next.tpm, updatedAt: this.now() },
          { ctx: trx, onConflictFields: ['account'], onConflictAction: 'merge', onConflictMergeFields: ['rpm', 'tpm', 'updatedAt'] },
        );
      }
      return next;
    });
  }
}
