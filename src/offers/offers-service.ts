/**
 * Offer search (`POST /api/v0/bundles/`): the filter language over the fleet's in-memory offer index.
 */
import { ApiError } from '../platform/errors.js';
import type { Clock } from '../platform/clock.js';
import { DEFAULT_ALLOCATED_STORAGE_GB, type OfferContext, type OfferEntry, type OfferSlots, type SearchType } from '../machines/machines-offers-contract.js';
import { coerce, parseFilterBody, type KnownValues, type ParsedQuery } from './filter.js';
import { checkDepth, echo } from './filter-input.js';
import { knownGpuModels } from './offer-gpu-models.js';
import { OfferColumns } from './offer-columns.js';
import { offerJsonWriter } from './offer-json.js';
import { distinctValues, searchOffers } from './offer-search.js';
import { OFFER_FIELD_ALIASES, OFFER_FIELDS } from './offer-fields.js';
import { anonymousSearchLimit } from './anonymous-search-limit.js';

/** Offers returned when a search gives no `limit`. */
export const OFFER_SEARCH_DEFAULT_LIMIT = 64;
/** A server maximum: a larger `limit` is served as this many. */
export const OFFER_SEARCH_MAX_LIMIT = 1000;
/** Largest `allocated_storage` (GB) a search may price in. */
export const MAX_ALLOCATED_STORAGE_GB = 1_000_000;

const SEARCH_TYPES: Record<string, SearchType> = {
  ondemand: 'ondemand',
  'on-demand': 'ondemand',
  bid: 'bid',
  // Older clients' name for bid (`--type=interruptible`).
  interruptible: 'bid',
  reserved: 'reserved',
};

const bad = (msg: string) => new ApiError('bad_request', msg);

/** The top-level keys the vastai client sends besides filters, order and limit. */
export const OFFER_SEARCH_OPTIONS = {
  type: (v: unknown): SearchType => {
    if (v === null || v === undefined) return 'ondemand';
    if (typeof v !== 'string' || !Object.hasOwn(SEARCH_TYPES, v)) {
      throw bad(`type: must be one of ${Object.keys(SEARCH_TYPES).join(', ')}, got ${echo(v)}`);
    }
    return SEARCH_TYPES[v];
  },
  allocated_storage: (v: unknown): number => {
    if (v === null || v === undefined) return DEFAULT_ALLOCATED_STORAGE_GB;
    const n = coerce({ type: 'number', get: () => null }, v, 'allocated_storage') as number;
    if (n < 0 || n > MAX_ALLOCATED_STORAGE_GB) throw bad(`allocated_storage: must be from 0 to ${MAX_ALLOCATED_STORAGE_GB} GB`);
    return n;
  },
  // Deprecated in the client ("--disable-bundling: Deprecated"); bundles are always offered, the flag changes nothing.
  disable_bundling: (v: unknown): boolean => {
    if (v === null || v === undefined) return false;
    return coerce({ type: 'boolean', get: () => null }, v, 'disable_bundling') as boolean;
  },
};

export interface OffersDeps {
  /** The machines feature's in-memory offer index (machines-index.ts): its slots as of now. */
  index: { current(): Promise<OfferSlots> };
  clock: Clock;
  /**
   * Searches a minute one address may make without a key (GPUPLANE_ANONYMOUS_SEARCHES_PER_MINUTE), or null when offer
   * search needs a key (GPUPLANE_OFFER_SEARCH_REQUIRES_KEY).
   */
  anonymousSearchesPerMinute: number | null;
}

/**
 * Who searches: a caller with a key (undefined; not counted), or one without any, by client address. The reply is the
 * same for both: an offer's fields and prices depend on the search alone, never on an account.
 */
export type SearchCaller = { anonymousAddress: string } | undefined;

/** Ends every search's order, so that equal keys come back in one order (offer id ascending). */
export const OFFER_SEARCH_TIEBREAK = { field: 'id', desc: false } as const;

/**
 * A search body as a query and the context its derived fields are computed in, at time `now`. `known`: fields whose
 * values must exist (gpu_name: the GPU models, from the fleet the search runs over).
 */
export function parseOfferSearch(body: unknown, now: number, known?: Record<string, KnownValues>): { q: ParsedQuery; ctx: OfferContext; limit: number } {
  const q = parseFilterBody(body, OFFER_FIELDS, { options: OFFER_SEARCH_OPTIONS, aliases: OFFER_FIELD_ALIASES, maxLimit: OFFER_SEARCH_MAX_LIMIT, known });
  const ctx: OfferContext = {
    type: (q.options.type as SearchType | undefined) ?? 'ondemand',
    storage_gb: (q.options.allocated_storage as number | undefined) ?? DEFAULT_ALLOCATED_STORAGE_GB,
    now,
  };
  // An offer without room for the storage asked for cannot host the instance.
  q.clauses.push({ field: 'disk_space', op: 'gte', value: ctx.storage_gb });
  // The vastai client's default order.
  if (q.order.length === 0) q.order = [{ field: 'score', desc: true }];
  return { q, ctx, limit: q.limit ?? OFFER_SEARCH_DEFAULT_LIMIT };
}

