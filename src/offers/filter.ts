/**
 * The offers' filter language, reusable by every search that speaks it (offers, volumes, workergroup
 * `search_params`): `{<field>: {<op>: <value>, ...}, order: [[<field>, "asc"|"desc"], ...], limit: N, ...}`.
 *
 * Strict by design: an unknown field, an unknown operator or a value that cannot be coerced to the field's type is
 * a 400 that names it. A silently dropped filter rents the wrong GPU.
 *
 *   const q = parseFilterBody(body, FIELDS, { options: { type: parseType } });
 *   const rows = selectRows(allRows, ctx, q, FIELDS, limit);
 */
import { ApiError } from '../platform/errors.js';
import { driverCode } from '../fleet/fleet-offers.js';
import { checkDepth, echo, shown } from './filter-input.js';

export const OPS = ['eq', 'neq', 'lt', 'lte', 'gt', 'gte', 'in', 'notin'] as const;
export type Op = (typeof OPS)[number];

/**
 * `version`: a dotted version compared in the client's integer encoding (535.86.05 → 535086005); the field's
 * `get` returns the encoded number.
 */
export type FieldType = 'number' | 'integer' | 'boolean' | 'string' | 'version';
export type Comparable = number | string | boolean | null;

export interface FieldDef<R, C> {
  type: FieldType;
  /** The row's value, comparable as the type says (strings already passed through `normalize`). */
  get: (row: R, ctx: C) => Comparable;
  /** Applied to string filter values (and, by `get`, to row values): e.g. gpu_name `RTX_4090` = `RTX 4090`. */
  normalize?: (s: string) => string;
  /**
   * The value depends on the row alone, not on the search context: it is read once per row set into a column
   * (Float64Array for numbers and booleans) and filters scan that column instead of calling `get`.
   */
  static?: boolean;
  /**
   * A second value of the row's string that equality filters (eq, neq, in, notin) also match, from the value alone:
   * geolocation's country code (`"California, US"` → `US`, offer-geo.ts). Ordering compares the value only.
   */
  alt?: (value: string) => string | null;
  /** A filter value that stands for several (a region name for its countries): `eq` becomes `in`, `neq` `notin`. */
  expand?: (value: string) => readonly string[] | undefined;
  /** The values a numeric field can take: a comparison that no value in it passes is refused (see checkRange). */
  range?: FieldRange;
}

/** A numeric field's possible values, `what` saying them in words for the error (`a fraction from 0 to 1`). */
export interface FieldRange {
  min: number;
  max: number;
  what: string;
}

/**
 * Values of a string field that exist (GPU models): any other value in eq, neq, in or notin is refused as a typo,
 * `expected` saying what would be accepted for the value given.
 */
export interface KnownValues {
  has: (normalized: string) => boolean;
  expected: (given: string) => string;
}

export type FieldTable<R, C> = Record<string, FieldDef<R, C>>;
export type Pred<R, C> = (i: number, row: R, ctx: C) => boolean;

export interface Clause {
  field: string;
  op: Op;
  value: Comparable | Comparable[];
}

export interface OrderKey {
  field: string;
  desc: boolean;
}

export interface ParsedQuery {
  clauses: Clause[];
  order: OrderKey[];
  limit: number | undefined;
  /** The non-field top-level keys, as their parsers returned them. */
  options: Record<string, unknown>;
}

export interface ParseOptions {
  /** Top-level keys that are not fields (`type`, `allocated_storage` …), each with a parser that throws a 400. */
  options?: Record<string, (value: unknown) => unknown>;
  /** Other names for fields (`dph` → `dph_total`), as the vastai client's query language has. */
  aliases?: Record<string, string>;
  /** Largest `limit`; a larger one is served as this many (a server maximum, as for charges). */
  maxLimit: number;
  /** Fields whose string values must be known ones (`gpu_name`: the catalogue's and the fleet's models). */
  known?: Record<string, KnownValues>;
}

