/**
 * Volumes on a real host (issue 33 item 2): each live volume of the machine (the desired state's `volumes`) is a Docker
 * volume of the daemon's `local` driver, labelled as the agent's own (owner and machine, as its containers and
 * networks), made before the first container that mounts it and kept until the server stops listing it, whatever
 * happens to the instances that mounted it. A volume the server no longer lists is removed with its data, but never
 * while any container (the agent's or not) uses it, and never one without the agent's labels.
 *
 * Its size: the `local` driver takes a `size` quota only where Docker's volume directory is on xfs mounted with
 * pquota; elsewhere the daemon refuses one ("quota size requested but no quota support"). Then, as for a container's
 * disk (`--allow-unlimited-disk`), the volume is made without a quota only where the operator allowed that, and the
 * agent measures what it holds (Docker's own disk-usage figures, every VOLUME_USAGE_INTERVAL_S): a volume over its size
 * is reported, and its instances' renters see it in `status_msg`. Either way a volume is made only when the data root
 * has its size free.
 */
import type { DesiredInstanceT, DesiredVolumeT } from '../protocol/agent-protocol-schemas.js';
import { ownerLabels, type ContainerOwner } from './runtime.js';
import type { RuntimeVolume, VolumeRuntime } from './volume-runtime.js';

export type { RuntimeVolume, VolumeRuntime };

/** The label that names the volume's id on its Docker volume. */
export const LABEL_VOLUME = 'gpuplane.volume_id';
/** How often the agent measures its unquota'd volumes (Docker's disk-usage call walks each volume's files). */
export const VOLUME_USAGE_INTERVAL_S = 60;
const GB = 1e9;

/** `gpuplane-vol-<machine>-<volume>-<owner>`: unique on a daemon shared by several agents, as the containers' names. */
export function volumeName(o: ContainerOwner, volumeId: number): string {
  return `gpuplane-vol-${o.machineId}-${volumeId}-${o.owner}`;
}

export interface VolumeKeeperDeps {
  runtime: VolumeRuntime;
  owner: ContainerOwner;
  log: { info(o: object, msg: string): void; warn(o: object, msg: string): void };
  /** Unix seconds. */
  now(): number;
}

/** The over-size note of a volume (shown to the renters of the instances that mount it). */
export function overSizeNote(volumeId: number, usedBytes: number, sizeGb: number): string {
  return `volume ${volumeId} holds ${(usedBytes / GB).toFixed(1)} GB, over its ${sizeGb} GB: this host cannot enforce the size, so delete files or the writes may fill the host's disk`;
}

