// Admission: before the engine call, a hold on the allocation and the wallet for the call's worst
// case, under the tier's policy and the spending limit (./hold-plan.ts decides). On SQLite in one
// locked transaction; on PostgreSQL first optimistically (a compare-and-set), then locked.
import type { TierPolicy } from '../accounts/tiers.js';
import { isTier } from '../accounts/accounts-service.js';
import { DomainError } from '../errors.js';
import type { MeterRequest, MeterTicket } from '../inference/inference-service.js';
import { newId } from '../ids.js';
import { planHold } from './hold-plan.js';
import type { Prices } from './money.js';
import { periodBounds, periodOf } from './period.js';
import { rows, run, type Binding } from './sql.js';
import type { WalletChange } from './wallet-events.js';
import type { CallBase, HeldCall, WalletRow } from './billing-types.js';
import { HOLD_COLUMNS, OPTIMISTIC_ATTEMPTS, WALLET_COLUMNS, walletRow } from './billing-types.js';
import { insertHold } from './hold-store.js';
import { Settlement } from './settlement.js';

export abstract class Admission extends Settlement {
  async admit(req: MeterRequest): Promise<MeterTicket> {
    const { caller, model } = req;
    const prices = this.pricesOf(model);
    const base: CallBase = {
      id: newId('call'),
      accountId: caller.accountId,
      keyId: caller.keyId ?? null,
      endUser: req.endUser ?? null,
      requestId: caller.requestId,
      model: model.id,
      prices,
    };
    if (prices.inputPerMillion === 0n && prices.outputPerMillion === 0n) {
      // A free model (moderation, by default) holds nothing and draws on no allocation.
      const call: HeldCall = {
        ...base,
        kind: 'free',
        period: periodOf(this.now()),
        allocationTokens: 0,
        walletNanos: 0n,
        monthlyTokens: null,
      };
      return this.ticket(call, req.requestedOutputTokens ?? req.maxOutputTokens);
    }
    if (this.db.kind === 'postgresql') {
      const placed = await this.admitOptimistically(req, base);
      if (placed) return placed;
    }
    return this.admitLocked(req, base);
  }

  /** The hold plan for a call against a wallet row, under the tier's policy. */
  protected plan(req: MeterRequest, w: WalletRow, policy: TierPolicy & { monthly_tokens: number }, prices: Prices) {
    return planHold({
      promptTokens: req.promptTokens,
      requestedOutputTokens: req.requestedOutputTokens,
      maxOutputTokens: req.maxOutputTokens,
      chat: req.model.category === 'chat',
      prices,
      tier: w.tier,
      monthlyTokens: policy.monthly_tokens,
      allocationLeft: policy.monthly_tokens - w.periodUsed - w.periodHeld,
      overage: policy.overage,
      walletAvailable: w.balance - w.held,
      spendingLimit:
        w.spendingLimitEnabled && w.spendingLimitAction === 'block' && w.spendingLimit !== null
          ? { limit: w.spendingLimit, spent: w.periodSpent, held: w.held }
          : null,
      resetsAt: periodBounds(w.period).next,
    });
  }

  protected holdRow(call: HeldCall, req: MeterRequest, outputTokens: number, now: Date): Binding[] {
    const expiresAt = new Date(now.getTime() + this.settings.hold_expiry_seconds * 1000);
    return [
      call.id,
      call.accountId,
      call.keyId,
      call.requestId,
      call.model,
      call.period,
      call.allocationTokens,
      call.walletNanos,
      req.promptTokens,
      outputTokens,
      this.instanceId,
      now,
      expiresAt,
      call.endUser,
    ];
  }

  /**
   * Admission in one transaction holding the wallet row's lock: read, decide, hold. Creates the
   * wallet and rolls the period (charging its fee) on the way. The path on SQLite, where the
   * transaction runs synchronously and shares its commit with the others of the same tick.
   */
  protected async admitLocked(req: MeterRequest, base: CallBase): Promise<MeterTicket> {
    const now = this.now();
    const effects: WalletChange[] = [];
    const { call, outputTokens } = await this.db.transaction(async (trx) => {
      const w = await this.openWallet(trx, base.accountId, now, effects);
      const policy = this.tiers[w.tier];
      if (policy.monthly_tokens === null) {
        // Unlimited: nothing is held; usage is recorded at settlement.
        return { call: unlimitedCall(base, w.period), outputTokens: req.requestedOutputTokens ?? req.maxOutputTokens };
      }
      const plan = this.plan(req, w, { ...policy, monthly_tokens: policy.monthly_tokens }, base.prices);
      if (!plan.ok) throw new DomainError(plan.code, plan.message);
      const call: HeldCall = {
        ...base,
        kind: 'held',
        period: w.period,
        allocationTokens: plan.allocationTokens,
        walletNanos: plan.walletNanos,
        monthlyTokens: policy.monthly_tokens,
      };
      // The row is locked: the conditions cannot fail; they stay as the last line of defence.
      const placed = await run(
        trx,
        'update wallets set held = held + ?, period_held = period_held + ?, updated_at = ? ' +
          'where account_id = ? and period = ? and balance - held >= ? and period_used + period_held + ? <= ?',
        [
          plan.walletNanos,
          plan.allocationTokens,
          now,
          base.accountId,
          w.period,
          plan.walletNanos,
          plan.allocationTokens,
          policy.monthly_tokens,
        ],
      );
      if (placed !== 1) throw new Error(`hold for ${base.accountId} did not fit its locked wallet row`);
      await insertHold(trx, this.holdRow(call, req, plan.outputTokens, now));
      return { call, outputTokens: plan.outputTokens };
    });
    this.publish(effects);
    return this.ticket(call, outputTokens);
  }

