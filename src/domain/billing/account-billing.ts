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
import { formatDecimal, MAX_NANOS, WALLET_CURRENCY } from './money.js';
import { currentPeriod, periodBounds } from './period.js';
import { exec, type Queryable } from './sql.js';
import type { WalletChange } from './wallet-events.js';
import type { AllocationRow } from './wallet-store.js';
import {
  Effects,
  SPENDING_LIMIT_ACTIONS,
  type AllocationView,
  type SettingsView,
  type SpendingLimitAction,
  type WalletRow,
  type WalletView,
  type CreditType,
} from './billing-types.js';
import { Sweeper } from './sweeper.js';

/** The most a wallet holds: half of what its 64-bit column can, so no sum of two amounts overflows. */
const MAX_WALLET = MAX_NANOS / 2n;

export abstract class AccountBilling extends Sweeper {
  async getWallet(accountId: string): Promise<WalletView> {
    const { balance, held } = await this.wallets.balance(this.db, accountId);
    return { accountId, balance, held, currency: WALLET_CURRENCY };
  }

  /** The wallets of `accountIds`, in their order, in one query (a list of accounts; DataLoader). */
  async getWallets(accountIds: readonly string[]): Promise<WalletView[]> {
    const found = await this.wallets.balances(this.db, [...new Set(accountIds)]);
    return accountIds.map((accountId) => {
      const w = found.get(accountId) ?? { balance: 0n, held: 0n };
      return { accountId, balance: w.balance, held: w.held, currency: WALLET_CURRENCY };
    });
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
    if (input.amount <= 0n || input.amount > MAX_WALLET) {
      throw new DomainError(
        'invalid_value',
        `amount must be more than 0 and at most ${formatDecimal(MAX_WALLET)} ${WALLET_CURRENCY}, with at most 9 decimal places.`,
        { param: 'amount' },
      );
    }
    const description = input.description.trim();
    if (!description || description.length > 500)
      throw new DomainError('invalid_value', 'description must be text of 1 to 500 characters.', { param: 'description' });
    const key = input.idempotencyKey ? `credit:${input.accountId}:${input.idempotencyKey}` : null;
    if (key && key.length > 240)
      throw new DomainError('invalid_value', 'idempotency key is too long (at most 200 characters).', { param: 'idempotency_key' });
    const now = this.now();
    const effects = new Effects();
    const transaction = await this.db.transaction((trx) => this.credit(trx, { ...input, description, idempotencyKey: key }, now, effects));
    await this.afterCommit(effects);
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
    changes: WalletChange[],
  ): Promise<TransactionView> {
    const effects = new Effects();
    const transaction = await this.credit(trx, input, now, effects);
    changes.push(...effects.changes);
    // The alerts a fee charged on the way may leave due are checked when the caller publishes.
    return transaction;
  }

  /**
   * Takes credits back inside the caller's transaction (a top-up whose payment was refunded or
   * disputed), under the wallet row's lock: at most what is available (the balance less what calls
   * in flight hold), so no balance goes below zero and no call in flight loses its hold. Writes a
   * negative `topup` row and returns what it took (0n: nothing was available, and no row). A key
   * already in the ledger takes nothing again and returns what it took then.
   */
  async takeBackWithin(
    trx: Queryable,
    input: {
      accountId: string;
      /** Nanos, positive: the most to take. */
      amount: bigint;
      /** The ledger row's text, given what was taken. */
      describe: (taken: bigint) => string;
      reference: string;
      idempotencyKey: string;
    },
    now: Date,
    changes: WalletChange[],
  ): Promise<bigint> {
    const effects = new Effects();
    const w = await this.openWallet(trx, input.accountId, now, effects, { fee: false });
    const existing = await findByIdempotencyKey(trx, input.idempotencyKey);
    if (existing) return -existing.amount;
    const available = w.balance - w.held;
    const taken = input.amount < available ? input.amount : available > 0n ? available : 0n;
    if (taken > 0n) {
      const balance = await this.wallets.credit(trx, input.accountId, -taken, now);
      const transaction = await appendTransaction(trx, {
        accountId: input.accountId,
        type: 'topup',
        amount: -taken,
        balanceAfter: balance,
        description: input.describe(taken),
        reference: input.reference,
        idempotencyKey: input.idempotencyKey,
        createdAt: now,
      });
      effects.changes.push({ accountId: input.accountId, balance, transaction });
    }
    changes.push(...effects.changes);
    return taken;
  }

