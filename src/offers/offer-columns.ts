/**
 * Typed-array columns over the offer index's slots (machines/machines-index.ts), so that a search over 100,000 offers
 * scans arrays instead of calling a getter on every offer object. A column is built on first use and then kept:
 * `sync` patches only the slots the index reloaded since the last search (a rent changes one machine's run), and
 * drops everything when the index starts a new generation (a new epoch).
 *
 * A slot without an offer holds NaN in every numeric column: a comparison that NaN fails (every ordering, `eq` a
 * number) can scan a column whole, without the list of live slots.
 */
import type { OfferEntry, OfferSlots } from '../machines/machines-offers-contract.js';

export type NumGetter = (o: OfferEntry) => number;
export type StrGetter = (o: OfferEntry) => string | null;

/** A string column as codes into a dictionary of the distinct values (few: GPU models, regions, CPU names …). */
export interface StringColumn {
  codes: Int32Array;
  values: (string | null)[];
  /**
   * The field's second value (FieldDef.alt) of each distinct value, by code, when it has one: geolocation's country,
   * worked out once per distinct place as it enters the dictionary, never per offer or per search.
   */
  alts?: (string | null)[];
}

/** A string field's second value of a value (FieldDef.alt). */
export type AltOf = (value: string) => string | null;

interface NumEntry {
  get: NumGetter;
  col: Float64Array;
  /** Bounds of the column's values (NaN aside): a patch only widens them, so they stay true, if loose. */
  range: Range;
}

/** Lowest and highest non-NaN value of a column (min > max when it has none). */
export interface Range {
  min: number;
  max: number;
  /** Some value is NaN (a missing number). */
  nan: boolean;
}

function widen(r: Range, v: number): void {
  if (v !== v) r.nan = true;
  if (v < r.min) r.min = v;
  if (v > r.max) r.max = v;
}

interface StrEntry {
  get: StrGetter;
  alt?: AltOf;
  col: StringColumn;
  ids: Map<string | null, number>;
}

export class OfferColumns {
  private generation = -1;
  /** How much of the index's change log is applied. */
  private seen = 0;
  private capacity = 0;
  slots: readonly (OfferEntry | null)[] = [];
  private liveList: Int32Array | undefined;
  private readonly nums = new Map<string, NumEntry>();
  private readonly strs = new Map<string, StrEntry>();
  /**
   * Scratch buffers a search reuses instead of allocating ~1 MB per filter pass (allocation and GC of large typed
   * arrays cost more than the scans). A search runs synchronously, so one set serves every search in turn.
   */
  private readonly ints: Int32Array[] = [];
  private readonly floats: Float64Array[] = [];
  private intsUsed = 0;
  private floatsUsed = 0;

  /** The index's change log as of the last `sync` (slot runs [start, count …]; `applied()` entries of it are applied). */
  changeLog: readonly number[] = [];
  /**
   * Orders kept for ordered searches (offer-order.ts), by order key: dropped with the columns on a new generation;
   * within one, each notes how much of the change log it has seen.
   */
  readonly orders = new Map<string, unknown>();

  /** How much of `changeLog` the columns have applied (an order built now is exact up to here). */
  applied(): number {
    return this.seen;
  }

  /** Follows the index: patches the changed slots of every built column, or drops them all on a new generation. */
  sync(s: OfferSlots): void {
    this.changeLog = s.changes;
    if (s.generation !== this.generation) {
      this.nums.clear();
      this.strs.clear();
      this.orders.clear();
      this.generation = s.generation;
      this.seen = s.changes.length;
      this.capacity = s.slots.length;
      this.slots = s.slots;
      this.liveList = undefined;
      return;
    }
    this.slots = s.slots;
    if (this.seen === s.changes.length) return;
    if (s.slots.length > this.capacity) this.grow(Math.max(s.slots.length, Math.ceil(this.capacity * 1.5)));
    for (let k = this.seen; k < s.changes.length; k += 2) {
      const end = s.changes[k] + s.changes[k + 1];
      for (let i = s.changes[k]; i < end; i++) this.patch(i);
    }
    this.seen = s.changes.length;
    this.liveList = undefined;
  }

