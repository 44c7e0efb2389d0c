/**
 * The vastai client's offer query string (`search_params` of a workergroup, e.g. "verified=True rentable=True
 * gpu_name=RTX_4090 num_gpus>=2") parsed into the offers' filter body, as the client's own parse_query does it:
 * `_` in values is a space, True/False/None are booleans and null, `in`/`notin` take [a,b] lists, gpu_ram, cpu_ram
 * and gpu_total_ram are in GB (×1000 to MB) and duration in days. The body is then validated strictly by the offers'
 * filter language, so an unknown field or bad value is a 400 at creation, never a worker rented on the wrong GPU.
 */
import { badRequest } from '../platform/errors.js';
import { OFFER_FIELD_ALIASES, QUERY_UNIT_MULT } from '../offers/offers-contract.js';

const TOKEN = /([a-zA-Z0-9_]+)( *[=><!]+| +(?:[lg]te?|nin|neq|eq|not ?eq|not ?in|in) )?( *)(\[[^\]]+\]|"[^"]+"|[^ ]+)?( *)/g;
const OPS: Record<string, string> = {
  '>=': 'gte', '>': 'gt', gt: 'gt', gte: 'gte', '<=': 'lte', '<': 'lt', lt: 'lt', lte: 'lte', '!=': 'neq', '==': 'eq', '=': 'eq',
  eq: 'eq', neq: 'neq', noteq: 'neq', 'not eq': 'neq', notin: 'notin', 'not in': 'notin', nin: 'notin', in: 'in',
};
export const MAX_SEARCH_PARAMS_CHARS = 4096;

function scalar(v: string): unknown {
  const s = v.replace(/_/g, ' ').replace(/^"|"$/g, '');
  if (s === 'true' || s === 'True') return true;
  if (s === 'false' || s === 'False') return false;
  if (s === 'None' || s === 'null') return null;
  return s;
}

export function parseSearchParams(query: string): Record<string, Record<string, unknown>> {
  const q = query.trim();
  if (q.length > MAX_SEARCH_PARAMS_CHARS) throw badRequest(`search_params is longer than ${MAX_SEARCH_PARAMS_CHARS} characters`);
  const out: Record<string, Record<string, unknown>> = {};
  const matches = [...q.matchAll(TOKEN)].filter((m) => m[0] !== '');
  if (matches.map((m) => m[0]).join('') !== q) throw badRequest(`search_params: cannot parse ${JSON.stringify(q)} (expected field=value pairs, e.g. "gpu_name=RTX_4090 num_gpus>=2")`);
  for (const [, rawField, rawOp, , rawValue] of matches) {
    const field = OFFER_FIELD_ALIASES[rawField] ?? rawField;
    const op = OPS[(rawOp ?? '').trim()];
    if (!op) throw badRequest(`search_params: ${rawField} needs an operator such as = or >=`);
    const value = (rawValue ?? '').replace(/^[,[]+|[,\]]+$/g, '');
    if (value === '') throw badRequest(`search_params: ${rawField} has no value`);
    const ops = (out[field] ??= {});
    if (['?', '*', 'any'].includes(value)) {
      if (op !== 'eq') throw badRequest(`search_params: the wildcard ${value} only works with =`);
      delete out[field];
      continue;
    }
    if (op === 'in' || op === 'notin') {
      ops[op] = value.split(',').map((x) => x.trim()).filter(Boolean).map(scalar);
    } else if (QUERY_UNIT_MULT[field] !== undefined) {
      const n = Number(value);
      if (!Number.isFinite(n)) throw badRequest(`search_params: ${rawField} must be a number`);
      ops[op] = n * QUERY_UNIT_MULT[field];
    } else {
      ops[op] = scalar(value);
    }
  }
  return out;
}
