// Admission: before the engine call, a hold on the allocation and the wallet for the call's worst
// case, under the tier's policy and the spending limit (./hold-plan.ts decides). On SQLite in one
// locked transaction; on PostgreSQL first optimistically, an account's concurrent admissions
// batched into one compare-and-set, then locked.
import type { Tier, TierPolicy } from '../accounts/tiers.js';
import type { MeterRequest, MeterTicket } from '../inference/inference-service.js';
import { newId } from '../ids.js';
import { planHold, RefusalError } from './hold-plan.js';
import type { Prices } from './money.js';
import { periodBounds, periodOf } from './period.js';
import type { Binding } from './sql.js';
import { Effects, HOT_PATH, OPTIMISTIC_ATTEMPTS, type CallBase, type HeldCall, type WalletRow } from './billing-types.js';
import { KeyedBatcher, type Outcome } from './batcher.js';
import { insertHold } from './hold-store.js';
import { holdOf, type PlannedHold } from './wallet-store.js';
import { Settlement } from './settlement.js';

interface Admitting {
  req: MeterRequest;
  base: CallBase;
}

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
    try {
      if (this.wallets.optimistic) {
        const placed = await this.admitOptimistically(req, base);
        if (placed) return placed;
      } else if (this.tiers[req.caller.rateLimitProfile?.tier as Tier]?.monthly_tokens === null) {
        const unlimited = await this.admitUnlimited(req, base);
        if (unlimited) return unlimited;
      }
      return await this.admitLocked(req, base);
    } catch (err) {
      if (err instanceof RefusalError && err.code === 'spending_limit_reached') this.noteSpendingLimitRefusal(base.accountId, err.occasion);
      else if (err instanceof RefusalError && (err.code === 'monthly_allocation_exhausted' || err.code === 'insufficient_balance'))
        this.noteAllocationRefusal(base.accountId, req.promptTokens + (model.category === 'chat' ? 1 : 0), err.occasion);
      if (err instanceof RefusalError && err.code === 'insufficient_balance') await this.afterInsufficientBalance(base.accountId, err);
      throw err;
    }
  }

  /**
   * A call of an unlimited tier holds nothing, so it needs no lock: one read of the wallet row
   * admits it when the row says the tier is unlimited, the period is current and its fee is paid.
   * Anything else (no wallet yet, a new period, a fee due, a tier changed since the key was read)
   * takes the locked path. SQLite's path (PostgreSQL's optimistic batch does the same): the key's
   * tier is the hint, the row's own tier decides.
   */
  private async admitUnlimited(req: MeterRequest, base: CallBase): Promise<MeterTicket | null> {
    const w = await this.wallets.read(this.db, base.accountId);
    if (!w || w.period < periodOf(this.now()) || this.feeDue(w) || this.tiers[w.tier].monthly_tokens !== null) return null;
    return this.ticket(unlimitedCall(base, w.period), req.requestedOutputTokens ?? req.maxOutputTokens);
  }

  /** The hold plan for a call against a wallet row, under the tier's policy. */
  protected plan(req: MeterRequest, w: WalletRow, policy: TierPolicy & { monthly_tokens: number }, prices: Prices) {
    return planHold({
      promptTokens: req.promptTokens,
      requestedOutputTokens: req.requestedOutputTokens,
      maxOutputTokens: req.maxOutputTokens,
      choices: req.choices ?? 1,
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
   * transaction runs synchronously and shares its commit with the others of the same tick, and
   * PostgreSQL's fallback.
   */
  protected async admitLocked(req: MeterRequest, base: CallBase): Promise<MeterTicket> {
    const now = this.now();
    const effects = new Effects();
    const { call, outputTokens } = await this.db.transaction(async (trx) => {
      const w = await this.openWallet(trx, base.accountId, now, effects);
      const policy = this.tiers[w.tier];
      if (policy.monthly_tokens === null) {
        // Unlimited: nothing is held; usage is recorded at settlement.
        return { call: unlimitedCall(base, w.period), outputTokens: req.requestedOutputTokens ?? req.maxOutputTokens };
      }
      const plan = this.plan(req, w, { ...policy, monthly_tokens: policy.monthly_tokens }, base.prices);
      if (!plan.ok) throw new RefusalError(plan, w);
      const call = heldCall(base, w.period, plan, policy.monthly_tokens);
      // The row is locked: the conditions cannot fail; they stay as the last line of defence.
      if (!(await this.wallets.hold(trx, { ...holdOf(call), monthlyTokens: policy.monthly_tokens }, now)))
        throw new Error(`hold for ${base.accountId} did not fit its locked wallet row`);
      await insertHold(trx, this.holdRow(call, req, plan.outputTokens, now));
      return { call, outputTokens: plan.outputTokens };
    }, HOT_PATH);
    await this.afterCommit(effects);
    return this.ticket(call, outputTokens);
  }

  /**
   * Admission without a held lock (PostgreSQL): the admissions of one account that arrive together
   * are planned one after the other on one read of the wallet row, and their holds placed by one
   * conditional statement (compare-and-set on what the plans relied on: the period, the money
   * available, the allocation left, the spending-limit room) that inserts the hold rows with it.
   * When another change came in between, the statement places nothing and the batch is planned
   * again; after a few tries, or when the wallet must be created or rolled into a new period, each
   * takes the locked path (null).
   */
  protected admitOptimistically(req: MeterRequest, base: CallBase): Promise<MeterTicket | null> {
    this.admissions ??= new KeyedBatcher((accountId, items) => this.admitBatch(accountId, items));
    return this.admissions.add(base.accountId, { req, base });
  }

  private admissions: KeyedBatcher<Admitting, MeterTicket | null> | undefined;

  private async admitBatch(accountId: string, items: Admitting[]): Promise<Outcome<MeterTicket | null>[]> {
    let fresh = false;
    for (let attempt = 0; attempt < OPTIMISTIC_ATTEMPTS; attempt++) {
      const now = this.now();
      const { row: read, cached } = fresh
        ? { row: await this.wallets.read(this.db, accountId), cached: false }
        : await this.wallets.readForAdmission(accountId);
      fresh = true;
      // A wallet in an earlier month is rolled on the locked path; one in a later month (moved
      // there by a server whose clock is ahead) is current.
      if (!read || read.period < periodOf(now) || this.feeDue(read)) {
        if (cached) continue;
        break;
      }
      const policy = this.tiers[read.tier];
      const monthly = policy.monthly_tokens;
      if (monthly === null) {
        if (cached) continue; // unlimited: nothing to place that would check the tier
        return items.map(({ req, base }) => ({
          ok: true,
          value: this.ticket(unlimitedCall(base, read.period), req.requestedOutputTokens ?? req.maxOutputTokens),
        }));
      }
      // Each plan sees the wallet as the holds planned before it in the batch leave it.
      let w = read;
      let exact = false;
      let refused = false;
      let capped = false;
      const outcomes: Outcome<MeterTicket | null>[] = [];
      const planned: PlannedHold[] = [];
      for (const { req, base } of items) {
        const plan = this.plan(req, w, { ...policy, monthly_tokens: monthly }, base.prices);
        if (!plan.ok) {
          refused = true;
          outcomes.push({ ok: false, error: new RefusalError(plan, w) });
          continue;
        }
        const call = heldCall(base, w.period, plan, monthly);
        // A call the allocation could not cover whole is only right if the allocation left is
        // still exactly what the plans split the calls with.
        if (plan.allocationTokens !== req.promptTokens + plan.outputTokens) exact = true;
        // Billing lowered the output to what the wallet pays for.
        if (plan.outputTokens < (req.requestedOutputTokens ?? req.maxOutputTokens)) capped = true;
        planned.push({ call, row: this.holdRow(call, req, plan.outputTokens, now) });
        outcomes.push({ ok: true, value: this.ticket(call, plan.outputTokens) });
        w = { ...w, held: w.held + plan.walletNanos, periodHeld: w.periodHeld + plan.allocationTokens };
      }
      // A refusal, or an output lowered to what the wallet pays for, is only given on a row read
      // just now: a cached row may predate a top-up or a release on another instance.
      if ((refused || capped) && cached) continue;
      const placed = await this.wallets.placeHoldsIfUnchanged(
        {
          accountId,
          tier: read.tier,
          period: read.period,
          monthlyTokens: monthly,
          walletNanos: w.held - read.held,
          allocationTokens: w.periodHeld - read.periodHeld,
          exactAllocationLeft: exact ? monthly - read.periodUsed - read.periodHeld : null,
          now,
        },
        planned,
      );
      if (placed) return outcomes;
    }
    return items.map(() => ({ ok: true, value: null }));
  }

  protected ticket(call: HeldCall, maxOutputTokens: number): MeterTicket {
    let settled = false;
    return {
      maxOutputTokens,
      settle: async (usage, outcome, undelivered) => {
        if (settled) return;
        settled = true;
        await this.settle(call, usage, outcome, undelivered);
      },
    };
  }
}

/** A call with its hold: what the plan reserves of the allocation and of the wallet. */
function heldCall(
  base: CallBase,
  period: string,
  plan: { allocationTokens: number; walletNanos: bigint },
  monthlyTokens: number,
): HeldCall {
  return { ...base, kind: 'held', period, allocationTokens: plan.allocationTokens, walletNanos: plan.walletNanos, monthlyTokens };
}

/** A call of an unlimited tier: nothing is held; usage is recorded at settlement. */
function unlimitedCall(base: CallBase, period: string): HeldCall {
  return { ...base, kind: 'unlimited', period, allocationTokens: 0, walletNanos: 0n, monthlyTokens: null };
}
