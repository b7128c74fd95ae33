// Unusual usage: every `check_interval_seconds`, each account's last hour (tokens, and wallet money
// spent) is compared with the same hour of the previous 7 days. The usual is the median of those
// 7 hours (a median, so one earlier spike does not make the next one usual); the last hour is
// unusual when it is more than `factor` times the usual AND at least the floor (`min_tokens`,
// `min_spend`), so a new account's first busy hour (a usual of 0) is not unusual unless it is big.
// An account is alerted at most once a UTC day (the outbox's dedupe key), whichever instance
// checks first.
//
// Each hour (the last one, and the same hour of the 7 days before when an account is over a floor)
// is read by `seq` (usage_events' primary key, which grows as rows are written), not by scanning
// the table or an account's days: the hour's first row is found by a binary search over `seq`
// (rows are written with the time of writing, so `created_at` grows with `seq` but for instants
// of skew between instances, which READ_MARGIN_MS covers), and its rows are summed in slices of
// `chunkRows`, the event loop free between slices. A check reads at most eight hours of rows,
// however long the table has grown; before, the last hour was a scan of the whole table, and each
// account's baseline a read of its eight days, on SQLite synchronously: every request waited.
import type { UnusualUsageSettings } from '../../config-alerts.js';
import type { Logger } from '../../logger.js';
import { formatDecimal, parseDecimal, WALLET_CURRENCY } from '../billing/money.js';
import { big, date, int, rows, type Db } from '../billing/sql.js';
import { enqueueNotification } from './outbox.js';
import { logBackgroundFailure } from '../../db/unavailable.js';

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
const BASELINE_DAYS = 7;
/** Rows written up to this long before the hour (clock skew between instances) are read too, then filtered by time. */
const READ_MARGIN_MS = 5 * 60_000;
/** Rows summed per statement: the longest the event loop waits for the check (SQLite runs it synchronously). */
const CHUNK_ROWS = 10_000;
/** The table's first and last `seq`: two statements, since SQLite reads min() or max() alone from the key's ends, both together by a scan. */
export const SEQ_BOUNDS_SQL = ['select min(seq) as seq from usage_events', 'select max(seq) as seq from usage_events'] as const;
/** One slice of the hour: the rows of a `seq` range [?, ?) written in [?, ?), summed per account. */
export const HOUR_SLICE_SQL =
  'select account_id, sum(total_tokens) as tokens, cast(sum(wallet_nanos) as text) as spend from usage_events ' +
  'where seq >= ? and seq < ? and created_at >= ? and created_at < ? group by account_id';

export interface UsageSpike {
  accountId: string;
  tokens: number;
  spend: bigint;
  usualTokens: number;
  usualSpend: bigint;
}

export class UnusualUsageDetector {
  private readonly now: () => Date;
  private readonly minSpend: bigint;
  private timer: NodeJS.Timeout | undefined;
  private checking: Promise<unknown> | undefined;

  constructor(
    private readonly o: {
      db: Db;
      settings: UnusualUsageSettings;
      logger: Logger;
      now?: () => Date;
      /** Rows summed per statement (tests make it small). */
      chunkRows?: number;
    },
  ) {
    this.now = o.now ?? (() => new Date());
    this.minSpend = parseDecimal(o.settings.min_spend);
  }

  start(): void {
    if (!this.o.settings.enabled) return;
    this.timer = setInterval(() => {
      this.checking ??= this.check()
        .catch((err) => logBackgroundFailure(this.o.logger, err, 'unusual-usage check failed'))
        .finally(() => (this.checking = undefined));
    }, this.o.settings.check_interval_seconds * 1000);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.checking;
  }

