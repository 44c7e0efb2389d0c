/**
 * The Billing page's logic without React (issue 15: Billing): the date range, spend per day by contract type for the
 * chart, the charge tree flattened for display, and the CSV export. Charges are the API's entries (spec: Show charges).
 */
import type { ChargeEntry } from '../../../src/sdk/api/billing.js';
import { dayLabel, parseDay, SECONDS_PER_DAY } from './format.js';

export const CHARGE_TYPES = ['instance', 'volume', 'serverless'] as const;
export type ChargeType = (typeof CHARGE_TYPES)[number];

/** The part of a charge entry (`ChargeEntry` of the SDK) the console reads. */
export type Charge = Omit<ChargeEntry, 'metadata' | 'items'> & { items: Charge[] };

/** A range of whole UTC days, both included. */
export interface DayRange {
  from: number;
  to: number;
}

/** Longest range the chart draws (one charges request per day). */
export const MAX_RANGE_DAYS = 62;

/** The range of two `YYYY-MM-DD` inputs, or the words saying what is wrong with them. */
export function parseRange(from: string, to: string): DayRange | string {
  const a = parseDay(from);
  const b = parseDay(to);
  if (Number.isNaN(a)) return 'The start date is not a date (YYYY-MM-DD).';
  if (Number.isNaN(b)) return 'The end date is not a date (YYYY-MM-DD).';
  if (a > b) return 'The start date is after the end date.';
  if (b - a + 1 > MAX_RANGE_DAYS) return `Choose at most ${MAX_RANGE_DAYS} days.`;
  return { from: a, to: b };
}

/** The last `n` days up to and including `today` (a day number). */
export function lastDays(today: number, n: number): DayRange {
  return { from: today - n + 1, to: today };
}

/** The range as the charges filter takes it: Unix seconds from the first day's start to the last day's end. */
export function rangeSeconds(r: DayRange): { start: number; end: number } {
  return { start: r.from * SECONDS_PER_DAY, end: (r.to + 1) * SECONDS_PER_DAY - 1 };
}

export interface DaySpend {
  day: number;
  label: string;
  instance: number;
  volume: number;
  serverless: number;
  total: number;
}

/** Rounds to micro-dollars, the unit the server keeps money in (contract §5), so sums do not drift. */
const micro = (n: number) => Math.round(n * 1e6);

/**
 * Spend per day by type, from the charges of each day of the range (`perDay.get(day)`: that day's entries, table
 * format). A day with no entry is a row of zeros, so the chart's axis has every day.
 */
export function spendPerDay(range: DayRange, perDay: Map<number, Charge[]>): DaySpend[] {
  const rows: DaySpend[] = [];
  for (let day = range.from; day <= range.to; day++) {
    const sums = { instance: 0, volume: 0, serverless: 0 };
    for (const c of perDay.get(day) ?? []) {
      const t = (CHARGE_TYPES as readonly string[]).includes(c.type) ? (c.type as ChargeType) : null;
      if (t) sums[t] += micro(c.amount);
    }
    rows.push({
      day,
      label: dayLabel(day),
      instance: sums.instance / 1e6,
      volume: sums.volume / 1e6,
      serverless: sums.serverless / 1e6,
      total: (sums.instance + sums.volume + sums.serverless) / 1e6,
    });
  }
  return rows;
}

/** The sum of entries' amounts, summed in micro-dollars. */
export function totalOf(charges: Charge[]): number {
  return charges.reduce((s, c) => s + micro(c.amount), 0) / 1e6;
}

export interface TreeRow {
  /** A stable key: the path of indexes. */
  key: string;
  depth: number;
  charge: Charge;
  hasChildren: boolean;
}

/** The tree as rows in display order, children under their parent, only below the `open` keys. */
export function treeRows(charges: Charge[], open: ReadonlySet<string>, depth = 0, prefix = ''): TreeRow[] {
  const out: TreeRow[] = [];
  charges.forEach((c, i) => {
    const key = prefix ? `${prefix}.${i}` : String(i);
    const hasChildren = c.items.length > 0;
    out.push({ key, depth, charge: c, hasChildren });
    if (hasChildren && open.has(key)) out.push(...treeRows(c.items, open, depth + 1, key));
  });
  return out;
}

/** One CSV field: quoted when it holds a comma, a quote or a line break; a leading =+-@ is defused for spreadsheets. */
export function csvField(v: string | number): string {
  let s = String(v);
  if (typeof v === 'string' && /^[=+\-@\t\r]/.test(s) && !/^-?\d+(\.\d+)?$/.test(s)) s = `'${s}`;
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

/** The charges as CSV: one line per entry and per item below it (`parent` names the entry an item belongs to). */
export function chargesCsv(charges: Charge[]): string {
  const lines = ['start,end,type,source,description,amount,parent'];
  const walk = (list: Charge[], parent: string) => {
    for (const c of list) {
      lines.push(
        [new Date(c.start * 1000).toISOString(), new Date(c.end * 1000).toISOString(), c.type, c.source ?? '', c.description, c.amount.toFixed(6), parent]
          .map(csvField)
          .join(','),
      );
      walk(c.items, c.source ?? parent);
    }
  };
  walk(charges, '');
  return `${lines.join('\r\n')}\r\n`;
}
