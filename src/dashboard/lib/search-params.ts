// A page's choices kept in its address (the usage page's month, the transactions' type), so that a
// reload, Back and a shared link show the same thing. What the address says is checked: a value
// the page does not know reads as the page's default, never as a request the server refuses.

/** "2026-02" when it names a month (years 1970 to 9999), else null. */
export function monthParam(value: string | null): string | null {
  const m = /^(\d{4})-(0[1-9]|1[0-2])$/.exec(value ?? '');
  return m && Number(m[1]) >= 1970 ? value : null;
}

/** `value` when it is one of `allowed`, else null. */
export function oneOfParam<T extends string>(value: string | null, allowed: readonly T[]): T | null {
  return allowed.find((a) => a === value) ?? null;
}

/** `path` with `name` set to `value` in `search` (removed when null): "/usage?month=2026-02". */
export function withParam(path: string, search: URLSearchParams, name: string, value: string | null): string {
  const next = new URLSearchParams(search);
  if (value === null || value === '') next.delete(name);
  else next.set(name, value);
  const query = next.toString();
  return query ? `${path}?${query}` : path;
}
