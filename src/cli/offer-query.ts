/**
 * The offer query language of the vastai client, client side: `gpu_name=RTX_4090 num_gpus>=2 reliability>0.99
 * geolocation in [US,CA]` becomes the filter body of `POST /api/v0/bundles/`, with the vastai client's field aliases
 * and unit conversions (RAM given in GB is sent in MB, duration given in days is sent in seconds, driver versions are
 * encoded as integers). Unlike that client, an unknown field, a malformed comparison or a value of the wrong type is
 * an error here, before anything is sent.
 */
import { driverCode } from '../machines/machines-offers-contract.js';
import { rangeRefuses, type FieldType as ServerFieldType } from '../offers/filter.js';
import { OFFER_FIELD_ALIASES, OFFER_FIELD_RANGES, OFFER_FIELDS as SERVER_OFFER_FIELDS, QUERY_UNIT_MULT as M } from '../offers/offer-fields.js';

export type FieldType = 'int' | 'float' | 'bool' | 'string' | 'version';

export interface FieldDef {
  type: FieldType;
  /** Unit the user writes the value in. */
  unit?: string;
  /** Factor from the user's unit to the API's (gpu_ram: GB → MB). */
  mult?: number;
  desc: string;
}


/** The server's field types in the CLI's words (its help's `type` column). */
const CLI_TYPE: Readonly<Record<ServerFieldType, FieldType>> = { integer: 'int', number: 'float', boolean: 'bool', string: 'string', version: 'version' };

/**
 * Offer fields a query may filter on (vastai `offers_fields`, plus those client-compat.md names): the server's fields
 * that carry a `doc` (src/offers/offer-fields.ts, the one table of them), by name, with the query's unit factors.
 */
export const OFFER_FIELDS: Record<string, FieldDef> = Object.fromEntries(
  Object.entries(SERVER_OFFER_FIELDS)
    .flatMap(([name, d]) => (d.doc ? [[name, d.type, d.doc] as const] : []))
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([name, type, { unit, desc }]) => [name, { type: CLI_TYPE[type], ...(unit !== undefined && { unit }), ...(Object.hasOwn(M, name) && { mult: M[name] }), desc }]),
);

/** Other names of fields (vastai `offers_alias`): the server's own table, so both sides know the same names. */
export const OFFER_ALIASES: Record<string, string> = OFFER_FIELD_ALIASES;

/** Fields an order may name beyond the filter fields. */
const ORDER_ONLY = new Set(['discounted_dph_total']);

/** Filters the vastai client adds unless `-n`: only verified, rentable, unrented, non-external offers. */
export const DEFAULT_OFFER_QUERY = (): OfferFilter => ({
  verified: { eq: true },
  external: { eq: false },
  rentable: { eq: true },
  rented: { eq: false },
});

export type Op = 'eq' | 'neq' | 'lt' | 'lte' | 'gt' | 'gte' | 'in' | 'notin';
export type FilterValue = string | number | boolean | null | (string | number | boolean)[];
export type OfferFilter = Record<string, Partial<Record<Op, FilterValue>>>;

const SYMBOL_OPS: Record<string, Op> = { '=': 'eq', '==': 'eq', '!=': 'neq', '<': 'lt', '<=': 'lte', '>': 'gt', '>=': 'gte' };
const WORD_OPS: Record<string, Op> = {
  eq: 'eq', neq: 'neq', noteq: 'neq', 'not eq': 'neq', lt: 'lt', lte: 'lte', gt: 'gt', gte: 'gte',
  in: 'in', notin: 'notin', nin: 'notin', 'not in': 'notin',
};
const ORDERED_OPS: Op[] = ['lt', 'lte', 'gt', 'gte'];
const WILDCARDS = new Set(['any', '?', '*']);

export class QueryError extends Error {}

/** `535.86.05` → 535086005: each part zero-padded to three digits, as the vastai client sends it. */
export function numericVersion(v: string): number {
  const code = driverCode(v);
  if (Number.isNaN(code)) throw new QueryError(`driver_version ${JSON.stringify(v)} is not a version like 535.86.05`);
  return code;
}