  private async credit(
    trx: Queryable,
    input: Parameters<AccountBilling['creditWithin']>[1],
    now: Date,
    effects: Effects,
  ): Promise<TransactionView> {
    // A fee due is charged after the credit: the money coming in pays it (a first top-up of an
    // account created on a paying tier, or the first of a month), rather than the account being
    // moved to free for want of the money it is being given.
    const w = await this.openWallet(trx, input.accountId, now, effects, { fee: false });
    // Checked under the wallet's lock: a concurrent twin has committed or not started.
    if (input.idempotencyKey) {
      const existing = await findByIdempotencyKey(trx, input.idempotencyKey);
      if (existing) return replayed(existing, input);
    }
    if (w.balance + input.amount > MAX_WALLET) {
      throw new DomainError(
        'invalid_value',
        `This credit would bring the balance past ${formatDecimal(MAX_WALLET)} ${WALLET_CURRENCY}, the most a wallet holds.`,
        { param: 'amount' },
      );
    }
    const balance = await this.wallets.credit(trx, input.accountId, input.amount, now);
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
    effects.changes.push({ accountId: input.accountId, balance, transaction });
    // One too small for the fee leaves it due (a credit never moves an account to free): the next
    // billing action charges it, or moves the account to free if the wallet still cannot pay.
    if (this.feeDue(w) && balance - w.held >= this.fees[w.tier])
      await this.chargeFee(trx, input.accountId, { ...w, balance }, w.tier, now, effects, 'period');
    return transaction;
  }

  /**
   * Publishes wallet changes once the transaction that made them (payments' credits) has
   * committed, and raises the alerts the accounts' wallets are past (a monthly fee charged on the
   * way can leave one due), after the commit as every billing change does.
   */
  publishChanges(changes: WalletChange[]): void {
    this.publish(changes);
    for (const accountId of new Set(changes.map((c) => c.accountId))) void this.checkAlerts(accountId, changes.at(-1)!.transaction.id);
  }

  private async checkAlerts(accountId: string, occasion: string): Promise<void> {
    const row = await this.wallets.read(this.db, accountId).catch(() => null);
    if (row) await this.raiseAfterCommit({ accountId, row, monthlyTokens: null, occasion, now: this.now() });
  }

  /**
   * Moves an account to a tier. A tier with a monthly fee charges it now (once per period);
   * when the wallet cannot pay, the change is refused with insufficient_balance.
   */
  async setTier(accountId: string, tier: string): Promise<{ id: string; tier: Tier }> {
    if (!isTier(tier))
      throw new DomainError('invalid_value', `tier must be one of ${Object.keys(this.tiers).join(', ')}.`, { param: 'tier' });
    const now = this.now();
    const effects = new Effects();
    await this.db.transaction(async (trx) => {
      let w = await this.openWallet(trx, accountId, now, effects);
      if (w.tier === tier) return;
      const from = w.tier;
      if (this.fees[tier] > 0n && !(w.feePeriod === w.period && w.feeTier === tier))
        w = await this.chargeFee(trx, accountId, w, tier, now, effects, 'taken');
      await exec(trx, 'update accounts set tier = ? where id = ?', [tier, accountId]);
      // Another allocation: its 80% and 100% alerts are due at its own lines, this month too.
      if (this.tiers[tier].monthly_tokens !== this.tiers[from].monthly_tokens)
        await exec(trx, 'update wallets set allocation_alert_period = null, allocation_full_period = null where account_id = ?', [
          accountId,
        ]);
    });
    await this.afterCommit(effects);
    return { id: accountId, tier };
  }

