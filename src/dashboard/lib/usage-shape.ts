// The usage chart's data: the API's rows (one per day and model) become one point per day of the
// month (days without usage at zero, so the axis has no gaps) with a token count per model, plus
// totals per model for the table beside the chart.

import { decimalNanos, nanosDecimal } from './money.js';

export interface UsageRow {
  date: string;
  model: string;
  requests: number;
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
  cost: string;
}

export interface DayPoint {
  date: string;
  /** Day of the month, for the axis. */
  label: string;
  totalTokens: number;
  cost: number;
  /** Tokens per model on this day. */
  byModel: Record<string, number>;
}

export interface ModelTotal {
  model: string;
  requests: number;
  totalTokens: number;
  /** Exact decimal sum, as a string. */
  cost: string;
}

/**
 * The calendar month (YYYY-MM) in UTC at `now`: the server's usage days, monthly allocation and
 * spending limit run on UTC, so the month shown first is the one the server is counting (at 20:00
 * on 31 January in California it is already February there).
 */
export function currentUtcMonth(now: Date): string {
  return now.toISOString().slice(0, 7);
}

/** First and last day (YYYY-MM-DD) of a month given as YYYY-MM. */
export function monthRange(month: string): { start: string; end: string } {
  const [y, m] = month.split('-').map(Number) as [number, number];
  const last = new Date(Date.UTC(y, m, 0)).getUTCDate();
  return { start: `${month}-01`, end: `${month}-${String(last).padStart(2, '0')}` };
}

export function dailySeries(rows: UsageRow[], month: string): DayPoint[] {
  const { start, end } = monthRange(month);
  const days: DayPoint[] = [];
  const byDate = new Map<string, DayPoint>();
  for (let d = Number(start.slice(8)); d <= Number(end.slice(8)); d++) {
    const date = `${month}-${String(d).padStart(2, '0')}`;
    const point: DayPoint = { date, label: String(d), totalTokens: 0, cost: 0, byModel: {} };
    days.push(point);
    byDate.set(date, point);
  }
  for (const r of rows) {
    const p = byDate.get(r.date);
    if (!p) continue;
    p.totalTokens += r.totalTokens;
    p.cost += Number(r.cost);
    p.byModel[r.model] = (p.byModel[r.model] ?? 0) + r.totalTokens;
  }
  return days;
}

/** Adds decimal strings exactly (to 9 places). */
export function sumDecimals(values: string[]): string {
  let nanos = 0n;
  for (const v of values) nanos += decimalNanos(v) ?? 0n;
  return nanosDecimal(nanos);
}

export function modelTotals(rows: UsageRow[]): ModelTotal[] {
  const by = new Map<string, { requests: number; totalTokens: number; costs: string[] }>();
  for (const r of rows) {
    const t = by.get(r.model) ?? { requests: 0, totalTokens: 0, costs: [] };
    t.requests += r.requests;
    t.totalTokens += r.totalTokens;
    t.costs.push(r.cost);
    by.set(r.model, t);
  }
  return [...by.entries()]
    .map(([model, t]) => ({ model, requests: t.requests, totalTokens: t.totalTokens, cost: sumDecimals(t.costs) }))
    .sort((a, b) => b.totalTokens - a.totalTokens || a.model.localeCompare(b.model));
}

/** The models of the rows, largest first: the chart's series. */
export function seriesModels(rows: UsageRow[]): string[] {
  return modelTotals(rows).map((t) => t.model);
}
