/**
 * What the agent needs of a runtime for its volumes (volumes.ts says what they are; docker-volumes.ts is Docker's).
 * Apart from runtime.ts, which names it, so the two import nothing of each other.
 */

/** Whose volumes: the agent's owner id and machine (runtime.ts ContainerOwner). */
type Owner = { machineId: number; owner: string };

/** A Docker volume of the owner's, as listed. */
export interface RuntimeVolume {
  name: string;
  /** From its label; null when missing or malformed (such a volume is left alone: the agent cannot say whose it is). */
  volumeId: number | null;
  /** Whether it was made with a `size` quota. */
  quota: boolean;
}

/** What the agent needs of the runtime for volumes (docker-volumes.ts). */
export interface VolumeRuntime {
  /** Every volume labelled as the owner's (both labels, exactly). */
  list(owner: Owner): Promise<RuntimeVolume[]>;
  /**
   * Makes the volume with a quota of `sizeGb`; where the driver has no quota, without one when `unlimited` is allowed,
   * else it throws saying why. Returns whether it has a quota. A volume of that name already there is kept.
   */
  create(name: string, labels: Record<string, string>, sizeGb: number): Promise<{ quota: boolean }>;
  /** Removes it with its data; false (and nothing removed) while a container uses it. Gone already: true. */
  remove(name: string): Promise<boolean>;
  /** Bytes each of these volumes holds (Docker's disk usage), by name; absent where unknown. */
  usage(names: string[]): Promise<Map<string, number>>;
  /** Bytes free on the filesystem of the runtime's data root (where the volumes live), or null when unknown. */
  freeBytes(): Promise<number | null>;
}
