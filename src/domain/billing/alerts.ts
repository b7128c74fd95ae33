// Billing's alerts: which are due after a balance or usage change (low balance, 80% and 100% of
// the monthly allocation, the spending limit) or a refused call (the spending limit, 100% of the
// allocation), each raised once per occasion into the notifications outbox. On both databases
// they are raised after the change has committed, in a transaction of their own
// (BillingCore.afterCommit): never for a change that rolled back, and an alert that fails cannot
// roll back the money it is about (test/billing-alert-commit.test.ts).
import { enqueueNotification } from '../notifications/outbox.js';
import { formatDecimal, WALLET_CURRENCY } from './money.js';
import { periodOf } from './period.js';
import type { Db } from './sql.js';
import type { AlertCheck, WalletRow } from './billing-types.js';
import { BillingCore } from './billing-core.js';

/** The first allocation alert's line: 80% of the monthly tokens used (in integers). */
const pastEightyPercent = (used: number, monthly: number) => used * 5 >= monthly * 4;

export abstract class BillingAlerts extends BillingCore {
  /** The alerts a change left due: past their line and not yet written for this crossing or period. */
  protected dueAlerts(
    w: WalletRow,
    monthlyTokens: number | null,
  ): { lowBalance: boolean; allocation: boolean; allocationFull: boolean; spending: boolean } {
    return {
      lowBalance: w.lowBalanceThreshold !== null && w.balance < w.lowBalanceThreshold && !w.lowBalanceAlerted,
      allocation:
        monthlyTokens !== null &&
        monthlyTokens > 0 &&
        pastEightyPercent(w.periodUsed, monthlyTokens) &&
        w.allocationAlertPeriod !== w.period,
      allocationFull: monthlyTokens !== null && monthlyTokens > 0 && w.periodUsed >= monthlyTokens && w.allocationFullPeriod !== w.period,
      spending:
        w.spendingLimitEnabled &&
        w.spendingLimit !== null &&
        w.periodSpent > 0n &&
        w.periodSpent >= w.spendingLimit &&
        w.spendingAlertPeriod !== w.period,
    };
  }

  /** Whether a change left the wallet past an alert's line (see raiseAlerts). */
  protected alertDue(w: WalletRow, monthlyTokens: number | null): boolean {
    const due = this.dueAlerts(w, monthlyTokens);
    return due.lowBalance || due.allocation || due.allocationFull || due.spending;
  }

  protected async raiseAfterCommit(check: AlertCheck): Promise<void> {
    if (!this.alertDue(check.row, check.monthlyTokens)) return;
    try {
      // Decided on the row as it is now, locked, not on the one the change committed: a top-up
      // (or a new limit) committed in between must not get an alert for a balance it no longer
      // has, which would also use up the flag the next real crossing needs.
      await this.db.transaction(async (trx) => {
        const current = await this.wallets.lock(trx, check.accountId);
        if (!current) return;
        const monthly = current.period === check.row.period ? check.monthlyTokens : null;
        await this.raiseAlerts(trx, check.accountId, current, monthly, check.now, check.occasion);
      });
    } catch (err) {
      this.logger.error({ err, account: check.accountId, occasion: check.occasion }, 'raising billing alerts failed');
    }
  }

  /**
   * The accounts whose refusal alert is written for an occasion (key: kind and account; value: the
   * occasion, the wallet's period and spending-limit version, as RefusalError carries it): their
   * next refusals on the same occasion are not looked at again, so a client retrying a 402 in a
   * loop costs no read per call. Set when a look finds the alert written (by this call or before).
   * A new month, or a limit set again through any server, is another occasion: the refusal's
   * wallet row tells, so no server keeps skipping what another has re-armed.
   */
  private readonly refusalsAlerted = new Map<string, string>();

  private alertedAlready(key: string, occasion: string): boolean {
    return this.refusalsAlerted.get(key) === occasion;
  }

  private rememberAlerted(key: string, w: WalletRow): void {
    if (this.refusalsAlerted.size >= 10_000) this.refusalsAlerted.clear();
    this.refusalsAlerted.set(key, `${w.period}:${w.spendingLimitVersion}`);
  }

