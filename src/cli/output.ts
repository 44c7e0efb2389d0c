/**
 * Human output (aligned tables with units) and `--raw` JSON output of the CLI. Tables fit the width of the output:
 * the least useful columns are left out until the table fits, and a note names them; `--columns` chooses them.
 */
import Table from 'cli-table3';
import { InvalidArgumentError, Option } from 'commander';

export interface Column<R = any> {
  /** Field of the row (dotted paths not needed: rows are flat API objects). */
  key: string;
  /** Header, with the unit when the value has one: `RAM GB`, `$/hr`. */
  header: string;
  /** Turns the value into text; `-` is printed for null or missing values. */
  fmt?: (value: any, row: R) => string;
  align?: 'left' | 'right';
  /** The column's name for `--columns` (default: `key`): the API field, so that one name works for every table. */
  name?: string;
  /**
   * How useful the column is: when the table is too wide, the columns of the highest rank are left out first.
   * Default: its position, so the leftmost columns stay.
   */
  rank?: number;
  /** Shown only when `--columns` names it (or `all`): a field a person asks for, too long or rare for the default. */
  optional?: boolean;
  /** Printed for a null or missing value, where null means something (`provisioning`); default `-`. */
  empty?: string;
}

/** Between two columns. */
const GAP = 2;
/** `--columns all`: every column, whatever the width. */
export const ALL_COLUMNS = 'all';

export interface TableOpts {
  /** The width to fit, in characters; undefined: no limit. */
  width?: number;
  /** The columns `--columns` chose, by name and in that order, or every column. */
  columns?: string[] | typeof ALL_COLUMNS;
  /** What the note on hidden columns suggests: the command has `--columns`, or only `--raw` shows everything. */
  choosable?: boolean;
}

export const columnName = (c: Column) => c.name ?? c.key;
/** Whether `text` is the column's header, ignoring case (`status` for `Status`). */
const sameHeader = (c: Column, text: string) => c.header.toLowerCase() === text.toLowerCase();

/** A count with its noun, singular for exactly one: `1 contract`, `2 contracts` (issue 29 item 9: "1 instances"). */
export const counted = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

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
  if (v === null || v === undefined || v === '') return col.empty ?? '-';
  if (col.fmt) return col.fmt(v, row);
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

/**
 * The width of the output tables fit: `COLUMNS` when set (as the vastai client, through Python's
 * shutil.get_terminal_size), else the terminal's width; when standard output is not a terminal (a pipe, a file) there
 * is no limit, so scripts always get every column.
 */
export function outputWidth(stdout: { isTTY?: boolean; columns?: number }, env: NodeJS.ProcessEnv): number | undefined {
  const fromEnv = Number(env.COLUMNS);
  if (env.COLUMNS !== undefined && Number.isInteger(fromEnv) && fromEnv > 0) return fromEnv;
  return stdout.isTTY && stdout.columns && stdout.columns > 0 ? stdout.columns : undefined;
}

/** The columns to show: the ones chosen, or the most useful ones that fit the width (in their table order). */
function fit<R>(rows: R[], all: Column<R>[], opts: TableOpts): { shown: Column<R>[]; hidden: Column<R>[] } {
  if (opts.columns === ALL_COLUMNS) return { shown: all, hidden: [] };
  if (opts.columns) {
    const chosen = opts.columns;
    return { shown: chosen.flatMap((n) => all.find((c) => columnName(c) === n) ?? all.find((c) => sameHeader(c, n)) ?? []), hidden: [] };
  }
  const columns = all.filter((c) => !c.optional);
  if (opts.width === undefined) return { shown: columns, hidden: [] };
  const widths = new Map(columns.map((c) => [c, Math.max(c.header.length, ...rows.map((r) => cell(r, c).length))]));
  const rank = (c: Column<R>) => c.rank ?? columns.indexOf(c);
  const shown = [...columns];
  const total = () => shown.reduce((sum, c) => sum + widths.get(c)!, 0) + GAP * (shown.length - 1);
  // The most useful column always stays, even alone wider than the width.
  const byUselessness = [...columns].sort((a, b) => rank(b) - rank(a)).slice(0, -1);
  for (const c of byUselessness) {
    if (total() <= opts.width) break;
    shown.splice(shown.indexOf(c), 1);
  }
  return { shown, hidden: columns.filter((c) => !shown.includes(c)) };
}

