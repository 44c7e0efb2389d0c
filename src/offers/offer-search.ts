/**
 * Offer search over columns (offer-columns.ts): the same filter language and order as `selectRows` in filter.ts
 * (the same comparisons, NaN/null semantics and missing-last ordering), but every field is read from a typed array
 * or computed from columns with a few flops; column comparisons that always or never hold are skipped by the
 * column's bounds, the rest run most selective first in one fused pass; the top `limit` are kept by insertion into
 * a small sorted buffer. A 100,000-offer search is a few array scans. test/offers-columns.test.ts checks it against
 * `selectRows` over the row objects, byte for byte.
 */
import type { OfferContext, OfferEntry } from '../fleet/fleet-offers.js';
import { compileClause, toNum, type Clause, type Op, type OrderKey, type ParsedQuery } from './filter.js';
import { transientStringColumn, type OfferColumns, type Range, type StringColumn } from './offer-columns.js';
import { OFFER_DYNAMIC, OFFER_FIELDS, OFFER_PARTS, type ColumnOf, type Fill } from './offer-fields.js';

/** How a search reads one field: a stored column, a value computed per slot, or a dictionary-coded string. */
type Access = { kind: 'col'; col: Float64Array; range?: Range } | { kind: 'fill'; fill: Fill } | { kind: 'str'; col: StringColumn };

/** Cheapest first: column scans, then string dictionary masks, then computed fields over what is left. */
const COST: Record<Access['kind'], number> = { col: 0, str: 1, fill: 2 };

function accessors(cols: OfferColumns, ctx: OfferContext): (field: string) => Access {
  const colOf: ColumnOf = (name) => {
    if (Object.hasOwn(OFFER_PARTS, name)) return cols.num(`part:${name}`, OFFER_PARTS[name]);
    const def = OFFER_FIELDS[name];
    return cols.num(name, (o) => toNum(def.get(o, ctx)));
  };
  const made = new Map<string, Access>();
  return (field) => {
    let a = made.get(field);
    if (a) return a;
    const def = OFFER_FIELDS[field];
    if (def.type === 'string') {
      const get = (o: OfferEntry) => def.get(o, ctx) as string | null;
      a = { kind: 'str', col: def.static ? cols.str(field, get) : transientStringColumn(cols.slots, get) };
    } else if (def.static) {
      a = { kind: 'col', col: colOf(field), range: cols.range(field) };
    } else if (Object.hasOwn(OFFER_DYNAMIC, field)) {
      a = { kind: 'fill', fill: OFFER_DYNAMIC[field](colOf, ctx) };
    } else {
      // A search-dependent field without a column formula: read it from the offer (correct, only slower).
      const slots = cols.slots;
      a = {
        kind: 'fill',
        fill: (cand, out) => {
          for (let j = 0; j < cand.length; j++) out[cand[j]] = toNum(def.get(slots[cand[j]]!, ctx));
        },
      };
    }
    made.set(field, a);
    return a;
  };
}

function keep(cand: Int32Array, pass: (i: number) => boolean, out: Int32Array): Int32Array {
  let n = 0;
  for (let j = 0; j < cand.length; j++) {
    const i = cand[j];
    if (pass(i)) out[n++] = i;
  }
  return out.subarray(0, n);
}

/**
 * The candidates whose value passes one comparison: one tight loop per operator (a switch inside the loop costs
 * several times more over 100,000 slots). NaN (a missing number) passes no ordering comparison; `eq NaN` matches
 * exactly the missing values, as `narrow` in filter.ts.
 */
function narrowSlots(col: Float64Array, op: Op, t: number, cand: Int32Array, out: Int32Array): Int32Array {
  const len = cand.length;
  let n = 0;
  let i = 0;
  switch (op) {
    case 'lt':
      for (let j = 0; j < len; j++) if (col[(i = cand[j])] < t) out[n++] = i;
      break;
    case 'lte':
      for (let j = 0; j < len; j++) if (col[(i = cand[j])] <= t) out[n++] = i;
      break;
    case 'gt':
      for (let j = 0; j < len; j++) if (col[(i = cand[j])] > t) out[n++] = i;
      break;
    case 'gte':
      for (let j = 0; j < len; j++) if (col[(i = cand[j])] >= t) out[n++] = i;
      break;
    case 'eq':
      if (t !== t) for (let j = 0; j < len; j++) { const a = col[(i = cand[j])]; if (a !== a) out[n++] = i; }
      else for (let j = 0; j < len; j++) if (col[(i = cand[j])] === t) out[n++] = i;
      break;
    default:
      if (t !== t) for (let j = 0; j < len; j++) { const a = col[(i = cand[j])]; if (a === a) out[n++] = i; }
      else for (let j = 0; j < len; j++) if (col[(i = cand[j])] !== t) out[n++] = i;
  }
  return out.subarray(0, n);
}

