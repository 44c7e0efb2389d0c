/**
 * The host side of the marketplace (client-compat-more.md §a): a host (a user) sees and changes its own machines
 * only; an admin sees and changes every machine. A machine is offered only while it is listed, online and not in
 * maintenance (machines-offers-contract.ts isRentable); unlisting stops new rentals and leaves running ones alone.
 * Another host's machine is a 404, as if it did not exist.
 */
import type { Principal } from '../platform/auth.js';
import type { Clock } from '../platform/clock.js';
import type { Store, Tx } from '../platform/db/connect.js';
import type { JobContext, Scheduler } from '../platform/scheduler.js';
import { ApiError, badRequest } from '../platform/errors.js';
import type { MachinesService } from '../machines/machines-service.js';
import { MAX_MAINT_WINDOWS, type HostedMachine, type MaintWindow } from '../machines/machines-offers-contract.js';
import type { PlacedInstance } from '../instances/instances-contract.js';
import { parseDuration } from './hosting-duration.js';
import { hostingStore } from './hosting-store.js';
import type { CreateAsksInput, DefJobInput, MaintInput } from './hosting-schemas.js';
import { machineGpuJson, type HostedGpuState, type HostedGpuStatesPort } from './hosting-gpu-view.js';
import { machineJson, maintenanceJson } from './hosting-view.js';
import { defjobRunner, type DefjobInstancesPort } from './hosting-defjob.js';

/** A listing given neither `end_date` nor `duration` (and not listed into the future already) runs this long. */
export const DEFAULT_LISTING_S = 30 * 86_400;

/** A `duration` listing's end date is moved forward this often (client-compat-more.md: "rolling daily"). */
export const ROLL_INTERVAL_S = 86_400;
export const JOB_ROLL = 'hosting.roll_listing';
/** A maintenance window begins, and ends: its machine's instances stop with notice, then start again. */
export const JOB_MAINT_BEGIN = 'hosting.maintenance_begin';
export const JOB_MAINT_END = 'hosting.maintenance_end';
const maintRef = (machineId: number) => `maint:${machineId}`;
const rollRef = (machineId: number) => `machine:${machineId}`;

export interface HostingDeps {
  store: Store;
  clock: Clock;
  scheduler: Scheduler;
  fleet: MachinesService['hosting'];
  /** The instances placed on machines (instances-module.ts onMachines). */
  instancesOn: (machineIds: readonly number[], tx?: Tx) => Promise<PlacedInstance[]>;
  /**
   * A machine is being deleted, inside the deleting transaction and before its row is locked (its agent's machine key
   * is revoked: src/agent-server/); rolled back with it when the delete is refused.
   */
  onDeleted?: (tx: Tx, machineId: number) => Promise<void>;
  /**
   * `list machine`'s `vol_size` and `vol_price` (src/volumes/): 0 unlists the machine's volume offer; anything else
   * (null too: half its free disk) offers that many GB at `vol_price` (null: `price_disk`).
   */
  volumeAsk?: (tx: Tx, machineId: number, ask: { vol_size?: number | null; vol_price?: number | null }) => Promise<void>;
  /** Default jobs run as the host's bid instances (hosting-defjob.ts). */
  defjobInstances: DefjobInstancesPort;
  /** Wakes instance event streams after a commit that changed instances. */
  notify: () => void;
  /** Issue 33 (telemetry): the machines' GPUs as their agents last sampled them (src/agent-server/). */
  gpuStates?: HostedGpuStatesPort;
  /**
   * Issue 33 (notice): a maintenance window's start stops the machine's instances with notice, its end (or its
   * cancelling) starts them again (instances-maintenance.ts). Absent: windows are shown, nothing is stopped.
   */
  maintenance?: {
    begin(tx: Tx, machineId: number, w: MaintWindow, at: number): Promise<number>;
    end(tx: Tx, machineId: number, at: number): Promise<number>;
  };
}

const micro = (dollars: number) => Math.round(dollars * 1e6);
const notFound = (id: number) => new ApiError('not_found', `machine ${id} not found`);

