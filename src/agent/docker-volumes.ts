/**
 * The agent's volumes on Docker (volumes.ts says what they are for): the Engine API's volume calls over the `local`
 * driver. A `size` option is a project quota, which the daemon takes only where its volume directory is on xfs with
 * pquota (it answers "quota size requested but no quota support" elsewhere, checked once per volume, never assumed
 * from `docker info`).
 */
import { statfs } from 'node:fs/promises';
import type Dockerode from 'dockerode';
import { LABEL_MACHINE, LABEL_OWNER, ownedBy, type ContainerOwner } from './runtime.js';
import { LABEL_VOLUME } from './volumes.js';
import type { RuntimeVolume, VolumeRuntime } from './volume-runtime.js';

/** The option on a volume made with a quota (read back when the agent restarts). */
const SIZE_OPT = 'size';

interface DockerError {
  statusCode?: number;
  json?: { message?: string } | null;
  message?: string;
}
const messageOf = (err: unknown) => (err as DockerError)?.json?.message ?? (err as DockerError)?.message ?? String(err);
const statusOf = (err: unknown) => (err as DockerError)?.statusCode;

/** Whether the daemon refused a volume's `size` because its storage has no quota. */
export function isNoQuota(message: string): boolean {
  return /quota/i.test(message) && /size/i.test(message);
}

export interface DockerVolumesOptions {
  /** Make a volume without a quota where the driver has none (the operator's `--allow-unlimited-disk`). @default false */
  allowUnlimitedDisk?: boolean;
}

export function dockerVolumes(docker: Dockerode, opts: DockerVolumesOptions = {}): VolumeRuntime {
  let dataRoot: string | undefined;
  return {
    async list(owner: ContainerOwner): Promise<RuntimeVolume[]> {
      const r = (await docker.listVolumes({ filters: { label: [`${LABEL_MACHINE}=${owner.machineId}`, `${LABEL_OWNER}=${owner.owner}`] } })) as { Volumes?: Dockerode.VolumeInspectInfo[] | null };
      // Checked again here: only a volume whose labels prove it ours is ever acted on.
      return (r.Volumes ?? []).filter((v) => ownedBy(v.Labels ?? undefined, owner)).map((v) => {
        const id = v.Labels?.[LABEL_VOLUME];
        return { name: v.Name, volumeId: id !== undefined && /^[1-9][0-9]{0,9}$/.test(id) ? Number(id) : null, quota: Boolean(v.Options?.[SIZE_OPT]) };
      });
    },

    async create(name, labels, sizeGb) {
      const make = (withSize: boolean) =>
        docker.createVolume({ Name: name, Driver: 'local', Labels: labels, DriverOpts: withSize ? { [SIZE_OPT]: `${Math.ceil(sizeGb * 1024)}M` } : {} });
      try {
        await make(true);
        return { quota: true };
      } catch (err) {
        if (!isNoQuota(messageOf(err))) throw new Error(`creating volume ${name} failed: ${messageOf(err)}`);
        if (!opts.allowUnlimitedDisk) {
          throw new Error(`the host cannot limit a volume's size (${messageOf(err)}); put Docker's data root on xfs with pquota, or run the agent with --allow-unlimited-disk`);
        }
      }
      try {
        await make(false);
      } catch (err) {
        throw new Error(`creating volume ${name} failed: ${messageOf(err)}`);
      }
      return { quota: false };
    },

    async remove(name) {
      // Any container, the agent's or not, that mounts it keeps it (Docker refuses too: this says it first).
      const users = await docker.listContainers({ all: true, filters: { volume: [name] } });
      if (users.length) return false;
      try {
        await docker.getVolume(name).remove();
        return true;
      } catch (err) {
        if (statusOf(err) === 404) return true;
        if (statusOf(err) === 409) return false; // in use after all (a container made since the listing)
        throw new Error(`removing volume ${name} failed: ${messageOf(err)}`);
      }
    },

    async usage(names) {
      const wanted = new Set(names);
      const df = (await docker.df()) as { Volumes?: Dockerode.VolumeInspectInfo[] | null };
      const out = new Map<string, number>();
      for (const v of df.Volumes ?? []) {
        const size = v.UsageData?.Size;
        if (wanted.has(v.Name) && typeof size === 'number' && size >= 0) out.set(v.Name, size);
      }
      return out;
    },

    async freeBytes() {
      try {
        dataRoot ??= (await docker.info()).DockerRootDir as string;
        const s = await statfs(dataRoot);
        return s.bavail * s.bsize;
      } catch {
        // The agent runs where it cannot see the data root (another mount namespace): the server's check stands alone.
        return null;
      }
    },
  };
}
