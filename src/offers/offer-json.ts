/**
 * The search reply as JSON text. Offers change rarely between searches, so each offer's JSON is kept as fragments
 * around the fields that depend on the search (price for the type and storage, the clock): a reply is then those
 * fragments joined with a few numbers, instead of serializing ~70 fields per offer on every request. The text is
 * exactly `JSON.stringify({offers: rows.map((o) => offerJson(o, ctx))})`.
 */
import { offerJson, type OfferContext, type OfferEntry } from '../fleet/fleet-offers.js';

/** The keys of offerJson whose values depend on the search context (type, storage_gb, now). */
const CONTEXT_KEYS = new Set([
  'dlperf_per_dphtotal',
  'flops_per_dphtotal',
  'score',
  'rentable',
  'is_bid',
  'dph_base',
  'dph_total',
  'discounted_dph_total',
  'storage_total_cost',
  'allocated_storage',
  'duration',
]);

/** Offers whose fragments are kept; past this the cache starts again (bounds memory at ~100,000 offers). */
const MAX_CACHED = 20_000;

interface Fragments {
  /** Static JSON text between the context-dependent values: `parts.length === keys.length + 1`. */
  parts: string[];
  keys: string[];
}

// Keyed by the offer object: a reload of its machine makes new objects, so a changed offer is never served stale.
const cache = new Map<OfferEntry, Fragments>();

function fragmentsOf(o: OfferEntry, json: Record<string, unknown>): Fragments {
  let f = cache.get(o);
  if (f) return f;
  const parts: string[] = [];
  const keys: string[] = [];
  let text = '{';
  let first = true;
  for (const [key, value] of Object.entries(json)) {
    if (value === undefined) continue;
    text += `${first ? '' : ','}${JSON.stringify(key)}:`;
    first = false;
    if (CONTEXT_KEYS.has(key)) {
      parts.push(text);
      keys.push(key);
      text = '';
    } else {
      text += JSON.stringify(value);
    }
  }
  parts.push(`${text}}`);
  if (cache.size >= MAX_CACHED) cache.clear();
  cache.set(o, (f = { parts, keys }));
  return f;
}

/** One offer's JSON text for a search. */
export function offerJsonText(o: OfferEntry, c: OfferContext): string {
  const json = offerJson(o, c);
  const { parts, keys } = fragmentsOf(o, json);
  let text = parts[0];
  for (let k = 0; k < keys.length; k++) text += JSON.stringify(json[keys[k]]) + parts[k + 1];
  return text;
}

/** `{"offers":[…]}` for the rows of a search. */
export function offersReplyText(rows: readonly OfferEntry[], c: OfferContext): string {
  return `{"offers":[${rows.map((o) => offerJsonText(o, c)).join(',')}]}`;
}