export function volumeKeeper({ runtime, owner, log, now }: VolumeKeeperDeps) {
  /** The server's list; null until a desired state that has one (an older server: the agent's volumes are left alone). */
  let desired: Map<number, DesiredVolumeT> | null = null;
  /** Volumes made or seen, by id, with whether they have a quota. */
  const known = new Map<number, { quota: boolean }>();
  const over = new Map<number, string>();
  let lastUsageAt = -Infinity;

  const labels = (volumeId: number): Record<string, string> => ({ ...ownerLabels(owner), [LABEL_VOLUME]: String(volumeId) });

  /** Makes the volume when missing; throws (the instance's create fails, saying why) when the host cannot hold it. */
  async function ensureOne(volumeId: number): Promise<void> {
    const v = desired?.get(volumeId);
    if (!v) throw new Error(`volume ${volumeId} is not one of this machine's volumes`);
    if (known.has(volumeId)) return;
    const name = volumeName(owner, volumeId);
    const existing = (await runtime.list(owner)).find((r) => r.volumeId === volumeId);
    if (existing) {
      known.set(volumeId, { quota: existing.quota });
      return;
    }
    const free = await runtime.freeBytes();
    if (free !== null && free < v.size_gb * GB) {
      throw new Error(`volume ${volumeId} needs ${v.size_gb} GB but the host has ${(free / GB).toFixed(1)} GB free for volumes`);
    }
    const { quota } = await runtime.create(name, labels(volumeId), v.size_gb);
    known.set(volumeId, { quota });
    log.info({ volume_id: volumeId, size_gb: v.size_gb, quota }, 'volume created');
  }

  return {
    /** The desired state's volumes (undefined: a server before them, which says nothing about volumes). */
    setDesired(volumes: DesiredVolumeT[] | undefined): void {
      if (volumes === undefined) return;
      desired = new Map(volumes.map((v) => [v.volume_id, v]));
    },

    /** Before an instance's container is made: its volumes exist (made now when missing). */
    async ensure(d: Pick<DesiredInstanceT, 'mounts'>): Promise<void> {
      for (const m of d.mounts ?? []) await ensureOne(m.volume_id);
    },

    /**
     * Level-triggered, each pass: every listed volume exists (a host's volume outlives its instances, and one made by
     * `create volume` waits for its first instance), and the owner's volumes the server no longer lists are removed,
     * unless a container uses one (the next pass tries again).
     */
    async converge(): Promise<void> {
      if (desired === null) return;
      let mine: RuntimeVolume[];
      try {
        mine = await runtime.list(owner);
      } catch (err) {
        log.warn({ err: String((err as Error)?.message ?? err) }, 'cannot list volumes; retrying at the next pass');
        return;
      }
      // What exists now (one removed behind the agent's back is made again below).
      known.clear();
      for (const r of mine) if (r.volumeId !== null) known.set(r.volumeId, { quota: r.quota });
      for (const r of mine) {
        if (r.volumeId === null || desired.has(r.volumeId)) continue;
        try {
          if (await runtime.remove(r.name)) {
            known.delete(r.volumeId);
            over.delete(r.volumeId);
            log.info({ volume_id: r.volumeId }, 'volume removed with its data');
          }
        } catch (err) {
          log.warn({ volume_id: r.volumeId, err: String((err as Error)?.message ?? err) }, 'volume removal failed; retrying at the next pass');
        }
      }
      for (const id of desired.keys()) {
        if (known.has(id)) continue;
        await ensureOne(id).catch((err: unknown) => {
          log.warn({ volume_id: id, err: String((err as Error)?.message ?? err) }, 'volume not made; retrying at the next pass');
        });
      }
      await measure();
    },

    /** The note for an instance mounting a volume over its size, or null. */
    noteFor(d: Pick<DesiredInstanceT, 'mounts'>): string | null {
      for (const m of d.mounts ?? []) {
        const n = over.get(m.volume_id);
        if (n) return n;
      }
      return null;
    },
  };

  /** Measures the volumes without a quota, at most every VOLUME_USAGE_INTERVAL_S. */
  async function measure(): Promise<void> {
    if (desired === null || now() - lastUsageAt < VOLUME_USAGE_INTERVAL_S) return;
    const unquoted = [...desired.values()].filter((v) => known.get(v.volume_id)?.quota === false);
    if (!unquoted.length) return;
    lastUsageAt = now();
    let used: Map<string, number>;
    try {
      used = await runtime.usage(unquoted.map((v) => volumeName(owner, v.volume_id)));
    } catch (err) {
      log.warn({ err: String((err as Error)?.message ?? err) }, 'cannot measure volumes; retrying later');
      return;
    }
    for (const v of unquoted) {
      const bytes = used.get(volumeName(owner, v.volume_id));
      if (bytes !== undefined && bytes > v.size_gb * GB) {
        if (!over.has(v.volume_id)) log.warn({ volume_id: v.volume_id, used_bytes: bytes, size_gb: v.size_gb }, 'volume over its size');
        over.set(v.volume_id, overSizeNote(v.volume_id, bytes, v.size_gb));
      } else over.delete(v.volume_id);
    }
  }
}

export type VolumeKeeper = ReturnType<typeof volumeKeeper>;
