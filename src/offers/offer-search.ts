/**
 * Offer search over columns (offer-columns.ts): the same filter language and order as `selectRows` in filter.ts
 * (the same comparisons, NaN/null semantics and missing-last ordering), but every field is read from a typed array
 * or computed from columns with a few flops; column comparisons that always or never hold are skipped by the
 * column's bounds, the rest run most selective first, each a branch-free pass; the top `limit` are kept by insertion
 * into a small sorted buffer. A 100,000-offer search is a few array scans. test/offers-columns.test.ts checks it
 * against `selectRows` over the row objects, byte for byte.
 */
import type { OfferContext, OfferEntry } from '../machines/machines-offers-contract.js';
import { compileClause, toNum, type Clause, type Op, type OrderKey, type ParsedQuery } from './filter.js';
import { transientStringColumn, type OfferColumns, type Range, type StringColumn } from './offer-columns.js';
import { OFFER_DYNAMIC, OFFER_FIELDS, OFFER_PARTS, type ColumnOf, type Fill } from './offer-fields.js';
import { orderedCandidates, type OrderedWalk } from './offer-order.js';

/** How a search reads one field: a stored column, a value computed per slot, or a dictionary-coded string. */
type Access = { kind: 'col'; col: Float64Array; range?: Range } | { kind: 'fill'; fill: Fill } | { kind: 'str'; col: StringColumn };

/** Largest limit served by an ordered walk (offer-order.ts); a larger one scans every column. */
const MAX_WALK_LIMIT = 1000;

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
      a = { kind: 'str', col: def.static ? cols.str(field, get, def.alt) : transientStringColumn(cols.slots, get, def.alt) };
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
          for (let j = 0; j < cand.length; j++) out[j] = toNum(def.get(slots[cand[j]]!, ctx));
        },
      };
    }
    made.set(field, a);
    return a;
  };
}

/**
 * The distinct values of a static string field among the offers: its column's dictionary (values of offers gone since
 * the index's generation began included).
 */
export function distinctValues(cols: OfferColumns, field: string): readonly (string | null)[] {
  const def = OFFER_FIELDS[field];
  // A static field's value depends on the offer alone: its context is never read.
  return cols.str(field, (o) => def.get(o, undefined as never) as string | null, def.alt).values;
}

/** The candidates `pass` accepts; `pass` gets each one's slot and position. */
function keep(cand: Int32Array, pass: (i: number, j: number) => boolean, out: Int32Array): Int32Array {
  let n = 0;
  for (let j = 0; j < cand.length; j++) {
    const i = cand[j];
    if (pass(i, j)) out[n++] = i;
  }
  return out.subarray(0, n);
}

// The passes below write every candidate and advance past it only when it passes: no branch on the comparison,
// which passes about half the time and so would be mispredicted about half the time (three times slower). `out`
// may be `cand` itself: a write never overtakes the read. An interval open on one side (most comparisons) gets a
// loop with one comparison: the second costs about 15% more on the widest pass.

/** The candidates whose stored value (`col` by slot) lies in [lo, hi]. NaN (a missing number) is in none. */
function narrowSlots(col: Float64Array, lo: number, hi: number, cand: Int32Array, out: Int32Array): Int32Array {
  const len = cand.length;
  let n = 0;
  if (hi === Number.POSITIVE_INFINITY) {
    for (let j = 0; j < len; j++) {
      const i = cand[j];
      out[n] = i;
      n += +(col[i] >= lo);
    }
  } else if (lo === Number.NEGATIVE_INFINITY) {
    for (let j = 0; j < len; j++) {
      const i = cand[j];
      out[n] = i;
      n += +(col[i] <= hi);
    }
  } else {
    for (let j = 0; j < len; j++) {
      const i = cand[j];
      const v = col[i];
      out[n] = i;
      n += +(v >= lo) & +(v <= hi);
    }
  }
  return out.subarray(0, n);
}

