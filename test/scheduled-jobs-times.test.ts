// When a scheduled job runs (docs/spec/client-compat-more.md §d): on the hour, UTC, every hour (HOURLY), at
// hour_of_the_day (DAILY), at hour_of_the_day on day_of_the_week with 0 = Sunday (WEEKLY), from start_time to end_time
// both included; occurrences missed while no server ran are skipped, not replayed in a burst.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { occurrenceAfter, occurrenceFrom, timetableError, type Timetable } from '../src/scheduled-jobs/scheduled-jobs-times.js';

const at = (iso: string) => Date.parse(iso) / 1000;
const iso = (t: number | null) => (t === null ? null : new Date(t * 1000).toISOString());
const window = { start_time: at('2027-01-15T08:00:00Z'), end_time: at('2027-01-29T08:00:00Z') }; // a Friday, two weeks

test('HOURLY: every whole hour, the start included when it is one', () => {
  const t: Timetable = { ...window, frequency: 'HOURLY', day_of_the_week: null, hour_of_the_day: null };
  assert.equal(iso(occurrenceFrom(t, at('2027-01-15T08:00:00Z'))), '2027-01-15T08:00:00.000Z');
  assert.equal(iso(occurrenceFrom(t, at('2027-01-15T08:00:01Z'))), '2027-01-15T09:00:00.000Z');
  assert.equal(iso(occurrenceFrom(t, at('2027-01-01T00:00:00Z'))), '2027-01-15T08:00:00.000Z', 'not before start_time');
  assert.equal(iso(occurrenceAfter(t, at('2027-01-15T09:00:00Z'), at('2027-01-15T09:00:00Z'))), '2027-01-15T10:00:00.000Z');
  assert.equal(iso(occurrenceAfter(t, at('2027-01-29T08:00:00Z'), at('2027-01-29T08:00:00Z'))), null, 'end_time was the last');
  assert.equal(iso(occurrenceFrom(t, at('2027-01-29T08:00:00Z'))), '2027-01-29T08:00:00.000Z', 'end_time included');
});

test('DAILY: at hour_of_the_day UTC each day', () => {
  const t: Timetable = { ...window, frequency: 'DAILY', day_of_the_week: null, hour_of_the_day: 3 };
  assert.equal(iso(occurrenceFrom(t, window.start_time)), '2027-01-16T03:00:00.000Z', 'today\'s 03:00 has passed');
  assert.equal(iso(occurrenceAfter(t, at('2027-01-16T03:00:00Z'), at('2027-01-16T03:00:00Z'))), '2027-01-17T03:00:00.000Z');
  const evening: Timetable = { ...t, hour_of_the_day: 23 };
  assert.equal(iso(occurrenceFrom(evening, window.start_time)), '2027-01-15T23:00:00.000Z');
  assert.equal(iso(occurrenceAfter(t, at('2027-01-28T03:00:00Z'), at('2027-01-28T03:00:00Z'))), '2027-01-29T03:00:00.000Z', 'before end_time (08:00)');
  assert.equal(iso(occurrenceAfter(t, at('2027-01-29T03:00:00Z'), at('2027-01-29T03:00:00Z'))), null, 'the next is after end_time');
});

test('WEEKLY: at hour_of_the_day on day_of_the_week, 0 = Sunday', () => {
  const sunday: Timetable = { ...window, frequency: 'WEEKLY', day_of_the_week: 0, hour_of_the_day: 12 };
  assert.equal(iso(occurrenceFrom(sunday, window.start_time)), '2027-01-17T12:00:00.000Z');
  assert.equal(iso(occurrenceAfter(sunday, at('2027-01-17T12:00:00Z'), at('2027-01-17T12:00:00Z'))), '2027-01-24T12:00:00.000Z');
  assert.equal(iso(occurrenceAfter(sunday, at('2027-01-24T12:00:00Z'), at('2027-01-24T12:00:00Z'))), null, 'the 31st is after end_time');
  const friday: Timetable = { ...window, frequency: 'WEEKLY', day_of_the_week: 5, hour_of_the_day: 8 };
  assert.equal(iso(occurrenceFrom(friday, window.start_time)), '2027-01-15T08:00:00.000Z', 'the start itself, a Friday 08:00');
  const saturday: Timetable = { ...window, frequency: 'WEEKLY', day_of_the_week: 6, hour_of_the_day: 0 };
  assert.equal(iso(occurrenceFrom(saturday, window.start_time)), '2027-01-16T00:00:00.000Z');
});

test('missed occurrences are skipped: the next one is not before now', () => {
  const t: Timetable = { ...window, frequency: 'HOURLY', day_of_the_week: null, hour_of_the_day: null };
  assert.equal(iso(occurrenceAfter(t, at('2027-01-15T09:00:00Z'), at('2027-01-15T14:20:00Z'))), '2027-01-15T15:00:00.000Z');
  assert.equal(iso(occurrenceAfter(t, at('2027-01-15T09:00:00Z'), at('2027-01-15T09:00:00.250Z'))), '2027-01-15T10:00:00.000Z');
});

test('the day and hour each frequency needs (the clients\' own check)', () => {
  const ok = (frequency: Timetable['frequency'], day: number | null, hour: number | null) => timetableError({ frequency, day_of_the_week: day, hour_of_the_day: hour }) === null;
  assert.equal(ok('HOURLY', null, null), true);
  assert.equal(ok('HOURLY', null, 3), false);
  assert.equal(ok('HOURLY', 1, null), false);
  assert.equal(ok('DAILY', null, 0), true);
  assert.equal(ok('DAILY', null, null), false);
  assert.equal(ok('DAILY', 2, 4), false);
  assert.equal(ok('WEEKLY', 0, 0), true);
  assert.equal(ok('WEEKLY', null, 4), false);
  assert.equal(ok('WEEKLY', 3, null), false);
});