/** A typical client search (the vastai client's defaults and the usual filters), run by `warm`. */
const WARM_SEARCH = {
  gpu_ram: { gte: 0 },
  reliability2: { gte: 0 },
  verified: { eq: true },
  rentable: { eq: true },
  dph_total: { lte: 1e9 },
  num_gpus: { gte: 1 },
  order: [['dlperf_per_dphtotal', 'desc']],
  type: 'on-demand',
};

export function offersServiceFactory({ index, clock, anonymousSearchesPerMinute }: OffersDeps) {
  const columns = new OfferColumns();
  const writer = offerJsonWriter();
  // The fleet's models as the columns last synced them: a search checks its gpu_name values against the offers it
  // searches (issue 29 item 5).
  const gpuModels = knownGpuModels(
    () => distinctValues(columns, 'gpu_name'),
    () => new Set(columns.slots.flatMap((o) => (o ? [o.machine.gpu_name] : []))),
  );
  const anonymousLimit = anonymousSearchesPerMinute === null ? null : anonymousSearchLimit(clock, anonymousSearchesPerMinute);

  /** Counts a search without a key against its address (429 past the limit); one with a key passes. */
  function admit(caller: SearchCaller): void {
    if (caller === undefined) return;
    // The routes are registered key-required when this is null, so an anonymous caller never gets here then.
    if (anonymousLimit === null) throw new ApiError('auth_error', 'an API key is required: send "Authorization: Bearer <api key>"');
    anonymousLimit.take(caller.anonymousAddress);
  }

  /** The offers a search body selects, in order (validated; 400 naming the mistake). */
  async function select(body: unknown): Promise<{ rows: OfferEntry[]; ctx: OfferContext }> {
    const now = clock.now();
    // Before any work on the body or the index: a body nested too deep is refused at once (issue 29 item 21).
    checkDepth(body, 'body');
    columns.sync(await index.current());
    const { q, ctx, limit } = parseOfferSearch(body, now, { gpu_name: gpuModels });
    const rows = searchOffers(columns, q, ctx, limit, OFFER_SEARCH_TIEBREAK);
    return { rows, ctx };
  }

  async function searchText(body: unknown, caller?: SearchCaller): Promise<string> {
    admit(caller);
    const { rows, ctx } = await select(body);
    return writer.offersReplyText(rows, ctx);
  }

  function parseQ(q: string | undefined): unknown {
    if (q === undefined) return {};
    try {
      return JSON.parse(q);
    } catch {
      throw bad('q: must be a JSON object of filters');
    }
  }

  return {
    /** Offer search is served to callers without a key (the routes declare `keyOptional`). */
    anonymousSearch: anonymousLimit !== null,

    /**
     * Loads the offer index and builds the columns of the client's default search (its order, the storage clause)
     * and of the usual filters: main.ts runs it before the server listens, so no request pays for loading ~100,000
     * offers (issue 16: the first search took 1.4–3.1 s).
     */
    async warm(): Promise<void> {
      // Whole searches, reply text included: the serializer's code and the served offers' JSON fragments are ready too.
      await searchText({});
      await searchText(WARM_SEARCH);
    },

    /**
     * Validates and runs a search body; the `{offers}` reply already serialized (the route sends it as is: no
     * schema-driven serializer over ~90 KB).
     */
    searchText,

    /** The ids of the offers a search body selects, best first, and the search type it asked for (launch_instance). */
    async selectIds(body: unknown): Promise<{ ids: number[]; type: SearchType }> {
      const { rows, ctx } = await select(body);
      return { ids: rows.map((r) => r.id), type: ctx.type };
    },

    /**
     * `PUT /api/v0/search/asks/` (`search offers --new`): `{select_cols, q}` where `q` is exactly the bundles filter
     * object; the same search, the same `{offers}` reply. Only `["*"]` columns exist.
     */
    async searchAsksText(body: { select_cols?: unknown; q?: unknown }, caller?: SearchCaller): Promise<string> {
      admit(caller);
      const cols = body.select_cols;
      if (cols !== undefined && cols !== null && !(Array.isArray(cols) && cols.length === 1 && cols[0] === '*')) {
        throw bad('select_cols: only ["*"] (every offer field) is served');
      }
      return searchText(body.q ?? {});
    },

    /** The same search with the filter object as a JSON string (older clients' `GET /bundles?q=`). */
    async searchJsonText(q: string | undefined, caller?: SearchCaller): Promise<string> {
      admit(caller);
      return searchText(parseQ(q));
    },
  };
}

export type OffersService = ReturnType<typeof offersServiceFactory>;
