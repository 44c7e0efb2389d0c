/**
 * When a scheduled job runs (docs/spec/client-compat-more.md §d): on the hour (minute 0), UTC, at every hour (HOURLY),
 * at `hour_of_the_day` every day (DAILY) or at `hour_of_the_day` on `day_of_the_week` (WEEKLY, 0 = Sunday), from
 * `start_time` to `end_time`, both included (the client prints "from START to END").
 */
export const FREQUENCIES = ['HOURLY', 'DAILY', 'WEEKLY'] as const;
export type Frequency = (typeof FREQUENCIES)[number];

export interface Timetable {
  start_time: number;
  end_time: number;
  frequency: Frequency;
  day_of_the_week: number | null;
  hour_of_the_day: number | null;
}

const HOUR_S = 3600;
const DAY_S = 86_400;
const WEEK_S = 7 * DAY_S;
/** 1970-01-01, day 0 of Unix time, was a Thursday (4 when Sunday is 0). */
const EPOCH_WEEKDAY = 4;

/** What is wrong with the frequency's day and hour (the client's own check, `validate_frequency_values`), or null. */
export function timetableError(t: Pick<Timetable, 'frequency' | 'day_of_the_week' | 'hour_of_the_day'>): string | null {
  const day = t.day_of_the_week !== null;
  const hour = t.hour_of_the_day !== null;
  if (t.frequency === 'HOURLY' && (day || hour)) return 'an HOURLY job runs every hour of every day: day_of_the_week and hour_of_the_day must be null';
  if (t.frequency === 'DAILY' && (day || !hour)) return 'a DAILY job needs hour_of_the_day (0-23) and day_of_the_week null';
  if (t.frequency === 'WEEKLY' && (!day || !hour)) return 'a WEEKLY job needs day_of_the_week (0-6, 0 = Sunday) and hour_of_the_day (0-23)';
  return null;
}

/** The first time at or after `from` that matches the frequency (no start/end bounds). */
function firstMatch(t: Timetable, from: number): number {
  const hourly = Math.ceil(from / HOUR_S) * HOUR_S;
  if (t.frequency === 'HOURLY') return hourly;
  const dayStart = Math.floor(from / DAY_S) * DAY_S;
  const atHour = dayStart + t.hour_of_the_day! * HOUR_S;
  if (t.frequency === 'DAILY') return atHour >= from ? atHour : atHour + DAY_S;
  const weekday = (Math.floor(from / DAY_S) + EPOCH_WEEKDAY) % 7;
  const candidate = atHour + ((t.day_of_the_week! - weekday + 7) % 7) * DAY_S;
  return candidate >= from ? candidate : candidate + WEEK_S;
}

/** The first occurrence at or after `from` inside [start_time, end_time], or null when none is left. */
export function occurrenceFrom(t: Timetable, from: number): number | null {
  const at = firstMatch(t, Math.max(from, t.start_time));
  return at <= t.end_time ? at : null;
}

/** The occurrence after the one due at `due`, not before `now` (occurrences missed while no server ran are skipped). */
export function occurrenceAfter(t: Timetable, due: number, now: number): number | null {
  return occurrenceFrom(t, Math.max(Math.floor(due) + 1, now));
}
