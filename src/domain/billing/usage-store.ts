// The usage_events table: one row per billed call (or hold released unsettled), written by
// settlement and the sweeper (USAGE_EVENT_INSERT; PostgreSQL's one-statement settlement writes its
// row inside that statement), and read here: daily sums for the usage report, the events of an
// account.
import type { UsageDay, UsageEventView, UsageOutcome } from './billing-types.js';
import { big, date, int, rows, type Db } from './sql.js';

/** Daily sums per model of an account's usage between two UTC dates (inclusive). */
export async function dailyUsage(db: Db, accountId: string, start: string, end: string): Promise<UsageDay[]> {
  const found = await rows<Record<string, unknown>>(
    db,
    'select day, model, count(*) as requests, sum(prompt_tokens) as prompt_tokens, sum(completion_tokens) as completion_tokens, ' +
      'sum(total_tokens) as total_tokens, cast(sum(wallet_nanos) as text) as cost ' +
      'from usage_events where account_id = ? and day >= ? and day <= ? group by day, model order by day, model',
    [accountId, start, end],
  );
  return found.map((r) => ({
    date: String(r.day),
    model: String(r.model),
    requests: int(r.requests),
    promptTokens: int(r.prompt_tokens),
    completionTokens: int(r.completion_tokens),
    totalTokens: int(r.total_tokens),
    cost: big(String(r.cost).split('.')[0]),
  }));
}

/** An account's usage events, oldest first. */
export async function listUsageEvents(db: Db, accountId: string): Promise<UsageEventView[]> {
  const found = await rows<Record<string, unknown>>(
    db,
    'select id, account_id, key_id, model, request_id, outcome, prompt_tokens, completion_tokens, total_tokens, allocation_tokens, cast(wallet_nanos as text) as wallet_nanos, billing_note, created_at ' +
      'from usage_events where account_id = ? order by seq',
    [accountId],
  );
  return found.map((r) => ({
    id: String(r.id),
    accountId: String(r.account_id),
    keyId: (r.key_id as string | null) ?? null,
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
