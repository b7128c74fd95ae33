// The operations behind GraphQL, /v1 and the CLI on an account's billing: its wallet and ledger,
// credits (idempotent), its tier (charging a tier's fee), its allocation and settings (spending
// limit, low-balance alert).
import { isTier, type Tier } from '../accounts/accounts-service.js';
import { DomainError } from '../errors.js';
import {
  appendTransaction,
  findByIdempotencyKey,
  listTransactions,
  type TransactionPage,
  type TransactionQuery,
  type TransactionView,
} from '../ledger/ledger.js';
import { MAX_NANOS, WALLET_CURRENCY } from './money.js';
import { periodBounds, periodOf } from './period.js';
import { big, exec, int, rows, type Queryable } from './sql.js';
import type { WalletChange } from './wallet-events.js';
import {
  SPENDING_LIMIT_ACTIONS,
  WALLET_COLUMNS,
  walletRow,
  type AllocationView,
  type SettingsView,
  type SpendingLimitAction,
  type WalletView,
  type CreditType,
} from './billing-types.js';
import { Sweeper } from './sweeper.js';

export abstract class AccountBilling extends Sweeper {
  async getWallet(accountId: string): Promise<WalletView> {
    const found = await rows<{ balance: unknown; held: unknown }>(
      this.db,
      'select cast(balance as text) as balance, cast(held as text) as held from wallets where account_id = ?',
      [accountId],
    );
    return { accountId, balance: big(found[0]?.balance ?? 0), held: big(found[0]?.held ?? 0), currency: WALLET_CURRENCY };
  }

  listTransactions(accountId: string, query: TransactionQuery = {}): Promise<TransactionPage> {
    return listTransactions(this.db, accountId, query);
  }

  /**
   * Adds credits (an operator's bonus or refund; payments add top-ups) as one transaction. With an
   * idempotency key, a repeated call returns the first transaction instead of crediting twice.
   */
  async creditWallet(input: {
    accountId: string;
    amount: bigint;
    type: CreditType;
    description: string;
    reference?: string | null;
    idempotencyKey?: string | null;
  }): Promise<TransactionView> {
    if (!['topup', 'bonus', 'refund'].includes(input.type)) {
      throw new DomainError('invalid_value', `type must be one of topup, bonus, refund; got '${String(input.type).slice(0, 40)}'.`, {
        param: 'type',
      });
    }
    if (input.amount <= 0n || input.amount > MAX_NANOS / 2n) {
      throw new DomainError('invalid_value', `amount must be a positive number of ${WALLET_CURRENCY} with at most 9 decimal places.`, {
        param: 'amount',
      });
    }
    const description = input.description.trim();
    if (!description || description.length > 500)
      throw new DomainError('invalid_value', 'description must be text of 1 to 500 characters.', { param: 'description' });
    const key = input.idempotencyKey ? `credit:${input.accountId}:${input.idempotencyKey}` : null;
    if (key && key.length > 240)
      throw new DomainError('invalid_value', 'idempotency key is too long (at most 200 characters).', { param: 'idempotency_key' });
    const now = this.now();
    const effects: WalletChange[] = [];
    const transaction = await this.db.transaction((trx) =>
      this.creditWithin(trx, { ...input, description, idempotencyKey: key }, now, effects),
    );
    this.publish(effects);
    return transaction;
  }

  /**
   * Credits the wallet inside the caller's transaction (payments: a top-up's state change and its
   * ledger rows commit together), under the wallet row's lock. With an idempotency key (used as
   * given: unique across the ledger), a repeated credit returns the first transaction. Changes
   * to publish after the commit are pushed onto `effects` (see publishChanges).
   */
  async creditWithin(
    trx: Queryable,
    input: {
      accountId: string;
      amount: bigint;
      type: CreditType;
      description: string;
      reference?: string | null;
      idempotencyKey: string | null;
    },
    now: Date,
    effects: WalletChange[],
  ): Promise<TransactionView> {
    await this.openWallet(trx, input.accountId, now, effects);
    // Checked under the wallet's lock: a concurrent twin has committed or not started.
    if (input.idempotencyKey) {
      const existing = await findByIdempotencyKey(trx, input.idempotencyKey);
      if (existing) return replayed(existing, input);
    }
    const [after] = await rows<{ balance: unknown }>(
      trx,
      'update wallets set balance = balance + ?, ' +
        'low_balance_alerted = case when low_balance_threshold is not null and balance + ? >= low_balance_threshold then ? else low_balance_alerted end, ' +
        'updated_at = ? where account_id = ? returning cast(balance as text) as balance',
      [input.amount, input.amount, false, now, input.accountId],
    );
    const balance = big(after!.balance);
    const transaction = await appendTransaction(trx, {
      accountId: input.accountId,
      type: input.type,
      amount: input.amount,
      balanceAfter: balance,
      description: input.description,
      reference: input.reference ?? null,
      idempotencyKey: input.idempotencyKey,
      createdAt: now,
    });
    effects.push({ accountId: input.accountId, balance, transaction });
    return transaction;
  }

  /** Publishes wallet changes once the transaction that made them has committed. */
  publishChanges(effects: WalletChange[]): void {
    this.publish(effects);
  }