/** The candidates whose computed value (`values` by position, see Fill) lies in [lo, hi]. */
function narrowValues(values: Float64Array, lo: number, hi: number, cand: Int32Array, out: Int32Array): Int32Array {
  const len = cand.length;
  let n = 0;
  if (hi === Number.POSITIVE_INFINITY) {
    for (let j = 0; j < len; j++) {
      out[n] = cand[j];
      n += +(values[j] >= lo);
    }
  } else if (lo === Number.NEGATIVE_INFINITY) {
    for (let j = 0; j < len; j++) {
      out[n] = cand[j];
      n += +(values[j] <= hi);
    }
  } else {
    for (let j = 0; j < len; j++) {
      const v = values[j];
      out[n] = cand[j];
      n += +(v >= lo) & +(v <= hi);
    }
  }
  return out.subarray(0, n);
}

/**
 * Every slot whose stored value lies in [lo, hi]: an empty slot holds NaN (offer-columns.ts), so the first, widest
 * pass needs no list of live slots, and reading one array instead of two makes it about twice as fast.
 */
function narrowAll(col: Float64Array, lo: number, hi: number, len: number, out: Int32Array): Int32Array {
  let n = 0;
  if (hi === Number.POSITIVE_INFINITY) {
    for (let i = 0; i < len; i++) {
      out[n] = i;
      n += +(col[i] >= lo);
    }
  } else if (lo === Number.NEGATIVE_INFINITY) {
    for (let i = 0; i < len; i++) {
      out[n] = i;
      n += +(col[i] <= hi);
    }
  } else {
    for (let i = 0; i < len; i++) {
      const v = col[i];
      out[n] = i;
      n += +(v >= lo) & +(v <= hi);
    }
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
 * A comparison as an inclusive interval [lo, hi] of doubles (NaN is in none), or undefined when it is not one
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

interface Planned {
  c: Clause;
  a: Access;
  rate: number;
}

/** The clauses to test, cheapest and most selective first; null when one of them passes no offer. */
function planFilters(cols: OfferColumns, clauses: Clause[], access: (field: string) => Access): Planned[] | null {
  const live = cols.live();
  const planned: Planned[] = [];
  for (const c of clauses) {
    const a = access(c.field);
    let rate = 1;
    if (a.kind === 'col' && c.op !== 'in' && c.op !== 'notin') {
      const t = toNum(c.value as never);
      const whole = byRange(a.range, c.op, t);
      if (whole === 'all') continue;
      if (whole === 'none') return null;
      rate = passRate(a.col, c.op, t, live);
    }
    planned.push({ c, a, rate });
  }
  planned.sort((x, y) => COST[x.a.kind] - COST[y.a.kind] || x.rate - y.rate);
  return planned;
}

/**
 * The candidates (live slots) that pass every planned clause, in their order. Each pass writes at or before where it
 * reads, so after the first (which must not touch `cand`: it may be the cached live list) the passes filter `work` in
 * place. A computed field is computed for the candidates left when its turn comes, into `values`.
 */
function applyPlan(cols: OfferColumns, planned: Planned[], cand: Int32Array, work: Int32Array, values: Float64Array): Int32Array {
  const whole = cand === cols.live();
  for (const { c, a } of planned) {
    if (cand.length === 0) break;
    if (a.kind === 'str') {
      // One test per distinct value, then a table lookup per offer.
      const { codes, values: dict, alts } = a.col;
      const pred = compileClause<undefined, undefined>(c, (k) => dict[k], false, alts && ((k) => alts[k]));
      const mask = new Uint8Array(dict.length);
      for (let k = 0; k < dict.length; k++) mask[k] = pred(k, undefined, undefined) ? 1 : 0;
      cand = keep(cand, (i) => mask[codes[i]] === 1, work);
      continue;
    }
    const iv = c.op === 'in' || c.op === 'notin' ? undefined : interval(c.op, toNum(c.value as never));
    if (a.kind === 'col') {
      const col = a.col;
      if (iv) cand = whole && cand === cols.live() ? narrowAll(col, iv[0], iv[1], cols.slots.length, work) : narrowSlots(col, iv[0], iv[1], cand, work);
      else {
        const pred = compileClause<undefined, undefined>(c, (i) => col[i], true);
        cand = keep(cand, (i) => pred(i, undefined, undefined), work);
      }
    } else {
      a.fill(cand, values);
      if (iv) cand = narrowValues(values, iv[0], iv[1], cand, work);
      else {
        const pred = compileClause<undefined, undefined>(c, (j) => values[j], true);
        cand = keep(cand, (_i, j) => pred(j, undefined, undefined), work);
      }
    }
  }
  return cand;
}

/** Slots of the offers that pass every clause, ascending. */
function filterSlots(cols: OfferColumns, planned: Planned[] | null): Int32Array {
  const live = cols.live();
  if (planned === null) return live.subarray(0, 0);
  // A computed field's buffer only when one is planned (a scratch buffer is a slot-sized array).
  const values = planned.some((p) => p.a.kind === 'fill') ? cols.scratchFloats(cols.slots.length) : EMPTY_FLOATS;
  return applyPlan(cols, planned, live, cols.scratchInts(live.length), values);
}

const EMPTY_FLOATS = new Float64Array(0);

/**
 * Whether a computed field reads the search's time: its values then change from one search to the next, and no order
 * of them is kept. Found by computing it for some offers with a context that notes the read (a formula reads the time
 * as it is built or for every offer, so a few offers show it).
 */
function readsNow(cols: OfferColumns, field: string, ctx: OfferContext, memo: Map<string, boolean>): boolean {
  let used = memo.get(field);
  if (used !== undefined) return used;
  used = false;
  const tracked: OfferContext = {
    type: ctx.type,
    storage_gb: ctx.storage_gb,
    get now() {
      used = true;
      return ctx.now;
    },
  };
  const live = cols.live();
  const sample = live.subarray(0, Math.min(live.length, 1024));
  const a = accessors(cols, tracked)(field);
  if (a.kind === 'fill') a.fill(sample, new Float64Array(sample.length));
  memo.set(field, used);
  return used;
}

/** Fields found to read (or not) the search time; a property of their formulas, so kept for the process. */
const nowMemo = new Map<string, boolean>();

/**
 * The walk of an ordered search when its first key can be kept in order (a stored column, or a computed field that
 * does not read the time): undefined otherwise.
 */
function walkFor(cols: OfferColumns, first: OrderKey, a: Access, ctx: OfferContext, planned: Planned[]): OrderedWalk | undefined {
  if (a.kind === 'str') return undefined;
  let key: string;
  let keysOf: OrderedWalk['keysOf'];
  if (a.kind === 'col') {
    const col = a.col;
    key = `col\u0000${first.field}\u0000${first.desc}`;
    keysOf = (live, out) => {
      for (let j = 0; j < live.length; j++) out[j] = col[live[j]];
    };
  } else {
    if (readsNow(cols, first.field, ctx, nowMemo)) return undefined;
    key = `fill\u0000${first.field}\u0000${first.desc}\u0000${ctx.type}\u0000${ctx.storage_gb}`;
    keysOf = a.fill;
  }
  const work = cols.scratchInts(cols.slots.length);
  const values = cols.scratchFloats(cols.slots.length);
  return { key, desc: first.desc, keysOf, filter: (cand) => applyPlan(cols, planned, cand, work, values) };
}

/**
 * A number per candidate that orders as the field does: a stored column as it is (by slot), a computed field computed
 * once per candidate and a string as the rank of its value (by position); missing values are NaN.
 */
function sortKey(a: Access, cand: Int32Array, cols: OfferColumns): { key: Float64Array; bySlot: boolean } {
  if (a.kind === 'col') return { key: a.col, bySlot: true };
  const out = cols.scratchFloats(cols.slots.length);
  if (a.kind === 'fill') {
    a.fill(cand, out);
    return { key: out, bySlot: false };
  }
  const { codes, values } = a.col;
  const order = values.map((_v, k) => k).filter((k) => values[k] !== null);
  order.sort((x, y) => ((values[x] as string) < (values[y] as string) ? -1 : (values[x] as string) > (values[y] as string) ? 1 : 0));
  const ranks = new Float64Array(values.length).fill(Number.NaN);
  order.forEach((k, r) => (ranks[k] = r));
  for (let j = 0; j < cand.length; j++) out[j] = ranks[codes[cand[j]]];
  return { key: out, bySlot: false };
}

/**
 * The offers that pass the query, in its order then `tiebreak`, at most `limit`: as `selectRows` would return them.
 * The top `limit` are kept by insertion into a small sorted buffer of candidate positions.
 */
export function searchOffers(cols: OfferColumns, q: ParsedQuery, ctx: OfferContext, limit: number, tiebreak: OrderKey): OfferEntry[] {
  cols.beginSearch();
  const access = accessors(cols, ctx);
  const planned = planFilters(cols, q.clauses, access);
  const order = [...q.order, tiebreak];
  // A small limit: walk the offers best first on the first key (offer-order.ts); else, or when the filters pass too
  // few offers for a walk to pay, every clause scans its column.
  let cand: Int32Array | undefined;
  const walk = planned && limit <= MAX_WALK_LIMIT ? walkFor(cols, order[0], access(order[0].field), ctx, planned) : undefined;
  if (walk) cand = orderedCandidates(cols, walk, limit, cols.scratchInts(cols.slots.length), cols.scratchInts(cols.slots.length));
  cand ??= filterSlots(cols, planned);
  const sorted = order.map((k) => sortKey(access(k.field), cand, cols));
  const keys = sorted.map((s) => s.key);
  const bySlot = sorted.map((s) => s.bySlot);
  const desc = order.map((k) => k.desc);
  const nKeys = keys.length;
  // Candidates a and b by position. Missing values (NaN) sort last in either direction, as compareKey in filter.ts.
  const cmp = (a: number, b: number): number => {
    for (let k = 0; k < nKeys; k++) {
      const x = bySlot[k] ? keys[k][cand[a]] : keys[k][a];
      const y = bySlot[k] ? keys[k][cand[b]] : keys[k][b];
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
  const cap = Math.min(limit, cand.length);
  const top = cols.scratchInts(cap);
  // The first key by position, read in order (most candidates lose on it alone).
  let k0 = keys[0];
  if (bySlot[0]) {
    const dense = cols.scratchFloats(cand.length);
    for (let j = 0; j < cand.length; j++) dense[j] = k0[cand[j]];
    k0 = dense;
  }
  const d0 = desc[0];
  // Whether candidate a comes before b (positions), on the first key when it decides, else on every key.
  const before = (a: number, b: number): boolean => {
    const x = k0[a];
    const y = k0[b];
    if (x !== y && x === x && y === y) return x < y !== d0;
    return cmp(a, b) < 0;
  };
  // First key of the worst offer kept, once `top` is full.
  let w0 = Number.NaN;
  let n = 0;
  for (let j = 0; j < cand.length; j++) {
    if (n === cap) {
      const x = k0[j];
      // Worse on the first key (or missing, where the worst kept is not): out. Equal on it: the other keys decide.
      if (x !== x ? w0 === w0 : w0 === w0 && (d0 ? x < w0 : x > w0)) continue;
      if ((x === w0 || (x !== x && w0 !== w0)) && cmp(j, top[n - 1]) >= 0) continue;
    }
    let lo = 0;
    let hi = n;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (before(j, top[mid])) hi = mid;
      else lo = mid + 1;
    }
    // A loop, not copyWithin: a builtin call per insertion costs more than moving the few entries.
    for (let m = n < cap ? n : cap - 1; m > lo; m--) top[m] = top[m - 1];
    top[lo] = j;
    if (n < cap) n++;
    if (n === cap) w0 = k0[top[n - 1]];
  }
  const out: OfferEntry[] = new Array(n);
  for (let k = 0; k < n; k++) out[k] = cols.slots[cand[top[k]]]!;
  return out;
}
