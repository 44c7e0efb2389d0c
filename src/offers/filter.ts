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
import {
  EQUALITY, type Clause, type Comparable, type FieldDef, type FieldTable, type FieldType, type Op, type OrderKey, type ParsedQuery, type Pred,
} from './filter-types.js';

export * from './filter-types.js';
export { coerce, parseFilterBody, rangeRefuses } from './filter-parse.js';

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
