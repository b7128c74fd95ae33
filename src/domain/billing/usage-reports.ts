// What an account used: the usage report (daily sums by model, the allocation), its usage events
// and notifications, open holds, and the ledger's verification.
import { DomainError } from '../errors.js';
import { verifyLedger } from '../ledger/ledger.js';
import { listNotifications, type NotificationView } from '../notifications/outbox.js';
import { isDay, periodDays } from './period.js';
import { MAX_USAGE_REPORT_DAYS, USAGE_GROUP_BY, type UsageEventView, type UsageGroupBy, type UsageReport } from './billing-types.js';
import { AccountBilling } from './account-billing.js';
import { countOpenHolds } from './hold-store.js';
import { dailyUsage, listUsageEvents } from './usage-store.js';

export abstract class UsageReports extends AccountBilling {
  /**
   * Daily sums of the account's usage events between two UTC dates (inclusive; default: the
   * current period) per model, end user (the requests' `user`) or API key, with the current
   * period's allocation.
   */
  async usageReport(
    accountId: string,
    range: { start?: string | null; end?: string | null; groupBy?: string | null } = {},
  ): Promise<UsageReport> {
    const groupBy = (range.groupBy ?? 'model') as UsageGroupBy;
    if (!USAGE_GROUP_BY.includes(groupBy)) {
      throw new DomainError(
        'invalid_value',
        `'group_by' must be one of ${USAGE_GROUP_BY.join(', ')}; got '${String(range.groupBy).slice(0, 40)}'.`,
        { param: 'group_by' },
      );
    }
    const allocation = await this.getAllocation(accountId);
    const days = periodDays(allocation.period);
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
    const data = await dailyUsage(this.db, accountId, start, end, groupBy);
    return {
      start,
      end,
      groupBy,
      allocation,
      data,
    };
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
