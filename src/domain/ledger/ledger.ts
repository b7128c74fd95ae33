// The ledger: an append-only table of wallet transactions (section 2.10). A row is never edited
// or deleted; a correction is a new row. Every row is written in the same database transaction
// as the wallet balance it moves, under that wallet row's lock, so each account's rows form a
// chain: balance_after = the previous balance_after + amount. `verifyLedger` checks that chain
// and the other invariants (`tollgate ledger verify`, and the tests after every concurrency run).
import { DomainError } from '../errors.js';
import { newId } from '../ids.js';
import { big, date, exec, int, rows, type BillingDatabase, type Db } from '../billing/sql.js';
import { formatDecimal } from '../billing/money.js';

export const TRANSACTION_TYPES = ['topup', 'usage', 'refund', 'subscription', 'bonus'] as const;
export type TransactionType = (typeof TRANSACTION_TYPES)[number];

export interface TransactionView {
  id: string;
  accountId: string;
  type: TransactionType;
  /** Nanos; positive for a credit, negative for a charge. */
  amount: bigint;
  balanceAfter: bigint;
  description: string;
  /** What it is about: a request id (usage), a payment id (topup), a period (subscription). */
  reference: string | null;
  createdAt: Date;
}

export function isTransactionType(value: unknown): value is TransactionType {
  return typeof value === 'string' && (TRANSACTION_TYPES as readonly string[]).includes(value);
}

/** The columns of a transaction row, money as text so no driver rounds it. */
export const TRANSACTION_COLUMNS =
  'seq, id, account_id, type, cast(amount as text) as amount, cast(balance_after as text) as balance_after, description, reference, created_at';

export interface TransactionRow {
  seq: unknown;
  id: string;
  account_id: string;
  type: TransactionType;
  amount: unknown;
  balance_after: unknown;
  description: string;
  reference: string | null;
  created_at: unknown;
}

export function transactionView(r: TransactionRow): TransactionView {
  return {
    id: r.id,
    accountId: r.account_id,
    type: r.type,
    amount: big(r.amount),
    balanceAfter: big(r.balance_after),
    description: r.description,
    reference: r.reference ?? null,
    createdAt: date(r.created_at),
  };
}

/** A ledger row's description as stored: the column holds 500 characters. Every writer cuts here. */
export function ledgerDescription(text: string): string {
  return text.slice(0, 500);
}

/**
 * Appends one row. Call it inside the transaction that moved the wallet's balance to
 * `balanceAfter`, after that update (which holds the wallet row's lock).
 */
export async function appendTransaction(
  db: Db,
  t: Omit<TransactionView, 'id'> & { idempotencyKey: string | null },
): Promise<TransactionView> {
  const id = newId('txn');
  await exec(
    db,
    'insert into wallet_transactions (id, account_id, type, amount, balance_after, description, reference, idempotency_key, created_at) values (?, ?, ?, ?, ?, ?, ?, ?, ?)',
    [id, t.accountId, t.type, t.amount, t.balanceAfter, ledgerDescription(t.description), t.reference, t.idempotencyKey, t.createdAt],
  );
  return {
    id,
    accountId: t.accountId,
    type: t.type,
    amount: t.amount,
    balanceAfter: t.balanceAfter,
    description: ledgerDescription(t.description),
    reference: t.reference,
    createdAt: t.createdAt,
  };
}

export async function findByIdempotencyKey(db: Db, key: string): Promise<TransactionView | null> {
  const found = await rows<TransactionRow>(db, `select ${TRANSACTION_COLUMNS} from wallet_transactions where idempotency_key = ?`, [key]);
  return found[0] ? transactionView(found[0]) : null;
}

export interface TransactionPage {
  transactions: TransactionView[];
  hasMore: boolean;
}

export interface TransactionQuery {
  /** 1 to 1000; default 100. */
  limit?: number | null;
  /** A transaction id: the page starts after it, in the requested order. */
  after?: string | null;
  order?: 'asc' | 'desc' | null;
  type?: TransactionType | null;
}

export const TRANSACTION_PAGE = { defaultLimit: 100, maxLimit: 1000 } as const;

/** One page of an account's transactions, oldest first unless `order` is 'desc'. */
export async function listTransactions(db: Db, accountId: string, q: TransactionQuery = {}): Promise<TransactionPage> {
  const limit = q.limit ?? TRANSACTION_PAGE.defaultLimit;
  if (!Number.isInteger(limit) || limit < 1 || limit > TRANSACTION_PAGE.maxLimit) {
    throw new DomainError('invalid_value', `'limit' must be an integer from 1 to ${TRANSACTION_PAGE.maxLimit}; got ${limit}.`, {
      param: 'limit',
    });
  }
  const order = q.order ?? 'asc';
  if (order !== 'asc' && order !== 'desc')
    throw new DomainError('invalid_value', `'order' must be 'asc' or 'desc'; got '${String(order)}'.`, { param: 'order' });
  if (q.type != null && !isTransactionType(q.type)) {
    throw new DomainError('invalid_value', `'type' must be one of ${TRANSACTION_TYPES.join(', ')}; got '${String(q.type).slice(0, 40)}'.`, {
      param: 'type',
    });
  }
  const where = ['account_id = ?'];
  const bindings: (string | number)[] = [accountId];
  if (q.type) {
    where.push('type = ?');
    bindings.push(q.type);
  }
  if (q.after) {
    const cursor = await rows<{ seq: unknown }>(db, 'select seq from wallet_transactions where id = ? and account_id = ?', [
      q.after,
      accountId,
    ]);
    if (!cursor[0])
      throw new DomainError(
        'invalid_value',
        `'after' must be the id of one of the account's transactions; got '${q.after.slice(0, 60)}'.`,
        { param: 'after' },
      );
    where.push(order === 'asc' ? 'seq > ?' : 'seq < ?');
    bindings.push(int(cursor[0].seq));
  }
  const found = await rows<TransactionRow>(
    db,
    `select ${TRANSACTION_COLUMNS} from wallet_transactions where ${where.join(' and ')} order by seq ${order} limit ?`,
    [...bindings, limit + 1],
  );
  return { transactions: found.slice(0, limit).map(transactionView), hasMore: found.length > limit };
}