  private grow(capacity: number): void {
    for (const e of this.nums.values()) {
      const col = new Float64Array(capacity);
      col.set(e.col);
      e.col = col;
    }
    for (const e of this.strs.values()) {
      const codes = new Int32Array(capacity);
      codes.set(e.col.codes);
      e.col.codes = codes;
    }
    this.capacity = capacity;
  }

  private patch(i: number): void {
    const o = this.slots[i];
    for (const e of this.nums.values()) {
      const v = o ? e.get(o) : Number.NaN;
      e.col[i] = v;
      if (o) widen(e.range, v);
    }
    for (const e of this.strs.values()) e.col.codes[i] = o ? code(e, e.get(o)) : 0;
  }

  /** Starts a search: every scratch buffer is free again (what the last search returned must be consumed). */
  beginSearch(): void {
    this.intsUsed = 0;
    this.floatsUsed = 0;
  }

  /** A scratch Int32Array of at least `n` entries (contents undefined), free again at the next `beginSearch`. */
  scratchInts(n: number): Int32Array {
    let b = this.ints[this.intsUsed];
    if (!b || b.length < n) this.ints[this.intsUsed] = b = new Int32Array(Math.max(n, this.slots.length));
    this.intsUsed++;
    return b;
  }

  /** A scratch Float64Array of at least `n` entries (contents undefined), free again at the next `beginSearch`. */
  scratchFloats(n: number): Float64Array {
    let b = this.floats[this.floatsUsed];
    if (!b || b.length < n) this.floats[this.floatsUsed] = b = new Float64Array(Math.max(n, this.slots.length));
    this.floatsUsed++;
    return b;
  }

  /** Indexes of the slots that hold an offer, ascending. */
  live(): Int32Array {
    if (!this.liveList) {
      const out = new Int32Array(this.slots.length);
      let n = 0;
      for (let i = 0; i < this.slots.length; i++) if (this.slots[i] !== null) out[n++] = i;
      this.liveList = out.slice(0, n);
    }
    return this.liveList;
  }

  /** The numeric column `name` (built with `get` on first use; `get` must depend on the offer alone). */
  num(name: string, get: NumGetter): Float64Array {
    let e = this.nums.get(name);
    if (!e) {
      const col = new Float64Array(this.capacity);
      const range = { min: Number.POSITIVE_INFINITY, max: Number.NEGATIVE_INFINITY, nan: false };
      for (let i = 0; i < this.slots.length; i++) {
        const o = this.slots[i];
        if (o) widen(range, (col[i] = get(o)));
        else col[i] = Number.NaN;
      }
      this.nums.set(name, (e = { get, col, range }));
    }
    return e.col;
  }

  /** Bounds of a built numeric column's values (see `num`). */
  range(name: string): Range | undefined {
    return this.nums.get(name)?.range;
  }

  /** The string column `name` (built with `get` and `alt` on first use; `get` must depend on the offer alone). */
  str(name: string, get: StrGetter, alt?: AltOf): StringColumn {
    let e = this.strs.get(name);
    if (!e) {
      e = { get, alt, col: { codes: new Int32Array(this.capacity), values: [], alts: alt && [] }, ids: new Map() };
      for (let i = 0; i < this.slots.length; i++) {
        const o = this.slots[i];
        if (o) e.col.codes[i] = code(e, get(o));
      }
      this.strs.set(name, e);
    }
    return e.col;
  }
}

function code(e: StrEntry, v: string | null): number {
  let c = e.ids.get(v);
  if (c === undefined) {
    c = e.col.values.length;
    e.col.values.push(v);
    if (e.alt) e.col.alts!.push(v === null ? null : e.alt(v));
    e.ids.set(v, c);
  }
  return c;
}

/** A string column built for one search (a string field that depends on the search; none today). */
export function transientStringColumn(slots: readonly (OfferEntry | null)[], get: StrGetter, alt?: AltOf): StringColumn {
  const e: StrEntry = { get, alt, col: { codes: new Int32Array(slots.length), values: [], alts: alt && [] }, ids: new Map() };
  for (let i = 0; i < slots.length; i++) {
    const o = slots[i];
    if (o) e.col.codes[i] = code(e, get(o));
  }
  return e.col;
}
