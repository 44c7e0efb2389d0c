/**
 * Offer search inside the autoscaler's transaction. The offers service searches an in-memory index that refreshes
 * through its own connection, which a job's transaction cannot wait for on SQLite (one connection); the same pure
 * offer functions and filter language run here over the fleet's rows read with `tx`, so workers are chosen exactly
 * as `POST /api/v0/bundles/` would rank them.
 */
import type { Clock } from '../platform/clock.js';
import type { Tx } from '../platform/db/connect.js';
import { DEFAULT_ALLOCATED_STORAGE_GB, offersOf, type GpuHold, type MachineRecord, type OfferContext } from '../machines/machines-offers-contract.js';
import { OFFER_FIELD_ALIASES, OFFER_FIELDS, parseFilterBody, selectRows } from '../offers/offers-contract.js';
import { OFFER_SEARCH_MAX_LIMIT, OFFER_SEARCH_OPTIONS } from '../offers/offers-service.js';
import type { OffersInTx } from './serverless-scaler.js';

export interface MachinesReadPort {
  machines(tx: Tx): Promise<MachineRecord[]>;
  gpus(machineIds: number[], tx: Tx): Promise<Map<number, GpuHold[]>>;
}

export function offersInTx(fleet: MachinesReadPort, clock: Clock): OffersInTx {
  return async (tx, filter, limit) => {
    // Workers rent on demand and never displace someone's bid: free GPUs of rentable machines only.
    const q = parseFilterBody({ rentable: { eq: true }, rented: { eq: false }, ...filter }, OFFER_FIELDS, {
      options: OFFER_SEARCH_OPTIONS, aliases: OFFER_FIELD_ALIASES, maxLimit: OFFER_SEARCH_MAX_LIMIT,
    });
    const ctx: OfferContext = { type: 'ondemand', storage_gb: DEFAULT_ALLOCATED_STORAGE_GB, now: clock.now() };
    q.clauses.push({ field: 'disk_space', op: 'gte', value: ctx.storage_gb });
    if (q.order.length === 0) q.order = [{ field: 'score', desc: true }];
    const machines = await fleet.machines(tx);
    const gpus = await fleet.gpus(machines.map((m) => m.id), tx);
    const rows = machines.flatMap((m) => offersOf(m, gpus.get(m.id) ?? []));
    return selectRows(rows, ctx, q, OFFER_FIELDS, limit, { field: 'id', desc: false }).map((o) => ({ id: o.id }));
  };
}