const bad = (msg: string) => new ApiError('bad_request', msg);
const EQUALITY: ReadonlySet<Op> = new Set(['eq', 'neq', 'in', 'notin']);
const NUMERIC = /^\s*[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?\s*$/;
const TRUE = new Set(['true', 'True', 'TRUE', '1']);
const FALSE = new Set(['false', 'False', 'FALSE', '0']);

/** Coerces one filter value to the field's type, or throws a 400 naming `where`. */
export function coerce(def: FieldDef<any, any>, value: unknown, where: string): Comparable {
  if (value === null) return null;
  const fail = (): never => {
    throw bad(`${where}: ${echo(value)} is not a valid ${def.type === 'integer' ? 'number' : def.type}`);
  };
  switch (def.type) {
    case 'number':
    case 'integer':
      if (typeof value === 'number' && Number.isFinite(value)) return value;
      if (typeof value === 'string' && NUMERIC.test(value)) return Number(value);
      return fail();
    case 'boolean':
      if (typeof value === 'boolean') return value;
      if (value === 1 || value === 0) return value === 1;
      if (typeof value === 'string' && TRUE.has(value.trim())) return true;
      if (typeof value === 'string' && FALSE.has(value.trim())) return false;
      return fail();
    case 'string': {
      if (typeof value !== 'string' && !(typeof value === 'number' && Number.isFinite(value))) return fail();
      const s = String(value);
      return def.normalize ? def.normalize(s) : s;
    }
    case 'version': {
      if (typeof value === 'number' && Number.isInteger(value) && value >= 0) return value;
      if (typeof value === 'string' && /^\s*\d+\s*$/.test(value)) return Number(value);
      if (typeof value === 'string') {
        const code = driverCode(value);
        if (!Number.isNaN(code)) return code;
      }
      return fail();
    }
  }
}

function parseLimit(value: unknown, maxLimit: number): number {
  const n = typeof value === 'string' && NUMERIC.test(value) ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 1) throw bad(`limit: ${echo(value)} is not a positive integer`);
  return Math.min(n, maxLimit);
}

function parseOrder<R, C>(value: unknown, fields: FieldTable<R, C>, aliases: Record<string, string>): OrderKey[] {
  if (!Array.isArray(value)) throw bad('order: must be an array of [field, "asc"|"desc"] pairs');
  return value.map((entry, i) => {
    const pair = typeof entry === 'string' ? [entry] : entry;
    if (!Array.isArray(pair) || pair.length < 1 || pair.length > 2 || typeof pair[0] !== 'string') {
      throw bad(`order[${i}]: must be a [field, "asc"|"desc"] pair`);
    }
    const field = aliases[pair[0]] ?? pair[0];
    if (!Object.hasOwn(fields, field)) throw bad(`order[${i}]: unknown field ${echo(pair[0])}`);
    const dir = pair.length === 2 ? pair[1] : 'asc';
    if (dir !== 'asc' && dir !== 'desc') throw bad(`order[${i}]: direction must be "asc" or "desc", got ${echo(dir)}`);
    return { field, desc: dir === 'desc' };
  });
}

/**
 * Refuses a comparison no value of the field's range passes (issue 29 item 5: `reliability>99` on a 0–1 field is a
 * mistake, never a silent empty list): eq, neq, in or notin given a value the field never takes (as an unknown GPU
 * model), or an ordering bound beyond the range. A bound that every value passes (`reliability>=0`) is kept.
 */
export function rangeRefuses(r: FieldRange, op: Op, v: number): boolean {
  // An open side (an infinite bound) refuses nothing: `num_gpus>1e999` is a bound, not a mistake about the field.
  if (op === 'gt') return Number.isFinite(r.max) && v >= r.max;
  if (op === 'lt') return Number.isFinite(r.min) && v <= r.min;
  return op === 'gte' ? v > r.max : op === 'lte' ? v < r.min : v < r.min || v > r.max;
}

function checkRange(r: FieldRange, key: string, op: Op, v: number, where: string, raw: unknown): void {
  if (rangeRefuses(r, op, v)) throw bad(`${where}: ${echo(raw)} cannot match: ${shown(key)} is ${r.what}`);
}

