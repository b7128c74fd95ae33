// The billing period: the calendar month in UTC, written 'YYYY-MM'. Allocations reset at its start.

/** 'YYYY-MM' of the instant, in UTC. */
export function periodOf(at: Date): string {
  return at.toISOString().slice(0, 7);
}

/**
 * The period a wallet is in at `now`: the clock's, or the wallet's when that is later. Servers'
 * clocks differ by a little: a wallet another server (its clock ahead) has moved into a new month
 * stays there for a server whose clock has not reached it yet, never rolled back (which would
 * zero the new month's counters, and the next server ahead would zero them again).
 */
export function currentPeriod(walletPeriod: string | null | undefined, now: Date): string {
  const clock = periodOf(now);
  return walletPeriod && walletPeriod > clock ? walletPeriod : clock;
}

/** 'YYYY-MM-DD' of the instant, in UTC. */
export function dayOf(at: Date): string {
  return at.toISOString().slice(0, 10);
}

/**
 * The day a call's usage event is reported on: the day it ended, or, for a call held in one period
 * and ended in the next, the last day of the period it was held in, where its allocation counted.
 * So a month's usage report and its allocation agree about the calls across midnight.
 */
export function usageDay(period: string, at: Date): string {
  const day = dayOf(at);
  if (day.startsWith(period)) return day;
  // Before the period only by a clock behind the one that held the call (another server's).
  return day < period ? periodDays(period).first : periodDays(period).last;
}

/** The first instant of the period and the first instant of the next one. */
export function periodBounds(period: string): { start: Date; next: Date } {
  const [year, month] = period.split('-').map(Number) as [number, number];
  return { start: new Date(Date.UTC(year, month - 1, 1)), next: new Date(Date.UTC(year, month, 1)) };
}

/** First and last day ('YYYY-MM-DD') of the period. */
export function periodDays(period: string): { first: string; last: string } {
  const { start, next } = periodBounds(period);
  return { first: dayOf(start), last: dayOf(new Date(next.getTime() - 86_400_000)) };
}

const DAY = /^(\d{4})-(\d{2})-(\d{2})$/;

/** True for a real calendar date written 'YYYY-MM-DD'. */
export function isDay(text: string): boolean {
  const m = DAY.exec(text);
  if (!m) return false;
  const d = new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])));
  return dayOf(d) === text;
}
