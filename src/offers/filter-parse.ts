/**
 * Parsing a filter body (filter.ts) against a field table: every value coerced to its field's type and checked, or a
 * 400 `bad_request` that names it.
 */
import { ApiError } from '../platform/errors.js';
import { driverCode } from '../machines/machines-offers-contract.js';
import { checkDepth, echo, shown } from './filter-input.js';
import {
  EQUALITY, OPS, type Comparable, type FieldDef, type FieldRange, type FieldTable, type Op, type OrderKey, type ParsedQuery, type ParseOptions,
} from './filter-types.js';

const bad = (msg: string) => new ApiError('bad_request', msg);
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