/** The JSON query values the client sends (`[5, 6]`, `null`, `19723.0`), parsed; a 400 naming `name` otherwise. */
export function jsonQuery(name: string, raw: string | undefined): unknown {
  if (raw === undefined || raw === '') return undefined;
  try {
    return JSON.parse(raw);
  } catch {
    throw badRequest(`${name}: ${JSON.stringify(raw)} is not valid JSON`);
  }
}

export function hostingServiceFactory({ store, clock, scheduler, fleet, instancesOn, onDeleted, volumeAsk, defjobInstances, notify, gpuStates, maintenance }: HostingDeps) {
  const db = store.db;
  const hosting = hostingStore(db);
  const defjobs = defjobRunner({ hosting, scheduler, fleet, instances: defjobInstances });
  const isAdmin = (p: Principal) => Boolean(p.user.is_admin);

  /** The machine, when the caller hosts it or is an admin; 404 otherwise. */
  async function own(p: Principal, machineId: number, tx: Tx = db): Promise<HostedMachine> {
    const m = await fleet.machine(machineId, tx);
    if (!m || (!isAdmin(p) && m.userId !== p.user.id)) throw notFound(machineId);
    return m;
  }

  /** `owner=me` (default): the caller's machines; `owner=all`: every host's, for admins only. */
  async function visible(p: Principal, owner: string | undefined): Promise<HostedMachine[]> {
    if (owner === undefined || owner === 'me') return fleet.machinesOf(p.user.id);
    if (owner === 'all') {
      if (!isAdmin(p)) throw new ApiError('permission_denied', 'owner=all needs an admin account');
      return fleet.machinesOf('all');
    }
    throw badRequest(`owner: must be "me" or "all", got ${JSON.stringify(owner)}`);
  }

  async function rows(list: HostedMachine[]) {
    const defjobs = await hosting.withDefjob(list.map((m) => m.record.id));
    const now = clock.now();
    const gpus = gpuStates ? await gpuStates(list.filter((m) => m.record.spec.agent).map((m) => m.record.id)) : new Map<number, HostedGpuState>();
    return list.map((m) => ({ ...machineJson(m, now, defjobs.has(m.record.id)), ...machineGpuJson(gpus.get(m.record.id)) }));
  }

  const write = <T>(fn: (tx: Tx) => Promise<T>) => db.transaction().execute(fn);

  // A `duration` listing: one job per machine, a day apart, each moving the end date to now + duration.
  type MaintJob = { machineId: number; start: number; end: number };
  // A window that was cancelled or replaced since its job was scheduled does nothing.
  scheduler.register(JOB_MAINT_BEGIN, async (p: MaintJob, { tx, now }: JobContext) => {
    const w = (await fleet.machine(p.machineId, tx))?.record.maint.find((x) => x.start === p.start && x.end === p.end);
    if (!w || !maintenance) return;
    if (await maintenance.begin(tx, p.machineId, w, now)) notify();
    await scheduler.schedule(JOB_MAINT_END, p.end, p, { tx, ref: maintRef(p.machineId) });
  });
  scheduler.register(JOB_MAINT_END, async (p: MaintJob, { tx, now }: JobContext) => {
    if (maintenance && (await maintenance.end(tx, p.machineId, now))) notify();
  });

  scheduler.register(JOB_ROLL, async (payload: { machineId: number }, { tx, now }: JobContext) => {
    if (await fleet.roll(tx, payload.machineId, now)) {
      await scheduler.schedule(JOB_ROLL, now + ROLL_INTERVAL_S, payload, { tx, ref: rollRef(payload.machineId) });
    }
  });

  return {
    own,

    async machines(p: Principal, owner: string | undefined) {
      return { machines: await rows(await visible(p, owner)) };
    },

    /** `show machine ID`: a list of one row (the client reads a list). */
    async machine(p: Principal, machineId: number) {
      return rows([await own(p, machineId)]);
    },

    /**
     * Maintenance windows still to come or under way, of the machines named (or all the caller's). A renter sees
     * the windows of a machine they have a live instance on; anyone else's machine is a 404.
     */
    async maintenances(p: Principal, machineIdsRaw: string | undefined) {
      const ids = jsonQuery('machine_ids', machineIdsRaw);
      const now = clock.now();
      let machines: HostedMachine[];
      if (ids === undefined || ids === null) {
        machines = await fleet.machinesOf(p.user.id);
      } else {
        const list = typeof ids === 'number' ? [ids] : ids;
        if (!Array.isArray(list) || list.length > 1000 || list.some((i) => !Number.isSafeInteger(i) || (i as number) < 1)) {
          throw badRequest('machine_ids: must be a JSON list of machine ids, e.g. [5, 6]');
        }
        const wanted = [...new Set(list as number[])];
        const renting = new Set(
          (await instancesOn(wanted))
            .filter((i) => i.live && (i.user_id === p.user.id || (p.teamId !== null && i.team_id === p.teamId)))
            .map((i) => i.machine_id),
        );
        machines = [];
        for (const id of wanted) {
          const m = await fleet.machine(id);
          if (!m || !(isAdmin(p) || m.userId === p.user.id || renting.has(id))) throw notFound(id);
          machines.push(m);
        }
      }
      return machines.flatMap((m) => m.record.maint.filter((w) => w.end > now).map((w) => maintenanceJson(m.record.id, w)));
    },

    /** `list machine`: prices, smallest bundle, end of the listing; lists the machine. */
    async createAsks(p: Principal, b: CreateAsksInput) {
      const m = await own(p, b.machine);
      const r = m.record;
      const now = clock.now();
      if (b.end_date != null && b.duration != null) throw badRequest('duration: cannot be combined with end_date');
      let end_date: number;
      let listing_duration: number | null = null;
      if (b.duration != null) {
        const seconds = parseDuration(b.duration);
        if (seconds === undefined) throw badRequest(`duration: ${JSON.stringify(b.duration)} is not a duration such as "3 months", "2 weeks" or "86400"`);
        listing_duration = seconds;
        end_date = now + seconds;
      } else if (b.end_date != null) {
        if (b.end_date <= now) throw badRequest(`end_date: ${b.end_date} is not in the future`);
        end_date = b.end_date;
      } else {
        end_date = r.end_date > now ? r.end_date : now + DEFAULT_LISTING_S;
      }
      if (b.min_chunk != null && b.min_chunk > r.num_gpus) throw badRequest(`min_chunk: the machine has ${r.num_gpus} GPUs`);
      // The vastai client: "-z … Invalid if vol_size is 0".
      if (b.vol_size === 0 && b.vol_price != null) throw badRequest('vol_price: there is no volume offer to price when vol_size is 0');
      const priceGpu = b.price_gpu ?? r.price_gpu_micro / 1e6;
      const minBid = b.price_min_bid ?? (b.price_gpu != null ? Math.min(r.min_bid_micro / 1e6, priceGpu) : r.min_bid_micro / 1e6);
      if (minBid > priceGpu) throw badRequest(`price_min_bid: $${minBid} is above price_gpu ($${priceGpu})`);
      const patch = {
        price_gpu_micro: micro(priceGpu),
        min_bid_micro: micro(minBid),
        ...(b.price_disk != null ? { price_disk_micro: micro(b.price_disk) } : {}),
        ...(b.price_inetu != null ? { price_inetu_micro: micro(b.price_inetu) } : {}),
        ...(b.price_inetd != null ? { price_inetd_micro: micro(b.price_inetd) } : {}),
        ...(b.min_chunk != null ? { min_chunk: b.min_chunk } : {}),
        ...(b.credit_discount_max != null ? { credit_discount_max: b.credit_discount_max } : {}),
        end_date,
        listing_duration,
      };
      await write(async (tx) => {
        if (!(await fleet.list(tx, r.id, patch))) throw notFound(r.id);
        await volumeAsk?.(tx, r.id, { vol_size: b.vol_size, vol_price: b.vol_price });
        await scheduler.cancel(rollRef(r.id), { tx, kind: JOB_ROLL });
        if (listing_duration !== null) await scheduler.schedule(JOB_ROLL, now + ROLL_INTERVAL_S, { machineId: r.id }, { tx, ref: rollRef(r.id) });
      });
      return {
        success: true,
        msg: `offers created/updated for machine ${r.id}, @ $${priceGpu}/gpu/hr, listed until ${new Date(end_date * 1000).toISOString()}`,
        // Rentals have no end date here, so there are no client contracts to extend.
        extended: 0,
        end_date,
      };
    },

    async unlist(p: Principal, machineId: number) {
      await own(p, machineId);
      if (!(await write((tx) => fleet.unlist(tx, machineId)))) throw notFound(machineId);
      return { success: true, msg: `machine ${machineId} unlisted: no new rentals; running ones continue` };
    },

    async setMinBid(p: Principal, machineId: number, price: number | null | undefined) {
      const m = await own(p, machineId);
      if (price == null) throw badRequest('price: required, $/GPU/hour');
      if (micro(price) > m.record.price_gpu_micro) throw badRequest(`price: $${price} is above the machine's on-demand price ($${m.record.price_gpu_micro / 1e6})`);
      if (!(await write((tx) => fleet.setMinBid(tx, machineId, micro(price))))) throw notFound(machineId);
      return { success: true, msg: `per gpu min bid price changed to $${price}/hour` };
    },

    /** Records the machine's default job (one per machine). Running it on idle GPUs is not done yet. */
    /**
     * `set defjob`: the machine's default job, replacing the one it had; it starts at once on the machine's idle GPUs
     * when it can (hosting-defjob.ts), and the reply says when it cannot yet.
     */
    async setDefjob(p: Principal, b: DefJobInput) {
      await own(p, b.machine);
      const status = await write(async (tx) => {
        // The row first: it serializes racing requests, so each ends the instance of the one before it.
        await hosting.putDefjob(tx, {
          machine_id: b.machine,
          user_id: p.user.id,
          price_gpu_micro: micro(b.price_gpu ?? 0),
          price_inetu_micro: micro(b.price_inetu ?? 0),
          price_inetd_micro: micro(b.price_inetd ?? 0),
          image: b.image,
          args: b.args == null ? null : JSON.stringify(b.args),
          created_at: clock.now(),
          instance_id: null,
          status_msg: null,
        });
        await defjobs.end(tx, b.machine);
        await hosting.setDefjobRun(tx, b.machine, { instance_id: null, status_msg: null });
        await defjobs.place(tx, b.machine, clock.now());
        return (await hosting.defjobOf(tx, b.machine))!;
      });
      notify();
      const how = status.instance_id !== null ? `running as instance ${status.instance_id}` : `${status.status_msg}; tried again every minute`;
      return { success: true, msg: `default job set on machine ${b.machine}: ${b.image}, ${how}` };
    },

    /** `remove defjob`: its instance is destroyed. */
    async removeDefjob(p: Principal, machineId: number) {
      await own(p, machineId);
      const removed = await write(async (tx) => {
        await defjobs.end(tx, machineId);
        return hosting.removeDefjob(tx, machineId);
      });
      if (!removed) throw new ApiError('not_found', `machine ${machineId} has no default job`);
      notify();
      return { success: true, msg: `default job removed from machine ${machineId}` };
    },

    /** `schedule maint`: a window its renters see; no new rentals during it. Ended windows are dropped. */
    async scheduleMaint(p: Principal, machineId: number, b: MaintInput) {
      const m = await own(p, machineId);
      const now = clock.now();
      const end = b.sdate + b.duration * 3600;
      if (end <= now) throw badRequest('sdate: the window would end in the past');
      const category = b.maintenance_category?.trim() || 'not provided';
      const windows: MaintWindow[] = [...m.record.maint.filter((w) => w.end > now), { start: b.sdate, end, hours: b.duration, category }];
      if (windows.length > MAX_MAINT_WINDOWS) throw badRequest(`sdate: a machine has at most ${MAX_MAINT_WINDOWS} maintenance windows to come; cancel them first`);
      windows.sort((a, c) => a.start - c.start);
      const set = await write(async (tx) => {
        if (!(await fleet.setMaintenance(tx, machineId, windows))) return false;
        // Its start stops the machine's instances with notice (a start already past: at once).
        if (maintenance) await scheduler.schedule(JOB_MAINT_BEGIN, Math.max(b.sdate, now), { machineId, start: b.sdate, end }, { tx, ref: maintRef(machineId) });
        return true;
      });
      if (!set) throw notFound(machineId);
      return { success: true, msg: `maintenance scheduled on machine ${machineId} from ${b.sdate} for ${b.duration} hours` };
    },

    async cancelMaint(p: Principal, machineId: number) {
      await own(p, machineId);
      const cancelled = await write(async (tx) => {
        if (!(await fleet.setMaintenance(tx, machineId, []))) return false;
        // What a window stopped starts again now, and windows to come stop nothing.
        if (maintenance) {
          await scheduler.cancel(maintRef(machineId), { tx });
          await maintenance.end(tx, machineId, clock.now());
        }
        return true;
      });
      if (!cancelled) throw notFound(machineId);
      notify();
      return { success: true, msg: `maintenance windows of machine ${machineId} cancelled` };
    },

    /** Deletes expired instances; gpuplane's rentals have no end date, so none ever expires here. */
    async cleanup(p: Principal, machineId: number) {
      await own(p, machineId);
      return { success: true, msg: `machine ${machineId}: no expired instances to clean up`, deleted: 0 };
    },

    /**
     * `delete machine`: refused (409) while any instance, running or stopped, is on it. The check and the delete are
     * one transaction under the machine's row lock, the lock a rent takes with its quote (MachinesApi.lockMachine): a rent
     * that got there first has its instance seen here, and one that comes after finds the machine deleted (410).
     * Checked before it, a rent could slip in between (issue 29 item 16: 17-21 of 40 rounds on PostgreSQL).
     */
    async forceDelete(p: Principal, machineId: number) {
      await own(p, machineId);
      await write(async (tx) => {
        // Lock order (DEVELOPING.md Rules): the agent's row (its key revoked here) before the machine's, as an agent's
        // status report takes them; a refusal below rolls the revoke back.
        await onDeleted?.(tx, machineId);
        await fleet.lockMachine(tx, machineId);
        // The host's own default job is not a client's: it goes with the machine.
        const defjob = await hosting.defjobInstances([machineId], tx);
        const live = (await instancesOn([machineId], tx)).filter((i) => i.live && !defjob.has(i.id));
        if (live.length) {
          throw new ApiError('conflict', `machine ${machineId} still has ${live.length} instance(s) of clients; they must be destroyed first`);
        }
        await defjobs.end(tx, machineId);
        if (!(await fleet.markDeleted(tx, machineId))) throw notFound(machineId);
        await hosting.removeDefjob(tx, machineId);
      });
      return { success: true, msg: `machine ${machineId} deleted` };
    },

    /** Renters cannot file reports yet: every machine has none. */
    async reports(p: Principal, machineId: number) {
      await own(p, machineId);
      return [];
    },

    /**
     * Any free GPUs of a machine form a bundle of that size here (offers are counts, not GPU positions), so there is
     * nothing to re-pack: the reply says so, for machines the caller hosts.
     */
    async defrag(p: Principal, machineIds: number[]) {
      const ids = [...new Set(machineIds)];
      for (const id of ids) await own(p, id);
      return { success: true, msg: 'offers are already packed: any free GPUs of a machine form one offer', machine_ids: ids, moved: 0 };
    },
  };
}

export type HostingService = ReturnType<typeof hostingServiceFactory>;