/** The fields a query language knows (offers, templates), their aliases, and the command whose help lists them. */
export interface QueryFields {
  fields: Record<string, FieldDef>;
  aliases: Record<string, string>;
  command: string;
  /** The values numeric fields take (the server's table): a comparison none of them passes is refused before sending. */
  ranges?: Readonly<Record<string, { min: number; max: number; what: string }>>;
}

export const OFFER_QUERY: QueryFields = { fields: OFFER_FIELDS, aliases: OFFER_ALIASES, command: 'search offers', ranges: OFFER_FIELD_RANGES };

export function resolveField(name: string, q: QueryFields = OFFER_QUERY): string {
  const field = q.aliases[name] ?? name;
  if (!q.fields[field]) throw new QueryError(`unknown field ${JSON.stringify(name)} (see \`gpuplane ${q.command} --help\` for the fields)`);
  return field;
}

function convert(def: FieldDef, field: string, raw: string): string | number | boolean | null {
  const text = raw.replace(/^"(.*)"$/, '$1');
  if (text === 'null' || text === 'None') return null;
  const bad = (what: string) => new QueryError(`${field}: ${JSON.stringify(text)} is not ${what}`);
  switch (def.type) {
    case 'bool':
      if (/^true$/i.test(text)) return true;
      if (/^false$/i.test(text)) return false;
      throw bad('true or false');
    case 'int': {
      if (!/^-?\d+$/.test(text)) throw bad('an integer');
      return Number(text);
    }
    case 'float': {
      const n = Number(text);
      if (text.trim() === '' || !Number.isFinite(n)) throw bad('a number');
      // Multiplied fields round away binary noise (0.1 GB is 100 MB, not 100.00000000000001).
      return def.mult ? Math.round(n * def.mult * 1e6) / 1e6 : n;
    }
    case 'version':
      return /^\d+$/.test(text) ? Number(text) : numericVersion(text);
    case 'string':
      // Spaces are written as underscores on the command line (RTX_4090), unless the value was quoted.
      return raw.startsWith('"') ? text : text.replace(/_/g, ' ');
  }
}

interface Comparison {
  field: string;
  op: Op;
  value: string;
}

