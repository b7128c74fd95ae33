// An ISO 8601 date and time as an operator or a client writes it ("2027-01-31",
// "2027-01-31T10:00:00Z", "2027-01-31T10:00:00+02:00"), read strictly: JavaScript's Date reads
// "2027-02-30" as 2 March and "1" as the year 2001, which would set an expiry nobody asked for.
const ISO = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:\d{2})?)?$/;

/** The instant `value` names, or null when it is not an ISO 8601 date (and time) of the calendar. */
export function parseIsoDateTime(value: string): Date | null {
  const m = ISO.exec(value.trim());
  if (!m) return null;
  const [, y, mo, d, h = '0', mi = '0', s = '0'] = m;
  const day = new Date(Date.UTC(Number(y), Number(mo) - 1, Number(d)));
  // The day must exist (no 30 February), the time must be one of a day.
  if (day.getUTCFullYear() !== Number(y) || day.getUTCMonth() !== Number(mo) - 1 || day.getUTCDate() !== Number(d)) return null;
  if (Number(h) > 23 || Number(mi) > 59 || Number(s) > 59) return null;
  const at = new Date(value.trim());
  return Number.isNaN(at.getTime()) ? null : at;
}
