// Settlement: after the engine call, the hold is replaced by what the call really used — the
// allocation and wallet money charged (capped at the hold), the ledger row and usage event
// written — atomically (the wallet store writes it: one short transaction on SQLite, an account's
// concurrent settlements batched into one statement on PostgreSQL), retried on a transient
// conflict; then, after the commit, the change is published and alerts are raised.
import type { CallOutcome, Undelivered } from '../inference/inference-service.js';
import type { Usage } from '../inference/engine.js';
import { ledgerDescription } from '../ledger/ledger.js';
import { split } from './hold-plan.js';
import { exec, rows, run } from './sql.js';
import { Effects, HOT_PATH, SETTLE_MAX_WAIT_MS, SETTLE_RETRY_MS, USAGE_EVENT_INSERT, type HeldCall } from './billing-types.js';
import { usageEventRow, type Settling } from './wallet-store.js';
import { WalletLifecycle } from './wallet-lifecycle.js';

const ZERO_USAGE: Usage = { promptTokens: 0, completionTokens: 0, totalTokens: 0 };

export abstract class Settlement extends WalletLifecycle {
  /** Settlements under way, retrying ones included: stop() waits for them before the database closes. */
  protected settlingNow = 0;

  /**
   * Charges the real usage (allocation first: prompt, then completion tokens; the rest from the
   * wallet at the matching prices, never more than was held), releases the rest of the hold and
   * records the usage event, in one transaction. A failure is retried, then logged: the hold
   * stays until the sweeper releases it, and the call is charged nothing.
   */
  protected async settle(call: HeldCall, usage: Usage, outcome: CallOutcome, undelivered?: Undelivered): Promise<void> {
    this.settlingNow++;
    try {
      await this.settleWithRetries(call, usage, outcome, undelivered);
    } finally {
      this.settlingNow--;
    }
  }

  private async settleWithRetries(call: HeldCall, usage: Usage, outcome: CallOutcome, undelivered?: Undelivered): Promise<void> {
    const started = Date.now();
    for (let attempt = 1; ; attempt++) {
      try {
        await this.settleOnce(call, usage, outcome, undelivered);
      } catch (err) {
        const wait = Math.min(20 * 2 ** (attempt - 1), SETTLE_MAX_WAIT_MS);
        if (Date.now() - started + wait > SETTLE_RETRY_MS) {
          this.logger.error(
            { err, reqId: call.requestId, hold: call.id, account: call.accountId, attempts: attempt },
            'settlement failed; the hold is released unbilled by the sweeper',
          );
          return;
        }
        await new Promise((r) => setTimeout(r, wait));
        continue;
      }
      this.keyUse.touch(call.keyId, this.now());
      if (attempt > 1) this.logger.warn({ reqId: call.requestId, hold: call.id, attempts: attempt }, 'settlement succeeded on a retry');
      return;
    }
  }

  protected async settleOnce(call: HeldCall, usage: Usage, outcome: CallOutcome, undelivered?: Undelivered): Promise<void> {
    const now = this.now();
    const promptTokens = Math.max(0, usage.promptTokens);
    const completionTokens = Math.max(0, usage.completionTokens);
    if (call.kind !== 'held') {
      // Nothing is charged either way: only the event's outcome and tokens depend on delivery.
      const late = undelivered?.();
      if (late) return this.settleOnce(call, ZERO_USAGE, late);
    }
    const base = {
      call,
      outcome,
      promptTokens,
      completionTokens,
      charge: 0n,
      allocationUsed: 0,
      note: null,
      description: '',
      now,
    } satisfies Settling;

    if (call.kind === 'free') {
      await this.db.transaction((trx) => exec(trx, USAGE_EVENT_INSERT, usageEventRow(base, 0, 0n, null)), HOT_PATH);
      return;
    }
    if (call.kind === 'unlimited') {
      await this.wallets.recordUnlimited(base);
      return;
    }

    const { allocationUsed, walletNanos: cost } = split(promptTokens, completionTokens, call.allocationTokens, call.prices);
    const charge = cost < call.walletNanos ? cost : call.walletNanos;
    const settling: Settling = {
      ...base,
      undelivered,
      charge,
      allocationUsed,
      note: cost > call.walletNanos ? 'capped_at_hold' : null,
      // The ledger row's, written only for a charge.
      description:
        charge > 0n
          ? ledgerDescription(
              `${call.model}: ${promptTokens} prompt + ${completionTokens} completion tokens${allocationUsed > 0 ? ` (${allocationUsed} from the monthly allocation)` : ''}`,
            )
          : '',
    };
    const settled = await this.wallets.settle(settling);
    if (!settled) {
      // The hold is gone. Either the sweeper released it (expired, or this server was taken for
      // dead) and wrote an 'abandoned' event: the call is charged nothing, and that event gets its
      // real usage. Or this very settlement committed and only its answer was lost (a connection
      // dropped after the commit, and this is the retry): its event, with its charge, stands.
      await this.db.transaction(async (trx) => {
        const updated = await run(
          trx,
          "update usage_events set outcome = ?, prompt_tokens = ?, completion_tokens = ?, total_tokens = ?, end_user = ? where id = ? and billing_note = 'hold_released'",
          [outcome, promptTokens, completionTokens, promptTokens + completionTokens, call.endUser, call.id],
        );
        if (updated > 0) return;
        const [settledBefore] = await rows<{ id: string }>(trx, 'select id from usage_events where id = ?', [call.id]);
        if (settledBefore) {
          this.logger.warn(
            { reqId: call.requestId, hold: call.id },
            'settlement: committed before its answer was lost; nothing to do again',
          );
          return;
        }
        await exec(trx, USAGE_EVENT_INSERT, usageEventRow(base, 0, 0n, 'hold_released'));
      });
      return;
    }
    const effects = new Effects();
    if (settled.transaction)
      effects.changes.push({ accountId: call.accountId, balance: settled.transaction.balanceAfter, transaction: settled.transaction });
    effects.alerts.push({
      accountId: call.accountId,
      row: settled.row,
      monthlyTokens: settled.row.period === call.period ? call.monthlyTokens : null,
      occasion: call.id,
      now,
    });
    await this.afterCommit(effects);
  }
}
