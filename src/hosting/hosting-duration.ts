/**
 * The `duration` of `list machine -l`: the user's raw text, e.g. `"3 months"`, `"2 weeks"` or `"86400"` (seconds).
 * A month is the platform's one month length (HOURS_PER_MONTH), as prices per month use.
 */
import { HOURS_PER_MONTH } from '../platform/money.js';

const UNIT_S: Record<string, number> = {
  s: 1, sec: 1, second: 1,
  m: 60, min: 60, minute: 60,
  h: 3600, hr: 3600, hour: 3600,
  d: 86_400, day: 86_400,
  w: 7 * 86_400, wk: 7 * 86_400, week: 7 * 86_400,
  mo: HOURS_PER_MONTH * 3600, month: HOURS_PER_MONTH * 3600,
  y: 365 * 86_400, yr: 365 * 86_400, year: 365 * 86_400,
};

/** Seconds, or undefined when the text is not a positive amount with a known unit (no unit: seconds). */
export function parseDuration(text: string | number): number | undefined {
  if (typeof text === 'number') return Number.isFinite(text) && text > 0 ? text : undefined;
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-z]*?)s?\s*$/i.exec(text);
  if (!m) return undefined;
  const unit = m[2].toLowerCase();
  const per = unit === '' ? 1 : UNIT_S[unit];
  const seconds = Number(m[1]) * (per ?? Number.NaN);
  return Number.isFinite(seconds) && seconds > 0 ? seconds : undefined;
}
