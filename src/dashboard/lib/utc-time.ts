// Times as the server counts them: in UTC, and labelled so. A key set to expire on a day stops at
// 00:00 UTC that day; shown in the browser's time zone, west of UTC it read as the day before.

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** "2026-12-15T00:00:00.000Z" → "15 Dec 2026, 00:00 UTC" (to the minute); not a time → "—". */
export function formatUtcDateTime(value: string | Date): string {
  const d = typeof value === 'string' ? new Date(value) : value;
  if (Number.isNaN(d.getTime())) return '—';
  const two = (n: number) => String(n).padStart(2, '0');
  return `${d.getUTCDate()} ${MONTHS[d.getUTCMonth()]} ${d.getUTCFullYear()}, ${two(d.getUTCHours())}:${two(d.getUTCMinutes())} UTC`;
}