/** Parses and validates a filter body against a field table. Throws ApiError `bad_request` naming what is wrong. */
export function parseFilterBody<R, C>(body: unknown, fields: FieldTable<R, C>, opts: ParseOptions): ParsedQuery {
  if (body === undefined || body === null) body = {};
  if (typeof body !== 'object' || Array.isArray(body)) throw bad('body: must be a JSON object of filters');
  // First: every message below may echo a value, and the rest of the work is proportional to the body.
  checkDepth(body, 'body');
  const aliases = opts.aliases ?? {};
  const q: ParsedQuery = { clauses: [], order: [], limit: undefined, options: {} };
  for (const [key, raw] of Object.entries(body as Record<string, unknown>)) {
    if (key === 'order') {
      q.order = parseOrder(raw, fields, aliases);
      continue;
    }
    if (key === 'limit') {
      if (raw !== null) q.limit = parseLimit(raw, opts.maxLimit);
      continue;
    }
    if (opts.options && Object.hasOwn(opts.options, key)) {
      q.options[key] = opts.options[key](raw);
      continue;
    }
    const field = aliases[key] ?? key;
    if (!Object.hasOwn(fields, field)) throw bad(`${shown(key)}: unknown field`);
    const def = fields[field];
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
      throw bad(`${shown(key)}: must be an object of operators, e.g. {"eq": value}`);
    }
    const known = opts.known && Object.hasOwn(opts.known, field) ? opts.known[field] : undefined;
    /** One value of a clause, coerced and checked against the field's range and known values. */
    const valueOf = (op: Op, value: unknown, where: string): Comparable => {
      const v = coerce(def, value, where);
      if (v === null) return v;
      if (def.range && typeof v === 'number') checkRange(def.range, key, op, v, where, value);
      if (known && EQUALITY.has(op) && typeof v === 'string' && !known.has(v)) throw bad(`${where}: ${echo(value)} cannot match: ${known.expected(String(value))}`);
      return v;
    };
    for (const [op, value] of Object.entries(raw as Record<string, unknown>)) {
      if (!(OPS as readonly string[]).includes(op)) throw bad(`${shown(key)}.${shown(op)}: unknown operator (use ${OPS.join(', ')})`);
      const where = `${shown(key)}.${op}`;
      if (op === 'in' || op === 'notin') {
        if (!Array.isArray(value)) throw bad(`${where}: must be an array`);
        const items = value.flatMap((x: unknown, i): Comparable[] => {
          const many = def.expand && typeof x === 'string' ? def.expand(x) : undefined;
          return many ? [...many] : [valueOf(op, x, `${where}[${i}]`)];
        });
        q.clauses.push({ field, op, value: items });
        continue;
      }
      // The vastai client's wildcard (`self-test machine`: `"verified": {"eq": "any"}`): no condition on the field.
      if (value === 'any' && (op === 'eq' || op === 'neq') && def.type !== 'string') continue;
      const many = def.expand && typeof value === 'string' ? def.expand(value) : undefined;
      if (many) {
        if (op !== 'eq' && op !== 'neq') throw bad(`${where}: ${echo(value)} names several values: compare it with eq, neq, in or notin`);
        q.clauses.push({ field, op: op === 'eq' ? 'in' : 'notin', value: [...many] });
        continue;
      }
      const v = valueOf(op as Op, value, where);
      if (v === null && op !== 'eq' && op !== 'neq') throw bad(`${where}: null can only be compared with eq or neq`);
      q.clauses.push({ field, op: op as Op, value: v });
    }
  }
  return q;
}

type Column = Float64Array | Comparable[];

const rank = (v: Comparable): number | string => (typeof v === 'boolean' ? Number(v) : (v as number | string));
const isNumeric = (t: FieldType) => t !== 'string';
/** Numbers, booleans (0/1) and versions as one number; null as NaN, which no comparison matches. */
export const toNum = (v: Comparable): number => (v === null ? Number.NaN : typeof v === 'boolean' ? Number(v) : (v as number));

/**
 * Columns of static fields, per row set: a row set (an array) is immutable once searched, so its columns are built
 * at most once, on first use, and dropped with it.
 */
export class ColumnCache<R> {
  private readonly sets = new WeakMap<readonly R[], Map<string, Column>>();

  column<C>(rows: readonly R[], name: string, def: FieldDef<R, C>, ctx: C): Column {
    let cols = this.sets.get(rows);
    if (!cols) this.sets.set(rows, (cols = new Map()));
    let col = cols.get(name);
    if (!col) {
      if (isNumeric(def.type)) {
        const f = new Float64Array(rows.length);
        for (let i = 0; i < rows.length; i++) f[i] = toNum(def.get(rows[i], ctx));
        col = f;
      } else {
        col = rows.map((r) => def.get(r, ctx));
      }
      cols.set(name, col);
    }
    return col;
  }
}