  /**
   * A customer moving their own account to a tier (the dashboard's Plan page): only to a tier the
   * config lets customers choose; anything else is as setTier.
   */
  async choosePlan(accountId: string, tier: string): Promise<{ id: string; tier: Tier }> {
    if (isTier(tier) && !this.tiers[tier].self_service) {
      throw new DomainError(
        'tier_not_self_service',
        `The ${tier} tier is arranged with the operator, not chosen here: ask them to move your account to it.`,
        { param: 'tier' },
      );
    }
    return this.setTier(accountId, tier);
  }

  async getAllocation(accountId: string): Promise<AllocationView> {
    const r = await this.wallets.allocation(this.db, accountId);
    if (!r) throw noAccount(accountId);
    return this.allocationView(r);
  }

  /**
   * The allocations of `accountIds`, in their order, in one query (a list of accounts; DataLoader):
   * a DomainError (not_found) in the place of an id with no account.
   */
  async getAllocations(accountIds: readonly string[]): Promise<(AllocationView | DomainError)[]> {
    const found = await this.wallets.allocations(this.db, accountIds);
    return accountIds.map((id) => {
      const r = found.get(id);
      return r ? this.allocationView(r) : noAccount(id);
    });
  }

  private allocationView(r: AllocationRow): AllocationView {
    const tier = r.tier;
    const period = currentPeriod(r.period, this.now());
    const current = r.period === period;
    const used = current ? r.used : 0;
    const held = current ? r.held : 0;
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
      feePaidTier: r.feePeriod === period && r.feeTier !== null && isTier(r.feeTier) ? r.feeTier : null,
    };
  }

  async getSettings(accountId: string): Promise<SettingsView> {
    return this.settingsView(accountId, await this.wallets.read(this.db, accountId));
  }

  /** The settings of `accountIds`, in their order, in one query (a list of accounts; DataLoader). */
  async getSettingsOf(accountIds: readonly string[]): Promise<SettingsView[]> {
    const found = await this.wallets.readMany(this.db, accountIds);
    return accountIds.map((id) => this.settingsView(id, found.get(id) ?? null));
  }

  private settingsView(accountId: string, w: WalletRow | null): SettingsView {
    const period = currentPeriod(w?.period, this.now());
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
    if (limit !== null && (limit < 0n || limit > MAX_WALLET))
      throw new DomainError('invalid_value', 'monthlyLimit must be zero or a positive amount.', { param: 'monthlyLimit' });
    const now = this.now();
    const effects = new Effects();
    await this.db.transaction(async (trx) => {
      const w = await this.openWallet(trx, accountId, now, effects);
      // Saved as it was (the settings form saved again): no new occasion for its alert.
      const changed = w.spendingLimitEnabled !== input.enabled || w.spendingLimit !== limit || w.spendingLimitAction !== action;
      await this.wallets.setSpendingLimit(trx, accountId, { enabled: input.enabled, limit, action, rearm: changed }, now);
    });
    await this.afterCommit(effects);
    return this.getSettings(accountId);
  }

  /**
   * Sets (or with null, clears) the low-balance alert threshold. An alert is written when the
   * balance crosses below it; a balance already below it when it is set is no crossing.
   */
  async setLowBalanceAlert(accountId: string, threshold: bigint | null): Promise<SettingsView> {
    if (threshold !== null && (threshold < 0n || threshold > MAX_WALLET))
      throw new DomainError('invalid_value', 'threshold must be zero or a positive amount.', { param: 'threshold' });
    const now = this.now();
    const effects = new Effects();
    await this.db.transaction(async (trx) => {
      const w = await this.openWallet(trx, accountId, now, effects);
      await this.wallets.setLowBalanceAlert(trx, accountId, threshold, threshold !== null && w.balance < threshold, now);
    });
    await this.afterCommit(effects);
    return this.getSettings(accountId);
  }
}

const noAccount = (accountId: string) => new DomainError('not_found', `No account with id '${accountId}'.`, { param: 'account_id' });

function replayed(existing: TransactionView, input: { accountId: string; amount: bigint; type: string }): TransactionView {
  if (existing.accountId !== input.accountId || existing.amount !== input.amount || existing.type !== input.type) {
    throw new DomainError('invalid_value', 'This idempotency key was already used for a different credit.', { param: 'idempotency_key' });
  }
  return existing;
}
