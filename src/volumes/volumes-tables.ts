import type { Generated } from 'kysely';

/**
 * Volumes: disk space rented on one machine, kept across instances, billed while it exists (contract §3).
 * Booleans 0/1, times Unix seconds, money micro-dollars, as everywhere.
 */
export interface VolumesTable {
  id: Generated<number>;
  user_id: number;
  team_id: number | null;
  /** The volume offer it was made from (machine id × OFFER_ID_STRIDE). */
  offer_id: number;
  machine_id: number;
  host_id: number;
  /** Optional name (the client prints it as `label`). */
  name: string | null;
  /** Size in GB. */
  size_gb: number;
  /** The machine's storage price when created, $/GB/month in micro-dollars (the rate is kept for the volume's life). */
  price_disk_micro: number;
  /** What the volume costs per hour, micro-dollars. */
  rate_micro: number;
  created_at: number;
  deleted_at: number | null;
}

/** Which live instances mount a volume, and where. A volume may be mounted by several instances of its machine. */
export interface VolumeMountsTable {
  volume_id: number;
  instance_id: number;
  mount_path: string;
  attached_at: number;
}

/** A machine whose volume offer its host unlisted (`unlist volume`): no new volumes there; existing ones stay. */
export interface VolumeUnlistedTable {
  machine_id: number;
  unlisted_at: number;
}

/**
 * A host's ask for the machine's volume offer (`create_asks` `vol_size`/`vol_price`, migration 0051). No row: the
 * machine's free disk at its `price_disk`.
 */
export interface VolumeAsksTable {
  machine_id: number;
  /** GB offered for volumes in all; null: half the machine's free disk (the vastai client's documented default). */
  size_gb: number | null;
  /** $/GB/month in micro-dollars; null: the machine's `price_disk`. */
  price_disk_micro: number | null;
  updated_at: number;
}

export interface VolumesTables {
  volumes: VolumesTable;
  volume_mounts: VolumeMountsTable;
  volume_unlisted: VolumeUnlistedTable;
  volume_asks: VolumeAsksTable;
}
