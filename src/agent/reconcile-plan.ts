/**
 * The reconcile decisions, as pure functions: from the desired state, the containers that exist and what the agent
 * remembers, which actions converge the machine (`plan`), and what to report (`observe`). Level-triggered: the same
 * inputs always give the same actions, whatever happened before, so a pass after any crash or restart repairs all.
 */
import type { DesiredInstanceT, ObservedInstanceT, PullProgressT } from '../protocol/agent-protocol-schemas.js';
import type { RuntimeContainer } from './runtime.js';

/** What the agent remembers of an instance (state-store.ts): the container it made and the start it last did. */
export interface InstanceRecord {
  generation: number;
  /** The desired `boot` the container was last started (or created) for. */
  boot: number;
  /** True when the agent stopped it because `stopped` was desired: a later `running` starts it, whatever `boot` says. */
  stopped: boolean;
}

/** The last failure of an instance's action, and when to try again. */
export interface Failure {
  generation: number;
  error: string;
  attempts: number;
  retryAt: number;
}

export type Action =
  | { kind: 'remove'; instanceId: number | null; containerId: string; reason: 'orphan' | 'duplicate' }
  | { kind: 'create'; instance: DesiredInstanceT }
  | { kind: 'recreate'; instance: DesiredInstanceT; containerId: string }
  | { kind: 'start'; instance: DesiredInstanceT; containerId: string }
  | { kind: 'restart'; instance: DesiredInstanceT; containerId: string }
  | { kind: 'stop'; instance: DesiredInstanceT; containerId: string }
  | { kind: 'adopt'; instanceId: number; record: InstanceRecord };

export interface PlanInput {
  desired: DesiredInstanceT[];
  containers: RuntimeContainer[];
  records: ReadonlyMap<number, InstanceRecord>;
  failures: ReadonlyMap<number, Failure>;
  /** Instances with an action in flight: nothing more is planned for them until it ends. */
  busy: ReadonlySet<number>;
  now: number;
  /** When the host last booted, Unix seconds: a container that stopped before then was stopped by the reboot. */
  hostBootTime: number;
}

const RUNNING = new Set(['running', 'paused', 'restarting']);
const STOPPED = new Set(['exited', 'dead']);

/** The container that stands for the instance: this generation first, then a running one, then the newest. */
function rank(c: RuntimeContainer, generation: number): number[] {
  return [c.generation === generation ? 1 : 0, RUNNING.has(c.status) ? 1 : 0, c.status === 'removing' ? 0 : 1];
}

function better(a: RuntimeContainer, b: RuntimeContainer, generation: number): boolean {
  const [ra, rb] = [rank(a, generation), rank(b, generation)];
  for (let i = 0; i < ra.length; i++) if (ra[i] !== rb[i]) return ra[i] > rb[i];
  return a.id > b.id;
}

/** The containers of each instance, the chosen one first. */
export function containersByInstance(containers: RuntimeContainer[], desired: DesiredInstanceT[]): Map<number | null, RuntimeContainer[]> {
  const gen = new Map(desired.map((d) => [d.instance_id, d.generation]));
  const by = new Map<number | null, RuntimeContainer[]>();
  for (const c of containers) by.set(c.instanceId, [...(by.get(c.instanceId) ?? []), c]);
  for (const [id, list] of by) {
    const g = id === null ? -1 : (gen.get(id) ?? -1);
    list.sort((a, b) => (better(a, b, g) ? -1 : better(b, a, g) ? 1 : 0));
  }
  return by;
}

