/**
 * The fleet: GPU allocation (MachinesApi, fleet-contract.ts), the simulated fleet's seeding, and the offer index.
 * The database is the truth: an allocation reads and writes the GPU rows inside the caller's transaction and bumps
 * the fleet version with them; every process's offer index follows that version.
 */
import type { Config } from '../config.js';
import type { Clock } from '../platform/clock.js';
import type { Store, Tx } from '../platform/db/connect.js';
import { readCache } from '../platform/db/read-cache.js';
import { ApiError } from '../platform/errors.js';
import { toDollars } from '../platform/money.js';
import { SeededRandom, type Random } from '../platform/random.js';
import { drawMachine, type NewMachine } from './machines-catalogue.js';
import type { Allocation, AllocateRequest, FaultChangedHook, MachinesApi, HoldKind, MachineInfo, OfferSnapshot } from './machines-contract.js';
import { MachinesIndex } from './machines-index.js';
import { silentMachinesStore } from './machines-silent-store.js';
import {
  chooseGpus,
  DEFAULT_ALLOCATED_STORAGE_GB,
  inMaintenance,
  UNRENTABLE_FAULTS,
  isRentable,
  offerJson,
  offersOf,
  parseOfferId,
  bundleSizes,
  type MachineFault,
  type GpuHold,
  type MachineRecord,
  type OfferEntry,
} from './machines-offers-contract.js';
import { machinesStore, toRecord } from './machines-store.js';
import { machinesHostingFactory } from './machines-hosting-store.js';

export interface MachinesDeps {
  store: Store;
  clock: Clock;
  random: Random;
  config: Pick<Config, 'mode' | 'seed' | 'simMachines'>;
}

/** Simulated hosts own 1 to this many machines. */
const MAX_MACHINES_PER_SIM_HOST = 3;

const unavailable = (offerId: number, why: string) => new ApiError('offer_unavailable', `offer ${offerId} is no longer available: ${why}`);

/** Why a machine takes no new renters now (the 410's message). */
function unrentableWhy(m: MachineRecord, now: number): string {
  if (m.fault === 'gpu') return 'its machine has a GPU fault';
  if (m.fault && UNRENTABLE_FAULTS.has(m.fault)) return `its machine is ${m.fault}`;
  if (m.deleted) return 'its machine was deleted';
  if (!m.listed) return 'its machine is not listed';
  if (inMaintenance(m, now)) return 'its machine is in maintenance';
  return 'its listing has ended';
}

/** A machine and its GPUs as read for a quote. */
interface Seen {
  record: MachineRecord;
  gpus: GpuHold[];
  /** Read with the machine's row locked and marked changed, in the transaction that allocates (PostgreSQL). */
  locked: boolean;
}

/** What other features see of a machine. */
function machineInfo(m: MachineRecord): MachineInfo {
  return {
    id: m.id,
    host_id: m.host_id,
    public_ipaddr: m.public_ipaddr,
    ssh_host: m.public_ipaddr,
    direct_port_start: m.direct_port_start,
    direct_port_count: m.direct_port_count,
    vms_enabled: m.vms_enabled,
    price_gpu_micro: m.price_gpu_micro,
    price_disk_micro: m.price_disk_micro,
    price_inetu_micro: m.price_inetu_micro,
    price_inetd_micro: m.price_inetd_micro,
    min_bid_micro: m.min_bid_micro,
    num_gpus: m.num_gpus,
    gpu_name: m.gpu_name,
    fault: m.fault,
    agent: m.spec.agent === true,
    maint: m.maint,
    reliability: m.spec.reliability,
  };
}