/** A reader of one field: from its column when static, else through `get`. Numeric fields read as numbers. */
function reader<R, C>(rows: readonly R[], name: string, def: FieldDef<R, C>, ctx: C, cache?: ColumnCache<R>): (i: number, row: R) => Comparable {
  if (def.static && cache) {
    const col = cache.column(rows, name, def, ctx);
    return (i) => col[i];
  }
  const get = def.get;
  return isNumeric(def.type) ? (_i, r) => toNum(get(r, ctx)) : (_i, r) => get(r, ctx);
}

/** A reader of a field's second value (FieldDef.alt), from a column of its own when the field is static. */
function altReader<R, C>(rows: readonly R[], name: string, def: FieldDef<R, C>, ctx: C, cache?: ColumnCache<R>): ((i: number, row: R) => Comparable) | undefined {
  const alt = def.alt;
  if (!alt) return undefined;
  const get = (row: R, c: C) => {
    const v = def.get(row, c);
    return typeof v === 'string' ? alt(v) : null;
  };
  return reader(rows, `${name}\u0000alt`, { type: 'string', get, static: def.static }, ctx, cache);
}

/**
 * One clause as a predicate over `read`. `readAlt` reads the row's second value (FieldDef.alt) that equality
 * operators also match; a missing one (null) matches nothing, not even `eq null`.
 */
export function compileClause<R, C>(
  c: Clause,
  read: (i: number, row: R) => Comparable,
  numeric: boolean,
  readAlt?: (i: number, row: R) => Comparable,
): Pred<R, C> {
  const norm = (v: Comparable) => (numeric ? toNum(v) : v);
  if (readAlt && !numeric && EQUALITY.has(c.op)) {
    const set = new Set(Array.isArray(c.value) ? c.value : [c.value]);
    const match = (i: number, r: R) => {
      if (set.has(read(i, r))) return true;
      const a = readAlt(i, r);
      return a !== null && set.has(a);
    };
    return c.op === 'eq' || c.op === 'in' ? match : (i, r) => !match(i, r);
  }
  if (c.op === 'in' || c.op === 'notin') {
    const set = new Set((c.value as Comparable[]).map(norm));
    return c.op === 'in' ? (i, r) => set.has(read(i, r)) : (i, r) => !set.has(read(i, r));
  }
  const v = norm(c.value as Comparable);
  if (c.op === 'eq') return Number.isNaN(v) ? (i, r) => Number.isNaN(read(i, r)) : (i, r) => read(i, r) === v;
  if (c.op === 'neq') return Number.isNaN(v) ? (i, r) => !Number.isNaN(read(i, r)) : (i, r) => read(i, r) !== v;
  const t = v as number | string;
  // NaN (a missing number) satisfies no ordering comparison; a missing string (null) neither.
  switch (c.op) {
    case 'lt':
      return (i, r) => {
        const a = read(i, r);
        return a !== null && (a as number | string) < t;
      };
    case 'lte':
      return (i, r) => {
        const a = read(i, r);
        return a !== null && (a as number | string) <= t;
      };
    case 'gt':
      return (i, r) => {
        const a = read(i, r);
        return a !== null && (a as number | string) > t;
      };
    default:
      return (i, r) => {
        const a = read(i, r);
        return a !== null && (a as number | string) >= t;
      };
  }
}

/** One predicate for all clauses: every operator on every field must hold. Column clauses run first (cheapest). */
export function compileFilter<R, C>(clauses: Clause[], fields: FieldTable<R, C>, rows: readonly R[], ctx: C, cache?: ColumnCache<R>): Pred<R, C> {
  const sorted = [...clauses].sort((a, b) => Number(!fields[a.field].static) - Number(!fields[b.field].static));
  const preds = sorted.map((c) => {
    const def = fields[c.field];
    return compileClause<R, C>(c, reader(rows, c.field, def, ctx, cache), isNumeric(def.type), altReader(rows, c.field, def, ctx, cache));
  });
  if (preds.length === 0) return () => true;
  return (i, row, ctx) => {
    for (let k = 0; k < preds.length; k++) if (!preds[k](i, row, ctx)) return false;
    return true;
  };
}

/**
 * Narrows candidate row indexes with one comparison over a numeric column: a tight loop per operator, so a static
 * filter costs about a nanosecond a row.
 */
