/**
 * The emulator's instance and machine faults (contract §2: exited, unknown, offline, stall, recover, no_heartbeat),
 * `POST /_emu/faults`. A fault is a fault of a simulated host: `exited` crashes its containers and `stall` hangs its
 * pulls, and its agent's report then moves the instances (exited; loading); `unknown` and `offline` silence its
 * agent, and the control plane marks the instances as for any host it no longer hears (instances-hosts-contract.ts
 * `markLost`); `recover` makes the host behave again, and its agent's report brings the instances back, with their
 * containers, as a real host coming back. On a real host's machine (`gpuplane agent`) only the control plane's side
 * can be faked: `unknown`, `offline`, `no_heartbeat` and `recover` mark the machine and its instances; its runtime's
 * faults are refused. A simulated machine running real containers (issue 34, src/emulator/emu-containers/) has a real
 * agent too, but the emulator holds its runtime and its requests: every fault acts there (`AdoptedHosts`).
 */
import { ApiError } from '../../platform/errors.js';
import type { Clock } from '../../platform/clock.js';
import type { Tx } from '../../platform/db/connect.js';
import type { FaultHandler, FaultRequest } from '../../platform/faults.js';
import type { MachinesApi } from '../../machines/machines-contract.js';
import type { InstanceRow, InstancesForHosts } from '../../instances/instances-hosts-contract.js';

/**
 * `no_heartbeat` (machines only): the host goes silent and the control plane notices only when the heartbeat timeout
 * passes (simhost-heartbeat.ts). `unknown` on a machine is the same host condition, already noticed: its instances
 * turn unknown at once.
 */
export const INSTANCE_FAULTS = ['exited', 'unknown', 'offline', 'stall', 'recover', 'no_heartbeat'] as const;
export type InstanceFault = (typeof INSTANCE_FAULTS)[number];

/** Faults of a host's container runtime: only a simulated host's can be made to misbehave. */
const RUNTIME_FAULTS: readonly InstanceFault[] = ['exited', 'stall'];
/** The states `recover` on a machine brings back (its reply lists those instances). */
const RECOVERABLE = ['exited', 'unknown', 'offline', 'loading'];

/** What a fault makes a simulated host do wrong: crash containers, hang pulls, say nothing, or behave again. */
export type SimHostFault = 'exited' | 'stall' | 'silent' | 'recover';

/** A simulated machine's runtime and agent, where the faults act (simhost-service.ts). */
export interface SimHostFaults {
  /** Serializes the machine's simulated runtime until `tx` ends (PostgreSQL): taken first, before any instance row. */
  lockMachine(tx: Tx, machineId: number): Promise<void>;
  /** The fault on these instances of the machine; `wholeMachine`: on the machine itself (every pull on it, say). */
  fault(tx: Tx, machineId: number, fault: SimHostFault, instances: InstanceRow[], now: number, wholeMachine?: boolean): Promise<void>;
  /** The machine's agent makes a pass now, as after an event of its runtime, and reports; how many instances changed. */
  step(tx: Tx, machineId: number, now: number): Promise<number>;
}

/**
 * Simulated machines whose instances run as real containers under a real agent in this process (issue 34): the fault
 * acts on that agent's runtime and requests (emu-containers/emu-agents.ts). `instanceIds` undefined: the whole machine.
 */
export interface AdoptedHosts {
  has(machineId: number): boolean;
  fault(machineId: number, fault: SimHostFault, instanceIds: number[] | undefined): Promise<void>;
}

export interface SimFaultsDeps {
  instances: InstancesForHosts;
  fleet: Pick<MachinesApi, 'machine' | 'lockMachine' | 'setMachineFault'>;
  sim: SimHostFaults;
  clock: Clock;
  /** Filled in when real containers are on (services.ts); read at each fault. */
  adopted?: () => AdoptedHosts | undefined;
}

/** An adopted machine's faults as a SimHostFaults: its agent reports what they did (no pass to make here). */
function adoptedHost(hosts: AdoptedHosts): SimHostFaults {
  return {
    lockMachine: async () => undefined,
    async fault(_tx, machineId, fault, rows, _now, wholeMachine = false) {
      await hosts.fault(machineId, fault, wholeMachine && fault !== 'exited' ? undefined : rows.map((r) => r.id));
    },
    step: async () => 0,
  };
}

