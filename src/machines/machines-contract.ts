/**
 * The contract between the supply side (fleet: hosts, machines, GPUs, offers) and the instances feature.
 * The fleet owns GPU allocation; instances own the lifecycle. Instances call the fleet only through MachinesApi,
 * always inside the caller's transaction, so the offer check, the GPU allocation and the instance row commit together.
 */
import type { Expression, SqlBool } from 'kysely';
import type { Tx } from '../platform/db/connect.js';

/** How an instance holds its GPUs. On-demand always wins over a bid; a higher bid wins over a lower one. */
export type HoldKind = 'ondemand' | 'bid';

export interface AllocateRequest {
  offerId: number;
  /** The instance that will hold the GPUs (its row is inserted first, in the same transaction). */
  instanceId: number;
  kind: HoldKind;
  /** Bid price per GPU in micro-dollars per hour (bid only). */
  bidPerGpuMicro?: number;
  /**
   * What `getOffer` read in this same transaction; on SQLite (one writer), or when read for allocation, it is still
   * current and is not read again.
   */
  seen?: OfferSnapshot;
}

/** The machine row and GPUs behind a quote (opaque to other features). */
export interface OfferSnapshot {
  readonly machineId: number;
  readonly snapshot: unknown;
}

export interface Allocation {
  machineId: number;
  hostId: number;
  /** GPU indexes on the machine now held by the instance. */
  gpuIndexes: number[];
  /** The offer as it was when rented (a snapshot the instance keeps: gpu_name, dph_total, cpu_ram …). */
  offer: Record<string, unknown> & { id: number; num_gpus: number; machine_id: number; dph_total: number };
  /** Bid instances displaced by this allocation (outbid): the caller stops them in the same transaction. */
  outbid: number[];
}

/** A planned downtime the host announced (`schedule maint`): epoch seconds, hours, free-text category. */
export interface MaintWindow {
  start: number;
  end: number;
  hours: number;
  category: string;
}

export interface MachineInfo {
  id: number;
  host_id: number;
  public_ipaddr: string;
  ssh_host: string;
  /** First port of the machine's direct port range; instances get ports from it. */
  direct_port_start: number;
  direct_port_count: number;
  vms_enabled: boolean;
  /** Prices in micro-dollars: per GPU per hour, per GB per month, per GB transferred. */
  price_gpu_micro: number;
  price_disk_micro: number;
  price_inetu_micro: number;
  price_inetd_micro: number;
  min_bid_micro: number;
  num_gpus: number;
  gpu_name: string;
  /** Fault condition injected on the machine, or null when healthy. */
  fault: null | 'offline' | 'unknown' | 'exited' | 'stall' | 'gpu';
  /** Run by `gpuplane agent` on a real host (else by the emulator's simulated agent, src/emulator/simulated-hosts/). */
  agent: boolean;
  /** Maintenance windows the host announced (`schedule maint`), oldest first. */
  maint: readonly MaintWindow[];
  /** reliability2 now: measured for an agent machine (issue 33, agent-server-health.ts), the catalogue's otherwise. */
  reliability: number;
}

