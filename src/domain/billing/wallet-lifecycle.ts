// The wallet row's life: locked at the start of every billing transaction, created on first use,
// rolled into a new period at a month's start, and the tier's monthly fee charged (at the period
// start, or when the tier is taken), falling back to free when the wallet cannot pay it.
import type { Tier as TierName } from '../accounts/tiers.js';
import { isTier, type Tier } from '../accounts/accounts-service.js';
import { DomainError } from '../errors.js';
import { appendTransaction, findByIdempotencyKey } from '../ledger/ledger.js';
import { enqueueNotification } from '../notifications/outbox.js';
import { formatDecimal, WALLET_CURRENCY } from './money.js';
import { periodOf } from './period.js';
import { big, exec, rows, type Db } from './sql.js';
import type { WalletChange } from './wallet-events.js';
import type { WalletRow } from './billing-types.js';
import { WALLET_COLUMNS, walletRow } from './billing-types.js';
import { BillingAlerts } from './alerts.js';

export abstract class WalletLifecycle extends BillingAlerts {
  protected async lockWalletRow(trx: Db, accountId: string): Promise<WalletRow | null> {
    const found = await rows<Record<string, unknown>>(
      trx,
      `select ${WALLET_COLUMNS}, a.tier from wallets w join accounts a on a.id = w.account_id where w.account_id = ?${this.db.kind === 'postgresql' ? ' for update of w' : ''}`,
      [accountId],
    );
    const r = found[0];
    if (!r) return null;
    return walletRow(r, isTier(r.tier) ? r.tier : 'free');
  }

  /**
   * Locks the account's wallet row, creating it on first use, and brings it to the current
   * period: counters reset, and the tier's fee charged (or the account moved to free when the
   * wallet cannot pay it). Must run inside a transaction.
   */
  protected async openWallet(trx: Db, accountId: string, now: Date, effects: WalletChange[]): Promise<WalletRow> {
    let w = await this.lockWalletRow(trx, accountId);
    if (!w) {
      const account = await rows<{ id: string }>(trx, 'select id from accounts where id = ?', [accountId]);
      if (!account[0]) throw new DomainError('not_found', `No account with id '${accountId}'.`, { param: 'account_id' });
      await exec(
        trx,
        'insert into wallets (account_id, period, created_at, updated_at) values (?, ?, ?, ?) on conflict (account_id) do nothing',
        [accountId, periodOf(now), now, now],
      );
      w = await this.lockWalletRow(trx, accountId);
      if (!w) throw new Error(`wallet of ${accountId} vanished`);
    }
    const period = periodOf(now);
    if (w.period !== period) {
      await exec(
        trx,
        'update wallets set period = ?, period_used = 0, period_held = 0, period_spent = 0, updated_at = ? where account_id = ?',
        [period, now, accountId],
      );
      w = { ...w, period, periodUsed: 0, periodHeld: 0, periodSpent: 0n };
    }
    if (this.feeDue(w)) w = await this.chargeFee(trx, accountId, w, w.tier, now, effects, 'period');
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
    effects: WalletChange[],
    when: 'period' | 'taken',
  ): Promise<WalletRow> {
    const fee = this.fees[tier];
    const key = `subscription:${accountId}:${w.period}:${tier}`;
    if (await findByIdempotencyKey(trx, key)) {
      // Paid already this period (the account left the tier and came back).
      await exec(trx, 'update wallets set fee_period = ?, fee_tier = ? where account_id = ?', [w.period, tier, accountId]);
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
    const [after] = await rows<{ balance: unknown }>(
      trx,
      'update wallets set balance = balance - ?, fee_period = ?, fee_tier = ?, updated_at = ? where account_id = ? returning cast(balance as text) as balance',
      [fee, w.period, tier, now, accountId],
    );
    const balance = big(after!.balance);
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
    effects.push({ accountId, balance, transaction });
    await enqueueNotification(trx, {
      accountId,
      kind: 'subscription_charged',
      dedupeKey: key,
      payload: { period: w.period, tier, fee: formatDecimal(fee), balance: formatDecimal(balance), currency: WALLET_CURRENCY },
      now,
    });
    const next = { ...w, balance, feePeriod: w.period, feeTier: tier };
    await this.raiseAlerts(trx, accountId, next, null, now, transaction.id);
    return next;
  }

  /** Charges the fees of accounts on fee-paying tiers that have not paid for the current period. */
  async chargeDueFees(): Promise<number> {
    const feeTiers = (Object.keys(this.fees) as TierName[]).filter((t) => this.fees[t] > 0n);
    if (feeTiers.length === 0) return 0;
    const now = this.now();
    const period = periodOf(now);
    const due = await rows<{ id: string }>(
      this.db,
      `select a.id from accounts a left join wallets w on w.account_id = a.id
        where a.tier in (${feeTiers.map(() => '?').join(', ')}) and (w.account_id is null or w.fee_period is null or w.fee_period <> ? or w.fee_tier <> a.tier)`,
      [...feeTiers, period],
    );
    for (const { id } of due) {
      const effects: WalletChange[] = [];
      await this.db.transaction((trx) => this.openWallet(trx, id, now, effects));
      this.publish(effects);
    }
    return due.length;
  }
}