/**
 * Checks the ledger's invariants over every account; returns the problems found (none: healthy).
 * - each wallet's balance equals the sum of its transactions;
 * - each transaction's balance_after equals the previous one's plus its amount;
 * - no balance, balance_after, held amount or available amount below zero;
 * - each wallet's held money and held allocation equal the sums of its open holds;
 * - the wallet money of usage events equals the usage transactions, per account;
 * - no open hold is older than its expiry.
 * It reads in one snapshot (repeatable read on PostgreSQL; a write-locked transaction on SQLite).
 */
export async function verifyLedger(db: BillingDatabase, now: Date = new Date()): Promise<string[]> {
  const check = async (trx: Db) => {
    const problems: string[] = [];
    const money = (v: unknown) => formatDecimal(big(v));

    for (const r of await rows<{ account_id: string; balance: unknown; total: unknown }>(
      trx,
      `select w.account_id, cast(w.balance as text) as balance, cast(coalesce(t.total, 0) as text) as total
         from wallets w left join (select account_id, sum(amount) as total from wallet_transactions group by account_id) t on t.account_id = w.account_id
        where w.balance <> coalesce(t.total, 0)`,
    )) {
      problems.push(`account ${r.account_id}: balance ${money(r.balance)} differs from the sum of its transactions ${money(r.total)}`);
    }
    for (const r of await rows<{ account_id: string }>(
      trx,
      'select distinct t.account_id from wallet_transactions t left join wallets w on w.account_id = t.account_id where w.account_id is null',
    )) {
      problems.push(`account ${r.account_id}: has transactions but no wallet`);
    }
    for (const r of await rows<{ id: string; account_id: string; amount: unknown; balance_after: unknown; previous: unknown }>(
      trx,
      `select id, account_id, cast(amount as text) as amount, cast(balance_after as text) as balance_after, cast(previous as text) as previous
         from (select id, account_id, amount, balance_after, lag(balance_after) over (partition by account_id order by seq) as previous from wallet_transactions) x
        where balance_after <> coalesce(previous, 0) + amount`,
    )) {
      problems.push(
        `transaction ${r.id} (account ${r.account_id}): balance_after ${money(r.balance_after)} is not the previous balance ${money(r.previous ?? 0)} plus the amount ${money(r.amount)}`,
      );
    }
    for (const r of await rows<{ account_id: string; balance: unknown; held: unknown; period_held: unknown }>(
      trx,
      'select account_id, cast(balance as text) as balance, cast(held as text) as held, cast(period_held as text) as period_held from wallets where balance < 0 or held < 0 or period_held < 0 or balance - held < 0',
    )) {
      problems.push(
        `account ${r.account_id}: negative amount (balance ${money(r.balance)}, held ${money(r.held)}, allocation tokens held ${r.period_held})`,
      );
    }
    for (const r of await rows<{ id: string; account_id: string; balance_after: unknown }>(
      trx,
      'select id, account_id, cast(balance_after as text) as balance_after from wallet_transactions where balance_after < 0',
    )) {
      problems.push(`transaction ${r.id} (account ${r.account_id}): balance_after ${money(r.balance_after)} is below zero`);
    }
    for (const r of await rows<{ account_id: string; held: unknown; holds: unknown; period_held: unknown; period_holds: unknown }>(
      trx,
      `select w.account_id, cast(w.held as text) as held, cast(coalesce(h.money, 0) as text) as holds,
              cast(w.period_held as text) as period_held, cast(coalesce(h.tokens, 0) as text) as period_holds
         from wallets w left join (
           select h.account_id, sum(h.wallet_nanos) as money, sum(case when h.period = w2.period then h.allocation_tokens else 0 end) as tokens
             from holds h join wallets w2 on w2.account_id = h.account_id group by h.account_id
         ) h on h.account_id = w.account_id
        where w.held <> coalesce(h.money, 0) or w.period_held <> coalesce(h.tokens, 0)`,
    )) {
      problems.push(
        `account ${r.account_id}: held ${money(r.held)} / ${r.period_held} allocation tokens, but its open holds add up to ${money(r.holds)} / ${r.period_holds} tokens`,
      );
    }
    for (const r of await rows<{ account_id: string; events: unknown; charges: unknown }>(
      trx,
      `select coalesce(e.account_id, t.account_id) as account_id, cast(coalesce(e.total, 0) as text) as events, cast(coalesce(t.total, 0) as text) as charges
         from (select account_id, sum(wallet_nanos) as total from usage_events group by account_id) e
         full outer join (select account_id, -sum(amount) as total from wallet_transactions where type = 'usage' group by account_id) t on t.account_id = e.account_id
        where coalesce(e.total, 0) <> coalesce(t.total, 0)`,
    )) {
      problems.push(
        `account ${r.account_id}: usage events charged ${money(r.events)} from the wallet, usage transactions ${money(r.charges)}`,
      );
    }
    for (const r of await rows<{ id: string; account_id: string; expires_at: unknown }>(
      trx,
      'select id, account_id, expires_at from holds where expires_at < ? order by expires_at',
      [now],
    )) {
      problems.push(`hold ${r.id} (account ${r.account_id}): still open after its expiry at ${date(r.expires_at).toISOString()}`);
    }
    return problems;
  };
  return db.transaction(check, { snapshot: true });
}
