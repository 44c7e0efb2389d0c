/**
 * The filter language's types (filter.ts): fields, their definitions, clauses and a parsed query. Apart, so that the
 * parser (filter-parse.ts) and the engine (filter.ts) share them without importing each other.
 */
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
  /** What a client's help says of the field; a field without one is not offered by the CLI's query language. */
  doc?: FieldDoc;
}

/** A field as a client's help describes it: the unit a user writes it in, and its meaning. */
export interface FieldDoc {
  unit?: string;
  desc: string;
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

/** The operators that compare for equality (a field's `alt` and known values apply to these). */
export const EQUALITY: ReadonlySet<Op> = new Set(['eq', 'neq', 'in', 'notin']);
