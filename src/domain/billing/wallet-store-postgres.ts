// The wallet store on PostgreSQL (the interface and SQLite's version: ./wallet-store.ts). Every
// statement is a network round trip and every commit waits for the disk while it holds the wallet
// row's lock, so one busy wallet would settle one call per commit. Here an account's work is
// batched (./batcher.ts): what arrives while a statement for the account is being written goes in
// the next one, and each statement writes all of it at once:
// - its settlements: their holds deleted, the wallet moved once by their sums, their ledger rows
//   (each with its own balance_after, in order) and usage events appended;
// - the holds an admission batch planned on one unlocked read (compare-and-set on what the plans
//   relied on), inserted with it, or none of them.
// So under load a call costs a share of one statement, where a settlement and an admission each
// took a share of a statement of their own. Each statement is its own transaction: all of its
// rows or none.
import type { WalletRow } from './billing-types.js';
import { HOLD_COLUMNS, USAGE_EVENT_COLUMNS, USAGE_EVENT_INSERT, WALLET_COLUMNS, walletRow } from './billing-types.js';
import { KeyedBatcher, type Outcome } from './batcher.js';
import { newId } from '../ids.js';
import { dayOf } from './period.js';
import { big, bool, rows, run, type BillingDatabase, type Binding, type Db } from './sql.js';
import {
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

/** An account's work waiting for its next statement: a settlement, or the holds of an admission batch. */
type Work = { settle: Settling } | { place: { cond: HoldCondition; holds: readonly PlannedHold[] } };

/**
 * The statement that writes a batch of an account's work: its settlements, the holds of one
 * admission batch, or both at once. Its text depends only on which parts it has and on the shape
 * of the hold condition (so each shape is prepared once per connection); `bind` collects the
 * values in the order of the text's placeholders.
 *
 * Settlements: the hold rows first (deleting them is what makes each settlement happen once; those
 * the sweeper released are not in `s`), then the wallet row: the lock order of consumeHold. The
 * ledger rows' balance_after: the balance after the whole batch plus the charges of the settlements
 * after each, so the account's chain stays exact, in seq order.
 *
 * Holds: placed if the wallet row (and the account's tier) still allows what the plans relied on
 * (compare-and-set), else none of them. Alone, that condition is the update's own; beside
 * settlements, it is decided on the row as it is before them (locked first, after the hold rows,
 * so on its newest version), as if the holds were placed just before the settlements: a settlement
 * only gives back money and allocation, and a hold leaves the balance (so the ledger chain) alone.
 *
 * One row back: the wallet row after, `placed_ok` and `placed` (the holds inserted), and the
 * settled holds' ids and balance_after in order (null when none).
 */
function workStatement(
  accountId: string,
  now: Date,
  settle: string | null,
  c: HoldCondition | null,
  holds: string | null,
): { sql: string; bindings: Binding[] } {
  const bindings: Binding[] = [];
  const bind = (value: Binding) => {
    bindings.push(value);
    return '?';
  };
  const settling = settle !== null;
  const parts: string[] = [];
  if (settling) {
    parts.push(
      `i as (select * from jsonb_to_recordset(${bind(settle)}::jsonb) as i(${SETTLE_RECORD}))`,
      `d as (delete from holds h using i where h.id = i.hold_id and h.account_id = ${bind(accountId)} returning h.id)`,
      's as (select i.* from i join d on d.id = i.hold_id)',
    );
  }
  // What the holds' plans relied on, on the wallet row w.
  const fits = (c: HoldCondition) =>
    `w.period = ${bind(c.period)} and w.balance - w.held >= ${bind(c.walletNanos)} ` +
    `and ${bind(c.monthlyTokens)} - w.period_used - w.period_held ${c.exactAllocationLeft === null ? '>=' : '='} ${bind(c.exactAllocationLeft ?? c.allocationTokens)}` +
    (c.walletNanos > 0n
      ? ` and (not (w.spending_limit_enabled and w.spending_limit_action = 'block' and w.spending_limit is not null) or w.spending_limit - w.period_spent - w.held >= ${bind(c.walletNanos)})`
      : '') +
    ` and exists (select 1 from accounts a where a.id = w.account_id and a.tier = ${bind(c.tier)})`;
  if (settling && c) {
    // Locked after the hold rows: the initplan on s deletes them first.
    parts.push(
      `o as (select w.account_id, (${fits(c)}) as placed_ok from wallets w where w.account_id = ${bind(c.accountId)} and (select count(*) from s) >= 0 for update)`,
    );
  }
  const placedOk = !c ? 'false' : settling ? 'o.placed_ok' : 'true';
  const addHeld = (value: Binding) =>
    !c ? '' : settling ? ` + case when o.placed_ok then ${bind(value)} else 0 end` : ` + ${bind(value)}`;
  const sum = (column: string, samePeriod = false) =>
    settling ? `coalesce((select sum(${column}) from s${samePeriod ? ' where s.period = w.period' : ''}), 0)` : '0';
  let set = `held = w.held - ${sum('held')}${addHeld(c?.walletNanos ?? null)}, `;
  if (settling) set += `balance = w.balance - ${sum('charge')}, `;
  set += `period_held = w.period_held - ${sum('alloc_held', true)}${addHeld(c?.allocationTokens ?? null)}, `;
  if (settling) set += `period_used = w.period_used + ${sum('alloc_used', true)}, period_spent = w.period_spent + ${sum('charge')}, `;
  set += `updated_at = ${bind(now)}`;
  const where = !settling
    ? `w.account_id = ${bind(c!.accountId)} and ${fits(c!)}`
    : c
      ? 'w.account_id = o.account_id and (o.placed_ok or exists (select 1 from s))'
      : `w.account_id = ${bind(accountId)} and exists (select 1 from s)`;
  parts.push(
    `w as (update wallets w set ${set}${settling && c ? ' from o' : ''} where ${where} returning w.account_id, w.balance as final_balance, ${WALLET_COLUMNS}, ` +
      `(select a.tier from accounts a where a.id = w.account_id) as tier, ${placedOk} as placed_ok)`,
  );
  if (c) {
    parts.push(
      `h as (insert into holds (${HOLD_COLUMNS}) select h.id, w.account_id, h.key_id, h.request_id, h.model, h.period, h.allocation_tokens, h.wallet_nanos, ` +
        `h.prompt_tokens, h.max_output_tokens, h.owner, h.created_at, h.expires_at, h.end_user from w cross join jsonb_to_recordset(${bind(holds)}::jsonb) as h(${HOLD_RECORD}) where w.placed_ok returning 1)`,
    );
  }
  if (settling) {
    parts.push(
      'b as (select s.*, w.final_balance + (sum(s.charge) over (order by s.ord desc) - s.charge) as balance_after from s cross join w)',
      'l as (insert into wallet_transactions (id, account_id, type, amount, balance_after, description, reference, idempotency_key, created_at) ' +
        "select txn_id, w.account_id, 'usage', -charge, balance_after, description, request_id, 'usage:' || hold_id, created_at from b cross join w where charge > 0 order by ord)",
      `e as (insert into usage_events (${USAGE_EVENT_COLUMNS}) select hold_id, w.account_id, key_id, model, request_id, outcome, prompt_tokens, completion_tokens, ` +
        'prompt_tokens + completion_tokens, alloc_used, charge, note, day, created_at, end_user from s cross join w order by ord)',
    );
  }
  const sql =
    `with ${parts.join(', ')} select w.*, ${c ? '(select count(*) from h)' : '0'} as placed, ` +
    (settling
      ? '(select array_agg(hold_id order by ord) from b) as settled, (select array_agg(cast(balance_after as text) order by ord) from b) as balances'
      : 'null as settled, null as balances') +
    ' from w';
  return { sql, bindings };
}

/** How long a wallet row this process saw may stand in for a read at admission. */
const ROW_TTL_MS = 1000;
const MAX_ROWS = 10_000;

export class PostgresWalletStore extends WalletStoreBase {
  readonly kind = 'postgresql' as const;
  readonly optimistic = true;
  /** An account's settlements and hold placements, written together (workStatement). */
  private readonly work: KeyedBatcher<Work, Settled | boolean | null>;
  /** The last wallet row each of its own statements returned, per account (readForAdmission). */
  private readonly seen = new Map<string, { row: WalletRow; at: number }>();

  constructor(db: BillingDatabase) {
    super(db);
    this.work = new KeyedBatcher((accountId, items) => this.writeWork(accountId, items), { settleFirst: true });
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
    return this.work.add(s.call.accountId, { settle: s }) as Promise<Settled | null>;
  }

  async placeHoldsIfUnchanged(cond: HoldCondition, holds: readonly PlannedHold[]): Promise<boolean> {
    if (holds.length === 0) return true;
    return (await this.work.add(cond.accountId, { place: { cond, holds } })) as boolean;
  }

  /**
   * A batch of an account's work: its settlements and the first hold placement in one statement;
   * any further placement (one admission batch at a time per account is the rule) in its own.
   */
  private async writeWork(accountId: string, items: Work[]): Promise<Outcome<Settled | boolean | null>[]> {
    const settlements: Settling[] = [];
    const places: { cond: HoldCondition; holds: readonly PlannedHold[] }[] = [];
    for (const item of items) {
      if ('settle' in item) settlements.push(item.settle);
      else places.push(item.place);
    }
    const first = await this.writeBatch(accountId, settlements, places[0] ?? null);
    const placed = [first.placed];
    for (const place of places.slice(1)) placed.push((await this.writeBatch(accountId, [], place)).placed);
    let settled = 0;
    let place = 0;
    return items.map((item) => ({ ok: true, value: 'settle' in item ? first.settled[settled++]! : placed[place++]! }));
  }

  private async writeBatch(
    accountId: string,
    items: Settling[],
    place: { cond: HoldCondition; holds: readonly PlannedHold[] } | null,
  ): Promise<{ settled: (Settled | null)[]; placed: boolean }> {
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
      day: dayOf(s.now),
      end_user: s.call.endUser,
    }));
    const now = place?.cond.now ?? items.reduce((latest, s) => (s.now > latest ? s.now : latest), items[0]!.now);
    const { sql, bindings } = workStatement(
      accountId,
      now,
      items.length > 0 ? jsonRows(input) : null,
      place?.cond ?? null,
      place ? jsonRows(place.holds.map(holdJson)) : null,
    );
    const [r] = await rows<Record<string, unknown>>(this.db, sql, bindings);
    if (!r) {
      this.seen.delete(accountId);
      return { settled: items.map(() => null), placed: false };
    }
    this.remember(accountId, withTier(r));
    const placed = bool(r.placed_ok);
    if (place && placed && Number(r.placed) !== place.holds.length)
      throw new Error(`placed ${String(r.placed)} of ${place.holds.length} holds`);
    const balances = new Map<string, bigint>();
    const ids = (r.settled as string[] | null) ?? [];
    const after = (r.balances as string[] | null) ?? [];
    for (let j = 0; j < ids.length; j++) balances.set(ids[j]!, big(after[j]));
    // Each settlement's row: the wallet after the batch (its tier is not read: 'free').
    const row = items.length > 0 ? walletRow(r, 'free') : null;
    const settled = items.map((s, ord): Settled | null => {
      const balanceAfter = balances.get(s.call.id);
      if (balanceAfter === undefined) return null;
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
      return { row: row!, transaction };
    });
    return { settled, placed };
  }

  /** One statement: the count and the event. */
  async recordUnlimited(s: Settling): Promise<void> {
    await run(this.db, `with u as (${COUNT_USAGE}) ${USAGE_EVENT_INSERT}`, [...countUsageBindings(s), ...usageEventRow(s, 0, 0n, null)]);
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
