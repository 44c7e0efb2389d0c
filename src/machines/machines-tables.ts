import type { Generated } from 'kysely';

/**
 * The supply side: hosts own machines, machines own GPUs. Prices are integer micro-dollars; booleans 0/1;
 * times Unix seconds. A machine's hardware description (CPU, disk, network …) that no query filters on in SQL
 * lives in `spec` (JSON text): search filters run over the in-memory offer index, not over SQL.
 */
export interface FleetHostsTable {
  id: Generated<number>;
  /** `verified` or `unverified` (offer field `verification`; `verified` is derived from it). */
  verification: string;
  /** The user who hosts here (a host is a user); null for the simulated fleet's hosts. */
  user_id: number | null;
  created_at: number;
}

export interface FleetMachinesTable {
  id: Generated<number>;
  host_id: number;
  gpu_name: string;
  num_gpus: number;
  /** Per GPU per hour. */
  price_gpu_micro: number;
  /** Per GB per month. */
  price_disk_micro: number;
  /** Per GB transferred. */
  price_inetu_micro: number;
  price_inetd_micro: number;
  /** Lowest bid per GPU per hour. */
  min_bid_micro: number;
  public_ipaddr: string;
  direct_port_start: number;
  direct_port_count: number;
  vms_enabled: number;
  /** Injected fault (`offline`, `unknown`, `exited`, `stall`) or null. */
  fault: string | null;
  /**
   * A silent host's last heartbeat: when it went silent (machines-silent-store.ts). Not kept for a healthy host, whose last
   * beat is now; on its row this is stale.
   */
  heartbeat_at: number | null;
  /** Offers listed until this time (offer field `duration` counts down to it). */
  end_date: number;
  /** JSON: the rest of the hardware description (see MachineSpec in fleet-catalogue.ts). */
  spec: string;
  /** 1 while the host lists the machine for rent (0013: the simulated fleet is listed). */
  listed: Generated<number>;
  /** 1 after force_delete (the row stays for the instances that refer to it). */
  deleted: Generated<number>;
  /** Smallest bundle offered, in GPUs. */
  min_chunk: Generated<number>;
  /** Largest prepay discount the host allows (fraction). */
  credit_discount_max: Generated<number>;
  /** Seconds a `duration` listing keeps its end date ahead of now; null for a fixed end date. */
  listing_duration: Generated<number | null>;
  /** JSON list of maintenance windows `[start, end, duration_hours, category]`, or null. */
  maint: Generated<string | null>;
  /** The fleet version at which this machine or its GPUs last changed; offer caches reload rows above theirs. */
  version: number;
  created_at: number;
}

/** One row per GPU. A GPU is held by at most one instance (the row is the single truth of the allocation). */
export interface FleetGpusTable {
  machine_id: number;
  gpu_index: number;
  instance_id: number | null;
  /** `ondemand` or `bid` while held. */
  hold_kind: string | null;
  /** Bid per GPU per hour, micro-dollars (bid holds only). */
  bid_micro: number | null;
}

/**
 * One row (id 1): the fleet version, bumped in the same transaction as every allocation, release and machine
 * change, so each process can tell with one indexed read whether its offer cache is current. `epoch` changes when
 * the fleet is seeded again (after `/_emu/reset` every row is new, so versions alone could repeat).
 */
export interface FleetStateTable {
  id: number;
  version: number;
  epoch: string;
}

export interface MachinesTables {
  fleet_hosts: FleetHostsTable;
  fleet_machines: FleetMachinesTable;
  fleet_gpus: FleetGpusTable;
  fleet_state: FleetStateTable;
}
