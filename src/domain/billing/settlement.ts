// Settlement: after the engine call, the hold is replaced by what the call really used — the
// allocation and wallet money charged (capped at the hold), the ledger row and usage event
// written, alerts raised — in one transaction, retried on a transient conflict.
import type { CallOutcome } from '../inference/inference-service.js';
import type { Usage } from '../inference/engine.js';
import { newId } from '../ids.js';
import { appendTransaction, ledgerDescription } from '../ledger/ledger.js';
import { split } from './hold-plan.js';
import { dayOf } from './period.js';
import { exec, rows, run, type Binding, type Db } from './sql.js';
import type { WalletChange } from './wallet-events.js';
import type { HeldCall } from './billing-types.js';
import { SETTLE_ATTEMPTS, USAGE_EVENT_COLUMNS, USAGE_EVENT_INSERT, WALLET_COLUMNS, walletRow } from './billing-types.js';
import { deleteHold } from './hold-store.js';
import { WalletLifecycle } from './wallet-lifecycle.js';

export abstract class Settlement extends WalletLifecycle {
  /**
   * Charges the real usage (allocation first: prompt, then completion tokens; the rest from the
   * wallet at the matching prices, never more than was held), releases the rest of the hold and
   * records the usage event, in one transaction. A failure is retried, then logged: the hold
   * stays until the sweeper releases it, and the call is charged nothing.
   */
  protected async settle(call: HeldCall, usage: Usage, outcome: CallOutcome): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await this.settleOnce(call, usage, outcome);
        return;
      } catch (err) {
        if (attempt >= SETTLE_ATTEMPTS) {
          this.logger.error(
            { err, reqId: call.requestId, hold: call.id, account: call.accountId },
            'settlement failed; the hold is released unbilled by the sweeper',
          );
          return;
        }
        await new Promise((r) => setTimeout(r, 20 * attempt));
      }
    }
  }

  protected async settleOnce(call: HeldCall, usage: Usage, outcome: CallOutcome): Promise<void> {
    const now = this.now();
    const promptTokens = Math.max(0, usage.promptTokens);
    const completionTokens = Math.max(0, usage.completionTokens);
    const totalTokens = promptTokens + completionTokens;
    const event = (allocationTokens: number, walletNanos: bigint, note: string | null): Binding[] => [
      call.id,
      call.accountId,
      call.keyId,
      call.model,
      call.requestId,
      outcome,
      promptTokens,
      completionTokens,
      totalTokens,
      allocationTokens,
      walletNanos,
      note,
      dayOf(now),
      now,
      call.endUser,
    ];

    if (call.kind === 'free') {
      await exec(this.db, USAGE_EVENT_INSERT, event(0, 0n, null));
      return;
    }
    if (call.kind === 'unlimited') {
      const count =
        'update wallets set period_used = case when period = ? then period_used + ? else period_used end, updated_at = ? where account_id = ?';
      const countBindings: Binding[] = [call.period, totalTokens, now, call.accountId];
      if (this.db.kind === 'postgresql') {
        await exec(this.db, `with u as (${count}) ${USAGE_EVENT_INSERT}`, [...countBindings, ...event(0, 0n, null)]);
        return;
      }
      await this.db.transaction(async (trx) => {
        await exec(trx, count, countBindings);
        await exec(trx, USAGE_EVENT_INSERT, event(0, 0n, null));
      });
      return;
    }

    const { allocationUsed, walletNanos: cost } = split(promptTokens, completionTokens, call.allocationTokens, call.prices);
    const charge = cost < call.walletNanos ? cost : call.walletNanos;
    const note = cost > call.walletNanos ? 'capped_at_hold' : null;
    // Cut as appendTransaction cuts it: PostgreSQL's one-statement path writes the row itself.
    const description = ledgerDescription(
      `${call.model}: ${promptTokens} prompt + ${completionTokens} completion tokens${allocationUsed > 0 ? ` (${allocationUsed} from the monthly allocation)` : ''}`,
    );
    const effects: WalletChange[] = [];
    const walletUpdate: [string, Binding[]] = [
      'update wallets set held = held - ?, balance = balance - ?, ' +
        'period_held = case when period = ? then period_held - ? else period_held end, ' +
        'period_used = case when period = ? then period_used + ? else period_used end, ' +
        'period_spent = period_spent + ?, updated_at = ? where account_id = ?',
      [call.walletNanos, charge, call.period, call.allocationTokens, call.period, allocationUsed, charge, now, call.accountId],
    ];
    const recordReleased = async (trx: Db) => {
      // The sweeper released the hold (expired, or this server was taken for dead) and wrote an
      // 'abandoned' event: the call is charged nothing; the event gets its real usage.
      const updated = await run(
        trx,
        "update usage_events set outcome = ?, prompt_tokens = ?, completion_tokens = ?, total_tokens = ?, billing_note = 'hold_released', end_user = ? where id = ?",
        [outcome, promptTokens, completionTokens, totalTokens, call.endUser, call.id],
      );
      if (updated === 0) await exec(trx, USAGE_EVENT_INSERT, event(0, 0n, 'hold_released'));
    };

    if (this.db.kind === 'postgresql') {
      // One statement, one round trip: delete the hold, move the wallet, append the ledger row
      // and the usage event, atomically; the wallet row is locked only while it runs.
      const transactionId = newId('txn');
      const [after] = await rows<Record<string, unknown>>(
        this.db,
        'with d as (delete from holds where id = ? returning id), ' +
          `w as (${walletUpdate[0]} and exists (select 1 from d) returning *), ` +
          't as (insert into wallet_transactions (id, account_id, type, amount, balance_after, description, reference, idempotency_key, created_at) ' +
          "select ?, w.account_id, 'usage', ?::bigint, w.balance, ?, ?, ?, ?::timestamptz from w where ?::bigint > 0), " +
          `e as (insert into usage_events (${USAGE_EVENT_COLUMNS}) select ?, w.account_id, ?, ?, ?, ?, ?::bigint, ?::bigint, ?::bigint, ?::bigint, ?::bigint, ?, ?, ?::timestamptz, ? from w) ` +
          `select ${WALLET_COLUMNS} from w`,
        [
          call.id,
          ...walletUpdate[1],
          transactionId,
          -charge,
          description,
          call.requestId,
          `usage:${call.id}`,
          now,
          charge,
          ...event(allocationUsed, charge, note).filter((_, i) => i !== 1),
        ],
      );
      if (!after) {
        await this.db.transaction(recordReleased);
        return;
      }
      const row = walletRow(after, 'free');
      const monthly = row.period === call.period ? call.monthlyTokens : null;
      if (this.alertDue(row, monthly))
        await this.db.transaction((trx) => this.raiseAlerts(trx, call.accountId, row, monthly, now, call.id));
      if (charge > 0n) {
        this.publish([
          {
            accountId: call.accountId,
            balance: row.balance,
            transaction: {
              id: transactionId,
              accountId: call.accountId,
              type: 'usage',
              amount: -charge,
              balanceAfter: row.balance,
              description,
              reference: call.requestId,
              createdAt: now,
            },
          },
        ]);
      }
      return;
    }

    await this.db.transaction(async (trx) => {
      // Deleting the hold is what makes settlement happen once: of a settlement and the sweeper
      // releasing the same hold, only one deletes it. (Lock order: hold row, then wallet row;
      // admission locks the wallet row and only inserts new holds, so no cycle can form.)
      if (!(await deleteHold(trx, call.id))) return recordReleased(trx);
      const [after] = await rows<Record<string, unknown>>(
        trx,
        `${walletUpdate[0]} returning ${WALLET_COLUMNS.replaceAll('w.', '')}`,
        walletUpdate[1],
      );
      const row = walletRow(after!, 'free');
      if (charge > 0n) {
        const transaction = await appendTransaction(trx, {
          accountId: call.accountId,
          type: 'usage',
          amount: -charge,
          balanceAfter: row.balance,
          description,
          reference: call.requestId,
          idempotencyKey: `usage:${call.id}`,
          createdAt: now,
        });
        effects.push({ accountId: call.accountId, balance: row.balance, transaction });
      }
      await exec(trx, USAGE_EVENT_INSERT, event(allocationUsed, charge, note));
      await this.raiseAlerts(trx, call.accountId, row, row.period === call.period ? call.monthlyTokens : null, now, call.id);
    });
    this.publish(effects);
  }
}