export function machinesServiceFactory({ store, clock, random, config }: MachinesDeps) {
  const fleet = machinesStore(store.db, store.dialect);
  const faultHooks: FaultChangedHook[] = [];
  const index = new MachinesIndex(fleet, readCache(store));
  const newEpoch = () => random.bytes(8).toString('hex');

  /** The simulated fleet for a seed: the same seed and size give the same machines, prices and hosts. */
  function simulatedMachines(seed: number, count: number): { machines: NewMachine[]; hostOf: (i: number) => number } {
    const rnd = new SeededRandom(seed);
    const machines: NewMachine[] = [];
    const hosts: number[] = [];
    let host = 0;
    while (machines.length < count) {
      const n = Math.min(count - machines.length, rnd.int(1, MAX_MACHINES_PER_SIM_HOST + 1));
      const first = drawMachine(rnd, machines.length);
      for (let j = 0; j < n; j++) {
        // One host verifies once: its machines share the verification.
        const m = j === 0 ? first : { ...drawMachine(rnd, machines.length), verification: first.verification };
        machines.push(m);
        hosts.push(host);
      }
      host++;
    }
    return { machines, hostOf: (i) => hosts[i] };
  }

  /** Seeds inside `tx` when the fleet has no state row yet; in emulator mode with the simulated fleet. */
  async function seedIfEmpty(tx: Tx, simMachines = config.simMachines): Promise<boolean> {
    if (!(await fleet.initState(tx, newEpoch()))) return false;
    // Production has no simulated fleet: its machines come from real hosts.
    if (config.mode !== 'emulator' || simMachines === 0) return true;
    const { machines, hostOf } = simulatedMachines(config.seed, simMachines);
    await fleet.insertMachines(tx, machines, { now: clock.now(), version: 1, hostOf, numberFromOne: true });
    return true;
  }

  async function allocateOn(
    tx: Tx,
    machineId: number,
    numGpus: number,
    req: { instanceId: number; kind: HoldKind; bidPerGpuMicro?: number; seen?: OfferSnapshot },
    fail: (why: string) => never,
    requireBundle: boolean,
  ): Promise<{ gpuIndexes: number[]; outbid: number[]; before: OfferEntry | undefined; record: ReturnType<typeof toRecord> }> {
    // What getOffer read in this transaction is still current on SQLite (the only writer), and on PostgreSQL when it
    // read under the machine's lock (for allocation).
    const quoted = req.seen?.machineId === machineId ? (req.seen.snapshot as Seen) : undefined;
    const seen = quoted && (store.dialect === 'sqlite' || quoted.locked) ? quoted : undefined;
    // PostgreSQL: locked, and marked changed, by the read (as getOffer for allocation does).
    const record = seen?.record ?? toRecord((await fleet.machineToChange(machineId, tx)) ?? fail('no such machine'));
    // A new rental needs an offered machine; a stopped instance starting again (requireBundle false) is a rental that
    // already exists: unlisting, a maintenance window or the listing's end do not take it away, an offline host does.
    if (requireBundle ? !isRentable(record, clock.now()) : UNRENTABLE_FAULTS.has(record.fault ?? '') || record.deleted) {
      fail(unrentableWhy(record, clock.now()));
    }
    if (numGpus < 1 || numGpus > record.num_gpus) fail(`its machine has ${record.num_gpus} GPUs`);
    const bid = req.kind === 'bid' ? (req.bidPerGpuMicro ?? 0) : 0;
    if (req.kind === 'bid' && bid < record.min_bid_micro) {
      throw new ApiError('bad_request', `price: the bid is below the offer's min_bid of $${toDollars(record.min_bid_micro)}/hour per GPU`);
    }
    const gpus = seen?.gpus ?? (await fleet.gpus(machineId, tx));
    const before = offersOf(record, gpus).find((o) => o.num_gpus === numGpus);
    if (requireBundle && !before) fail('its bundle cannot be filled');
    const choice = chooseGpus(gpus, numGpus, req.kind, bid, req.instanceId);
    if (!choice) fail(req.kind === 'bid' ? 'its GPUs are rented on demand or by higher bids' : 'its GPUs are rented');
    const { gpuIndexes, outbid } = choice!;
    const released = await fleet.releaseAll(tx, outbid);
    const held = await fleet.hold(tx, machineId, gpuIndexes, { instanceId: req.instanceId, kind: req.kind, bidMicro: req.kind === 'bid' ? bid : null }, [req.instanceId]);
    // The conditional update is the final guard: a GPU taken by a concurrent renter is not overwritten.
    if (held !== gpuIndexes.length) fail('its GPUs were just rented');
    // PostgreSQL: the machine was marked as it was locked, and releaseAll marks what it frees.
    if (store.dialect === 'sqlite') await fleet.bump(tx, [...new Set([machineId, ...released])]);
    return { gpuIndexes, outbid, before, record };
  }

  const api: MachinesApi = {
    async getOffer(offerId, tx, opts = {}) {
      const { machineId, numGpus } = parseOfferId(offerId);
      const locked = opts.forAllocation === true && tx !== undefined && store.dialect === 'postgres';
      const row = locked ? await fleet.machineToChange(machineId, tx) : await fleet.machine(machineId, tx ?? store.db);
      if (!row) return undefined;
      const record = toRecord(row);
      // Under the machine's lock no other transaction changes its GPUs: allocate uses what is read here.
      const gpus = await fleet.gpus(machineId, tx ?? store.db);
      const o = offersOf(record, gpus).find((e) => e.num_gpus === numGpus);
      if (!o) return undefined;
      const seen: Seen = { record, gpus, locked };
      return {
        offer: offerJson(o, { type: 'ondemand', storage_gb: DEFAULT_ALLOCATED_STORAGE_GB, now: clock.now() }),
        machine: machineInfo(record),
        seen: { machineId, snapshot: seen },
      };
    },

    async offerNeverExisted(offerId, tx) {
      const { machineId, numGpus } = parseOfferId(offerId);
      const row = await fleet.machine(machineId, tx ?? store.db);
      return !row || !bundleSizes(row.num_gpus).includes(numGpus);
    },

    async allocate(tx, req: AllocateRequest): Promise<Allocation> {
      const { offerId } = req;
      const { machineId, numGpus } = parseOfferId(offerId);
      if (!Number.isSafeInteger(offerId) || offerId < 1) throw unavailable(offerId, 'no such offer');
      const fail = (why: string): never => {
        throw unavailable(offerId, why);
      };
      const r = await allocateOn(tx, machineId, numGpus, req, fail, true);
      const now = clock.now();
      return {
        machineId,
        hostId: r.record.host_id,
        gpuIndexes: r.gpuIndexes,
        offer: offerJson(r.before!, { type: req.kind === 'bid' ? 'bid' : 'ondemand', storage_gb: DEFAULT_ALLOCATED_STORAGE_GB, now }),
        outbid: r.outbid,
      };
    },

    async reallocate(tx, req) {
      try {
        const r = await allocateOn(tx, req.machineId, req.numGpus, req, (why) => {
          throw new ApiError('offer_unavailable', why);
        }, false);
        return { gpuIndexes: r.gpuIndexes, outbid: r.outbid };
      } catch (err) {
        if (err instanceof ApiError && err.code === 'offer_unavailable') return null;
        throw err;
      }
    },

    async lockMachine(tx, machineId) {
      await fleet.lockMachine(tx, machineId);
    },

    machineLockCondition: (machineId) => fleet.machineLockCondition(machineId),

    lockIdleMachines: async (tx, machineIds) => (await fleet.lockIdleMachines(tx, machineIds)).map((r) => machineInfo(toRecord(r))),

    async release(tx, instanceId) {
      const machines = await fleet.releaseAll(tx, [instanceId]);
      // PostgreSQL: releaseAll marked them (before their GPUs, in the allocation's lock order).
      if (machines.length && store.dialect === 'sqlite') await fleet.bump(tx, machines);
    },

    async setBid(tx, instanceId, bidPerGpuMicro) {
      const machines = await fleet.setBid(tx, instanceId, bidPerGpuMicro);
      if (machines.length) await fleet.bump(tx, machines);
    },

    async machine(machineId, tx, opts): Promise<MachineInfo | undefined> {
      const row = await fleet.machine(machineId, tx ?? store.db, opts?.lock === true);
      return row && machineInfo(toRecord(row));
    },

    async machines(machineIds, tx) {
      const rows = await fleet.machinesByIds([...new Set(machineIds)], tx ?? store.db);
      return new Map(rows.map((r) => [r.id, machineInfo(toRecord(r))]));
    },

    async setMachineFault(tx, machineId, fault) {
      const changed = await fleet.setFault(tx, machineId, fault as MachineFault);
      if (!changed) throw new ApiError('not_found', `machine ${machineId} not found`);
      for (const hook of faultHooks) await hook(tx, machineId, changed.before, fault);
      await fleet.bump(tx, [machineId]);
    },
  };

  return {
    ...api,
    index,
    clock,

    /** Start-up: creates the fleet (seeded in emulator mode) unless another process or an earlier run did. */
    async ensureSeeded(): Promise<boolean> {
      return store.db.transaction().execute((tx) => seedIfEmpty(tx));
    },

    /** `/_emu/reset` hook: the tables were just emptied in `tx`; seed the same fleet again under a new epoch. */
    async reseed(tx: Tx): Promise<void> {
      await seedIfEmpty(tx);
    },

    /**
     * Adds one machine, made by `build` from the fleet's new version (`POST /_emu/machines`: a seeded draw); on a host
     * of its own, or of `ownerUserId` (a host is a user). Its offers appear in search at once.
     */
    async addMachine(build: (n: number) => NewMachine, opts: { ownerUserId?: number; listed?: boolean }): Promise<{ machine_id: number; offer_ids: number[] }> {
      return store.db.transaction().execute(async (tx) => {
        await seedIfEmpty(tx, 0);
        const version = await fleet.insertVersion(tx);
        const m = build(version);
        // A machine of a user (a host is a user), optionally not listed yet, as after registration by the agent.
        const hostId = opts.ownerUserId === undefined ? undefined : await fleet.hostOfUser(tx, opts.ownerUserId, clock.now());
        const [id] = await fleet.insertMachines(tx, [m], { now: clock.now(), version, hostId });
        if (opts.listed === false) await fleet.markUnlisted(tx, id);
        // Stamped with its version at commit (PostgreSQL; SQLite took a new one above).
        if (store.dialect === 'postgres') await fleet.bump(tx, [id]);
        const row = await fleet.machine(id, tx);
        return { machine_id: id, offer_ids: offersOf(toRecord(row!), await fleet.gpus(id, tx)).map((o) => o.id) };
      });
    },

    /** Who hears of a change of a machine's fault (the emulator's simulated heartbeats; wired in services.ts). */
    onFaultChanged(hook: FaultChangedHook): void {
      faultHooks.push(hook);
    },

    /** Machines whose host is silent: when each went silent, which crossed a timeout (machines-silent-store.ts). */
    silent: silentMachinesStore(store.db),

    /** A host's machines and their listing (the hosting feature, src/hosting/). */
    hosting: machinesHostingFactory(store.db, fleet),

    /** The host id of a user (a host is a user), created on first use, in the caller's transaction. */
    hostOfUser: (tx: Tx, userId: number) => fleet.hostOfUser(tx, userId, clock.now()),

    /** The user behind a host, or null for a host of the simulated fleet. */
    userOfHost: (hostId: number, tx?: Tx) => fleet.userOfHost(hostId, tx),

    /**
     * A real host's new machine (`gpuplane agent` registration), under the user's host, inside `tx`. Not listed:
     * its listing ends now, until the host lists it with prices.
     */
    async addAgentMachine(tx: Tx, userId: number, m: Omit<NewMachine, 'verification' | 'listed_for'>): Promise<number> {
      const hostId = await fleet.hostOfUser(tx, userId, clock.now());
      const version = await fleet.insertVersion(tx);
      const id = await fleet.insertMachineOnHost(tx, hostId, { ...m, verification: 'unverified', listed_for: 0 }, { now: clock.now(), version });
      await fleet.bump(tx, [id]);
      return id;
    },

    /** A real host's machine reported new hardware (the GPU count stays as registered). */
    async updateAgentMachine(tx: Tx, machineId: number, patch: Parameters<typeof fleet.updateHardware>[2]): Promise<void> {
      // reliability2 is measured by the agent server (issue 33), not described by the hardware: a report keeps it.
      if (patch.spec) {
        const row = await fleet.machine(machineId, tx);
        if (row) patch = { ...patch, spec: { ...patch.spec, reliability: toRecord(row).spec.reliability } };
      }
      await fleet.updateHardware(tx, machineId, patch);
      await fleet.bump(tx, [machineId]);
    },

    /** A real host's measured reliability2 (agent-server-health.ts), 0..1, in the machine's spec; offers show it. */
    async setAgentReliability(tx: Tx, machineId: number, reliability: number): Promise<void> {
      const row = await fleet.machine(machineId, tx);
      if (!row) return;
      const rec = toRecord(row);
      if (rec.spec.reliability === reliability) return;
      await fleet.updateHardware(tx, machineId, {
        public_ipaddr: rec.public_ipaddr, direct_port_start: rec.direct_port_start, direct_port_count: rec.direct_port_count,
        gpu_name: rec.gpu_name, spec: { ...rec.spec, reliability },
      });
      await fleet.bump(tx, [machineId]);
    },

    /** GPU model names in the fleet, for `GET /api/v0/gpu_names/unique/`. */
    gpuNames: () => fleet.gpuNames(),

    /** Every machine (volume offers, the autoscaler's offer search). */
    machineRecords: async (tx?: Tx) => (await fleet.machinesAbove(-1, tx)).map(toRecord),
    /** One machine, or undefined. */
    machineRecord: async (id: number, tx?: Tx) => {
      const row = await fleet.machine(id, tx);
      return row && toRecord(row);
    },
    /** The GPUs of these machines. */
    gpusOf: (ids: number[], tx?: Tx) => fleet.gpusOf(ids, tx),

    simulatedMachines,
  };
}

export type MachinesService = ReturnType<typeof machinesServiceFactory>;
