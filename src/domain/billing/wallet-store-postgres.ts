// The wallet store on PostgreSQL (the interface and SQLite's version: ./wallet-store.ts). Every
// statement is a network round trip and every commit waits for the disk while it holds the wallet
// row's lock, so one busy wallet would settle one call per commit. Here:
// - settlements of one account are batched (./batcher.ts): those that arrive while a batch is being
//   written go in the next one, as one statement that deletes their holds, moves the wallet once
//   by their sums, and appends their ledger rows (each with its own balance_after, in order) and
//   usage events;
// - admission places the holds it planned on one unlocked read in one conditional statement
//   (compare-and-set on what the plans relied on), inserting the hold rows with it.
// Each statement is its own transaction: all of its rows or none.
import type { WalletRow } from './billing-types.js';
import { HOLD_COLUMNS, USAGE_EVENT_COLUMNS, USAGE_EVENT_INSERT, WALLET_COLUMNS, walletRow } from './billing-types.js';
import { KeyedBatcher, type Outcome } from './batcher.js';
import { newId } from '../ids.js';
import { periodOf, usageDay } from './period.js';
import { big, rows, run, type BillingDatabase, type Binding, type Db } from './sql.js';
import {
  asDelivered,
  COUNT_USAGE,
  countUsageBindings,
  type HoldCondition,
  type PlannedHold,
  type Settled,
  type Settling,
  usageEventRow,
  WalletStoreBase,
  withTier,
} from './wallet-store.js';

/** JSON for jsonb_to_recordset: 64-bit money as text (PostgreSQL reads it back exactly), dates as ISO text. */
function jsonRows(items: readonly Record<string, unknown>[]): string {
  return JSON.stringify(items);
}

const HOLD_FIELDS = HOLD_COLUMNS.split(', ');
const HOLD_RECORD =
  'id text, key_id text, request_id text, model text, period text, allocation_tokens bigint, wallet_nanos bigint, ' +
  'prompt_tokens int, max_output_tokens int, owner text, created_at timestamptz, expires_at timestamptz, end_user text';

const SETTLE_RECORD =
  'ord int, hold_id text, key_id text, model text, request_id text, outcome text, prompt_tokens int, completion_tokens int, ' +
  'period text, held bigint, charge bigint, alloc_held bigint, alloc_used bigint, note text, txn_id text, description text, ' +
  'created_at timestamptz, day text, end_user text';

/**
 * One account's settlements in one statement. The hold rows first (deleting them is what makes
 * each settlement happen once; those the sweeper released are not in `s`), then the wallet row:
 * the lock order of consumeHold. The ledger rows' balance_after: the balance after the whole batch
 * plus the charges of the settlements after each, so the account's chain stays exact, in seq order.
 * One row back: the wallet row after, and the settled holds' ids and balance_after in order.
 */
const SETTLE_BATCH =
  `with i as (select * from jsonb_to_recordset(?::jsonb) as i(${SETTLE_RECORD})), ` +
  'd as (delete from holds h using i where h.id = i.hold_id and h.account_id = ? returning h.id), ' +
  's as (select i.* from i join d on d.id = i.hold_id), ' +
  'w as (update wallets w set held = w.held - (select sum(held) from s), balance = w.balance - (select sum(charge) from s), ' +
  // A wallet in an earlier period than the batch's is rolled as consumeHold rolls it (SQLite's).
  'period_held = case when w.period < ? then 0 else w.period_held - coalesce((select sum(alloc_held) from s where s.period = w.period), 0) end, ' +
  'period_used = case when w.period < ? then 0 else w.period_used + coalesce((select sum(alloc_used) from s where s.period = w.period), 0) end, ' +
  'period_spent = case when w.period < ? then 0 else w.period_spent end + (select sum(charge) from s), ' +
  'period = case when w.period < ? then ? else w.period end, updated_at = ?::timestamptz ' +
  `where w.account_id = ? and exists (select 1 from s) returning w.balance as final_balance, ${WALLET_COLUMNS}, ` +
  '(select a.tier from accounts a where a.id = w.account_id) as tier), ' +
  'b as (select s.*, w.final_balance + (sum(s.charge) over (order by s.ord desc) - s.charge) as balance_after from s cross join w), ' +
  't as (insert into wallet_transactions (id, account_id, type, amount, balance_after, description, reference, idempotency_key, created_at) ' +
  "select txn_id, ?, 'usage', -charge, balance_after, description, request_id, 'usage:' || hold_id, created_at from b where charge > 0 order by ord), " +
  `e as (insert into usage_events (${USAGE_EVENT_COLUMNS}) select hold_id, ?, key_id, model, request_id, outcome, prompt_tokens, completion_tokens, ` +
  'prompt_tokens + completion_tokens, alloc_used, charge, note, day, created_at, end_user from s order by ord) ' +
  'select w.*, (select array_agg(hold_id order by ord) from b) as settled, (select array_agg(cast(balance_after as text) order by ord) from b) as balances from w';

