/**
 * The offer search form's logic (no React, so test/console-offer-filters.test.ts runs it under node:test): the form's
 * fields ⇄ the URL's query (a search is a shareable link) → the CLI's own query language → the strict filter body
 * the CLI sends (`gpuplane search offers`, src/cli/offer-query.ts: its parser, its defaults, its units). A field the
 * parser refuses gets its message next to that field.
 */
import { DEFAULT_OFFER_QUERY, parseOfferQuery, parseOrder, QueryError } from '../../../src/cli/offer-query.js';
import { countryCode, GEO_REGIONS, regionCountries } from '../../../src/offers/offer-geo.js';

export interface OfferForm {
  /** GPU model, e.g. `RTX 4090`. */
  gpu: string;
  /** At least this many GPUs. */
  count: string;
  /** At least this much RAM per GPU, GB. */
  gpuRam: string;
  /** At least this much system RAM, GB. */
  cpuRam: string;
  /** At most this total price, $/hr. */
  maxPrice: string;
  /** At least this reliability, 0 to 1. */
  minReliability: string;
  /** Country codes or region names, comma-separated (`US, CA`, `Europe`, `North_America`). */
  region: string;
  /** Only verified hosts (the CLI's default filter). */
  verified: boolean;
  type: 'on-demand' | 'bid';
  /** The CLI's `-o`: fields, comma-separated, a trailing `-` for descending. */
  order: string;
}

export const DEFAULT_FORM: OfferForm = {
  gpu: '', count: '', gpuRam: '', cpuRam: '', maxPrice: '', minReliability: '', region: '', verified: true, type: 'on-demand', order: 'score-',
};

/** GB of disk the search's price includes: the CLI's `--storage` default. */
export const SEARCH_STORAGE_GB = 5;
/** Offers shown at most (the table is not paged). */
export const SEARCH_LIMIT = 200;

/** URL parameter of each field. */
const PARAM: Record<keyof OfferForm, string> = {
  gpu: 'gpu', count: 'count', gpuRam: 'gpu_ram', cpuRam: 'ram', maxPrice: 'max_price', minReliability: 'reliability',
  region: 'region', verified: 'verified', type: 'type', order: 'order',
};

export function formFromParams(p: URLSearchParams): OfferForm {
  const f: OfferForm = { ...DEFAULT_FORM };
  for (const key of Object.keys(PARAM) as (keyof OfferForm)[]) {
    const v = p.get(PARAM[key]);
    if (v === null) continue;
    if (key === 'verified') f.verified = v !== 'any';
    else if (key === 'type') f.type = v === 'bid' ? 'bid' : 'on-demand';
    else f[key] = v;
  }
  return f;
}

/** Only what differs from the defaults, so a plain search is a plain URL. */
export function formToParams(f: OfferForm): URLSearchParams {
  const p = new URLSearchParams();
  for (const key of Object.keys(PARAM) as (keyof OfferForm)[]) {
    if (f[key] === DEFAULT_FORM[key]) continue;
    p.set(PARAM[key], key === 'verified' ? (f.verified ? 'true' : 'any') : String(f[key]));
  }
  return p;
}

const quote = (s: string) => `"${s.replace(/"/g, '')}"`;

/** Each filled field as a comparison of the CLI's query language. */
function comparisons(f: OfferForm): [keyof OfferForm, string][] {
  const out: [keyof OfferForm, string][] = [];
  const t = (s: string) => s.trim();
  if (t(f.gpu)) out.push(['gpu', `gpu_name=${quote(t(f.gpu))}`]);
  if (t(f.count)) out.push(['count', `num_gpus>=${t(f.count)}`]);
  if (t(f.gpuRam)) out.push(['gpuRam', `gpu_ram>=${t(f.gpuRam)}`]);
  if (t(f.cpuRam)) out.push(['cpuRam', `cpu_ram>=${t(f.cpuRam)}`]);
  if (t(f.maxPrice)) out.push(['maxPrice', `dph_total<=${t(f.maxPrice)}`]);
  if (t(f.minReliability)) out.push(['minReliability', `reliability>=${t(f.minReliability)}`]);
  const regions = regionItems(f.region);
  // A region's name is written with `_` for its spaces, as the CLI takes it (North_America).
  if (regions.length) out.push(['region', `geolocation in [${regions.map((r) => r.replace(/\s+/g, '_')).join(',')}]`]);
  if (!f.verified) out.push(['verified', 'verified=any']);
  return out;
}