  /**
   * Moves an account to a tier. A tier with a monthly fee charges it now (once per period);
   * when the wallet cannot pay, the change is refused with insufficient_balance.
   */
  async setTier(accountId: string, tier: string): Promise<{ id: string; tier: Tier }> {
    if (!isTier(tier))
      throw new DomainError('invalid_value', `tier must be one of ${Object.keys(this.tiers).join(', ')}.`, { param: 'tier' });
    const now = this.now();
    const effects: WalletChange[] = [];
    await this.db.transaction(async (trx) => {
      let w = await this.openWallet(trx, accountId, now, effects);
      if (w.tier === tier) return;
      if (this.fees[tier] > 0n && !(w.feePeriod === w.period && w.feeTier === tier))
        w = await this.chargeFee(trx, accountId, w, tier, now, effects, 'taken');
      await exec(trx, 'update accounts set tier = ? where id = ?', [tier, accountId]);
    });
    this.publish(effects);
    return { id: accountId, tier };
  }

  async getAllocation(accountId: string): Promise<AllocationView> {
    const found = await rows<{ tier: string; period: string | null; period_used: unknown; period_held: unknown }>(
      this.db,
      'select a.tier, w.period, w.period_used, w.period_held from accounts a left join wallets w on w.account_id = a.id where a.id = ?',
      [accountId],
    );
    const r = found[0];
    if (!r) throw new DomainError('not_found', `No account with id '${accountId}'.`, { param: 'account_id' });
    const tier: Tier = isTier(r.tier) ? r.tier : 'free';
    const period = periodOf(this.now());
    const current = r.period === period;
    const used = current ? int(r.period_used) : 0;
    const held = current ? int(r.period_held) : 0;
    const monthlyTokens = this.tiers[tier].monthly_tokens;
    const { start, next } = periodBounds(period);
    return {
      period,
      periodStart: start,
      periodEnd: next,
      tier,
      monthlyTokens,
      used,
      held,
      remaining: monthlyTokens === null ? null : Math.max(0, monthlyTokens - used - held),
    };
  }

  async getSettings(accountId: string): Promise<SettingsView> {
    const found = await rows<Record<string, unknown>>(this.db, `select ${WALLET_COLUMNS} from wallets w where w.account_id = ?`, [
      accountId,
    ]);
    const w = found[0] ? walletRow(found[0], 'free') : null;
    const period = periodOf(this.now());
    return {
      accountId,
      spendingLimit: {
        enabled: w?.spendingLimitEnabled ?? false,
        monthlyLimit: w?.spendingLimit ?? null,
        action: w?.spendingLimitAction ?? 'block',
      },
      lowBalanceAlert: w?.lowBalanceThreshold ?? null,
      monthlySpend: w && w.period === period ? w.periodSpent : 0n,
    };
  }

  /** Sets the monthly spending limit; a new limit is a new occasion for its alert. */
  async updateSpendingLimit(
    accountId: string,
    input: { enabled: boolean; monthlyLimit?: bigint | null; action?: SpendingLimitAction | null },
  ): Promise<SettingsView> {
    const action = input.action ?? 'block';
    if (!SPENDING_LIMIT_ACTIONS.includes(action))
      throw new DomainError('invalid_value', "action must be 'block' or 'alert'.", { param: 'action' });
    const limit = input.monthlyLimit ?? null;
    if (input.enabled && limit === null)
      throw new DomainError('missing_required_parameter', 'monthlyLimit is required when the spending limit is enabled.', {
        param: 'monthlyLimit',
      });
    if (limit !== null && (limit < 0n || limit > MAX_NANOS / 2n))
      throw new DomainError('invalid_value', 'monthlyLimit must be zero or a positive amount.', { param: 'monthlyLimit' });
    const now = this.now();
    const effects: WalletChange[] = [];
    await this.db.transaction(async (trx) => {
      await this.openWallet(trx, accountId, now, effects);
      await exec(
        trx,
        'update wallets set spending_limit_enabled = ?, spending_limit = ?, spending_limit_action = ?, spending_alert_period = null, updated_at = ? where account_id = ?',
        [input.enabled, limit, action, now, accountId],
      );
    });
    this.publish(effects);
    return this.getSettings(accountId);
  }

  /**
   * Sets (or with null, clears) the low-balance alert threshold. An alert is written when the
   * balance crosses below it; a balance already below it when it is set is no crossing.
   */
  async setLowBalanceAlert(accountId: string, threshold: bigint | null): Promise<SettingsView> {
    if (threshold !== null && (threshold < 0n || threshold > MAX_NANOS / 2n))
      throw new DomainError('invalid_value', 'threshold must be zero or a positive amount.', { param: 'threshold' });
    const now = this.now();
    const effects: WalletChange[] = [];
    await this.db.transaction(async (trx) => {
      const w = await this.openWallet(trx, accountId, now, effects);
      const alreadyBelow = threshold !== null && w.balance < threshold;
      await exec(trx, 'update wallets set low_balance_threshold = ?, low_balance_alerted = ?, updated_at = ? where account_id = ?', [
        threshold,
        alreadyBelow,
        now,
        accountId,
      ]);
    });
    this.publish(effects);
    return this.getSettings(accountId);
  }
}

function replayed(existing: TransactionView, input: { accountId: string; amount: bigint; type: string }): TransactionView {
  if (existing.accountId !== input.accountId || existing.amount !== input.amount || existing.type !== input.type) {
    throw new DomainError('invalid_value', 'This idempotency key was already used for a different credit.', { param: 'idempotency_key' });
  }
  return existing;
}
