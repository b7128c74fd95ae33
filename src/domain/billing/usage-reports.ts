// What an account used: the usage report (daily sums by model, the allocation), its usage events
// and notifications, open holds, and the ledger's verification.
import { DomainError } from '../errors.js';
import { verifyLedger, } from '../ledger/ledger.js';
import { listNotifications, type NotificationView } from '../notifications/outbox.js';
import { isDay, periodDays, } from './period.js';
import { big, date, int, rows, } from './sql.js';
import { MAX_USAGE_REPORT_DAYS, type UsageOutcome, type UsageEventView, type UsageReport, } from './billing-types.js';
import { AccountBilling } from './account-billing.js';
import { countOpenHolds } from './hold-store.js';

export abstract class UsageReports extends AccountBilling {
  /**
   * Daily sums per model of the account's usage events between two UTC dates (inclusive;
   * default: the current period), with the current period's allocation.
   */
  async usageReport(accountId: string, range: { start?: string | null; end?: string | null } = {}): Promise<UsageReport> {
    const allocation = await this.getAllocation(accountId);
    const days = periodDays(allocation.period);
    const start = range.start ?? days.first;
    const end = range.end ?? days.last;
    for (const [param, value] of [
      ['start', start],
      ['end', end],
    ] as const) {
      if (!isDay(value)) throw new DomainError('invalid_value', `'${param}' must be a date written YYYY-MM-DD; got '${value.slice(0, 40)}'.`, { param });
    }
    if (start > end) throw new DomainError('invalid_value', `'start' (${start}) must not be after 'end' (${end}).`, { param: 'start' });
    if ((Date.parse(end) - Date.parse(start)) / 86_400_000 >= MAX_USAGE_REPORT_DAYS) {
      throw new DomainError('invalid_value', `The range from 'start' to 'end' covers at most ${MAX_USAGE_REPORT_DAYS} days.`, { param: 'end' });
    }
    const found = await rows<Record<string, unknown>>(
      this.db,
      'select day, model, count(*) as requests, sum(prompt_tokens) as prompt_tokens, sum(completion_tokens) as completion_tokens, ' +
        'sum(total_tokens) as total_tokens, cast(sum(wallet_nanos) as text) as cost ' +
        'from usage_events where account_id = ? and day >= ? and day <= ? group by day, model order by day, model',
      [accountId, start, end],
    );
    return {
      start,
      end,
      allocation,
      data: found.map((r) => ({
        date: String(r.day),
        model: String(r.model),
        requests: int(r.requests),
        promptTokens: int(r.prompt_tokens),
        completionTokens: int(r.completion_tokens),
        totalTokens: int(r.total_tokens),
        cost: big(String(r.cost).split('.')[0]),
      })),
    };
  }

  /** The account's usage events, oldest first (operators and tests). */
  async listUsageEvents(accountId: string): Promise<UsageEventView[]> {
    const found = await rows<Record<string, unknown>>(
      this.db,
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

  listNotifications(accountId: string): Promise<NotificationView[]> {
    return listNotifications(this.db, accountId);
  }

  /** Open holds (all accounts, or one). */
  async countOpenHolds(accountId?: string): Promise<number> {
    return countOpenHolds(this.db, accountId);
  }

  verifyLedger(): Promise<string[]> {
    return verifyLedger(this.db, this.now());
  }
}