/** The region names the Regions box takes (the vastai client's, `launch instance --region`). */
export const REGION_NAMES = Object.keys(GEO_REGIONS);

/**
 * The Regions box's items: comma-separated, each a two-letter country code (any case; several may be separated by
 * spaces, `US CA`) or a region name (`Europe`, `North America`); codes in upper case.
 */
export function regionItems(text: string): string[] {
  return text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .flatMap((item) => (regionCountries(item) ? [item] : item.split(/\s+/)))
    .map((x) => countryCode(x) ?? x);
}

/** The first item of the Regions box that is neither a country code nor a region, if any. */
function badRegion(text: string): string | undefined {
  return regionItems(text).find((x) => !countryCode(x) && !regionCountries(x));
}

/** The search as the CLI would be told it: `gpuplane search offers '<this>'` (shown under the form). */
export function queryText(f: OfferForm): string {
  return comparisons(f).map(([, c]) => c).join(' ');
}

/** The equivalent CLI command, for people who will script it. */
export function cliCommand(f: OfferForm): string {
  const q = queryText(f);
  return `gpuplane search offers${q ? ` '${q}'` : ''}${f.type === 'bid' ? ' --type bid' : ''}${f.order !== 'score-' ? ` -o '${f.order}'` : ''}`;
}

export type FormErrors = Partial<Record<keyof OfferForm, string>>;

/**
 * The filter body of `POST /api/v0/bundles/`, exactly as the CLI builds it (its defaults, parser, order and
 * `allocated_storage`), or the errors of the fields the parser refused.
 */
export function buildSearch(f: OfferForm): { search: Record<string, unknown>; errors: null } | { search: null; errors: FormErrors } {
  const errors: FormErrors = {};
  const region = badRegion(f.region);
  if (region !== undefined) {
    errors.region = `${JSON.stringify(region)} is neither a two-letter country code nor a region (${REGION_NAMES.join(', ')})`;
  }
  let body: Record<string, unknown> = DEFAULT_OFFER_QUERY();
  for (const [field, c] of comparisons(f)) {
    if (errors[field]) continue;
    try {
      body = parseOfferQuery(c, body as ReturnType<typeof DEFAULT_OFFER_QUERY>);
    } catch (err) {
      errors[field] = err instanceof QueryError ? err.message : String(err);
    }
  }
  try {
    body.order = parseOrder(f.order);
  } catch (err) {
    errors.order = err instanceof QueryError ? err.message : String(err);
  }
  if (Object.keys(errors).length) return { search: null, errors };
  body.type = f.type;
  body.limit = SEARCH_LIMIT;
  body.allocated_storage = SEARCH_STORAGE_GB;
  return { search: body, errors: null };
}

/** The form field each filter field of the server's messages comes from (`gpu_name.eq: …` is the GPU model's). */
const FORM_FIELD_OF: Record<string, keyof OfferForm> = {
  gpu_name: 'gpu', num_gpus: 'count', gpu_ram: 'gpuRam', cpu_ram: 'cpuRam', dph_total: 'maxPrice', reliability: 'minReliability',
  geolocation: 'region', order: 'order',
};

/**
 * The form field a search's refusal is about (the server names the filter first: `gpu_name.eq: "RTX4090" cannot
 * match: …`), or undefined: the form then shows the message on its own, in place of the offers (issue 29 item 5).
 */
export function formFieldOfError(msg: string): keyof OfferForm | undefined {
  const m = /^([A-Za-z0-9_]+)(?:[.[:]|$)/.exec(msg);
  return m && Object.hasOwn(FORM_FIELD_OF, m[1]) ? FORM_FIELD_OF[m[1]] : undefined;
}

/** A click on a column header: that field ascending, or descending when it was already ascending. */
export function toggleOrder(order: string, field: string): string {
  const first = order.split(',')[0]?.trim();
  return first === field ? `${field}-` : field;
}

/** How the table's header shows the current order of a column (for aria-sort). */
export function sortOf(order: string, field: string): 'ascending' | 'descending' | 'none' {
  const first = order.split(',')[0]?.trim() ?? '';
  if (first === field || first === `${field}+`) return 'ascending';
  if (first === `${field}-`) return 'descending';
  return 'none';
}