export function simFaultsFactory({ instances, fleet, sim: simHost, clock, adopted }: SimFaultsDeps) {
  /** The simulated host of the machine, or undefined for a real host's (run by `gpuplane agent`). */
  async function simulatedHost(machineId: number | null, tx: Tx, fault: InstanceFault): Promise<SimHostFaults | undefined> {
    const machine = machineId === null ? undefined : await fleet.machine(machineId, tx);
    const hosts = adopted?.();
    if (machine?.agent && hosts?.has(machine.id)) return adoptedHost(hosts);
    const sim = machine && !machine.agent ? simHost : undefined;
    if (!sim && RUNTIME_FAULTS.includes(fault)) {
      throw new ApiError('conflict', `fault ${fault} acts on a simulated host's container runtime; machine ${machineId} is run by a real host (gpuplane agent)`);
    }
    return sim;
  }

  async function onInstance(tx: Tx, id: number, name: InstanceFault, now: number): Promise<Record<string, unknown>> {
    const found = await instances.find(id, tx);
    if (!found) throw new ApiError('not_found', `instance ${id} not found`);
    const sim = await simulatedHost(found.machine_id, tx, name);
    // Lock order: the machine's simulated runtime, then the machine's row (MachinesApi.lockMachine), before any instance
    // row, as its agent's passes and a destroy there take them.
    if (sim) await sim.lockMachine(tx, found.machine_id!);
    if (found.machine_id !== null) await fleet.lockMachine(tx, found.machine_id);
    const inst = await instances.lock(id, tx);
    if (!inst) throw new ApiError('not_found', `instance ${id} not found`);
    const machineId = inst.machine_id!;
    switch (name) {
      case 'exited':
      case 'stall':
        await sim!.fault(tx, machineId, name, [inst], now);
        await sim!.step(tx, machineId, now);
        break;
      case 'unknown':
      case 'offline':
        await sim?.fault(tx, machineId, 'silent', [inst], now);
        await instances.markLost(tx, inst, name, now);
        break;
      case 'recover':
        if (sim) {
          await sim.fault(tx, machineId, 'recover', [inst], now);
          await sim.step(tx, machineId, now);
        }
        break;
    }
    return { instance_id: inst.id };
  }

  async function onMachine(tx: Tx, machineId: number, name: InstanceFault, now: number): Promise<Record<string, unknown>> {
    if (!(await fleet.machine(machineId, tx))) throw new ApiError('not_found', `machine ${machineId} not found`);
    const sim = await simulatedHost(machineId, tx, name);
    if (sim) await sim.lockMachine(tx, machineId);
    // An adopted machine's agent is real: the machine's silence is its requests' (a simulated one's is the fault's).
    if (sim && sim !== simHost && ['unknown', 'offline', 'no_heartbeat'].includes(name)) await sim.fault(tx, machineId, 'silent', [], now, true);
    if (name === 'no_heartbeat') {
      // Silent host: instances change only when the heartbeat job finds the host past its timeout (hostLost).
      await fleet.setMachineFault(tx, machineId, 'unknown');
      return { machine_id: machineId, instance_ids: [] };
    }
    await fleet.setMachineFault(tx, machineId, name === 'recover' ? null : name);
    const all = await instances.listOnMachine(machineId, tx);
    // Stopped instances (by the user) are left alone by machine faults; recover lists those it brings back.
    const affected: InstanceRow[] = [];
    for (const row of all) {
      if (name === 'recover' ? !RECOVERABLE.includes(row.actual_status ?? '') : row.actual_status === 'stopped') continue;
      const inst = await instances.lock(row.id, tx);
      if (inst) affected.push(inst);
    }
    switch (name) {
      case 'exited':
      case 'stall':
        await sim!.fault(tx, machineId, name, affected, now, true);
        await sim!.step(tx, machineId, now);
        break;
      case 'unknown':
      case 'offline':
        // The machine's fault silences its agent; the control plane marks its instances.
        for (const inst of affected) await instances.markLost(tx, inst, name, now);
        break;
      case 'recover':
        if (sim) {
          await sim.fault(tx, machineId, 'recover', all, now, true);
          await sim.step(tx, machineId, now);
        }
        break;
    }
    return { machine_id: machineId, instance_ids: affected.map((i) => i.id) };
  }

  /** `POST /_emu/faults` for an instance or a machine. */
  async function fault(req: FaultRequest): Promise<Record<string, unknown>> {
    const name = req.fault as InstanceFault;
    if ((req.instance_id === undefined) === (req.machine_id === undefined)) {
      throw new ApiError('bad_request', `body: fault ${name} needs exactly one of instance_id or machine_id`);
    }
    if (name === 'no_heartbeat' && req.machine_id === undefined) {
      throw new ApiError('bad_request', 'body: fault no_heartbeat applies to a machine (machine_id); hosts heartbeat, not instances');
    }
    return instances.write(async (tx) => {
      const now = clock.now();
      return req.instance_id !== undefined ? onInstance(tx, req.instance_id, name, now) : onMachine(tx, req.machine_id!, name, now);
    });
  }

  /** The handlers by fault name, for the emulator's registry (services.ts). */
  return Object.fromEntries(INSTANCE_FAULTS.map((name) => [name, (req: FaultRequest) => fault(req)])) as Record<InstanceFault, FaultHandler>;
}