/** Splits a query into comparisons: `field op value`, separated by spaces. */
export function tokenize(query: string): Comparison[] {
  const out: Comparison[] = [];
  const s = query;
  let i = 0;
  const skip = () => {
    while (i < s.length && /\s/.test(s[i])) i++;
  };
  const fail = (what: string) => new QueryError(`${what} at position ${i + 1} of ${JSON.stringify(query)}`);
  for (skip(); i < s.length; skip()) {
    const f = /^[A-Za-z0-9_]+/.exec(s.slice(i));
    if (!f) throw fail('expected a field name');
    const field = f[0];
    i += field.length;
    skip();
    let op: Op | undefined;
    const sym = /^[=<>!]+/.exec(s.slice(i));
    if (sym) {
      op = SYMBOL_OPS[sym[0]];
      if (!op) throw fail(`unknown operator ${JSON.stringify(sym[0])}`);
      i += sym[0].length;
    } else {
      const w = /^(not\s+in|not\s+eq|notin|noteq|nin|neq|eq|lte|lt|gte|gt|in)(?=\s|\[|"|$)/i.exec(s.slice(i));
      if (!w) throw fail(`expected an operator (= == != < <= > >= in notin) after ${JSON.stringify(field)}`);
      op = WORD_OPS[w[1].toLowerCase().replace(/\s+/, ' ')];
      i += w[0].length;
    }
    skip();
    let value: string;
    if (s[i] === '[') {
      const end = s.indexOf(']', i);
      if (end === -1) throw fail('unclosed [');
      value = s.slice(i, end + 1);
      i = end + 1;
    } else if (s[i] === '"') {
      const end = s.indexOf('"', i + 1);
      if (end === -1) throw fail('unclosed "');
      value = s.slice(i, end + 1);
      i = end + 1;
    } else {
      const v = /^[^\s]+/.exec(s.slice(i));
      if (!v) throw fail(`missing value for ${JSON.stringify(field)}`);
      value = v[0];
      i += value.length;
    }
    out.push({ field, op, value });
  }
  return out;
}

/**
 * The server's rule (issue 29 item 5), before sending: a comparison no value of the field passes (`reliability>99`
 * on a 0–1 field) is refused, in the words of the query. `v` is in the API's units, as the range is.
 */
function checkRange(q: QueryFields, field: string, c: Comparison, text: string, v: FilterValue): void {
  const r = q.ranges?.[field];
  if (!r || typeof v !== 'number' || !rangeRefuses(r, c.op, v)) return;
  throw new QueryError(`${c.field} ${c.op} ${text}: cannot match: ${field} is ${r.what}`);
}

/** Items of `[a, "b c", d]` (or `a,b`), quotes kept for convert() to see. */
function listItems(value: string): string[] {
  const inner = value.startsWith('[') ? value.slice(1, -1) : value;
  const items = (inner.match(/"[^"]*"|[^,]+/g) ?? []).map((x) => x.trim()).filter((x) => x !== '');
  return items;
}

/**
 * Parses a query into the filter object, over `base` (the defaults). A later comparison on the same field and
 * operator wins; `field=any` removes the field's filter (a default included).
 */
export function parseOfferQuery(query: string, base: OfferFilter = {}, q: QueryFields = OFFER_QUERY): OfferFilter {
  const res: OfferFilter = structuredClone(base);
  for (const c of tokenize(query)) {
    const field = resolveField(c.field, q);
    const def = q.fields[field];
    if (WILDCARDS.has(c.value)) {
      if (c.op !== 'eq') throw new QueryError(`${c.field}: "${c.value}" only makes sense with =`);
      delete res[field];
      continue;
    }
    if (ORDERED_OPS.includes(c.op) && (def.type === 'bool' || def.type === 'string')) {
      throw new QueryError(`${c.field} is a ${def.type === 'bool' ? 'yes/no' : 'text'} field: use = != in notin, not ${c.op}`);
    }
    let value: FilterValue;
    if (c.op === 'in' || c.op === 'notin') {
      const items = listItems(c.value);
      if (!items.length) throw new QueryError(`${c.field} ${c.op}: the list is empty`);
      value = items.map((x) => {
        const v = convert(def, field, x);
        if (v === null) throw new QueryError(`${c.field} ${c.op}: null cannot be in a list`);
        checkRange(q, field, c, x, v);
        return v;
      });
    } else {
      if (c.value.startsWith('[')) throw new QueryError(`${c.field}: a [list] needs in or notin, not ${c.op}`);
      value = convert(def, field, c.value);
      if (value === null && c.op !== 'eq' && c.op !== 'neq') throw new QueryError(`${c.field}: null only works with = or !=`);
      checkRange(q, field, c, c.value, value);
    }
    res[field] = { ...res[field], [c.op]: value };
  }
  return res;
}

/** `-o 'dph_total,score-'` → `[["dph_total","asc"],["score","desc"]]`; a trailing `-` sorts descending. */
export function parseOrder(order: string): [string, 'asc' | 'desc'][] {
  const out: [string, 'asc' | 'desc'][] = [];
  for (const part of order.split(',').map((p) => p.trim()).filter(Boolean)) {
    const m = /^([A-Za-z0-9_]+)([+-]?)$/.exec(part);
    if (!m) throw new QueryError(`order: ${JSON.stringify(part)} is not a field name with an optional - or +`);
    const field = OFFER_ALIASES[m[1]] ?? m[1];
    if (!OFFER_FIELDS[field] && !ORDER_ONLY.has(field)) throw new QueryError(`order: unknown field ${JSON.stringify(m[1])}`);
    out.push([field, m[2] === '-' ? 'desc' : 'asc']);
  }
  return out;
}

/** The field table as help text. */
export function fieldsHelp(fields: Record<string, FieldDef> = OFFER_FIELDS): string {
  const rows = Object.entries(fields).map(([name, d]) => `  ${name.padEnd(22)}${d.type.padEnd(9)}${(d.unit ?? '').padEnd(12)}${d.desc}`);
  return [`  ${'field'.padEnd(22)}${'type'.padEnd(9)}${'unit'.padEnd(12)}meaning`, ...rows].join('\n');
}
