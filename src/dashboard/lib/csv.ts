// CSV export of the ledger (RFC 4180: quoted where needed, CRLF line ends).

export function toCsv(header: string[], rows: (string | number | null | undefined)[][]): string {
  const cell = (v: string | number | null | undefined) => {
    const s = v === null || v === undefined ? '' : String(v);
    // A leading =, +, - or @ would be a formula in a spreadsheet: prefix it with a quote.
    const safe = /^[=+@]/.test(s) || (/^-/.test(s) && !/^-\d/.test(s)) ? `'${s}` : s;
    return /[",\r\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
  };
  return [header, ...rows].map((r) => r.map(cell).join(',')).join('\r\n') + '\r\n';
}