/** How long a wallet row this process saw may stand in for a read at admission. */
const ROW_TTL_MS = 1000;
const MAX_ROWS = 10_000;

export class PostgresWalletStore extends WalletStoreBase {
  readonly kind = 'postgresql' as const;
  readonly optimistic = true;
  private readonly settlements: KeyedBatcher<Settling, Settled | null>;
  /** The last wallet row each of its own statements returned, per account (readForAdmission). */
  private readonly seen = new Map<string, { row: WalletRow; at: number }>();

  constructor(db: BillingDatabase) {
    super(db);
    this.settlements = new KeyedBatcher((accountId, items) => this.settleBatch(accountId, items));
  }

  lock(db: Db, accountId: string): Promise<WalletRow | null> {
    this.seen.delete(accountId);
    return this.selectLocked(db, accountId, ' for update of w');
  }

  async readForAdmission(accountId: string): Promise<{ row: WalletRow | null; cached: boolean }> {
    const seen = this.seen.get(accountId);
    if (seen && Date.now() - seen.at < ROW_TTL_MS) return { row: seen.row, cached: true };
    const row = await this.read(this.db, accountId);
    if (row) this.remember(accountId, row);
    else this.seen.delete(accountId);
    return { row, cached: false };
  }

  private remember(accountId: string, row: WalletRow): void {
    this.seen.delete(accountId);
    if (this.seen.size >= MAX_ROWS) this.seen.delete(this.seen.keys().next().value!);
    this.seen.set(accountId, { row, at: Date.now() });
  }

  settle(s: Settling): Promise<Settled | null> {
    return this.settlements.add(s.call.accountId, s);
  }

  private async settleBatch(accountId: string, given: Settling[]): Promise<Outcome<Settled | null>[]> {
    // As the batch's one statement is sent: a settlement that waited behind another is asked then.
    const items = given.map(asDelivered);
    const input = items.map((s, ord) => ({
      ord,
      hold_id: s.call.id,
      key_id: s.call.keyId,
      model: s.call.model,
      request_id: s.call.requestId,
      outcome: s.outcome,
      prompt_tokens: s.promptTokens,
      completion_tokens: s.completionTokens,
      period: s.call.period,
      held: s.call.walletNanos.toString(),
      charge: s.charge.toString(),
      alloc_held: s.call.allocationTokens,
      alloc_used: s.allocationUsed,
      note: s.note,
      txn_id: newId('txn'),
      description: s.description,
      created_at: s.now.toISOString(),
      day: usageDay(s.call.period, s.now),
      end_user: s.call.endUser,
    }));
    const now = items.reduce((latest, s) => (s.now > latest ? s.now : latest), items[0]!.now);
    const period = periodOf(now);
    const [r] = await rows<Record<string, unknown>>(this.db, SETTLE_BATCH, [
      jsonRows(input),
      accountId,
      period,
      period,
      period,
      period,
      period,
      now,
      accountId,
      accountId,
      accountId,
    ]);
    if (!r) return items.map(() => ({ ok: true, value: null }));
    this.remember(accountId, withTier(r));
    // Each settlement's row: the wallet after the batch (its tier is not read: 'free').
    const row = walletRow(r, 'free');
    const balances = new Map<string, bigint>();
    const ids = (r.settled as string[] | null) ?? [];
    const after = (r.balances as string[] | null) ?? [];
    for (let j = 0; j < ids.length; j++) balances.set(ids[j]!, big(after[j]));
    return items.map((s, ord): Outcome<Settled | null> => {
      const balanceAfter = balances.get(s.call.id);
      if (balanceAfter === undefined) return { ok: true, value: null };
      const transaction =
        s.charge > 0n
          ? {
              id: input[ord]!.txn_id,
              accountId,
              type: 'usage' as const,
              amount: -s.charge,
              balanceAfter,
              description: s.description,
              reference: s.call.requestId,
              createdAt: s.now,
            }
          : null;
      return { ok: true, value: { row, transaction } };
    });
  }

