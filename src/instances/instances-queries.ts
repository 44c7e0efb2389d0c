/**
 * Queries over the caller's instances that other routes need (docs/spec/client-compat-more.md §c): the filter values `show
 * instances` offers (`GET /api/v0/instances/filters/`), contract lookup by label and id (`POST /api/v0/contracts/fetch/`),
 * and the instance a prepay or deposit names, found (and locked) in the caller's scope.
 */
import { scopeOf, type Principal } from '../platform/auth.js';
import type { Tx } from '../platform/db/connect.js';
import { ApiError } from '../platform/errors.js';
import { contractOf } from './instances-lifecycle.js';
import { checkInstanceKey } from './instances-service.js';
import type { InstanceRow, InstancesStore } from './instances-store.js';
import type { InstanceObject } from './instances-view.js';
import type { OwnedInstance } from './instances-contract.js';
import type { Static } from 'typebox';
import type { ContractObject as ContractObjectSchema } from './instances-queries-schemas.js';

/** Most ids one `contracts/fetch` may name. */
export const FETCH_MAX_IDS = 10_000;

const owned = (r: InstanceRow): OwnedInstance => ({
  id: r.id,
  contract: contractOf(r.id),
  user_id: r.user_id,
  machine_id: r.machine_id,
  is_bid: r.is_bid === 1,
  rate_micro_per_hour: Number(r.gpu_rate_micro) + Number(r.disk_rate_micro),
});

export type ContractObject = Static<typeof ContractObjectSchema>;

export function instanceQueriesFactory({ store, all }: { store: InstancesStore; all: (p: Principal) => Promise<InstanceObject[]> }) {
  const notFound = (id: number) => new ApiError('not_found', `instance ${id} not found`);
  return {
    /** The caller's live instance, locked for the caller's transaction (404 otherwise; an instance key: its own only). */
    async lockOwned(principal: Principal, id: number, tx: Tx): Promise<OwnedInstance> {
      checkInstanceKey(principal, id);
      const inst = await store.lockInScope(id, scopeOf(principal), tx);
      if (!inst) throw notFound(id);
      return owned(inst);
    },

    async findOwned(principal: Principal, id: number): Promise<OwnedInstance> {
      checkInstanceKey(principal, id);
      const inst = await store.findInScope(id, scopeOf(principal));
      if (!inst) throw notFound(id);
      return owned(inst);
    },

    /** One `{actual_status, verification, gpu_name}` per distinct combination among the caller's live instances. */
    async filters(principal: Principal) {
      const seen = new Map<string, { actual_status: string | null; verification: string | null; gpu_name: string | null }>();
      for (const i of await all(principal)) {
        const f = { actual_status: i.actual_status, verification: (i.verification as string | null) ?? null, gpu_name: (i.gpu_name as string | null) ?? null };
        seen.set(JSON.stringify(f), f);
      }
      return { success: true as const, filters: [...seen.values()] };
    },

    /**
     * The caller's contracts (instances, destroyed ones too: invoices name them) with this label and/or among these
     * ids; neither given: all of them.
     */
    async fetchContracts(principal: Principal, q: { label?: string; contract_ids?: number[] }): Promise<{ success: true; contracts: ContractObject[] }> {
      const scope = scopeOf(principal);
      if (q.contract_ids && q.contract_ids.length === 0) return { success: true, contracts: [] };
      const rows = await store.everInScope(scope, { ids: q.contract_ids && [...new Set(q.contract_ids)], label: q.label });
      return {
        success: true,
        contracts: rows.map((r) => {
          const offer = JSON.parse(r.offer_snapshot) as Record<string, unknown>;
          return {
            id: r.id,
            label: r.label,
            machine_id: r.machine_id,
            num_gpus: r.num_gpus,
            gpu_name: typeof offer.gpu_name === 'string' ? offer.gpu_name : null,
            actual_status: r.destroyed_at === null ? r.actual_status : 'destroyed',
            start_date: Number(r.created_at),
            end_date: r.destroyed_at === null ? null : Number(r.destroyed_at),
          };
        }),
      };
    },
  };
}

export type InstanceQueries = ReturnType<typeof instanceQueriesFactory>;
