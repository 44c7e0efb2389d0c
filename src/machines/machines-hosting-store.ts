/**
 * What the hosting feature (src/hosting/) may read and change of the fleet: a host's machines, their listing, minimum
 * bid, maintenance windows, and deletion. Every write bumps the machine's version in the caller's transaction, so
 * every process's offer index sees it on its next search.
 */
import { sql } from 'kysely';
import type { Tx } from '../platform/db/connect.js';
import type { MachinesStore, MachineRow } from './machines-store.js';
import { toRecord } from './machines-store.js';
import type { HostedMachine, MaintWindow } from './machines-offers-contract.js';

/** What `create_asks` changes; undefined fields stay as they are. Prices in micro-dollars. */
export interface ListingPatch {
  price_gpu_micro?: number;
  price_disk_micro?: number;
  price_inetu_micro?: number;
  price_inetd_micro?: number;
  min_bid_micro?: number;
  min_chunk?: number;
  credit_discount_max?: number;
  end_date: number;
  listing_duration: number | null;
}

export function machinesHostingFactory(db: Tx, fleet: MachinesStore) {
  const rows = (tx: Tx) =>
    tx
      .selectFrom('fleet_machines as m')
      .innerJoin('fleet_hosts as h', 'h.id', 'm.host_id')
      .selectAll('m')
      .select(['h.verification', 'h.user_id as owner_user_id'])
      .where('m.deleted', '=', 0);

  async function hosted(list: (MachineRow & { owner_user_id: number | null })[], tx: Tx): Promise<HostedMachine[]> {
    const gpus = await fleet.gpusOf(list.map((r) => r.id), tx);
    return list.map((r) => ({ record: toRecord(r), userId: r.owner_user_id, gpus: gpus.get(r.id) ?? [] }));
  }

  async function update(tx: Tx, machineId: number, set: Record<string, unknown>): Promise<boolean> {
    const r = await tx.updateTable('fleet_machines').set(set).where('id', '=', machineId).where('deleted', '=', 0).executeTakeFirst();
    if (Number(r.numUpdatedRows) === 0) return false;
    await fleet.bump(tx, [machineId]);
    return true;
  }

  return {
    /** The machines of a user (a host is a user), or of every host with `'all'`, by id; deleted ones left out. */
    async machinesOf(owner: number | 'all', tx: Tx = db): Promise<HostedMachine[]> {
      let q = rows(tx).orderBy('m.id');
      if (owner !== 'all') q = q.where('h.user_id', '=', owner);
      return hosted((await q.execute()) as (MachineRow & { owner_user_id: number | null })[], tx);
    },

    /** Ids of every machine a user hosts or hosted, deleted ones included (earnings). */
    async machineIdsOf(userId: number, tx: Tx = db): Promise<number[]> {
      const r = await tx
        .selectFrom('fleet_machines as m')
        .innerJoin('fleet_hosts as h', 'h.id', 'm.host_id')
        .select('m.id')
        .where('h.user_id', '=', userId)
        .orderBy('m.id')
        .execute();
      return r.map((x) => x.id);
    },

    /** One machine with its host's user, or undefined (no such machine, or deleted). */
    async machine(machineId: number, tx: Tx = db): Promise<HostedMachine | undefined> {
      const r = await rows(tx).where('m.id', '=', machineId).executeTakeFirst();
      return r ? (await hosted([r as MachineRow & { owner_user_id: number | null }], tx))[0] : undefined;
    },

    /** Lists the machine with the patch applied. False when it does not exist (or was deleted). */
    list: (tx: Tx, machineId: number, patch: ListingPatch) => update(tx, machineId, { ...patch, listed: 1 }),

    /**
     * A `duration` listing rolls on: its end date becomes `now` + its duration. False (nothing changed) when the
     * machine is no longer listed that way (unlisted, listed with a fixed end date, or deleted).
     */
    async roll(tx: Tx, machineId: number, now: number): Promise<boolean> {
      const r = await tx
        .updateTable('fleet_machines')
        .set({ end_date: sql<number>`listing_duration + ${now}` })
        .where('id', '=', machineId)
        .where('deleted', '=', 0)
        .where('listed', '=', 1)
        .where('listing_duration', 'is not', null)
        .executeTakeFirst();
      if (Number(r.numUpdatedRows) === 0) return false;
      await fleet.bump(tx, [machineId]);
      return true;
    },

    /** Stops new rentals; running ones keep their GPUs. */
    unlist: (tx: Tx, machineId: number) => update(tx, machineId, { listed: 0 }),

    setMinBid: (tx: Tx, machineId: number, minBidMicro: number) => update(tx, machineId, { min_bid_micro: minBidMicro }),

    /** Replaces the machine's maintenance windows (an empty list clears them). */
    setMaintenance: (tx: Tx, machineId: number, windows: readonly MaintWindow[]) =>
      update(tx, machineId, { maint: windows.length ? JSON.stringify(windows.map((w) => [w.start, w.end, w.hours, w.category])) : null }),

    /**
     * MachinesApi.lockMachine: the machine's row locked until `tx` ends (PostgreSQL; SQLite runs one writer at a time),
     * as a rent locks it with its quote. force_delete checks for instances under it.
     */
    lockMachine: (tx: Tx, machineId: number) => fleet.lockMachine(tx, machineId),

    /** force_delete: the machine leaves every list and offers nothing; the row stays for the instances that name it. */
    markDeleted: (tx: Tx, machineId: number) => update(tx, machineId, { deleted: 1, listed: 0 }),
  };
}

export type MachinesHosting = ReturnType<typeof machinesHostingFactory>;