/**
 * What a column comparison does to every offer, from the column's bounds: 'all' pass (the clause can be skipped),
 * 'none' pass, or it must be scanned. The storage clause every search carries is usually 'all'.
 */
function byRange(r: Range | undefined, op: Op, t: number): 'all' | 'none' | 'scan' {
  if (!r) return 'scan';
  switch (op) {
    case 'lt':
      return !r.nan && r.max < t ? 'all' : r.min >= t ? 'none' : 'scan';
    case 'lte':
      return !r.nan && r.max <= t ? 'all' : r.min > t ? 'none' : 'scan';
    case 'gt':
      return !r.nan && r.min > t ? 'all' : r.max <= t ? 'none' : 'scan';
    case 'gte':
      return !r.nan && r.min >= t ? 'all' : r.max < t ? 'none' : 'scan';
    default:
      return 'scan';
  }
}

/** Share of a sample of the candidates that pass a column comparison: the most selective scan runs first. */
function passRate(col: Float64Array, op: Op, t: number, cand: Int32Array): number {
  const step = Math.max(1, Math.floor(cand.length / 128));
  let seen = 0;
  let pass = 0;
  for (let j = 0; j < cand.length; j += step, seen++) {
    const a = col[cand[j]];
    if (op === 'lt' ? a < t : op === 'lte' ? a <= t : op === 'gt' ? a > t : op === 'gte' ? a >= t : op === 'eq' ? a === t : a !== t) pass++;
  }
  return seen ? pass / seen : 1;
}

const bits = new Float64Array(1);
const ints = new BigInt64Array(bits.buffer);

/** The smallest double above `x` (x finite or -Infinity): `v > x` is `v >= nextUp(x)` for every double v. */
function nextUp(x: number): number {
  if (x === 0) return Number.MIN_VALUE;
  bits[0] = x;
  ints[0] += x > 0 ? 1n : -1n;
  return bits[0];
}

/**
 * A column comparison as an inclusive interval [lo, hi] (NaN is in none), or undefined when it is not one
 * (neq, eq NaN, in, notin).
 */
function interval(op: Op, t: number): [number, number] | undefined {
  if (t !== t) return undefined;
  switch (op) {
    case 'eq':
      return [t, t];
    case 'gte':
      return [t, Number.POSITIVE_INFINITY];
    case 'lte':
      return [Number.NEGATIVE_INFINITY, t];
    case 'gt':
      return t === Number.POSITIVE_INFINITY ? [1, 0] : [nextUp(t), Number.POSITIVE_INFINITY];
    case 'lt':
      return t === Number.NEGATIVE_INFINITY ? [1, 0] : [Number.NEGATIVE_INFINITY, -nextUp(-t)];
    default:
      return undefined;
  }
}

/**
 * The candidates inside every interval, in one pass: a row stops at the first interval it misses (the most
 * selective come first), and no intermediate candidate list is written.
 */
function narrowIntervals(cs: Float64Array[], lo: Float64Array, hi: Float64Array, cand: Int32Array, out: Int32Array): Int32Array {
  const m = cs.length;
  const len = cand.length;
  let n = 0;
  for (let j = 0; j < len; j++) {
    const i = cand[j];
    let k = 0;
    for (; k < m; k++) {
      const v = cs[k][i];
      if (!(v >= lo[k] && v <= hi[k])) break;
    }
    if (k === m) out[n++] = i;
  }
  return out.subarray(0, n);
}