export interface MachinesApi {
  /**
   * The offer as search shows it now (on-demand prices, 8 GB of storage priced in), or undefined when there is no
   * such offer or its bundle cannot be filled now. Offer id = machine id × 100 + bundle size (machines-offers-contract.ts).
   * With it, its machine (one read of both, for renting). `forAllocation`: the caller allocates the offer next in
   * `tx`; on PostgreSQL the machine's row is locked by this read (as `allocate` would lock it: keep to its lock order)
   * and marked changed, and `allocate` reads nothing again.
   */
  getOffer(
    offerId: number,
    tx?: Tx,
    opts?: { forAllocation?: boolean },
  ): Promise<{ offer: Record<string, unknown>; machine: MachineInfo; seen: OfferSnapshot } | undefined>;
  /**
   * Whether no machine ever offered this id: no machine of its id, or a bundle size the machine never offers (offer id
   * = machine id × 100 + bundle size). False for an offer that existed and is gone (rented, delisted, deleted
   * machine), so a refusal can say which (issue 29 item 10).
   */
  offerNeverExisted(offerId: number, tx?: Tx): Promise<boolean>;
  /**
   * Allocates the offer's GPUs to the instance. Throws ApiError `offer_unavailable` (410) when the offer is gone or
   * its GPUs are held by someone who cannot be outbid. Safe under any concurrency on SQLite and PostgreSQL.
   * Also 410 when the machine's fault is `offline` or `unknown` (its host is not heartbeating) or its listing
   * ended; `exited`/`stall` machines stay rentable (their new instances fail, as on a real bad host).
   * A bid below the machine's `min_bid_micro` per GPU is 400 `bad_request` (message names `price`).
   * `offer.dph_total` in the result includes 8 GB of storage: price the instance's own `disk` from
   * `machine().price_disk_micro` instead. It locks the machine's row (PostgreSQL; first, as every writer does: see
   * `lockMachine`) until the caller's transaction ends: keep that transaction short.
   */
  allocate(tx: Tx, req: AllocateRequest): Promise<Allocation>;
  /**
   * Re-allocates `numGpus` GPUs on the same machine for an instance that was stopped (start, or resume after outbid).
   * Returns null when not enough GPUs are free (or outbiddable), or the machine is offline/unknown. Throws 400
   * `bad_request` for a bid below min_bid.
   */
  reallocate(
    tx: Tx,
    req: { instanceId: number; machineId: number; numGpus: number; kind: HoldKind; bidPerGpuMicro?: number },
  ): Promise<{ gpuIndexes: number[]; outbid: number[] } | null>;
  /**
   * Locks the machine's row until `tx` ends (PostgreSQL; SQLite runs one writer at a time). Lock order: a transaction
   * that changes GPU holds on a machine (rent, start, stop, destroy, bid change, credit exhaustion) or locks several
   * of its instances (a machine fault, a lost host, its agent's report) takes this lock first, then instance rows,
   * then the fleet's GPU rows, then billing. Freeing GPUs resumes the machine's outbid instances, and an allocation
   * stops those it outbids, after the fleet's rows were written: with the machine's row taken before any instance, no
   * transaction can hold one of those instances while it waits for the machine (test/instances-lock-order.test.ts).
   * A simulated agents' step (one job across machines) takes the rows of all its machines first, in id order, skipping
   * those another transaction holds (`lockIdleMachines`; emulator/simulated-hosts/simhost-agent.ts).
   */
  lockMachine(tx: Tx, machineId: number): Promise<void>;
  /**
   * `lockMachine` inside another feature's statement: a condition, always true, that locks the row of the machine
   * `machineId` names (a column of the caller's row) when the statement's filter reaches it (PostgreSQL; SQLite:
   * true). A filter is evaluated before the statement's own `FOR UPDATE` takes its rows, so the lock order holds: one
   * statement where a read, this lock and the caller's lock were three (a destroy, stop, start or bid change).
   */
  machineLockCondition(machineId: Expression<number | null>): Expression<SqlBool>;
  /**
   * `lockMachine` for several machines at once, without waiting: locks, in id order, the rows no other transaction
   * holds, and reads those machines (SQLite: all of them), in one statement. For work that can come back to a busy
   * machine later (the simulated agents' passes).
   */
  lockIdleMachines(tx: Tx, machineIds: readonly number[]): Promise<MachineInfo[]>;
  /** Frees every GPU the instance holds. */
  release(tx: Tx, instanceId: number): Promise<void>;
  /** Changes the bid of an instance's held GPUs (change bid). */
  setBid(tx: Tx, instanceId: number, bidPerGpuMicro: number): Promise<void>;
  /** With `lock`, read as `lockMachine` locks it (one statement for both: a simulated agents' step reads each it locks). */
  machine(machineId: number, tx?: Tx, opts?: { lock?: boolean }): Promise<MachineInfo | undefined>;
  /** The machines of these ids that exist, by id, read in one statement (a list of instances). */
  machines(machineIds: number[], tx?: Tx): Promise<Map<number, MachineInfo>>;
  /** Sets or clears (null) a machine's fault (emulator faults). Throws ApiError `not_found` for an unknown machine. */
  setMachineFault(tx: Tx, machineId: number, fault: MachineInfo['fault']): Promise<void>;
}

/**
 * The GPU models gpuplane knows, with the figures a real host's agent cannot measure (src/agent-server/ fills them in
 * from here), and what a new machine is made of (MachinesService.addAgentMachine).
 */
export { GPU_MODELS, type GpuModel, type MachineSpec, type NewMachine } from './machines-catalogue.js';
/** The drivers a machine may have, and a typical machine of a model (the emulator makes its machines from these). */
export { DRIVERS, machineOf } from './machines-catalogue.js';

/** Machines whose host is silent, and the faults that make one (the emulator's simulated heartbeats read them). */
export { isSilent, SILENT_FAULTS, type SilentMachines } from './machines-silent-store.js';

/** Told of every change of a machine's fault, inside the changing transaction, after the machine's row is locked. */
export type FaultChangedHook = (tx: Tx, machineId: number, before: string | null, after: string | null) => Promise<void>;
