/**
 * `launch instance` (docs/spec/client-compat-more.md §c): search and rent in one call. The offer is chosen by the same strict
 * search as `POST /api/v0/bundles/` (offers-service.ts: a bad filter is a 400 naming it), and rented through the same
 * path as `PUT /api/v0/asks/{id}/` (instances-create.ts). The search's offers are tried best first, up to its
 * `limit` (the client sends 3): one taken by someone else between the search and the rent is passed over; any other
 * refusal (402, 400 …) is the answer.
 */
import type { Static } from 'typebox';
import type { Principal } from '../platform/auth.js';
import { ApiError, badRequest } from '../platform/errors.js';
import type { OffersService } from '../offers/offers-service.js';
import type { CreateBody, CreateReply } from '../instances/instances-schemas.js';
import type { LaunchBody, LaunchReply } from './launch-schemas.js';

export interface LaunchDeps {
  offers: Pick<OffersService, 'selectIds'>;
  create(principal: Principal, offerId: number, body: Static<typeof CreateBody>): Promise<Static<typeof CreateReply>>;
}

export function launchServiceFactory({ offers, create }: LaunchDeps) {
  return {
    async launch(principal: Principal, body: Static<typeof LaunchBody>): Promise<Static<typeof LaunchReply>> {
      const { q, ...fields } = body as Static<typeof LaunchBody> & Record<string, unknown>;
      if (typeof q !== 'object' || q === null || Array.isArray(q)) throw badRequest('body.q must be the offer search\'s filter object');
      if ('price' in fields && fields.price !== null) throw badRequest('body.price: launch_instance rents on-demand only; to bid, rent an offer with a price');
      const { ids, type } = await offers.selectIds(q);
      if (type !== 'ondemand') throw badRequest('q.type: launch_instance rents on-demand offers ("on-demand")');
      if (ids.length === 0) throw new ApiError('offer_unavailable', 'no offer matches q: widen the search');
      let lastRefusal = '';
      for (const offerId of ids) {
        try {
          const reply = await create(principal, offerId, { ...fields, price: null });
          return { ...reply, offer_id: offerId };
        } catch (err) {
          if (!(err instanceof ApiError) || err.code !== 'offer_unavailable') throw err;
          lastRefusal = err.message;
        }
      }
      throw new ApiError('offer_unavailable', `none of the ${ids.length} offer(s) q matched could be rented (the last: ${lastRefusal})`);
    },
  };
}

export type LaunchService = ReturnType<typeof launchServiceFactory>;
