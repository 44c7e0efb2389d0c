/**
 * The simulated agent of the emulator's machines: for each machine with work due, one pass of what `gpuplane agent`
 * does (src/agent/reconciler.ts), in the server, on the simulated runtime (simhost-runtime.ts). It reads the
 * machine's desired state exactly as the agent endpoint builds it, plans with the agent's own pure functions
 * (reconcile-plan.ts `plan`, `observe`), carries the actions out on the runtime, and applies its report through the
 * same code as `PUT /api/v0/agent/status/` (agent-service.ts `applyReport`). So simulated and real machines share one
 * lifecycle path.
 *
 * A pass is due after a desired-state change of the machine (PROVISION_DELAY_S later: the host accepting the work)
 * and when a pull finishes; one job kind runs every machine due, in one transaction, and schedules itself for the
 * next. A real agent's retries, backoffs and periodic resync have no counterpart: a simulated action never fails.
 */
import type { Config } from '../config.js';
import type { Tx } from '../platform/db/connect.js';
import type { Scheduler, JobContext } from '../platform/scheduler.js';
import type { FleetApi } from '../fleet/fleet-contract.js';
import type { DesiredInstanceT, ObservedInstanceT } from '../fleet/agent-protocol-schemas.js';
import { isSilent } from '../fleet/fleet-heartbeat.js';
import { observe, plan, type Action, type InstanceRecord } from '../agent/reconcile-plan.js';
import { PROVISION_DELAY_S } from '../instances/instances-lifecycle.js';
import type { DesiredRead } from '../hosts/agent-service.js';
import { bootSeconds, pullKey, simRuntime, type SimRuntime } from './simhost-runtime.js';
import type { SimhostStore } from './simhost-store.js';

export const JOB_SIM_STEP = 'simhost.step';
/**
 * Machines one job run steps at most; the rest in the next run, due at once. Small, because a run holds each machine
 * it stepped (and the billing rows of its instances' users) until it commits: rents and destroys there wait for it.
 */
export const STEP_BATCH = 8;
/**
 * A machine due now but busy (another process's pass or a fault holds its runtime, a rent or destroy its row) is
 * stepped this much later: its work may have come after the other pass took what was due.
 */
export const STEP_RETRY_S = 0.2;

/** What the simulated agent reads and reports through: the hosts feature's agent service (`simulated`). */
export interface SimReportPort {
  desiredOf(machineId: number, tx: Tx): Promise<DesiredRead>;
  applyReport(
    tx: Tx,
    machineId: number,
    report: { desired_version: number | null; observed: ObservedInstanceT[] },
    now: number,
    current?: DesiredRead,
  ): Promise<{ n: number; version: number }>;
}

export interface SimAgentDeps {
  sim: SimhostStore;
  fleet: Pick<FleetApi, 'machine' | 'lockMachine' | 'lockIdleMachines'>;
  reports: SimReportPort;
  scheduler: Scheduler;
  config: Pick<Config, 'seed' | 'simBootSeconds'>;
  /** Wakes this process's event streams and waits after instances changed. */
  notify: () => void;
}