export function plan(input: PlanInput): Action[] {
  const actions: Action[] = [];
  const desiredIds = new Set(input.desired.map((d) => d.instance_id));
  const by = containersByInstance(input.containers, input.desired);

  for (const [instanceId, list] of by) {
    if (instanceId !== null && input.busy.has(instanceId)) continue;
    const wanted = instanceId !== null && desiredIds.has(instanceId);
    for (const [i, c] of list.entries()) {
      if (c.status === 'removing') continue;
      if (!wanted) actions.push({ kind: 'remove', instanceId, containerId: c.id, reason: 'orphan' });
      else if (i > 0) actions.push({ kind: 'remove', instanceId, containerId: c.id, reason: 'duplicate' });
    }
  }

  for (const d of input.desired) {
    if (input.busy.has(d.instance_id)) continue;
    const c = by.get(d.instance_id)?.[0];
    if (!c) {
      const f = input.failures.get(d.instance_id);
      if (!f || f.generation !== d.generation || input.now >= f.retryAt) actions.push({ kind: 'create', instance: d });
      continue;
    }
    if (c.status === 'removing') continue;
    const f = input.failures.get(d.instance_id);
    const backingOff = f !== undefined && f.generation === d.generation && input.now < f.retryAt;
    if (c.generation !== d.generation) {
      // A failed recreate (its pull, say) waits for its retry time like any failed action.
      if (!backingOff) actions.push({ kind: 'recreate', instance: d, containerId: c.id });
      continue;
    }
    let rec = input.records.get(d.instance_id);
    if (!rec || rec.generation !== d.generation) {
      // Nothing remembered (a lost state file): take the container as it is, without a restart nobody asked for.
      rec = { generation: d.generation, boot: d.boot, stopped: d.state === 'stopped' && !RUNNING.has(c.status) };
      actions.push({ kind: 'adopt', instanceId: d.instance_id, record: rec });
    }
    if (backingOff) continue;
    if (RUNNING.has(c.status)) {
      if (d.state === 'stopped') actions.push({ kind: 'stop', instance: d, containerId: c.id });
      else if (d.boot !== rec.boot) actions.push({ kind: 'restart', instance: d, containerId: c.id });
    } else if (d.state === 'running') {
      const neverStarted = c.status === 'created';
      const rebootedHost = c.finishedAt !== null && c.finishedAt < input.hostBootTime;
      if (neverStarted || rec.stopped || d.boot !== rec.boot || rebootedHost) {
        actions.push({ kind: 'start', instance: d, containerId: c.id });
      }
    }
  }
  return actions;
}

/** What is known of an instance beyond its container: an action in flight, or the last failure. */
export interface InstanceActivity {
  pulling: boolean;
  failure: Failure | undefined;
  /** How far the pull is, summed over its layers; null or absent before the first layer's progress. */
  pull?: PullProgressT | null;
}

/**
 * The observed state to report: one entry per desired instance that has a container, a pull, or a failure. A
 * container of an older generation (a recreate under way) is reported as it is, with its own generation.
 */
export function observe(
  desired: DesiredInstanceT[],
  containers: RuntimeContainer[],
  records: ReadonlyMap<number, InstanceRecord>,
  activity: (instanceId: number) => InstanceActivity,
): ObservedInstanceT[] {
  const by = containersByInstance(containers, desired);
  const out: ObservedInstanceT[] = [];
  for (const d of desired) {
    const c = by.get(d.instance_id)?.find((x) => x.status !== 'removing');
    const { pulling, failure, pull } = activity(d.instance_id);
    const error = failure && failure.generation === d.generation ? failure.error : null;
    const current = c !== undefined && c.generation === d.generation;
    const base = { instance_id: d.instance_id, generation: d.generation, boot: d.boot, container_id: null, exit_code: null, ports: {}, error };
    if (!current && pulling) out.push({ ...base, state: 'pulling', error: null, ...(pull ? { pull } : {}) });
    else if (!current && error !== null) out.push({ ...base, state: 'failed' });
    else if (c) {
      const boot = current ? (records.get(d.instance_id)?.boot ?? d.boot) : (records.get(d.instance_id)?.boot ?? 0);
      const seen = { ...base, generation: c.generation ?? 0, boot, container_id: c.id };
      if (RUNNING.has(c.status)) out.push({ ...seen, state: 'running', ports: c.ports });
      else if (c.status === 'created') out.push({ ...seen, state: d.state === 'running' && current ? 'created' : 'stopped' });
      else if (STOPPED.has(c.status)) {
        out.push({ ...seen, state: d.state === 'running' && current ? 'exited' : 'stopped', exit_code: c.exitCode });
      }
    }
  }
  return out.sort((a, b) => a.instance_id - b.instance_id);
}
