// What an account used: the usage report (daily sums by model, the allocation), its usage events
// and notifications, open holds, and the ledger's verification.
import { DomainError } from '../errors.js';
import { verifyLedger } from '../ledger/ledger.js';
import { listNotifications, type NotificationView } from '../notifications/outbox.js';
import { isDay, periodDays, periodOf } from './period.js';
import { MAX_USAGE_REPORT_DAYS, USAGE_GROUP_BY, type UsageEventView, type UsageGroupBy, type UsageReport } from './billing-types.js';
import { AccountBilling } from './account-billing.js';
import { countOpenHolds } from './hold-store.js';
import { dailyUsageOf, listUsageEvents } from './usage-store.js';

/** A usage report's days (YYYY-MM-DD, inclusive; default: the current period) and grouping. */
export interface UsageRange {
  start?: string | null;
  end?: string | null;
  groupBy?: string | null;
}

export abstract class UsageReports extends AccountBilling {
  /**
   * Daily sums of the account's usage events between two UTC dates (inclusive; default: the
   * current period) per model, end user (the requests' `user`) or API key, with the current
   * period's allocation.
   */
  async usageReport(accountId: string, range: UsageRange = {}): Promise<UsageReport> {
    const [report] = await this.usageReports([accountId], range);
    if (report instanceof DomainError) throw report;
    return report!;
  }

  /**
   * usageReport() of several accounts over the same range, in their order, with one query for
   * the allocations and one for the sums (a list of accounts; DataLoader): a DomainError
   * (not_found) in the place of an id with no account. A range it refuses is refused for all.
   */
  async usageReports(accountIds: readonly string[], range: UsageRange = {}): Promise<(UsageReport | DomainError)[]> {
    const groupBy = (range.groupBy ?? 'model') as UsageGroupBy;
    if (!USAGE_GROUP_BY.includes(groupBy)) {
      throw new DomainError(
        'invalid_value',
        `'group_by' must be one of ${USAGE_GROUP_BY.join(', ')}; got '${String(range.groupBy).slice(0, 40)}'.`,
        { param: 'group_by' },
      );
    }
    const allocations = await this.getAllocations(accountIds);
    // Every account's period is the current one (the calendar month of now).
    const days = periodDays(periodOf(this.now()));
    const start = range.start ?? days.first;
    const end = range.end ?? days.last;
    for (const [param, value] of [
      ['start', start],
      ['end', end],
    ] as const) {
      if (!isDay(value))
        throw new DomainError('invalid_value', `'${param}' must be a date written YYYY-MM-DD; got '${value.slice(0, 40)}'.`, { param });
    }
    if (start > end) throw new DomainError('invalid_value', `'start' (${start}) must not be after 'end' (${end}).`, { param: 'start' });
    if ((Date.parse(end) - Date.parse(start)) / 86_400_000 >= MAX_USAGE_REPORT_DAYS) {
      throw new DomainError('invalid_value', `The range from 'start' to 'end' covers at most ${MAX_USAGE_REPORT_DAYS} days.`, {
        param: 'end',
      });
    }
    const found = allocations.flatMap((a, i) => (a instanceof DomainError ? [] : [accountIds[i]!]));
    const sums = await dailyUsageOf(this.db, found, start, end, groupBy);
    return accountIds.map((id, i) => {
      const allocation = allocations[i]!;
      if (allocation instanceof DomainError) return allocation;
      return { start, end, groupBy, allocation, data: sums.get(id) ?? [] };
    });
  }

  /** The account's usage events, oldest first (operators and tests). */
  listUsageEvents(accountId: string): Promise<UsageEventView[]> {
    return listUsageEvents(this.db, accountId);
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
