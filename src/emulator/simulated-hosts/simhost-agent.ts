/**
 * The simulated agent of the emulator's machines: for each machine with work due, one pass of what `gpuplane agent`
 * does (src/agent/reconciler.ts), in the server, on the simulated runtime (simhost-runtime.ts). It reads the
 * machine's desired state exactly as the agent endpoint builds it, plans with the agent's own pure functions
 * (reconcile-plan.ts `plan`, `observe`), carries the actions out on the runtime, and applies its report through the
 * same code as `PUT /api/v0/agent/status/` (agent-observed.ts, there `applyObserved`, here `applyReports`). So
 * simulated and real machines share one lifecycle path.
 *
 * A pass is due after a desired-state change of the machine (PROVISION_DELAY_S later: the host accepting the work)
 * and when a pull finishes; one job kind runs every machine due, in one transaction, and schedules itself for the
 * next. The emulator's transition rules (issue 34, emu-transitions/) time a boot otherwise: at once, after a delay,
 * or when advanced; such a boot waits at a gate kept as a pull is (transitions-rules.ts), so the step stays one. The machines of one run are stepped together, set-based (`passes`): on PostgreSQL every statement is a round
 * trip, and a run's statements no longer grow with its instances (docs/PERFORMANCE.md). A real
 * agent's retries, backoffs and periodic resync have no counterpart: a simulated action never fails.
 */
import type { Config } from '../../config.js';
import type { Tx } from '../../platform/db/connect.js';
import type { Scheduler, JobContext } from '../../platform/scheduler.js';
import { isSilent, type MachinesApi, type MachineInfo } from '../../machines/machines-contract.js';
import type { DesiredInstanceT, ObservedInstanceT } from '../../protocol/agent-protocol-schemas.js';
import { observe, plan, type Action, type InstanceRecord } from '../../agent/reconcile-plan.js';
import { PROVISION_DELAY_S } from '../../instances/instances-hosts-contract.js';
import type { DesiredRead } from '../../agent-server/agent-server-service.js';
import { bootSeconds, pullKey, simRuntime, type SimRuntime } from './simhost-runtime.js';
import type { SimContainerRow, SimhostStore, SimInstanceRow } from './simhost-store.js';
import { effectiveRule, gateInstance, gateKey, MANUAL_GATE_AT, type LoadedTransitions } from '../emu-transitions/transitions-rules.js';

export const JOB_SIM_STEP = 'simhost.step';
/** Rounds of one job run: the second takes the work that came due while the first ran. */
const STEP_ROUNDS = 2;
/** Machines one job run steps at most; the rest in the next run, due at once. */
export const STEP_BATCH = 100;
/**
 * A machine due now but busy (another process's pass or a fault holds its runtime, a rent or destroy its row) is
 * stepped this much later: its work may have come after the other pass took what was due.
 */
export const STEP_RETRY_S = 1;

/** What the simulated agent reads and reports through: the hosts feature's agent service (`simulated`). */
export interface SimReportPort {
  /** The machines' desired states, their instance rows read locked (the caller holds the machines' rows). */
  desiredOf(machines: readonly MachineInfo[], tx: Tx): Promise<Map<number, DesiredRead>>;
  /** The machines' agents' reports, each on the desired state it acted on (`current`); how many instances changed. */
  applyReports(tx: Tx, reports: readonly { observed: ObservedInstanceT[]; current: DesiredRead }[], now: number): Promise<number>;
}

export interface SimAgentDeps {
  sim: SimhostStore;
  fleet: Pick<MachinesApi, 'machine' | 'lockIdleMachines'>;
  reports: SimReportPort;
  scheduler: Scheduler;
  config: Pick<Config, 'seed' | 'simBootSeconds'>;
  /** Wakes this process's event streams and waits after instances changed. */
  notify: () => void;
}

/** One machine's pass, planned and carried out on its runtime in memory, before anything is written back. */
interface MachinePass {
  machine: MachineInfo;
  current: DesiredRead;
  runtime: SimRuntime;
  records: Map<number, InstanceRecord>;
  /** The agent's records that changed, of instances still on the machine, to write. */
  changedRecords: (InstanceRecord & { instanceId: number })[];
  pulling: Set<number>;
  silent: Set<number>;
  /** Instances whose pending crash (fault `exited`) happened in this pass. */
  crashed: number[];
  /** The agent's records of instances no longer on the machine, to forget. */
  gone: number[];
  /** When pulls started in this pass finish: the machine's agent passes again then. */
  due: Set<number>;
  /** Boots held at their transition gate (delay, manual); reported as loading. */
  waiting: Set<number>;
}