  /**
   * A `block` spending limit refused a call. Admission keeps the spend under the limit, so it
   * seldom reaches the limit exactly, which is when the alert is otherwise written: the first
   * refusal of a period writes it instead (once a period, as a crossing would), so a customer whose
   * calls start failing with 402 is told why. Runs beside the refusal, never delaying it; a read
   * first, so the refusals after the first cost no locked transaction.
   */
  protected noteSpendingLimitRefusal(accountId: string, occasion: string): void {
    if (this.alertedAlready(`spending:${accountId}`, occasion)) return;
    void this.raiseSpendingLimitRefusal(accountId).catch((err) =>
      this.logger.error({ err, account: accountId }, 'raising the spending-limit alert of a refused call failed'),
    );
  }

  private async raiseSpendingLimitRefusal(accountId: string): Promise<void> {
    const read = await this.wallets.read(this.db, accountId);
    if (read && read.spendingAlertPeriod === read.period) this.rememberAlerted(`spending:${accountId}`, read);
    if (!read || read.spendingAlertPeriod === read.period) return;
    const now = this.now();
    await this.db.transaction(async (trx) => {
      const w = await this.wallets.lock(trx, accountId);
      if (!w?.spendingLimitEnabled || w.spendingLimit === null || w.spendingAlertPeriod === w.period) return;
      if (await this.wallets.claimPeriodAlert(trx, 'spending_alert_period', accountId, w.period))
        await this.enqueueSpendingAlert(trx, accountId, w, now);
    });
  }

  /**
   * A call was refused (monthly_allocation_exhausted, or insufficient_balance when the wallet cannot
   * pay the rest). Admission only admits a call the allocation left covers whole, so when the
   * wallet cannot pay, usage stops short of the allocation (994 of 1,000) and the crossing that
   * writes "monthly tokens used up" never comes: the period's first refusal that finds the
   * allocation left too small for even this call's prompt and one output token (no smaller
   * max_tokens would run it) writes it instead, once a period (the crossing's own flag). A call
   * refused only for the output it asked for is no sign the tokens are used up, and writes
   * nothing. Runs beside the refusal, never delaying it; a read first, as for the spending limit.
   */
  protected noteAllocationRefusal(accountId: string, minimumTokens: number, occasion: string): void {
    if (this.alertedAlready(`allocation:${accountId}`, occasion)) return;
    void this.raiseAllocationRefusal(accountId, minimumTokens).catch((err) =>
      this.logger.error({ err, account: accountId }, 'raising the allocation alert of a refused call failed'),
    );
  }

  /**
   * The tier's monthly tokens when what is left of them cannot cover `minimumTokens` and the
   * allocation is nearly used (80% or more, the first alert's line), else null: a prompt larger
   * than what is left of a mostly unused allocation is refused for its size (the 402 says so), and
   * is no sign the tokens are used up.
   */
  private allocationUsedUp(w: WalletRow, minimumTokens: number): number | null {
    const monthly = this.tiers[w.tier]?.monthly_tokens ?? null;
    if (monthly === null || monthly <= 0 || w.allocationFullPeriod === w.period || w.period < periodOf(this.now())) return null;
    // Used, not held: tokens other calls hold now may come back when they settle.
    return monthly - w.periodUsed < minimumTokens && pastEightyPercent(w.periodUsed, monthly) ? monthly : null;
  }

  private async raiseAllocationRefusal(accountId: string, minimumTokens: number): Promise<void> {
    const read = await this.wallets.read(this.db, accountId);
    if (read && read.allocationFullPeriod === read.period) this.rememberAlerted(`allocation:${accountId}`, read);
    if (!read || this.allocationUsedUp(read, minimumTokens) === null) return;
    const now = this.now();
    await this.db.transaction(async (trx) => {
      const w = await this.wallets.lock(trx, accountId);
      const monthly = w && this.allocationUsedUp(w, minimumTokens);
      if (!w || !monthly) return;
      if (await this.wallets.claimPeriodAlert(trx, 'allocation_full_period', accountId, w.period))
        await this.enqueueAllocationFull(trx, accountId, w, monthly, now, { left: Math.max(0, monthly - w.periodUsed), refused: true });
    });
  }