  /** One statement: the count and the event. */
  async recordUnlimited(s: Settling): Promise<void> {
    await run(this.db, `with u as (${COUNT_USAGE}) ${USAGE_EVENT_INSERT}`, [...countUsageBindings(s), ...usageEventRow(s, 0, 0n, null)]);
  }

  async placeHoldsIfUnchanged(c: HoldCondition, holds: readonly PlannedHold[]): Promise<boolean> {
    if (holds.length === 0) return true;
    const found = await rows<Record<string, unknown>>(this.db, this.casStatement(c), this.casBindings(c, holds));
    const after = found[0];
    if (!after) {
      this.seen.delete(c.accountId);
      return false;
    }
    if (Number(after.placed) !== holds.length) throw new Error(`placed ${String(after.placed)} of ${holds.length} holds`);
    this.remember(c.accountId, withTier(after));
    return true;
  }

  /**
   * One statement: the wallet row moved by the holds' sums if it still allows them (and the
   * account still has the tier planned with), the hold rows inserted, the row after returned.
   */
  private casStatement(c: HoldCondition): string {
    const limitCheck =
      c.walletNanos > 0n
        ? " and (not (w.spending_limit_enabled and w.spending_limit_action = 'block' and w.spending_limit is not null) or w.spending_limit - w.period_spent - w.held >= ?)"
        : '';
    return (
      'with w as (update wallets w set held = w.held + ?, period_held = w.period_held + ?, updated_at = ? ' +
      `where w.account_id = ? and w.period = ? and w.balance - w.held >= ? and ? - w.period_used - w.period_held ${c.exactAllocationLeft === null ? '>=' : '='} ?${limitCheck} ` +
      `and exists (select 1 from accounts a where a.id = w.account_id and a.tier = ?) returning ${WALLET_COLUMNS}, ?::text as tier), ` +
      `h as (insert into holds (${HOLD_COLUMNS}) select h.id, ?, h.key_id, h.request_id, h.model, h.period, h.allocation_tokens, h.wallet_nanos, ` +
      `h.prompt_tokens, h.max_output_tokens, h.owner, h.created_at, h.expires_at, h.end_user from w cross join jsonb_to_recordset(?::jsonb) as h(${HOLD_RECORD}) returning 1) ` +
      'select w.*, (select count(*) from h) as placed from w'
    );
  }

  private casBindings(c: HoldCondition, holds: readonly PlannedHold[]): Binding[] {
    return [
      c.walletNanos,
      c.allocationTokens,
      c.now,
      c.accountId,
      c.period,
      c.walletNanos,
      c.monthlyTokens,
      c.exactAllocationLeft ?? c.allocationTokens,
      ...(c.walletNanos > 0n ? [c.walletNanos] : []),
      c.tier,
      c.tier,
      c.accountId,
      jsonRows(holds.map(holdJson)),
    ];
  }
}

/** A planned hold as jsonb_to_recordset reads it (HOLD_RECORD). */
function holdJson(h: PlannedHold): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (let i = 0; i < HOLD_FIELDS.length; i++) out[HOLD_FIELDS[i]!] = toJson(h.row[i]);
  return out;
}

function toJson(value: Binding | undefined): unknown {
  if (value instanceof Date) return value.toISOString();
  if (typeof value === 'bigint') return value.toString();
  return value ?? null;
}