function narrow(col: Float64Array, op: Op, t: number, cand: Int32Array | null, n: number): Int32Array {
  const out = new Int32Array(cand ? cand.length : n);
  let k = 0;
  const len = cand ? cand.length : n;
  const isNaNT = Number.isNaN(t);
  for (let j = 0; j < len; j++) {
    const i = cand ? cand[j] : j;
    const a = col[i];
    let ok: boolean;
    switch (op) {
      case 'lt': ok = a < t; break;
      case 'lte': ok = a <= t; break;
      case 'gt': ok = a > t; break;
      case 'gte': ok = a >= t; break;
      case 'eq': ok = isNaNT ? a !== a : a === t; break;
      default: ok = isNaNT ? a === a : a !== t;
    }
    if (ok) out[k++] = i;
  }
  return out.subarray(0, k);
}

/**
 * Indexes of the rows that pass every clause: static numeric comparisons first, as column scans; the rest (sets,
 * strings, fields that depend on the search) through predicates over what is left.
 */
export function filterIndexes<R, C>(rows: readonly R[], clauses: Clause[], fields: FieldTable<R, C>, ctx: C, cache?: ColumnCache<R>): Int32Array {
  let cand: Int32Array | null = null;
  const rest: Clause[] = [];
  for (const c of clauses) {
    const def = fields[c.field];
    if (cache && def.static && isNumeric(def.type) && c.op !== 'in' && c.op !== 'notin') {
      cand = narrow(cache.column(rows, c.field, def, ctx) as Float64Array, c.op, toNum(c.value as Comparable), cand, rows.length);
    } else {
      rest.push(c);
    }
  }
  if (!rest.length) return cand ?? Int32Array.from({ length: rows.length }, (_, i) => i);
  const pass = compileFilter(rest, fields, rows, ctx, cache);
  const len = cand ? cand.length : rows.length;
  const out = new Int32Array(len);
  let k = 0;
  for (let j = 0; j < len; j++) {
    const i = cand ? cand[j] : j;
    if (pass(i, rows[i], ctx)) out[k++] = i;
  }
  return out.subarray(0, k);
}

/** Compares two key values in a direction; missing values (null, NaN) sort last either way. */
function compareKey(x: Comparable, y: Comparable, desc: boolean): number {
  const xm = x === null || (typeof x === 'number' && Number.isNaN(x));
  const ym = y === null || (typeof y === 'number' && Number.isNaN(y));
  if (xm || ym) return xm === ym ? 0 : xm ? 1 : -1;
  const rx = rank(x);
  const ry = rank(y);
  if (rx === ry) return 0;
  const lt = rx < ry ? -1 : 1;
  return desc ? -lt : lt;
}

function compareKeys(a: Comparable[], b: Comparable[], desc: boolean[]): number {
  for (let i = 0; i < a.length; i++) {
    const c = compareKey(a[i], b[i], desc[i]);
    if (c !== 0) return c;
  }
  return 0;
}

/**
 * The rows that pass the query's filters, in its order, at most `limit` (offer search runs the column engine in
 * offer-search.ts instead; this stays the row-by-row reference it is tested against). Keeps only the best `limit` while
 * scanning (no full sort), so a search over 100,000 rows costs one pass. `tiebreak` ends every order (e.g. `id`).
 * `cache` keeps the columns of static fields between searches over the same row set.
 */
export function selectRows<R, C>(
  rows: readonly R[],
  ctx: C,
  q: ParsedQuery,
  fields: FieldTable<R, C>,
  limit: number,
  tiebreak: OrderKey,
  cache?: ColumnCache<R>,
): R[] {
  const passing = filterIndexes(rows, q.clauses, fields, ctx, cache);
  const order = [...q.order, tiebreak];
  const readers = order.map((k) => reader(rows, k.field, fields[k.field], ctx, cache));
  const desc = order.map((k) => k.desc);
  const read0 = readers[0];
  const desc0 = desc[0];
  const top: { row: R; keys: Comparable[] }[] = [];
  for (let j = 0; j < passing.length; j++) {
    const i = passing[j];
    const row = rows[i];
    const first = read0(i, row);
    // Cheap reject on the first key before building the whole tuple.
    if (top.length === limit && compareKey(first, top[limit - 1].keys[0], desc0) > 0) continue;
    const keys = readers.map((r) => r(i, row));
    if (top.length === limit && compareKeys(keys, top[limit - 1].keys, desc) >= 0) continue;
    let lo = 0;
    let hi = top.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (compareKeys(top[mid].keys, keys, desc) <= 0) lo = mid + 1;
      else hi = mid;
    }
    top.splice(lo, 0, { row, keys });
    if (top.length > limit) top.pop();
  }
  return top.map((t) => t.row);
}
