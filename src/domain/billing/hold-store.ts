// The holds table: money and allocation promised to calls in flight. A hold is inserted at
// admission and deleted by whichever comes first, its settlement or the sweeper; deleting it is
// what makes that happen once, and it is deleted only by the wallet store's consumeHold (the hold
// row, then the wallet row: ./wallet-store.ts), or by PostgreSQL's batched statements in the same
// order (./wallet-store-postgres.ts), which also insert the holds they place.
import { HOLD_COLUMNS } from './billing-types.js';
import { big, exec, int, rows, type Binding, type Db } from './sql.js';

/** A hold as the sweeper releases it. */
export interface StaleHold {
  id: string;
  accountId: string;
  keyId: string | null;
  endUser: string | null;
  requestId: string;
  model: string;
  period: string;
  allocationTokens: bigint;
  walletNanos: bigint;
}

/** Inserts a hold row: the bindings in HOLD_COLUMNS order. */
export async function insertHold(db: Db, row: Binding[]): Promise<void> {
  await exec(db, `insert into holds (${HOLD_COLUMNS}) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, row);
}

/** Up to `limit` holds past their expiry or owned by a server not in `live`. */
/**
 * Holds to release: past their expiry, or owned by a server taken for gone (`dead`), or by one with
 * no row in billing_instances at all (forgotten). Never `self`'s otherwise, nor those of a server
 * registered after the caller listed the servers: its row is read by this statement, not from a
 * list taken before (a server starting during a long release would have lost its first holds).
 */
export async function findStaleHolds(
  db: Db,
  now: Date,
  servers: { dead: readonly string[]; self: string },
  limit: number,
): Promise<StaleHold[]> {
  const dead = servers.dead.length > 0 ? `owner in (${servers.dead.map(() => '?').join(', ')}) or ` : '';
  const found = await rows<Record<string, unknown>>(
    db,
    `select id, account_id, key_id, end_user, request_id, model, period, cast(allocation_tokens as text) as allocation_tokens, cast(wallet_nanos as text) as wallet_nanos
       from holds where expires_at < ? or (owner <> ? and (${dead}owner not in (select id from billing_instances))) limit ${Number(limit)}`,
    [now, servers.self, ...servers.dead],
  );
  return found.map((h) => ({
    id: String(h.id),
    accountId: String(h.account_id),
    keyId: (h.key_id as string | null) ?? null,
    endUser: (h.end_user as string | null) ?? null,
    requestId: String(h.request_id),
    model: String(h.model),
    period: String(h.period),
    allocationTokens: big(h.allocation_tokens),
    walletNanos: big(h.wallet_nanos),
  }));
}

export async function countOpenHolds(db: Db, accountId?: string): Promise<number> {
  const found = await rows<{ n: unknown }>(
    db,
    accountId ? 'select count(*) as n from holds where account_id = ?' : 'select count(*) as n from holds',
    accountId ? [accountId] : [],
  );
  return int(found[0]?.n ?? 0);
}
