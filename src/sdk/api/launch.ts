/**
 * `PUT /api/v0/launch_instance/` (search and rent in one call), and the queries over your instances:
 * `GET /api/v0/instances/filters/`, `POST /api/v0/contracts/fetch/`.
 */
import type { Static } from 'typebox';
import type { LaunchBody, LaunchReply } from '../../launch/launch-schemas.js';
import type { FetchContractsBody, FetchContractsReply, InstanceFiltersReply } from '../../instances/instances-queries-schemas.js';
import type { Transport } from '../transport.js';
import type { OfferSearch } from './offers.js';

/** The instance creation fields of `instances.create` and `q`, the offer search that picks the offer. */
export type Launch = Static<typeof LaunchBody> & { q: OfferSearch };
export type Launched = Static<typeof LaunchReply>;
export type Contract = Static<typeof FetchContractsReply>['contracts'][number];

export function launchApi(t: Transport) {
  return {
    /** Rents the best on-demand offer `q` selects (tried best first, up to `q.limit`). */
    instance: (body: Launch) => t.request<Launched>('PUT', '/api/v0/launch_instance/', { body }),
  };
}

export function contractsApi(t: Transport) {
  return {
    /** Your contracts (instances, destroyed ones too) with this label and/or among these ids. */
    fetch: async (q: Static<typeof FetchContractsBody> = {}): Promise<Contract[]> =>
      (await t.request<Static<typeof FetchContractsReply>>('POST', '/api/v0/contracts/fetch/', { body: q })).contracts,
    /** The distinct `{actual_status, verification, gpu_name}` of your live instances. */
    instanceFilters: async () => (await t.request<Static<typeof InstanceFiltersReply>>('GET', '/api/v0/instances/filters/')).filters,
  };
}
