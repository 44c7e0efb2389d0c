/**
 * The offer query language of the vastai client, client side: `gpu_name=RTX_4090 num_gpus>=2 reliability>0.99
 * geolocation in [US,CA]` becomes the filter body of `POST /api/v0/bundles/`, with the vastai client's field aliases
 * and unit conversions (RAM given in GB is sent in MB, duration given in days is sent in seconds, driver versions are
 * encoded as integers). Unlike that client, an unknown field, a malformed comparison or a value of the wrong type is
 * an error here, before anything is sent.
 */
import { driverCode } from '../machines/machines-offers-contract.js';
import { rangeRefuses } from '../offers/filter.js';
import { OFFER_FIELD_ALIASES, OFFER_FIELD_RANGES, QUERY_UNIT_MULT as M } from '../offers/offer-fields.js';

export type FieldType = 'int' | 'float' | 'bool' | 'string' | 'version';

export interface FieldDef {
  type: FieldType;
  /** Unit the user writes the value in. */
  unit?: string;
  /** Factor from the user's unit to the API's (gpu_ram: GB → MB). */
  mult?: number;
  desc: string;
}


/** Offer fields a query may filter on (vastai `offers_fields`, plus those client-compat.md names). */
export const OFFER_FIELDS: Record<string, FieldDef> = {
  bw_nvlink: { type: 'float', unit: 'GB/s', desc: 'NVLink bandwidth' },
  cluster_id: { type: 'int', desc: 'cluster the machine belongs to' },
  compute_cap: { type: 'int', desc: 'CUDA compute capability × 100 (650 for 6.5)' },
  cpu_arch: { type: 'string', desc: 'host CPU architecture (amd64, arm64)' },
  cpu_cores: { type: 'int', desc: 'virtual CPUs of the host' },
  cpu_cores_effective: { type: 'float', desc: 'virtual CPUs you get' },
  cpu_ghz: { type: 'float', unit: 'GHz', desc: 'CPU clock speed' },
  cpu_ram: { type: 'float', unit: 'GB', mult: M.cpu_ram, desc: 'system RAM (sent in MB)' },
  cuda_max_good: { type: 'float', desc: 'highest CUDA version the driver supports (alias cuda_vers)' },
  datacenter: { type: 'bool', desc: 'only datacenter offers' },
  direct_port_count: { type: 'int', desc: 'open ports on the host' },
  disk_bw: { type: 'float', unit: 'MB/s', desc: 'disk read bandwidth' },
  disk_space: { type: 'float', unit: 'GB', desc: 'disk space' },
  dlperf: { type: 'float', desc: 'DL-perf score' },
  dlperf_per_dphtotal: { type: 'float', desc: 'DL-perf per $/hr (alias dlperf_usd)' },
  dph_total: { type: 'float', unit: '$/hr', desc: 'total price (alias dph)' },
  driver_version: { type: 'version', desc: 'driver version, e.g. 535.86.05 (sent as 535086005)' },
  duration: { type: 'float', unit: 'days', mult: M.duration, desc: 'longest rental (sent in seconds)' },
  external: { type: 'bool', desc: 'include external offers' },
  flops_per_dphtotal: { type: 'float', desc: 'TFLOPS per $/hr (alias flops_usd)' },
  geolocation: { type: 'string', desc: 'two-letter country code (US), or a region: North_America, South_America, Europe, Asia, Oceania, Africa' },
  gpu_arch: { type: 'string', desc: 'GPU architecture (nvidia, amd)' },
  gpu_display_active: { type: 'bool', desc: 'a display is attached (alias display_active)' },
  gpu_frac: { type: 'float', desc: 'share of the machine’s GPUs in the offer' },
  gpu_max_power: { type: 'float', unit: 'W', desc: 'GPU power limit' },
  gpu_max_temp: { type: 'float', unit: '°C', desc: 'GPU temperature limit' },
  gpu_mem_bw: { type: 'float', unit: 'GB/s', desc: 'GPU memory bandwidth' },
  gpu_name: { type: 'string', desc: 'GPU model; write spaces as _ (RTX_4090)' },
  gpu_ram: { type: 'float', unit: 'GB', mult: M.gpu_ram, desc: 'RAM per GPU (sent in MB)' },
  gpu_total_ram: { type: 'float', unit: 'GB', mult: M.gpu_total_ram, desc: 'total GPU RAM (sent in MB)' },
  has_avx: { type: 'bool', desc: 'CPU supports AVX' },
  host_id: { type: 'int', desc: 'host id' },
  id: { type: 'int', desc: 'offer id' },
  inet_down: { type: 'float', unit: 'Mb/s', desc: 'download speed' },
  inet_down_cost: { type: 'float', unit: '$/GB', desc: 'download price' },
  inet_up: { type: 'float', unit: 'Mb/s', desc: 'upload speed' },
  inet_up_cost: { type: 'float', unit: '$/GB', desc: 'upload price' },
  machine_id: { type: 'int', desc: 'machine id' },
  min_bid: { type: 'float', unit: '$/hr', desc: 'lowest bid for interruptible' },
  mobo_name: { type: 'string', desc: 'motherboard' },
  num_gpus: { type: 'int', desc: 'number of GPUs' },
  pci_gen: { type: 'float', desc: 'PCIe generation' },
  pcie_bw: { type: 'float', unit: 'GB/s', desc: 'PCIe bandwidth, CPU to GPU' },
  reliability: { type: 'float', desc: 'machine reliability, 0 to 1' },
  rentable: { type: 'bool', desc: 'can be rented now' },
  rented: { type: 'bool', desc: 'already rented (any: include conflicts)' },
  score: { type: 'float', desc: 'ranking score' },
  static_ip: { type: 'bool', desc: 'static IP address' },
  storage_cost: { type: 'float', unit: '$/GB/month', desc: 'storage price' },
  total_flops: { type: 'float', unit: 'TFLOPS', desc: 'TFLOPS of all GPUs' },
  ubuntu_version: { type: 'string', desc: 'host Ubuntu version' },
  verification: { type: 'string', desc: 'verification state (verified, unverified …)' },
  verified: { type: 'bool', desc: 'host is verified' },
  vms_enabled: { type: 'bool', desc: 'VMs can run on the machine' },
};

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