  /** Checks every account with usage in the last hour; writes an alert for each spike (once a day). Returns the spikes found. */
  async check(): Promise<UsageSpike[]> {
    const now = this.now();
    const from = new Date(now.getTime() - HOUR_MS);
    // Below both floors nothing can be unusual: no need to read the baseline.
    const recent = [...(await this.hourByAccount(from, now))].filter(
      ([, hour]) => hour.tokens >= this.o.settings.min_tokens || hour.spend >= this.minSpend,
    );
    const spikes: UsageSpike[] = [];
    if (recent.length === 0) return spikes;
    const usualHours = await this.usualHours(
      recent.map(([accountId]) => accountId),
      now,
    );
    const factorMilli = BigInt(Math.round(this.o.settings.factor * 1000));
    for (const [accountId, { tokens, spend }] of recent) {
      const usual = usualHours.get(accountId)!;
      const tokensUnusual = tokens >= this.o.settings.min_tokens && tokens > this.o.settings.factor * usual.tokens;
      const spendUnusual = spend >= this.minSpend && spend * 1000n > factorMilli * usual.spend;
      if (!tokensUnusual && !spendUnusual) continue;
      const spike = { accountId, tokens, spend, usualTokens: usual.tokens, usualSpend: usual.spend };
      spikes.push(spike);
      const day = now.toISOString().slice(0, 10);
      await enqueueNotification(this.o.db, {
        accountId,
        kind: 'unusual_usage',
        dedupeKey: `unusual_usage:${accountId}:${day}`,
        payload: {
          tokens,
          spend: formatDecimal(spend),
          usual_tokens: usual.tokens,
          usual_spend: formatDecimal(usual.spend),
          factor: this.o.settings.factor,
          on: [tokensUnusual ? 'tokens' : null, spendUnusual ? 'spend' : null].filter(Boolean),
          hour_start: from.toISOString(),
          hour_end: now.toISOString(),
          currency: WALLET_CURRENCY,
        },
        now,
      });
    }
    return spikes;
  }

  /** Tokens and wallet money of each account with usage in [from, to): the rows from the hour's first `seq` on, in slices. */
  async hourByAccount(from: Date, to: Date): Promise<Map<string, { tokens: number; spend: bigint }>> {
    const sums = new Map<string, { tokens: number; spend: bigint }>();
    const [first] = await rows<{ seq: unknown }>(this.o.db, SEQ_BOUNDS_SQL[0]);
    const [last] = await rows<{ seq: unknown }>(this.o.db, SEQ_BOUNDS_SQL[1]);
    if (first?.seq === null || first?.seq === undefined || last?.seq === null || last?.seq === undefined) return sums;
    const hi = Number(last.seq);
    const chunk = this.o.chunkRows ?? CHUNK_ROWS;
    for (let lo = await this.firstSeqFrom(new Date(from.getTime() - READ_MARGIN_MS), Number(first.seq), hi); lo <= hi; lo += chunk) {
      const bindings = [lo, lo + chunk, from, to];
      const slice = await rows<{ account_id: string; tokens: unknown; spend: unknown }>(this.o.db, HOUR_SLICE_SQL, bindings);
      for (const r of slice) {
        const sum = sums.get(r.account_id) ?? { tokens: 0, spend: 0n };
        sum.tokens += int(r.tokens);
        sum.spend += big(String(r.spend ?? '0').split('.')[0]);
        sums.set(r.account_id, sum);
      }
      // Between slices, the requests waiting on the event loop go first.
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    return sums;
  }

  /** The first `seq` in [lo, hi] of a row written at `at` or later (hi + 1 when none), by binary search on the primary key. */
  private async firstSeqFrom(at: Date, lo: number, hi: number): Promise<number> {
    let [a, b] = [lo, hi + 1];
    while (a < b) {
      const mid = Math.floor((a + b) / 2);
      const [row] = await rows<{ seq: unknown; created_at: unknown }>(
        this.o.db,
        'select seq, created_at from usage_events where seq >= ? order by seq limit 1',
        [mid],
      );
      if (!row) b = mid;
      else if (date(row.created_at).getTime() >= at.getTime()) b = mid;
      else a = Number(row.seq) + 1;
    }
    return a;
  }

  /**
   * The usual hour of each of `accounts`: the median of the same hour on each of the previous 7
   * days (tokens and spend apart), each day's hour read as the last hour is (hourByAccount).
   */
  private async usualHours(accounts: readonly string[], now: Date): Promise<Map<string, { tokens: number; spend: bigint }>> {
    const days: Map<string, { tokens: number; spend: bigint }>[] = [];
    for (let i = 1; i <= BASELINE_DAYS; i++) {
      const end = new Date(now.getTime() - i * DAY_MS);
      days.push(await this.hourByAccount(new Date(end.getTime() - HOUR_MS), end));
    }
    const mid = Math.floor(BASELINE_DAYS / 2);
    const usual = new Map<string, { tokens: number; spend: bigint }>();
    for (const accountId of accounts) {
      const tokens = days.map((d) => d.get(accountId)?.tokens ?? 0).sort((a, b) => a - b);
      const spend = days.map((d) => d.get(accountId)?.spend ?? 0n).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
      usual.set(accountId, { tokens: tokens[mid]!, spend: spend[mid]! });
    }
    return usual;
  }
}
