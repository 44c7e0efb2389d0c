/**
 * Ordered search: the live offers kept sorted by a search's first order key, so that a search with a small limit
 * walks them best first and stops once it holds `limit` offers that pass its filters (plus those tied with the last
 * one), instead of scanning every column over every offer. The issue 16 benchmark query passes about one offer in
 * ten: a few hundred offers tested instead of four passes over 100,000.
 *
 * An order is a snapshot of the columns (offer-columns.ts) at the change-log position it was built at. Slots the
 * index changed since (a rent, a release, a new machine) are "stale": the walk skips them and they are tested on
 * their own and added to the candidates; past MAX_STALE_SHARE of the slots the order is rebuilt. So the walk's
 * candidates always hold the true best `limit` offers, and the caller orders them exactly as a full search would
 * (test/offers-columns.test.ts: byte for byte against the row-by-row reference, also after the fleet changed).
 */
import type { OfferColumns } from './offer-columns.js';

/** Live slots as of a build, best first by one key (missing values last), with their keys. */
interface SortedOrder {
  /** Slots, best first. */
  perm: Int32Array;
  /** The key of each `perm` entry (NaN: missing). */
  keys: Float64Array;
  /** Slots changed since the build (1 = stale), as far as `staleAt` in the change log. */
  stale: Uint8Array;
  staleList: number[];
  staleAt: number;
}

/** Share of the slots that may be stale before an order is rebuilt rather than worked around. */
const MAX_STALE_SHARE = 1 / 16;
/** Orders kept (a key per field, direction and search context); the oldest goes first. */
const MAX_ORDERS = 16;
/** Offers the walk tests first, per offer of the limit (at least MIN_FIRST_BATCH); each further batch doubles. */
const FIRST_BATCH_PER_LIMIT = 4;
const MIN_FIRST_BATCH = 32;
/** A walk that has visited this many offers (and a quarter of them all) without filling its limit scans instead. */
const MIN_FALLBACK_VISITS = 8192;

/** Best-first comparison of two keys in one direction, missing (NaN) last. */
function better(desc: boolean): (x: number, y: number) => number {
  return (x, y) => {
    if (x === y) return 0;
    if (x !== x) return y !== y ? 0 : 1;
    if (y !== y) return -1;
    return (x < y) !== desc ? -1 : 1;
  };
}

function build(cols: OfferColumns, desc: boolean, keysOf: (live: Int32Array, out: Float64Array) => void): SortedOrder {
  const live = cols.live();
  const byLive = new Float64Array(live.length);
  keysOf(live, byLive);
  const idx = new Int32Array(live.length);
  for (let j = 0; j < idx.length; j++) idx[j] = j;
  const cmp = better(desc);
  idx.sort((a, b) => cmp(byLive[a], byLive[b]));
  const perm = new Int32Array(live.length);
  const keys = new Float64Array(live.length);
  for (let p = 0; p < idx.length; p++) {
    perm[p] = live[idx[p]];
    keys[p] = byLive[idx[p]];
  }
  return { perm, keys, stale: new Uint8Array(cols.slots.length), staleList: [], staleAt: cols.applied() };
}

/** Marks the slots the index changed since the order last looked; false when too many have (rebuild). */
function catchUp(cols: OfferColumns, o: SortedOrder): boolean {
  const log = cols.changeLog;
  const end = cols.applied();
  if (o.staleAt === end) return true;
  if (o.stale.length < cols.slots.length) {
    const grown = new Uint8Array(cols.slots.length);
    grown.set(o.stale);
    o.stale = grown;
  }
  const limit = cols.slots.length * MAX_STALE_SHARE;
  for (let k = o.staleAt; k < end; k += 2) {
    const stop = log[k] + log[k + 1];
    for (let i = log[k]; i < stop; i++) {
      if (o.stale[i]) continue;
      o.stale[i] = 1;
      o.staleList.push(i);
    }
    if (o.staleList.length > limit) return false;
  }
  o.staleAt = end;
  return true;
}

/** The order for `key` (built, caught up or rebuilt as needed). */
function orderFor(cols: OfferColumns, key: string, desc: boolean, keysOf: (live: Int32Array, out: Float64Array) => void): SortedOrder {
  const orders = cols.orders as Map<string, SortedOrder>;
  let o = orders.get(key);
  if (o && catchUp(cols, o)) return o;
  if (!o && orders.size >= MAX_ORDERS) orders.delete(orders.keys().next().value!);
  o = build(cols, desc, keysOf);
  orders.set(key, o);
  return o;
}

export interface OrderedWalk {
  /** Cache key of the first order key's values: its field, direction and whatever of the search they depend on. */
  key: string;
  desc: boolean;
  /** Writes the key of each of `live`'s slots into `out` (by position). */
  keysOf(live: Int32Array, out: Float64Array): void;
  /** The slots of `cand` (live slots) that pass the search's filters, in the same order; valid until the next call. */
  filter(cand: Int32Array): Int32Array;
}

/**
 * Candidates that hold the best `limit` offers passing the filters (in no particular order), written into `out`
 * (room for every slot); undefined when the filters pass so few offers that a full scan is cheaper.
 */
export function orderedCandidates(cols: OfferColumns, w: OrderedWalk, limit: number, buf: Int32Array, out: Int32Array): Int32Array | undefined {
  const o = orderFor(cols, w.key, w.desc, w.keysOf);
  const { perm, keys, stale } = o;
  const total = perm.length;
  const fallbackAt = Math.max(MIN_FALLBACK_VISITS, total / 4);
  let n = 0;
  let pos = 0;
  const take = (from: number, to: number) => {
    let m = 0;
    for (let p = from; p < to; p++) {
      const s = perm[p];
      if (stale[s] !== 1) buf[m++] = s;
    }
    const passed = w.filter(buf.subarray(0, m));
    for (let j = 0; j < passed.length; j++) out[n++] = passed[j];
  };
  for (let batch = Math.max(MIN_FIRST_BATCH, FIRST_BATCH_PER_LIMIT * limit); pos < total && n < limit; batch *= 2) {
    const end = Math.min(total, pos + batch);
    take(pos, end);
    pos = end;
    if (n < limit && pos < total && pos >= fallbackAt) return undefined;
  }
  if (limit > 0 && n >= limit && pos < total) {
    // Offers tied with the last one needed on the first key are ordered by the next keys: take them all. `out` is
    // in walk order, so its limit-th entry holds the worst first key needed; the ties follow it in `perm`.
    const worst = keyOfNth(out, limit - 1, perm, keys, pos);
    let end = pos;
    if (worst !== worst) end = total;
    else while (end < total && keys[end] === worst) end++;
    if (end > pos) take(pos, end);
  }
  // Offers changed since the order was built: tested on their own (those with an offer now).
  if (o.staleList.length) {
    let m = 0;
    for (const s of o.staleList) if (s < cols.slots.length && cols.slots[s] !== null) buf[m++] = s;
    const passed = w.filter(buf.subarray(0, m));
    for (let j = 0; j < passed.length; j++) out[n++] = passed[j];
  }
  return out.subarray(0, n);
}

/** The first-key value of `out[nth]`: `out` lists walked slots in `perm` order, so it is found scanning back from `pos`. */
function keyOfNth(out: Int32Array, nth: number, perm: Int32Array, keys: Float64Array, pos: number): number {
  const slot = out[nth];
  for (let p = pos - 1; p >= 0; p--) if (perm[p] === slot) return keys[p];
  throw new Error('ordered search: a walked offer is not in its order');
}