  /**
   * Admission on PostgreSQL in two statements and no held lock: read the wallet row, decide, then
   * place the hold with one conditional update (compare-and-set on what the decision relied on:
   * the period, the money available, the allocation left, the spending-limit room) that inserts
   * the hold row in the same statement. When another call changed those values in between, the
   * update matches nothing and admission starts over; after a few tries, or when the wallet must
   * be created or rolled into a new period, it takes the locked path. Returns null for it.
   */
  protected async admitOptimistically(req: MeterRequest, base: CallBase): Promise<MeterTicket | null> {
    for (let attempt = 0; attempt < OPTIMISTIC_ATTEMPTS; attempt++) {
      const now = this.now();
      const found = await rows<Record<string, unknown>>(
        this.db,
        `select ${WALLET_COLUMNS}, a.tier from wallets w join accounts a on a.id = w.account_id where w.account_id = ?`,
        [base.accountId],
      );
      const r = found[0];
      if (!r) return null;
      const w = walletRow(r, isTier(r.tier) ? r.tier : 'free');
      if (w.period !== periodOf(now) || this.feeDue(w)) return null;
      const policy = this.tiers[w.tier];
      if (policy.monthly_tokens === null) {
        return this.ticket(unlimitedCall(base, w.period), req.requestedOutputTokens ?? req.maxOutputTokens);
      }
      const plan = this.plan(req, w, { ...policy, monthly_tokens: policy.monthly_tokens }, base.prices);
      if (!plan.ok) throw new DomainError(plan.code, plan.message);
      const call: HeldCall = {
        ...base,
        kind: 'held',
        period: w.period,
        allocationTokens: plan.allocationTokens,
        walletNanos: plan.walletNanos,
        monthlyTokens: policy.monthly_tokens,
      };
      // Allocation first: when the allocation could not cover the whole call, the hold is only
      // right if the allocation left is still exactly what the plan split the call with.
      const allocationLeft = policy.monthly_tokens - w.periodUsed - w.periodHeld;
      const coversAll = plan.allocationTokens === req.promptTokens + plan.outputTokens;
      const limitCheck =
        plan.walletNanos > 0n
          ? " and (not (spending_limit_enabled and spending_limit_action = 'block' and spending_limit is not null) or spending_limit - period_spent - held >= ?)"
          : '';
      const placed = await run(
        this.db,
        'with w as (update wallets set held = held + ?, period_held = period_held + ?, updated_at = ? ' +
          `where account_id = ? and period = ? and balance - held >= ? and ? - period_used - period_held ${coversAll ? '>=' : '='} ?${limitCheck} returning account_id) ` +
          `insert into holds (${HOLD_COLUMNS}) select ?, w.account_id, ?, ?, ?, ?, ?::bigint, ?::bigint, ?::int, ?::int, ?, ?::timestamptz, ?::timestamptz, ? from w`,
        [
          plan.walletNanos,
          plan.allocationTokens,
          now,
          base.accountId,
          w.period,
          plan.walletNanos,
          policy.monthly_tokens,
          coversAll ? plan.allocationTokens : allocationLeft,
          ...(plan.walletNanos > 0n ? [plan.walletNanos] : []),
          ...this.holdRow(call, req, plan.outputTokens, now).filter((_, i) => i !== 1),
        ],
      );
      if (placed === 1) return this.ticket(call, plan.outputTokens);
    }
    return null;
  }

  protected ticket(call: HeldCall, maxOutputTokens: number): MeterTicket {
    let settled = false;
    return {
      maxOutputTokens,
      settle: async (usage, outcome) => {
        if (settled) return;
        settled = true;
        await this.settle(call, usage, outcome);
      },
    };
  }
}

/** A call of an unlimited tier: nothing is held; usage is recorded at settlement. */
function unlimitedCall(base: CallBase, period: string): HeldCall {
  return { ...base, kind: 'unlimited', period, allocationTokens: 0, walletNanos: 0n, monthlyTokens: null };
}