/**
 * A borderless table whose columns line up; numbers right-aligned unless the column says otherwise. It fits
 * `opts.width` (see `fit`), with a note naming the columns it left out.
 */
export function renderTable<R>(rows: R[], columns: Column<R>[], opts: TableOpts = {}): string {
  const { shown, hidden } = fit(rows, columns, opts);
  const text = plainTable(rows, shown);
  if (!hidden.length) return text;
  const how = opts.choosable ? 'choose with --columns NAME,NAME,… or --columns all' : '--raw prints every field';
  return `${text}\n${wrap(`(left out to fit ${opts.width} columns: ${hidden.map(columnName).join(', ')}; ${how})`, opts.width!)}`;
}

/** Breaks text into lines of at most `width` characters, at spaces (a longer word stays whole). */
function wrap(text: string, width: number): string {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    if (line !== '' && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line === '' ? word : `${line} ${word}`;
  }
  return [...lines, line].join('\n');
}

function plainTable<R>(rows: R[], columns: Column<R>[]): string {
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
  /** Printed for a null or missing value; default `-`. */
  empty?: string;
}

export function renderRecord(rec: object, fields?: RecordField[]): string {
  const record = rec as Record<string, unknown>;
  const list: RecordField[] = fields ?? Object.keys(record).map((key) => ({ key }));
  const width = Math.max(0, ...list.map((f) => (f.label ?? f.key).length));
  return list
    .map((f) => {
      const v = record[f.key];
      const text = v === null || v === undefined ? (f.empty ?? '-') : f.fmt ? f.fmt(v) : typeof v === 'object' ? JSON.stringify(v) : String(v);
      return `${(f.label ?? f.key).padEnd(width)}  ${text}`;
    })
    .join('\n');
}

/**
 * `--columns NAME,NAME,…` (or `all`) for a command that prints `columns`; the names are checked when the command line
 * is read, before anything is sent. `short` adds `-o`, except on the search commands, where `-o` is the vastai client's
 * `--order`.
 */
export function columnsOption(columns: Column[], short = true): Option {
  const names = [...new Set(columns.map(columnName))];
  // A column is chosen by its name or by the header the table prints over it (`gpuD_$/h`, `Status`): a person types
  // what they see (issue 29 item 10). Names first, then headers, so a header never hides another column's name.
  const known = (n: string) => names.includes(n) || columns.some((c) => sameHeader(c, n));
  return new Option(`${short ? '-o, ' : ''}--columns <names>`, `the columns to show, in order, or "all" (default: the most useful that fit the width); names (or the headers shown): ${names.join(', ')}`)
    .argParser((value: string) => {
      if (value.trim() === ALL_COLUMNS) return ALL_COLUMNS;
      const chosen = value.split(',').map((n) => n.trim()).filter((n) => n !== '');
      const unknown = chosen.filter((n) => !known(n));
      if (unknown.length) throw new InvalidArgumentError(`unknown column ${unknown.join(', ')}; the columns are ${names.join(',')} (or all)`);
      if (!chosen.length) throw new InvalidArgumentError('name at least one column');
      return chosen;
    });
}

export interface Out {
  raw: boolean;
  /** Prints `value` as JSON under --raw, else the human text `human()` returns. */
  print(value: unknown, human: () => string): void;
  line(text: string): void;
  /** A table fitted to the output width, with the columns `--columns` chose, when the command has that option. */
  table<R>(rows: R[], columns: Column<R>[]): string;
}

export function makeOut(
  raw: boolean,
  write: (s: string) => void,
  tables: TableOpts = {},
): Out {
  return {
    raw,
    table: (rows, columns) => renderTable(rows, columns, tables),
    print(value, human) {
      write(raw ? `${JSON.stringify(value, null, 2)}\n` : `${human()}\n`);
    },
    line(text) {
      if (!raw) write(`${text}\n`);
    },
  };
}
