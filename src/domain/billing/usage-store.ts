// The usage_events table: one row per billed call (or hold released unsettled), written by
// settlement and the sweeper (USAGE_EVENT_INSERT; PostgreSQL's one-statement settlement writes its
// row inside that statement), and read here: daily sums for the usage report, the events of an
// account.
import type { UsageDay, UsageEventView, UsageGroupBy, UsageOutcome } from './billing-types.js';
import { big, date, inList, int, rows, type Db } from './sql.js';

/** The column each grouping sums by (fixed strings: never built from input). */
const GROUP_COLUMNS: Record<UsageGroupBy, string> = { model: 'model', user: 'end_user', key: 'key_id' };

/**
 * Daily sums of an account's usage between two UTC dates (inclusive), per model, end user or API
 * key. Every grouping reads the same rows through usage_events_account_day_index (the account's
 * days) and sums them exactly; only the grouping column differs. Rows without one (calls
 * that gave no `user`, or had no key) come last on every database.
 */
export async function dailyUsage(
  db: Db,
  accountId: string,
  start: string,
  end: string,
  groupBy: UsageGroupBy = 'model',
): Promise<UsageDay[]> {
  return (await dailyUsageOf(db, [accountId], start, end, groupBy)).get(accountId) ?? [];
}

/**
 * dailyUsage() of several accounts in one statement (GraphQL's list of accounts): the same sums,
 * grouped by account too; an account without usage in the range is left out.
 */
export async function dailyUsageOf(
  db: Db,
  accountIds: readonly string[],
  start: string,
  end: string,
  groupBy: UsageGroupBy = 'model',
): Promise<Map<string, UsageDay[]>> {
  const out = new Map<string, UsageDay[]>();
  if (accountIds.length === 0) return out;
  const column = GROUP_COLUMNS[groupBy];
  const { ids, list } = inList(accountIds);
  const accounts = `account_id in ${list}`;
  const found = await rows<Record<string, unknown>>(
    db,
    `select account_id, day, ${column} as grp, count(*) as requests, sum(prompt_tokens) as prompt_tokens, sum(completion_tokens) as completion_tokens, ` +
      'sum(total_tokens) as total_tokens, cast(sum(wallet_nanos) as text) as cost ' +
      `from usage_events where ${accounts} and day >= ? and day <= ? group by account_id, day, ${column} order by account_id, day, ${column} is null, ${column}`,
    [...ids, start, end],
  );
  for (const r of found) {
    const group = (r.grp as string | null) ?? null;
    const accountId = String(r.account_id);
    let days = out.get(accountId);
    if (!days) out.set(accountId, (days = []));
    days.push({
      date: String(r.day),
      model: groupBy === 'model' ? String(group) : null,
      ...(groupBy === 'user' ? { user: group } : {}),
      ...(groupBy === 'key' ? { keyId: group } : {}),
      requests: int(r.requests),
      promptTokens: int(r.prompt_tokens),
      completionTokens: int(r.completion_tokens),
      totalTokens: int(r.total_tokens),
      cost: big(String(r.cost).split('.')[0]),
    });
  }
  return out;
}

/** An account's usage events, oldest first. */
export async function listUsageEvents(db: Db, accountId: string): Promise<UsageEventView[]> {
  const found = await rows<Record<string, unknown>>(
    db,
    'select id, account_id, key_id, end_user, model, request_id, outcome, prompt_tokens, completion_tokens, total_tokens, allocation_tokens, cast(wallet_nanos as text) as wallet_nanos, billing_note, created_at ' +
      'from usage_events where account_id = ? order by seq',
    [accountId],
  );
  return found.map((r) => ({
    id: String(r.id),
    accountId: String(r.account_id),
    keyId: (r.key_id as string | null) ?? null,
    endUser: (r.end_user as string | null) ?? null,
    model: String(r.model),
    requestId: String(r.request_id),
    outcome: r.outcome as UsageOutcome,
    promptTokens: int(r.prompt_tokens),
    completionTokens: int(r.completion_tokens),
    totalTokens: int(r.total_tokens),
    allocationTokens: int(r.allocation_tokens),
    walletNanos: big(r.wallet_nanos),
    billingNote: (r.billing_note as string | null) ?? null,
    createdAt: date(r.created_at),
  }));
}
