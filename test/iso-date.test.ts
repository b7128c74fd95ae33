// The strict ISO 8601 reading the CLI's --expires-at and GraphQL's DateTime share.
import { expect, it } from 'vitest';
import { parseIsoDateTime } from '../src/domain/iso-date.js';

it('reads the dates and times ISO 8601 writes, as instants', () => {
  expect(parseIsoDateTime('2027-01-31')?.toISOString()).toBe('2027-01-31T00:00:00.000Z');
  expect(parseIsoDateTime('2027-01-31T10:00:00Z')?.toISOString()).toBe('2027-01-31T10:00:00.000Z');
  expect(parseIsoDateTime('2027-01-31T10:00:00+02:00')?.toISOString()).toBe('2027-01-31T08:00:00.000Z');
  expect(parseIsoDateTime('2028-02-29T23:59:59.5Z')?.toISOString()).toBe('2028-02-29T23:59:59.500Z');
});

it('refuses what Date would read as another day, and what is no date', () => {
  for (const v of ['2027-02-30', '2027-02-29', '1', '2027', '2027-13-01', '2027-01-31T24:00Z', '2027-01-31T10:60Z', 'tomorrow', ''])
    expect(parseIsoDateTime(v), v).toBeNull();
});
