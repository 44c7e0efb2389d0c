/** Human output (aligned tables with units) and `--raw` JSON output of the CLI. */
import Table from 'cli-table3';

export interface Column<R = any> {
  /** Field of the row (dotted paths not needed: rows are flat API objects). */
  key: string;
  /** Header, with the unit when the value has one: `RAM GB`, `$/hr`. */
  header: string;
  /** Turns the value into text; `-` is printed for null or missing values. */
  fmt?: (value: any, row: R) => string;
  align?: 'left' | 'right';
}

/** Number formatters with a fixed number of decimals (values are already in the column's unit). */
export const fixed = (digits: number, scale = 1) => (v: unknown) => (typeof v === 'number' ? (v * scale).toFixed(digits) : String(v));
export const dollars = (v: unknown) => (typeof v === 'number' ? `$${v.toFixed(4)}` : String(v));
export const money2 = (v: unknown) => (typeof v === 'number' ? `$${v.toFixed(2)}` : String(v));
export const yesNo = (v: unknown) => (v === true || v === 1 ? 'yes' : v === false || v === 0 ? 'no' : String(v));
/** Unix seconds as UTC `YYYY-MM-DD HH:MM:SS`. */
export const utc = (v: unknown) =>
  typeof v === 'number' && Number.isFinite(v) ? new Date(v * 1000).toISOString().replace('T', ' ').replace(/\.\d+Z$/, '') : String(v);

function cell<R>(row: R, col: Column<R>): string {
  const v = (row as Record<string, unknown>)[col.key];
  if (v === null || v === undefined || v === '') return '-';
  if (col.fmt) return col.fmt(v, row);
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

/** A borderless table whose columns line up; numbers right-aligned unless the column says otherwise. */
export function renderTable<R>(rows: R[], columns: Column<R>[]): string {
  const table = new Table({
    head: columns.map((c) => c.header),
    chars: {
      top: '', 'top-mid': '', 'top-left': '', 'top-right': '', bottom: '', 'bottom-mid': '', 'bottom-left': '',
      'bottom-right': '', left: '', 'left-mid': '', mid: '', 'mid-mid': '', right: '', 'right-mid': '', middle: '  ',
    },
    style: { head: [], border: [], 'padding-left': 0, 'padding-right': 0 },
    colAligns: columns.map((c) => c.align ?? 'left'),
  });
  for (const row of rows) table.push(columns.map((c) => cell(row, c)));
  return table
    .toString()
    .split('\n')
    .map((l) => l.trimEnd())
    .join('\n');
}

/** `key: value` lines for one object, keys aligned. */
export interface RecordField {
  key: string;
  label?: string;
  fmt?: (v: any) => string;
}

export function renderRecord(rec: object, fields?: RecordField[]): string {
  const record = rec as Record<string, unknown>;
  const list: RecordField[] = fields ?? Object.keys(record).map((key) => ({ key }));
  const width = Math.max(0, ...list.map((f) => (f.label ?? f.key).length));
  return list
    .map((f) => {
      const v = record[f.key];
      const text = v === null || v === undefined ? '-' : f.fmt ? f.fmt(v) : typeof v === 'object' ? JSON.stringify(v) : String(v);
      return `${(f.label ?? f.key).padEnd(width)}  ${text}`;
    })
    .join('\n');
}

export interface Out {
  raw: boolean;
  /** Prints `value` as JSON under --raw, else the human text `human()` returns. */
  print(value: unknown, human: () => string): void;
  line(text: string): void;
}

export function makeOut(raw: boolean, write: (s: string) => void = (s) => process.stdout.write(s)): Out {
  return {
    raw,
    print(value, human) {
      write(raw ? `${JSON.stringify(value, null, 2)}\n` : `${human()}\n`);
    },
    line(text) {
      if (!raw) write(`${text}\n`);
    },
  };
}