/** Slots of the offers that pass every clause. */
function filterSlots(cols: OfferColumns, clauses: Clause[], access: (field: string) => Access): Int32Array {
  let cand = cols.live();
  const planned: { c: Clause; a: Access; rate: number }[] = [];
  for (const c of clauses) {
    const a = access(c.field);
    let rate = 1;
    if (a.kind === 'col' && c.op !== 'in' && c.op !== 'notin') {
      const t = toNum(c.value as never);
      const whole = byRange(a.range, c.op, t);
      if (whole === 'all') continue;
      if (whole === 'none') return cand.subarray(0, 0);
      rate = passRate(a.col, c.op, t, cand);
    }
    planned.push({ c, a, rate });
  }
  planned.sort((x, y) => COST[x.a.kind] - COST[y.a.kind] || x.rate - y.rate);
  // Each pass writes at or before where it reads, so after the first (which must not touch the cached live list)
  // the passes filter one scratch buffer in place.
  const work = cols.scratchInts(cand.length);
  // Column comparisons that are intervals run first, fused into one pass.
  const fused = planned.flatMap(({ c, a }) => {
    if (a.kind !== 'col' || c.op === 'in' || c.op === 'notin') return [];
    const iv = interval(c.op, toNum(c.value as never));
    return iv ? [{ c, col: a.col, iv }] : [];
  });
  if (fused.length) {
    const lo = Float64Array.from(fused, (f) => f.iv[0]);
    const hi = Float64Array.from(fused, (f) => f.iv[1]);
    cand = narrowIntervals(fused.map((f) => f.col), lo, hi, cand, work);
  }
  const done = new Set(fused.map((f) => f.c));
  // A computed field is computed for the candidates left when its
  // turn comes, into one reused buffer.
  let values: Float64Array | undefined;
  for (const { c, a } of planned) {
    if (cand.length === 0) break;
    if (done.has(c)) continue;
    if (a.kind !== 'str') {
      let col: Float64Array;
      if (a.kind === 'col') col = a.col;
      else a.fill(cand, (col = values ??= cols.scratchFloats(cols.slots.length)));
      if (c.op !== 'in' && c.op !== 'notin') {
        cand = narrowSlots(col, c.op, toNum(c.value as never), cand, work);
        continue;
      }
      const pred = compileClause<undefined, undefined>(c, (i) => col[i], true);
      cand = keep(cand, (i) => pred(i, undefined, undefined), work);
    } else {
      // One test per distinct value, then a table lookup per offer.
      const { codes, values } = a.col;
      const pred = compileClause<undefined, undefined>(c, (k) => values[k], false);
      const mask = new Uint8Array(values.length);
      for (let k = 0; k < values.length; k++) mask[k] = pred(k, undefined, undefined) ? 1 : 0;
      cand = keep(cand, (i) => mask[codes[i]] === 1, work);
    }
  }
  return cand;
}

/**
 * A number per candidate slot that orders as the field does: stored columns as they are, computed fields computed
 * once per candidate, strings as the rank of their value; missing values are NaN.
 */
function sortKey(a: Access, cand: Int32Array, cols: OfferColumns): Float64Array {
  if (a.kind === 'col') return a.col;
  const out = cols.scratchFloats(cols.slots.length);
  if (a.kind === 'fill') {
    a.fill(cand, out);
    return out;
  }
  const { codes, values } = a.col;
  const order = values.map((_v, k) => k).filter((k) => values[k] !== null);
  order.sort((x, y) => ((values[x] as string) < (values[y] as string) ? -1 : (values[x] as string) > (values[y] as string) ? 1 : 0));
  const ranks = new Float64Array(values.length).fill(Number.NaN);
  order.forEach((k, r) => (ranks[k] = r));
  for (let j = 0; j < cand.length; j++) out[cand[j]] = ranks[codes[cand[j]]];
  return out;
}

/**
 * The offers that pass the query, in its order then `tiebreak`, at most `limit`: as `selectRows` would return them.
 */
export function searchOffers(cols: OfferColumns, q: ParsedQuery, ctx: OfferContext, limit: number, tiebreak: OrderKey): OfferEntry[] {
  cols.beginSearch();
  const access = accessors(cols, ctx);
  const cand = filterSlots(cols, q.clauses, access);
  const order = [...q.order, tiebreak];
  const keys = order.map((k) => sortKey(access(k.field), cand, cols));
  const desc = order.map((k) => k.desc);
  const nKeys = keys.length;
  // Missing values (NaN) sort last in either direction, as compareKey in filter.ts.
  const cmp = (a: number, b: number): number => {
    for (let k = 0; k < nKeys; k++) {
      const x = keys[k][a];
      const y = keys[k][b];
      if (x === y) continue;
      const xm = x !== x;
      const ym = y !== y;
      if (xm || ym) {
        if (xm && ym) continue;
        return xm ? 1 : -1;
      }
      return x < y !== desc[k] ? -1 : 1;
    }
    return 0;
  };
  const top = cols.scratchInts(Math.min(limit, cand.length));
  const cap = Math.min(limit, cand.length);
  const k0 = keys[0];
  const d0 = desc[0];
  // First key of the worst offer kept, once `top` is full: most candidates lose on it alone.
  let w0 = Number.NaN;
  let n = 0;
  for (let j = 0; j < cand.length; j++) {
    const i = cand[j];
    if (n === cap) {
      const x = k0[i];
      if (x !== x ? w0 === w0 : w0 === w0 && (d0 ? x < w0 : x > w0)) continue;
      if (cmp(i, top[n - 1]) >= 0) continue;
    }
    let lo = 0;
    let hi = n;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cmp(top[mid], i) <= 0) lo = mid + 1;
      else hi = mid;
    }
    top.copyWithin(lo + 1, lo, n < cap ? n : cap - 1);
    top[lo] = i;
    if (n < cap) n++;
    if (n === cap) w0 = k0[top[n - 1]];
  }
  const out: OfferEntry[] = new Array(n);
  for (let k = 0; k < n; k++) out[k] = cols.slots[top[k]]!;
  return out;
}