  /**
   * "Monthly tokens used up", its flag just claimed: once a period, whether the crossing or a
   * refused call wrote it (`refusal`: what was left, said in the message).
   */
  private enqueueAllocationFull(
    trx: Db,
    accountId: string,
    w: WalletRow,
    monthlyTokens: number | null,
    now: Date,
    refusal?: { left: number; refused: true },
  ): Promise<unknown> {
    return enqueueNotification(trx, {
      accountId,
      kind: 'allocation_100',
      // The allocation in the key: a tier changed within the month re-arms the alert (setTier) for
      // the new allocation, which must not be dropped as the old one's duplicate.
      dedupeKey: `allocation_100:${accountId}:${w.period}:${monthlyTokens}`,
      payload: { period: w.period, used: w.periodUsed, monthly_tokens: monthlyTokens, ...refusal },
      now,
    });
  }

  /**
   * The spending-limit alert of the row's arming: its flag was just claimed. The key names the
   * period and the setting (its count, action and limit): each setting of the limit re-arms the
   * alert (clearing the flag), and so must be a new occasion for the outbox too, or a limit set
   * back to one already notified this period would claim its flag and have its notification
   * dropped as a duplicate. The claimed flag keeps it once per arming.
   */
  private enqueueSpendingAlert(trx: Db, accountId: string, w: WalletRow, now: Date): Promise<unknown> {
    return enqueueNotification(trx, {
      accountId,
      kind: 'spending_limit',
      dedupeKey: `spending_limit:${accountId}:${w.period}:${w.spendingLimitVersion}:${w.spendingLimitAction}:${w.spendingLimit}`,
      payload: {
        period: w.period,
        spent: formatDecimal(w.periodSpent),
        // Wallet money calls in progress hold: at a refusal, what stood between the spend and the limit.
        held: formatDecimal(w.held),
        limit: formatDecimal(w.spendingLimit!),
        action: w.spendingLimitAction,
        currency: WALLET_CURRENCY,
      },
      now,
    });
  }

  /**
   * Writes the alerts a change crossed, once per crossing (low balance) or per period (80% of the
   * allocation, spending limit). Each alert first flips its flag with a conditional update, so of
   * two changes racing past the same line only one writes the notification. Changing the spending
   * limit clears its flag: once per period and per setting of the limit.
   */
  protected async raiseAlerts(
    trx: Db,
    accountId: string,
    w: WalletRow,
    monthlyTokens: number | null,
    now: Date,
    occasion: string,
  ): Promise<void> {
    const due = this.dueAlerts(w, monthlyTokens);
    if (due.lowBalance) {
      if (await this.wallets.claimLowBalanceAlert(trx, accountId)) {
        await enqueueNotification(trx, {
          accountId,
          kind: 'low_balance',
          dedupeKey: `low_balance:${accountId}:${occasion}`,
          payload: { balance: formatDecimal(w.balance), threshold: formatDecimal(w.lowBalanceThreshold!), currency: WALLET_CURRENCY },
          now,
        });
      }
    }
    // Claimed either way; written only below 100%: a change that used the last tokens too writes
    // "used up" alone (an 80% mail then read "2,000 of your 2,000 monthly tokens").
    if (
      due.allocation &&
      (await this.wallets.claimPeriodAlert(trx, 'allocation_alert_period', accountId, w.period)) &&
      w.periodUsed < (monthlyTokens ?? 0)
    ) {
      await enqueueNotification(trx, {
        accountId,
        kind: 'allocation_80',
        dedupeKey: `allocation_80:${accountId}:${w.period}:${monthlyTokens}`,
        payload: { period: w.period, used: w.periodUsed, monthly_tokens: monthlyTokens },
        now,
      });
    }
    if (due.allocationFull && (await this.wallets.claimPeriodAlert(trx, 'allocation_full_period', accountId, w.period))) {
      await this.enqueueAllocationFull(trx, accountId, w, monthlyTokens, now);
    }
    if (due.spending && (await this.wallets.claimPeriodAlert(trx, 'spending_alert_period', accountId, w.period))) {
      await this.enqueueSpendingAlert(trx, accountId, w, now);
    }
  }
}