export function simAgentFactory({ sim, fleet, reports, scheduler, config, notify }: SimAgentDeps) {
  /** Makes sure a step job runs at `dueAt` or earlier (one job serves every machine). `after`: ignore jobs due by then. */
  async function ensureJob(tx: Tx, dueAt: number, after: number): Promise<void> {
    await scheduler.ensure(JOB_SIM_STEP, dueAt, { tx, after });
  }

  /** The machine's desired state changed at `at` (inside the changing transaction): its agent acts on it shortly. */
  async function desiredChanged(tx: Tx, machineId: number, at: number): Promise<void> {
    const due = at + PROVISION_DELAY_S;
    // A step job due by `at` may be running already, past the point where it would see this work (it reads what is
    // due, and schedules the next run, before this transaction commits): it is not counted on.
    if (await sim.touch(tx, machineId, due)) await ensureJob(tx, due, at);
  }

  /**
   * One pass of the machine's agent at `now`, inside `tx`, with the machine's runtime lock held. A silent machine
   * (faults `unknown`, `offline`, `no_heartbeat`) does nothing and reports nothing. Returns how many instances changed.
   */
  async function pass(tx: Tx, machineId: number, now: number): Promise<number> {
    const machine = await fleet.machine(machineId, tx);
    // A real host's machine has its own agent; a silent host's agent is not heard (its containers run on meanwhile).
    if (!machine || machine.agent || isSilent(machine.fault)) return 0;
    const runtime = simRuntime(sim, tx, machine, now);
    const current = await reports.desiredOf(machineId, tx);
    const desired = current.state.instances;
    const known = await sim.instances(tx, machineId);
    const silent = new Set(known.filter((r) => r.silent === 1).map((r) => r.instance_id));
    const records = new Map<number, InstanceRecord>();
    for (const r of known) {
      if (r.generation !== null) records.set(r.instance_id, { generation: r.generation, boot: r.boot ?? 0, stopped: r.stopped === 1 });
    }
    const changedRecords = new Set<number>();
    const setRecord = (id: number, rec: InstanceRecord) => {
      records.set(id, rec);
      changedRecords.add(id);
    };
    const pulling = new Set<number>();
    const rowOf = new Map(current.rows.map((r) => [r.id, r]));

    /** Pulls the image unless the machine has it; whether it has it now. */
    const image = async (d: DesiredInstanceT): Promise<boolean> => {
      const key = pullKey(d);
      if (await runtime.hasImage(key)) return true;
      const row = rowOf.get(d.instance_id);
      // The boot took this long in all: provisioning, then the pull (the container starts at once).
      const seconds = Math.max(0, bootSeconds(config.seed, config.simBootSeconds, d.instance_id, row?.state_version ?? 0) - PROVISION_DELAY_S);
      const readyAt = await runtime.pull(key, seconds);
      if (readyAt !== null && readyAt > now) await sim.addDue(tx, machineId, readyAt);
      if (await runtime.hasImage(key)) return true;
      pulling.add(d.instance_id);
      return false;
    };

    const create = async (d: DesiredInstanceT): Promise<void> => {
      await runtime.create(d, d.state === 'running' ? 'running' : 'created');
      if (d.repull) await runtime.dropPull(pullKey(d));
      setRecord(d.instance_id, { generation: d.generation, boot: d.boot, stopped: d.state !== 'running' });
    };

    const start = async (d: DesiredInstanceT, id: string): Promise<void> => {
      await runtime.start(id, d);
      setRecord(d.instance_id, { generation: d.generation, boot: d.boot, stopped: false });
    };

    // The actions of reconciler.ts `run`, done at once (a pull is the only thing that takes time).
    const run = async (a: Action): Promise<void> => {
      switch (a.kind) {
        case 'remove':
          await runtime.remove(a.containerId);
          if (a.instanceId !== null && a.reason === 'orphan') records.delete(a.instanceId);
          return;
        case 'create':
          if (await image(a.instance)) await create(a.instance);
          return;
        case 'recreate':
          // The old container runs on until the new image is here.
          if (!(await image(a.instance))) return;
          await runtime.remove(a.containerId);
          return create(a.instance);
        case 'start':
          return start(a.instance, a.containerId);
        case 'restart':
          await runtime.stop(a.containerId);
          return start(a.instance, a.containerId);
        case 'stop':
          setRecord(a.instance.instance_id, { generation: a.instance.generation, boot: records.get(a.instance.instance_id)?.boot ?? a.instance.boot, stopped: true });
          await runtime.stop(a.containerId);
          return;
        case 'adopt':
          setRecord(a.instanceId, a.record);
          return;
      }
    };

    // Silent instances (faults unknown, offline) are left as they are, and not reported.
    const actions = plan({ desired, containers: await runtime.list(), records, failures: new Map(), busy: silent, now, hostBootTime: 0 });
    for (const a of actions) await run(a);
    const crashing = known.filter((r) => r.crash === 1 && !silent.has(r.instance_id)).map((r) => r.instance_id);
    if (crashing.length) {
      await crash(runtime, desired, crashing, setRecord);
      await sim.putInstances(tx, machineId, crashing, { crash: 0 });
    }

    // The agent's memory: what changed, and nothing of instances no longer on the machine.
    const desiredIds = new Set(desired.map((d) => d.instance_id));
    await sim.removeInstances(tx, known.filter((r) => !desiredIds.has(r.instance_id)).map((r) => r.instance_id));
    await sim.putRecords(tx, machineId, [...changedRecords].filter((id) => desiredIds.has(id) && records.has(id)).map((id) => ({ instanceId: id, ...records.get(id)! })));

    const observed = observe(desired, await runtime.list(), records, (id) => ({ pulling: pulling.has(id), failure: undefined }))
      .filter((o) => !silent.has(o.instance_id));
    const heard = silent.size ? { ...current, rows: current.rows.filter((r) => !silent.has(r.id)) } : current;
    return (await reports.applyReport(tx, machineId, { desired_version: current.state.version, observed }, now, heard)).n;
  }

  /**
   * Pending crashes (fault `exited`): the instance's container exits; one that has none yet (still provisioning or
   * pulling) is found exited, as a container that crashed as it started.
   */
  async function crash(
    runtime: SimRuntime,
    desired: DesiredInstanceT[],
    ids: number[],
    setRecord: (id: number, rec: InstanceRecord) => void,
  ): Promise<void> {
    const containers = await runtime.list();
    for (const id of ids) {
      const d = desired.find((x) => x.instance_id === id);
      const own = containers.filter((c) => c.instanceId === id);
      for (const c of own) if (c.status === 'running' || c.status === 'created') await runtime.crash(c.id);
      if (d?.state === 'running' && own.length === 0) {
        await runtime.create(d, 'exited');
        setRecord(id, { generation: d.generation, boot: d.boot, stopped: false });
      }
    }
  }

  /**
   * The JOB_SIM_STEP handler: a pass on every machine due (STEP_BATCH at most), then the next run is scheduled. It takes
   * only machines nobody else holds, without waiting: their runtime locks in the statement that finds them
   * (`claimDue`), then their rows (`lockIdleMachines`), both in machine order and before any other row (a fault takes
   * its machine's runtime lock first too). So passes of several processes at once step different machines, and a
   * rent or destroy under way is not waited for. A machine passed over stays due, and a run comes back to it shortly.
   */
  async function stepDue(_payload: unknown, { tx, now }: JobContext): Promise<void> {
    const due = await sim.claimDue(tx, now, STEP_BATCH);
    const claimed = due.filter((d) => d.locked).map((d) => d.machineId);
    // Then the lock order of every writer (FleetApi.lockMachine): the machine's row before its work row and its
    // instances, so a destroy there (machine row, instance, then its work row) never waits on this pass.
    const held = await fleet.lockIdleMachines(tx, claimed);
    // Another process's pass may have taken the work since it was read: `taken` is what is still due.
    const taken = await sim.takeDueOf(tx, held, now);
    for (const machineId of held) if (taken.has(machineId)) await pass(tx, machineId, now);
    // More due: the next run at once, unless none of this batch could be stepped (it would find the same machines).
    if (due.length === STEP_BATCH && held.length > 0) return ensureJob(tx, now, now);
    if (held.length < due.length) return ensureJob(tx, now + STEP_RETRY_S, now);
    const next = await sim.nextDue(tx);
    if (next !== null) await ensureJob(tx, next, now);
  }

  scheduler.register(JOB_SIM_STEP, stepDue);
  scheduler.afterJob.push((kind) => {
    if (kind === JOB_SIM_STEP) notify();
  });

  return {
    desiredChanged,
    /** A pass on the machine now, inside `tx` (after a fault changed its runtime: a runtime event). */
    async step(tx: Tx, machineId: number, now: number): Promise<number> {
      await sim.lockMachine(tx, machineId);
      await fleet.lockMachine(tx, machineId);
      await sim.takeDue(tx, machineId, now);
      return pass(tx, machineId, now);
    },
  };
}

export type SimAgent = ReturnType<typeof simAgentFactory>;
