/** Charges: `GET /api/v0/charges/` (spec: Show charges). */
import type { Static } from 'typebox';
import type { ChargeEntry, ChargesQuery, ChargesReply } from '../../billing/billing-schemas.js';
import type { Transport } from '../transport.js';

export type { ChargeEntry, ChargesReply };
type Query = Static<typeof ChargesQuery>;

export interface ChargesRequest {
  /** Unix seconds, UTC: the first and last day to include. */
  start: number;
  end: number;
  /** Only these contract types. */
  types?: ('instance' | 'volume' | 'serverless')[];
  /** `table` (flat) or `tree` (serverless grouped under endpoints and workergroups). @default 'table' */
  format?: Query['format'];
  /** @default true */
  latestFirst?: Query['latest_first'];
  /** 1 to 500. @default 20 */
  limit?: Query['limit'];
  /** `next_token` of the previous page. */
  after?: Query['after_token'];
}

export function billingApi(t: Transport) {
  return {
    charges: (r: ChargesRequest) =>
      t.request<ChargesReply>('GET', '/api/v0/charges/', {
        query: {
          // The route takes select_filters as URL-encoded JSON; the transport encodes the object.
          select_filters: { day: { gte: r.start, lte: r.end }, ...(r.types ? { type: { in: r.types } } : {}) },
          format: r.format,
          latest_first: r.latestFirst,
          limit: r.limit,
          after_token: r.after,
        } satisfies Record<keyof Omit<Query, 'next_token'>, unknown>,
      }),
  };
}
