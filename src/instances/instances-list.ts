/**
 * `GET /api/v1/instances/` (contract §3): `select_filters`, `order_by`, `limit`, `after_token` →
 * `{instances, next_token, total_instances}`. The token holds the sort values and id of the last row shown, so a
 * page boundary stays put when instances are added or removed between calls.
 */
import { badRequest } from '../platform/errors.js';
import type { InstanceObject } from './instances-view.js';

export const LIST_DEFAULT_LIMIT = 25;
export const LIST_MAX_LIMIT = 1000;
const OPS = ['eq', 'neq', 'lt', 'lte', 'gt', 'gte', 'in', 'notin'] as const;

type Order = { col: string; dir: 'asc' | 'desc' }[];

function parseJson(raw: string | undefined, field: string): unknown {
  if (raw === undefined || raw === '') return undefined;
  try {
    return JSON.parse(raw);
  } catch {
    throw badRequest(`query.${field} must be JSON`);
  }
}

/** Filter values may arrive as strings (`"2"`): coerce to the field's type. */
function coerce(sample: unknown, v: unknown): unknown {
  if (typeof sample === 'number' && typeof v === 'string' && v.trim() !== '' && Number.isFinite(Number(v))) return Number(v);
  if (typeof sample === 'boolean' && typeof v === 'string') return v === 'true' ? true : v === 'false' ? false : v;
  return v;
}

function compareValues(a: unknown, b: unknown): number {
  if (a === b) return 0;
  if (a === null || a === undefined) return -1;
  if (b === null || b === undefined) return 1;
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  return String(a) < String(b) ? -1 : 1;
}

function matches(value: unknown, op: (typeof OPS)[number], arg: unknown): boolean {
  const c = (x: unknown) => coerce(value, x);
  switch (op) {
    case 'eq': return compareValues(value, c(arg)) === 0;
    case 'neq': return compareValues(value, c(arg)) !== 0;
    case 'lt': return value !== null && compareValues(value, c(arg)) < 0;
    case 'lte': return value !== null && compareValues(value, c(arg)) <= 0;
    case 'gt': return value !== null && compareValues(value, c(arg)) > 0;
    case 'gte': return value !== null && compareValues(value, c(arg)) >= 0;
    case 'in': return (arg as unknown[]).some((x) => compareValues(value, c(x)) === 0);
    case 'notin': return !(arg as unknown[]).some((x) => compareValues(value, c(x)) === 0);
  }
}

export function listPage(
  all: InstanceObject[],
  q: { select_filters?: string; order_by?: string; limit?: number; after_token?: string },
): { instances: InstanceObject[]; next_token: string | null; total_instances: number } {
  const filters = parseJson(q.select_filters, 'select_filters') ?? {};
  if (typeof filters !== 'object' || filters === null || Array.isArray(filters)) throw badRequest('query.select_filters must be a JSON object');
  let rows = all;
  for (const [field, cond] of Object.entries(filters as Record<string, unknown>)) {
    if (typeof cond !== 'object' || cond === null || Array.isArray(cond)) throw badRequest(`query.select_filters.${field} must be {op: value}`);
    for (const [op, arg] of Object.entries(cond)) {
      if (!(OPS as readonly string[]).includes(op)) throw badRequest(`query.select_filters.${field}: unknown operator ${JSON.stringify(op)}`);
      if ((op === 'in' || op === 'notin') && !Array.isArray(arg)) throw badRequest(`query.select_filters.${field}.${op} must be a list`);
      rows = rows.filter((r) => matches(r[field], op as (typeof OPS)[number], arg));
    }
  }
  const orderRaw = parseJson(q.order_by, 'order_by') ?? [{ col: 'id', dir: 'asc' }];
  if (!Array.isArray(orderRaw)) throw badRequest('query.order_by must be a JSON list of {col, dir}');
  const order: Order = orderRaw.map((o, i) => {
    if (typeof o !== 'object' || o === null || typeof o.col !== 'string') throw badRequest(`query.order_by[${i}] must be {col, dir}`);
    const dir = o.dir ?? 'asc';
    if (dir !== 'asc' && dir !== 'desc') throw badRequest(`query.order_by[${i}].dir must be asc or desc`);
    return { col: o.col, dir };
  });
  const cmp = (a: Record<string, unknown>, b: Record<string, unknown>): number => {
    for (const { col, dir } of order) {
      const d = compareValues(a[col], b[col]);
      if (d !== 0) return dir === 'asc' ? d : -d;
    }
    return (a.id as number) - (b.id as number);
  };
  rows = [...rows].sort(cmp);
  const total = rows.length;
  if (q.after_token) {
    let after: Record<string, unknown>;
    try {
      after = JSON.parse(Buffer.from(q.after_token, 'base64url').toString('utf8'));
      if (typeof after !== 'object' || after === null || typeof after.id !== 'number') throw new Error();
    } catch {
      throw badRequest('query.after_token is not a token from a previous page');
    }
    rows = rows.filter((r) => cmp(r, after) > 0);
  }
  const limit = q.limit ?? LIST_DEFAULT_LIMIT;
  const page = rows.slice(0, limit);
  let next: string | null = null;
  if (rows.length > limit) {
    const lastRow = page[page.length - 1];
    const key: Record<string, unknown> = { id: lastRow.id };
    for (const { col } of order) key[col] = lastRow[col];
    next = Buffer.from(JSON.stringify(key)).toString('base64url');
  }
  return { instances: page, next_token: next, total_instances: total };
}
