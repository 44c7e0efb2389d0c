/** Shared formatting of the console's pages: dollars, Unix-second times and UTC days. No React. */

export const SECONDS_PER_DAY = 86_400;

/** `$1.23`; amounts under a cent keep 4 decimals so small charges are not shown as $0.00. */
export function dollars(n: number): string {
  const abs = Math.abs(n);
  const digits = abs !== 0 && abs < 0.01 ? 4 : 2;
  return `${n < 0 ? '-' : ''}$${abs.toFixed(digits)}`;
}

/** A Unix-seconds time as `2025-01-31 14:05 UTC` (the server's clock may be virtual: never the browser's zone). */
export function utcTime(sec: number | null | undefined): string {
  if (sec === null || sec === undefined || !Number.isFinite(sec)) return '—';
  return `${new Date(sec * 1000).toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

/** Days since 1970-01-01 (UTC) of a Unix-seconds time. */
export function dayOf(sec: number): number {
  return Math.floor(sec / SECONDS_PER_DAY);
}

/** A day number as `YYYY-MM-DD`. */
export function dayLabel(day: number): string {
  return new Date(day * SECONDS_PER_DAY * 1000).toISOString().slice(0, 10);
}

/** `YYYY-MM-DD` (a date input's value) to its day number; NaN when it is not a date. */
export function parseDay(value: string): number {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(value)) return Number.NaN;
  const ms = Date.parse(`${value}T00:00:00Z`);
  return Number.isNaN(ms) ? Number.NaN : Math.floor(ms / 1000 / SECONDS_PER_DAY);
}

/**
 * A count with its noun, singular for exactly one: `1 instance`, `3 instances`, `0 offers` (issue 29 item 9: "1
 * instances"). `many` for nouns whose plural is not the noun plus `s`.
 */
export function counted(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}
