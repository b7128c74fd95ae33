// The wallet row's life: locked at the start of every billing transaction, created on first use,
// rolled into a new period at a month's start, and the tier's monthly fee charged (at the period
// start, or when the tier is taken), falling back to free when the wallet cannot pay it.
import type { Tier as TierName } from '../accounts/tiers.js';
import type { Tier } from '../accounts/accounts-service.js';
import { DomainError } from '../errors.js';
import { appendTransaction, findByIdempotencyKey } from '../ledger/ledger.js';
import { enqueueNotification } from '../notifications/outbox.js';
import { formatDecimal, WALLET_CURRENCY } from './money.js';
import { periodOf } from './period.js';
import { exec, type Db } from './sql.js';
import { Effects, type WalletRow } from './billing-types.js';
import { BillingAlerts } from './alerts.js';

export abstract class WalletLifecycle extends BillingAlerts {
  /**
   * Locks the account's wallet row, creating it on first use, and brings it to the current
   * period: counters reset, and the tier's fee charged (or the account moved to free when the
   * wallet cannot pay it). Must run inside a transaction. `fee: false` leaves a due fee to the
   * caller (a credit, which lands first, so that the money it brings can pay it).
   */
  protected async openWallet(trx: Db, accountId: string, now: Date, effects: Effects, opts: { fee?: boolean } = {}): Promise<WalletRow> {
    let w = await this.wallets.lock(trx, accountId);
    if (!w) {
      if (!(await this.wallets.create(trx, accountId, periodOf(now), now)))
        throw new DomainError('not_found', `No account with id '${accountId}'.`, { param: 'account_id' });
      w = await this.wallets.lock(trx, accountId);
      if (!w) throw new Error(`wallet of ${accountId} vanished`);
    }
    // Rolled forward only: a wallet already in a later month (a server whose clock is ahead moved
    // it) is in the current period here too.
    const period = periodOf(now);
    if (w.period < period) {
      await this.wallets.rollPeriod(trx, accountId, period, now);
      w = { ...w, period, periodUsed: 0, periodHeld: 0, periodSpent: 0n };
    }
    if (opts.fee !== false && this.feeDue(w)) w = await this.chargeFee(trx, accountId, w, w.tier, now, effects, 'period');
    return w;
  }

  protected feeDue(w: WalletRow): boolean {
    return this.fees[w.tier] > 0n && !(w.feePeriod === w.period && w.feeTier === w.tier);
  }

  /**
   * Charges `tier`'s fee for the wallet's period as a `subscription` transaction (at most once per
   * tier and period). When the wallet cannot pay: at a period start the account falls back to
   * free and is notified; when the tier is being taken, the change is refused.
   */
  protected async chargeFee(
    trx: Db,
    accountId: string,
    w: WalletRow,
    tier: Tier,
    now: Date,
    effects: Effects,
    when: 'period' | 'taken',
  ): Promise<WalletRow> {
    const fee = this.fees[tier];
    const key = `subscription:${accountId}:${w.period}:${tier}`;
    if (await findByIdempotencyKey(trx, key)) {
      // Paid already this period (the account left the tier and came back).
      await this.wallets.markFeePaid(trx, accountId, w.period, tier);
      return { ...w, feePeriod: w.period, feeTier: tier };
    }
    if (w.balance - w.held < fee) {
      if (when === 'taken') {
        throw new DomainError(
          'insufficient_balance',
          `The ${tier} tier costs ${formatDecimal(fee)} ${WALLET_CURRENCY} a month, charged when it is taken; the wallet has ${formatDecimal(w.balance - w.held)} ${WALLET_CURRENCY} available.`,
        );
      }
      await exec(trx, "update accounts set tier = 'free' where id = ?", [accountId]);
      await enqueueNotification(trx, {
        accountId,
        kind: 'subscription_unpaid',
        dedupeKey: `subscription_unpaid:${accountId}:${w.period}:${tier}`,
        payload: {
          period: w.period,
          tier,
          fee: formatDecimal(fee),
          available: formatDecimal(w.balance - w.held),
          currency: WALLET_CURRENCY,
          now_tier: 'free',
        },
        now,
      });
      this.logger.info({ account: accountId, tier, period: w.period }, 'monthly fee unpaid: account moved to the free tier');
      return { ...w, tier: 'free' };
    }
    const balance = await this.wallets.debitFee(trx, accountId, fee, w.period, tier, now);
    const transaction = await appendTransaction(trx, {
      accountId,
      type: 'subscription',
      amount: -fee,
      balanceAfter: balance,
      description: `${tier} tier, ${w.period}`,
      reference: w.period,
      idempotencyKey: key,
      createdAt: now,
    });
    effects.changes.push({ accountId, balance, transaction });
    await enqueueNotification(trx, {
      accountId,
      kind: 'subscription_charged',
      dedupeKey: key,
      payload: { period: w.period, tier, fee: formatDecimal(fee), balance: formatDecimal(balance), currency: WALLET_CURRENCY },
      now,
    });
    const next = { ...w, balance, feePeriod: w.period, feeTier: tier };
    effects.alerts.push({ accountId, row: next, monthlyTokens: null, occasion: transaction.id, now });
    return next;
  }

  /** Charges the fees of accounts on fee-paying tiers that have not paid for the current period. */
  async chargeDueFees(): Promise<number> {
    const feeTiers = (Object.keys(this.fees) as TierName[]).filter((t) => this.fees[t] > 0n);
    if (feeTiers.length === 0) return 0;
    const now = this.now();
    const period = periodOf(now);
    const due = await this.wallets.feesDue(this.db, feeTiers, period);
    for (const id of due) {
      const effects = new Effects();
      await this.db.transaction((trx) => this.openWallet(trx, id, now, effects));
      await this.afterCommit(effects);
    }
    return due.length;
  }
}