export function simAgentFactory({ sim, fleet, reports, scheduler, config, notify }: SimAgentDeps) {
  /** Makes sure a step job runs at `dueAt` or earlier (one job serves every machine). `after`: ignore jobs due by then. */
  async function ensureJob(tx: Tx, dueAt: number, after: number): Promise<void> {
    await scheduler.ensure(JOB_SIM_STEP, dueAt, { tx, after });
  }

  // The next run when the earliest machine's work is due, in one statement.
  const ensureAtFirstDue = scheduler.ensureAtFirst(JOB_SIM_STEP, sim.firstDue);

  // Every rent, stop and destroy on an emulated machine records its work and makes sure of a step job: one statement.
  const touchAndEnsureJob = scheduler.ensureAfter(JOB_SIM_STEP, ['machine_id', 'due_at'], sim.dueIfSimulated);

  /** The machine's desired state changed at `at` (inside the changing transaction): its agent acts on it shortly. */
  async function desiredChanged(tx: Tx, machineId: number, at: number): Promise<void> {
    const due = at + PROVISION_DELAY_S;
    // A step job due by `at` may be running already, past the point where it would see this work (it reads what is
    // due, and schedules the next run, before this transaction commits): it is not counted on.
    await touchAndEnsureJob(tx, { machine_id: machineId, due_at: due }, { dueAt: due, after: at });
  }

  /**
   * One pass of each machine's agent at `now`, inside `tx`, with the machines' runtime locks and rows held (`locked`:
   * the machines as read with their rows' locks), done
   * together: their desired states and runtimes read at once, each machine's actions carried out on its runtime in
   * memory, everything written back at once, and their reports applied at once (agent-observed.ts `applyReports`). A
   * silent machine (faults `unknown`, `offline`, `no_heartbeat`) does nothing and reports nothing. Returns how many
   * instances changed.
   */
  async function passes(tx: Tx, locked: readonly (MachineInfo | undefined)[], now: number): Promise<number> {
    // A real host's machine has its own agent; a silent host's agent is not heard (its containers run on meanwhile).
    const machines = locked.filter((m): m is MachineInfo => m !== undefined && !m.agent && !isSilent(m.fault));
    if (machines.length === 0) return 0;
    const desired = await reports.desiredOf(machines, tx);
    const instanceIds = [...desired.values()].flatMap((d) => d.state.instances.map((i) => i.instance_id));
    const loaded = await sim.load(tx, machines.map((m) => m.id), instanceIds, now);
    const done = machines.map((machine) => passOf(machine, desired.get(machine.id)!, {
      containers: loaded.containers.get(machine.id)!, images: loaded.images.get(machine.id)!, known: loaded.instances.get(machine.id)!,
      transitions: loaded.transitions,
    }, now));
    await save(tx, done);
    return reports.applyReports(tx, done.map((p) => ({
      observed: observe(p.current.state.instances, p.runtime.list(), p.records, (id) => ({ pulling: p.pulling.has(id) || p.waiting.has(id), failure: undefined }))
        .filter((o) => !p.silent.has(o.instance_id))
        // A boot at its gate with its container there (a start, a reboot) is being started, for the boot asked for:
        // loading, not exited.
        .map((o) => (p.waiting.has(o.instance_id) && o.state !== 'pulling'
          ? { ...o, state: 'created' as const, boot: p.current.state.instances.find((d) => d.instance_id === o.instance_id)?.boot ?? o.boot, exit_code: null, ports: {} }
          : o)),
      // Silent instances (faults unknown, offline) are left as they are, and not reported.
      current: p.silent.size ? { ...p.current, rows: p.current.rows.filter((r) => !p.silent.has(r.id)) } : p.current,
    })), now);
  }

  /** Writes back what the passes did: runtimes, due work, the agents' records. A statement or so per kind for all. */
  async function save(tx: Tx, done: MachinePass[]): Promise<void> {
    await sim.saveRuntimes(tx, done.map((p) => p.runtime.changes()));
    await sim.addDue(tx, done.flatMap((p) => [...p.due].map((dueAt) => ({ machine_id: p.machine.id, due_at: dueAt }))));
    for (const p of done) if (p.crashed.length) await sim.putInstances(tx, p.machine.id, p.crashed, { crash: 0 });
    await sim.removeInstances(tx, done.flatMap((p) => p.gone));
    await sim.putRecords(tx, done.flatMap((p) => p.changedRecords.map((r) => ({ machineId: p.machine.id, ...r }))));
  }

  /** One machine's pass, in memory: what `gpuplane agent`'s reconciler does with its plan (reconciler.ts `run`). */
  function passOf(
    machine: MachineInfo,
    current: DesiredRead,
    loaded: { containers: SimContainerRow[]; images: Map<string, number | null>; known: SimInstanceRow[]; transitions: LoadedTransitions },
    now: number,
  ): MachinePass {
    const runtime = simRuntime(machine, now, loaded);
    const desired = current.state.instances;
    const { known } = loaded;
    const silent = new Set(known.filter((r) => r.silent === 1).map((r) => r.instance_id));
    const records = new Map<number, InstanceRecord>();
    for (const r of known) {
      if (r.generation !== null) records.set(r.instance_id, { generation: r.generation, boot: r.boot ?? 0, stopped: r.stopped === 1 });
    }
    const changed = new Set<number>();
    const setRecord = (id: number, rec: InstanceRecord) => {
      records.set(id, rec);
      changed.add(id);
    };
    const pulling = new Set<number>();
    const due = new Set<number>();
    const rowOf = new Map(current.rows.map((r) => [r.id, r]));
    const ruleOf = (d: DesiredInstanceT) => effectiveRule(loaded.transitions, d.instance_id, machine.id);
    const waiting = new Set<number>();
    const waitingGates = new Set<string>();

    /**
     * Whether a boot under a `delay` or `manual` rule waits at its gate (set at the first pass that sees it: `delay`
     * N opens N seconds after the desired change, counting the provisioning delay before this pass; `manual` when
     * advanced). A gate left manual by a rule that is manual no more opens now. A stopped instance boots nothing.
     */
    const held = (d: DesiredInstanceT): boolean => {
      const rule = ruleOf(d);
      if (d.state !== 'running' || (rule.mode !== 'delay' && rule.mode !== 'manual')) return false;
      const key = gateKey(d);
      let at = runtime.gateAt(key) ?? undefined;
      const open = (t: number) => {
        const isOpen = runtime.setGate(key, t);
        if (t > now && t < MANUAL_GATE_AT) due.add(t);
        return isOpen;
      };
      let isOpen: boolean;
      if (at === undefined) isOpen = open(rule.mode === 'manual' ? MANUAL_GATE_AT : now + Math.max(0, rule.seconds - PROVISION_DELAY_S));
      else if (at >= MANUAL_GATE_AT && rule.mode !== 'manual') isOpen = open((at = now));
      else isOpen = runtime.setGate(key, at);
      if (isOpen) return false;
      waiting.add(d.instance_id);
      waitingGates.add(key);
      return true;
    };

    /** Pulls the image unless the machine has it; whether it has it now. A boot timed by a rule does not wait for it. */
    const image = (d: DesiredInstanceT): boolean => {
      const key = pullKey(d);
      if (runtime.hasImage(key)) return true;
      const rule = ruleOf(d);
      if (rule.mode !== 'default') {
        runtime.markPulled(key);
        return true;
      }
      const row = rowOf.get(d.instance_id);
      // The boot took this long in all: provisioning, then the pull (the container starts at once); a slow-pull
      // window of the machine's (a host event) sets the pull's own time.
      const seconds = rule.pullSeconds ?? Math.max(0, bootSeconds(config.seed, config.simBootSeconds, d.instance_id, row?.state_version ?? 0) - PROVISION_DELAY_S);
      const readyAt = runtime.pull(key, seconds);
      if (readyAt !== null && readyAt > now) due.add(readyAt);
      if (runtime.hasImage(key)) return true;
      pulling.add(d.instance_id);
      return false;
    };

    const create = (d: DesiredInstanceT): void => {
      runtime.create(d, d.state === 'running' ? 'running' : 'created');
      if (d.repull) runtime.dropPull(pullKey(d));
      setRecord(d.instance_id, { generation: d.generation, boot: d.boot, stopped: d.state !== 'running' });
    };

    const start = (d: DesiredInstanceT, id: string): void => {
      runtime.start(id, d);
      setRecord(d.instance_id, { generation: d.generation, boot: d.boot, stopped: false });
    };

    // The actions of reconciler.ts `run`, done at once (a pull is the only thing that takes time).
    const run = (a: Action): void => {
      switch (a.kind) {
        case 'remove':
          runtime.remove(a.containerId);
          if (a.instanceId !== null && a.reason === 'orphan') records.delete(a.instanceId);
          return;
        case 'create':
          if (!held(a.instance) && image(a.instance)) create(a.instance);
          return;
        case 'recreate':
          // The old container runs on until the new image is here.
          if (held(a.instance) || !image(a.instance)) return;
          runtime.remove(a.containerId);
          return create(a.instance);
        case 'start':
          if (held(a.instance)) return;
          return start(a.instance, a.containerId);
        case 'restart':
          runtime.stop(a.containerId);
          // Held: stopped now, started when its gate opens (the plan then asks for a start).
          if (held(a.instance)) return;
          return start(a.instance, a.containerId);
        case 'stop':
          setRecord(a.instance.instance_id, { generation: a.instance.generation, boot: records.get(a.instance.instance_id)?.boot ?? a.instance.boot, stopped: true });
          runtime.stop(a.containerId);
          return;
        case 'adopt':
          setRecord(a.instanceId, a.record);
          return;
      }
    };

    // Silent instances (faults unknown, offline) are left as they are.
    for (const a of plan({ desired, containers: runtime.list(), records, failures: new Map(), busy: silent, now, hostBootTime: 0 })) run(a);
    const crashed = known.filter((r) => r.crash === 1 && !silent.has(r.instance_id)).map((r) => r.instance_id);
    if (crashed.length) crash(runtime, desired, crashed, setRecord);
    // The agent's memory: nothing of instances no longer on the machine.
    const desiredIds = new Set(desired.map((d) => d.instance_id));
    const gone = known.filter((r) => !desiredIds.has(r.instance_id)).map((r) => r.instance_id);
    const changedRecords = [...changed].filter((id) => desiredIds.has(id) && records.has(id)).map((id) => ({ instanceId: id, ...records.get(id)! }));
    // A gate lasts while its boot waits: once passed, or when the boot is no longer wanted, it goes. Silent instances
    // keep theirs (nothing is done for them).
    for (const key of runtime.imageKeys()) {
      const id = gateInstance(key);
      if (id !== undefined && !waitingGates.has(key) && !silent.has(id)) runtime.dropPull(key);
    }
    return { machine, current, runtime, records, changedRecords, pulling, silent, crashed, gone, due, waiting };
  }

  /**
   * Pending crashes (fault `exited`): the instance's container exits; one that has none yet (still provisioning or
   * pulling) is found exited, as a container that crashed as it started.
   */
  function crash(runtime: SimRuntime, desired: DesiredInstanceT[], ids: number[], setRecord: (id: number, rec: InstanceRecord) => void): void {
    const containers = runtime.list();
    for (const id of ids) {
      const d = desired.find((x) => x.instance_id === id);
      const own = containers.filter((c) => c.instanceId === id);
      for (const c of own) if (c.status === 'running' || c.status === 'created') runtime.crash(c.id);
      if (d?.state === 'running' && own.length === 0) {
        runtime.create(d, 'exited');
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
    // Work that rents and destroys committed while the first round ran (due now: they saw this run pending, so they
    // scheduled none) gets a second round in this run, where it took a run of its own at the same time (bench
    // pg-clock under load: about half the runs). Nothing due: one statement.
    for (let round = 0; round < STEP_ROUNDS; round++) {
      const due = await sim.claimDue(tx, now, STEP_BATCH);
      if (due.length === 0) break;
      // Then the lock order of every writer (MachinesApi.lockMachine): the machines' rows, in machine order, before their
      // work rows and their instances, so a destroy there (machine row, instance, then its work row) never waits on
      // this pass. Locked and read in one statement. (A second round may take again machines this run holds.)
      const machines = await fleet.lockIdleMachines(tx, due.filter((d) => d.locked).map((d) => d.machineId));
      // Another process's pass may have taken a machine's work since it was read: `taken` is what is still due.
      const taken = await sim.takeDueOf(tx, machines.map((m) => m.id), now);
      await passes(tx, machines.filter((m) => taken.has(m.id)), now);
      // More due: the next run at once, unless none of this batch could be stepped (it would find the same machines).
      if (due.length === STEP_BATCH && machines.length > 0) return ensureJob(tx, now, now);
      if (machines.length < due.length) return ensureJob(tx, now + STEP_RETRY_S, now);
    }
    await ensureAtFirstDue(tx, { after: now });
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
      const machine = await fleet.machine(machineId, tx, { lock: true });
      await sim.takeDueOf(tx, [machineId], now);
      return passes(tx, [machine], now);
    },
  };
}

export type SimAgent = ReturnType<typeof simAgentFactory>;
