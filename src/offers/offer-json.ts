/**
 * The search reply as JSON text. Offers change rarely between searches, so each offer's JSON is kept as fragments
 * around the fields that depend on the search (price for the type and storage, the clock): a reply is then those
 * fragments joined with a few numbers, instead of building and serializing ~70 fields per offer on every request.
 * Searches mostly share their type and storage, so each offer also keeps its fragments with the prices of the last
 * type and storage it was served for written in: a reply then computes only the clock's two fields per offer
 * (offerClockValues). The text is exactly `JSON.stringify({offers: rows.map((o) => offerJson(o, ctx))})`.
 */
import {
  offerClockValues,
  offerContextValues,
  offerJson,
  offerPriceValues,
  type OfferClockKey,
  type OfferContext,
  type OfferContextKey,
  type OfferEntry,
  type SearchType,
} from '../machines/machines-offers-contract.js';

/**
 * Offers whose fragments one generation of the cache holds; two generations are kept, so at most twice this (a few
 * MB: each offer's text twice, with its prices left out and with them written in). A search serves its best offers
 * again and again, so a small cache serves most of them; a larger one only grew the process as ever more offers were
 * served once (the PostgreSQL soak of issue 16: 20,000 offers' fragments, then a clear, made resident memory a
 * sawtooth 25% high).
 */
export const FRAGMENT_GENERATION = 4096;

interface Fragments {
  /** Static JSON text between the context-dependent values: `parts.length === keys.length + 1`. */
  parts: string[];
  keys: OfferContextKey[];
  /** The same text with the prices of one type and storage written in: only the clock's values are left out. */
  priced?: Priced;
}

interface Priced {
  type: SearchType;
  storage_gb: number;
  parts: string[];
  keys: OfferClockKey[];
}

/** JSON text of a context value (a number or a boolean): as JSON.stringify writes it, without its generic path. */
function valueText(v: number | boolean): string {
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  return Number.isFinite(v) ? String(v) : 'null';
}

/** The search reply writer; its fragment cache lives as long as it does (one per offers service). */
export function offerJsonWriter() {
  // Keyed by the offer object: a reload of its machine makes new objects, so a changed offer is never served stale.
  // Two generations: a full one becomes the old one, and what is served from the old one moves to the new; the rest
  // (offers no longer served, or replaced by a reload) goes with the old generation. Not lru-cache: a hit here is one
  // Map read on the search's hottest path (every offer of a reply), and an LRU's recency bookkeeping on each would add to it.
  let cache = new Map<OfferEntry, Fragments>();
  let previous = new Map<OfferEntry, Fragments>();

  function remember(o: OfferEntry, f: Fragments): Fragments {
    if (cache.size >= FRAGMENT_GENERATION) {
      previous = cache;
      cache = new Map();
    }
    cache.set(o, f);
    return f;
  }

  function fragmentsOf(o: OfferEntry, c: OfferContext): Fragments {
    const f = cache.get(o);
    if (f) return f;
    const old = previous.get(o);
    if (old) {
      previous.delete(o);
      return remember(o, old);
    }
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
    return remember(o, { parts, keys });
  }

  /** The offer's fragments with the prices of the search's type and storage written in. */
  function pricedOf(o: OfferEntry, c: OfferContext): Priced {
    const f = fragmentsOf(o, c);
    if (f.priced?.type === c.type && f.priced.storage_gb === c.storage_gb) return f.priced;
    const prices: Partial<Record<OfferContextKey, number | boolean>> = offerPriceValues(o, c);
    const parts: string[] = [];
    const keys: OfferClockKey[] = [];
    let text = [f.parts[0]];
    for (let k = 0; k < f.keys.length; k++) {
      const price = prices[f.keys[k]];
      if (price !== undefined) {
        text.push(valueText(price), f.parts[k + 1]);
      } else {
        parts.push(text.join(''));
        keys.push(f.keys[k] as OfferClockKey);
        text = [f.parts[k + 1]];
      }
    }
    parts.push(text.join(''));
    f.priced = { type: c.type, storage_gb: c.storage_gb, parts, keys };
    return f.priced;
  }

  /** Appends one offer's JSON text for a search to `out`, piece by piece. */
  function pushOfferJson(out: string[], o: OfferEntry, c: OfferContext): void {
    const { parts, keys } = pricedOf(o, c);
    out.push(parts[0]);
    if (keys.length === 0) return;
    const values = offerClockValues(o, c.now);
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

  return {
    offersReplyText,
    /** Offers whose fragments are kept now (tests). */
    cachedOffers: () => cache.size + previous.size,
  };
}

export type OfferJsonWriter = ReturnType<typeof offerJsonWriter>;
