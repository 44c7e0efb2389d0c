/** Offer search: `POST /api/v0/bundles/`. */
import type { Static } from 'typebox';
import type { OfferObject, OffersReply } from '../../offers/offers-schemas.js';
import type { Transport } from '../transport.js';

/** An offer as search shows it. */
export type Offer = Static<typeof OfferObject>;
export type FilterOp = 'eq' | 'neq' | 'lt' | 'lte' | 'gt' | 'gte' | 'in' | 'notin';

/** The filter body: `{<field>: {<op>: value}}` plus `order`, `type`, `limit`, `allocated_storage` (GB). */
export interface OfferSearch {
  [field: string]: unknown;
  order?: [string, 'asc' | 'desc'][];
  type?: 'on-demand' | 'ondemand' | 'bid' | 'reserved';
  limit?: number;
  allocated_storage?: number;
}

export function offersApi(t: Transport) {
  return {
    search: (query: OfferSearch) => t.request<Static<typeof OffersReply>>('POST', '/api/v0/bundles/', { body: query }),
    /** The same search, new style: `PUT /api/v0/search/asks/` with `{select_cols: ["*"], q}`. */
    searchNew: (query: OfferSearch) => t.request<Static<typeof OffersReply>>('PUT', '/api/v0/search/asks/', { body: { select_cols: ['*'], q: query } }),
  };
}
