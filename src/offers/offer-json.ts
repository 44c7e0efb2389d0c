/**
 * The search reply as JSON text. Offers change rarely between searches, so each offer's JSON is kept as fragments
 * around the fields that depend on the search (price for the type and storage, the clock): a reply is then those
 * fragments joined with a few numbers (offerContextValues), instead of building and serializing ~70 fields per
 * offer on every request. The text is exactly `JSON.stringify({offers: rows.map((o) => offerJson(o, ctx))})`.
 */
import { offerContextValues, offerJson, type OfferContext, type OfferContextKey, type OfferEntry } from '../fleet/fleet-offers.js';

/** Offers whose fragments are kept; past this the cache starts again (bounds memory at ~100,000 offers). */
const MAX_CACHED = 20_000;

interface Fragments {
  /** Static JSON text between the context-dependent values: `parts.length === keys.length + 1`. */
  parts: string[];
  keys: OfferContextKey[];
}

/** JSON text of a context value (a number or a boolean): as JSON.stringify writes it, without its generic path. */
function valueText(v: number | boolean): string {
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  return Number.isFinite(v) ? String(v) : 'null';
}

/** The search reply writer; its fragment cache lives as long as it does (one per offers service). */
export function offerJsonWriter() {
  // Keyed by the offer object: a reload of its machine makes new objects, so a changed offer is never served stale.
  const cache = new Map<OfferEntry, Fragments>();

  function fragmentsOf(o: OfferEntry, c: OfferContext): Fragments {
    let f = cache.get(o);
    if (f) return f;
    const json = offerJson(o, c);
    const contextKeys = new Set(Object.keys(offerContextValues(o, c)));
    const parts: string[] = [];
    const keys: OfferContextKey[] = [];
    // Each part is joined from an array, which makes one flat string: built with `+=`, it would be a tree of pieces
    // that every reply walks again to copy it.
    let text = ['{'];
    for (const [key, value] of Object.entries(json)) {
      if (value === undefined) continue;
      if (text.length > 1 || parts.length > 0) text.push(',');
      text.push(JSON.stringify(key), ':');
      if (contextKeys.has(key)) {
        parts.push(text.join(''));
        keys.push(key as OfferContextKey);
        text = [];
      } else {
        text.push(JSON.stringify(value));
      }
    }
    text.push('}');
    parts.push(text.join(''));
    if (cache.size >= MAX_CACHED) cache.clear();
    cache.set(o, (f = { parts, keys }));
    return f;
  }

  /** Appends one offer's JSON text for a search to `out`, piece by piece. */
  function pushOfferJson(out: string[], o: OfferEntry, c: OfferContext): void {
    const { parts, keys } = fragmentsOf(o, c);
    const values = offerContextValues(o, c);
    out.push(parts[0]);
    for (let k = 0; k < keys.length; k++) out.push(valueText(values[keys[k]]), parts[k + 1]);
  }

  /**
   * `{"offers":[…]}` for the rows of a search: every piece joined once (building each offer's text first, then the
   * reply from those, made a tree of string pieces that cost more to flatten than to write).
   */
  function offersReplyText(rows: readonly OfferEntry[], c: OfferContext): string {
    const out = ['{"offers":['];
    rows.forEach((o, i) => {
      if (i > 0) out.push(',');
      pushOfferJson(out, o, c);
    });
    out.push(']}');
    return out.join('');
  }

  return { offersReplyText };
}

export type OfferJsonWriter = ReturnType<typeof offerJsonWriter>;
