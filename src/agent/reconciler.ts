/**
 * The reconcile loop: each pass lists the machine's containers, plans (reconcile-plan.ts) and launches the actions,
 * one at a time per instance, each in the background so a long pull never holds up another instance. Passes run on
 * `trigger()`: a desired-state change, a runtime event, a finished action, or the periodic resync. They never overlap,
 * and a pass whose listing raced a finished action is thrown away and run again, so no instance is ever created twice.
 */
import type { DesiredInstanceT, DesiredVolumeT, ObservedInstanceT } from '../protocol/agent-protocol-schemas.js';
import { backoffDelay } from '../sdk/backoff.js';
import { buildContainerSpec, wantedPorts, type MachineLimits } from './container-spec.js';
import { pickHostPorts, type PortRange } from './host-ports.js';
import { observe, plan, type Action, type Failure, type InstanceRecord } from './reconcile-plan.js';
import { NameConflictError, PortInUseError, type ContainerRuntime, type RuntimeContainer } from './runtime.js';
import type { AgentLog } from './agent-log.js';
import { volumeKeeper } from './volumes.js';
import { pullProgress, type PullProgressCounter } from '../protocol/pull-progress.js';
import { STOP_NOTICE_PATH, stopNotice } from './stop-notice.js';

/** A failed action is retried after this long, doubling with each failure up to RETRY_MAX_S, jittered (sdk/backoff.ts). */
export const RETRY_FIRST_S = 5;
export const RETRY_MAX_S = 300;
/** A pull's progress is reported at most this often (and at least this often while it moves): issue 33 asks 5 s. */
export const PULL_REPORT_INTERVAL_S = 2;

export interface ReconcilerDeps {
  runtime: ContainerRuntime;
  limits: MachineLimits;
  publishIp: string;
  portRange: PortRange;
  /** What the agent remembers of each instance; the reconciler keeps it current and calls `saveRecords` on change. */
  records: Map<number, InstanceRecord>;
  saveRecords(records: ReadonlyMap<number, InstanceRecord>): void;
  /** Unix seconds. */
  now(): number;
  hostBootTime: number;
  isPortFree(port: number, proto: 'tcp' | 'udp'): Promise<boolean>;
  /** Seconds a container gets to stop after SIGTERM, unless its desired state names its own (`stop_grace_s`). */
  stopTimeoutS: number;
  log: AgentLog;
  /** Called whenever the observed state differs from the last one reported. */
  onObserved(observed: ObservedInstanceT[]): void;
  /** Called with every listing of the machine's containers (direct-ssh.ts follows the running ones). */
  onListed?(containers: readonly RuntimeContainer[]): void;
}

export function createReconciler(deps: ReconcilerDeps) {
  const { runtime, records, log } = deps;
  const owner = { machineId: deps.limits.machineId, owner: deps.limits.owner };
  let desired: DesiredInstanceT[] | null = null;
  let containers: RuntimeContainer[] = [];
  /** In-flight actions by key: the instance id, or `c:<container id>` for a container that names no instance. */
  const tasks = new Map<number | string, Promise<void>>();
  const pulling = new Set<number>();
  /** The progress of each pull under way (by instance), and the pending report of it (throttled). */
  const progress = new Map<number, PullProgressCounter>();
  let progressTimer: NodeJS.Timeout | undefined;
  /**
   * The GPUs each instance was last desired to run on, and those of the containers whose stop (SIGTERM, then the
   * grace) is under way: an outbid instance's GPUs go to the new renter at once, and the new container must not start
   * on them while the old one may still be using them for up to its grace.
   */
  const lastGpus = new Map<number, number[]>();
  const stoppingGpus = new Map<number, number[]>();
  let progressReportedAt = 0;
  const failures = new Map<number, Failure>();
  /** Host ports picked by creates in flight, until their containers show in a listing. */
  const claimed = new Set<number>();
  let portPicks: Promise<void> = Promise.resolve();
  let mutations = 0;
  let loop: Promise<void> | null = null;
  let again = false;
  let closed = false;
  let lastObserved = '';
  let idleWaiters: (() => void)[] = [];
  /** The machine's volumes (volumes.ts), where the runtime has them. */
  const volumes = runtime.volumes ? volumeKeeper({ runtime: runtime.volumes, owner, log, now: deps.now }) : null;

  /** Whether a listing succeeded since the desired state arrived: before that, nothing is known to report. */
  let listed = false;
  const observed = (): ObservedInstanceT[] | null =>
    desired === null || !listed ? null : withNotes(observe(desired, containers, records, (id) => ({ pulling: pulling.has(id), failure: failures.get(id), pull: progress.get(id)?.summary() ?? null })));
  /** A running instance's note for its renter: a volume it mounts over its size (volumes.ts). */
  const withNotes = (list: ObservedInstanceT[]): ObservedInstanceT[] => list.map((o) => {
    const d = o.state === 'running' && volumes ? desired?.find((x) => x.instance_id === o.instance_id) : undefined;
    const note = d ? volumes!.noteFor(d) : null;
    return note ? { ...o, note } : o;
  });

  function publish(): void {
    const now = observed();
    if (now === null) return;
    const text = JSON.stringify(now);
    if (text === lastObserved) return;
    lastObserved = text;
    deps.onObserved(now);
  }

  function trigger(): void {
    if (closed) return;
    if (loop) {
      again = true;
      return;
    }
    loop = (async () => {
      try {
        do {
          again = false;
          await pass();
        } while (again && !closed);
      } finally {
        loop = null;
        checkIdle();
      }
    })();
  }

  function checkIdle(): void {
    if (loop === null && tasks.size === 0 && !again) {
      const waiters = idleWaiters;
      idleWaiters = [];
      for (const w of waiters) w();
    }
  }

  async function pass(): Promise<void> {
    if (desired === null) return; // nothing is removed before the server has said what should exist
    const epoch = mutations;
    let found: RuntimeContainer[];
    try {
      found = await runtime.list(owner);
    } catch (err) {
      log.warn({ err: String((err as Error)?.message ?? err) }, 'cannot list containers; retrying at the next resync');
      return;
    }
    // An action ended while listing: the listing may predate its container. Look again rather than act on it.
    if (mutations !== epoch) {
      again = true;
      return;
    }
    containers = found;
    listed = true;
    deps.onListed?.(containers);
    for (const c of containers) for (const p of c.boundHostPorts) claimed.delete(p);
    const busy = new Set([...tasks.keys()].filter((k): k is number => typeof k === 'number'));
    const actions = plan({ desired, containers, records, failures, busy, now: deps.now(), hostBootTime: deps.hostBootTime });
    for (const a of actions) launch(a);
    publish();
    await pruneNetworks(new Set([...desired.map((d) => d.instance_id), ...busy, ...containers.flatMap((c) => (c.instanceId === null ? [] : [c.instanceId]))]));
    await volumes?.converge();
  }

  /**
   * Removes the owner's networks that no instance needs (level-triggered, as containers: a destroy's network, or one
   * left by a crash between creating a network and its container). Kept: a desired instance's (its container may be
   * about to be made), and any instance's that still has a container or an action in flight.
   */
  async function pruneNetworks(keep: ReadonlySet<number>): Promise<void> {
    let networks;
    try {
      networks = await runtime.networks(owner);
    } catch (err) {
      log.warn({ err: String((err as Error)?.message ?? err) }, 'cannot list networks; retrying at the next pass');
      return;
    }
    for (const n of networks) {
      if (n.instanceId !== null && keep.has(n.instanceId)) continue;
      log.info({ instance_id: n.instanceId, network: n.name }, 'removing network');
      await runtime.removeNetwork(n.id).catch((err: unknown) => {
        log.warn({ network: n.name, err: String((err as Error)?.message ?? err) }, 'network removal failed; retrying at the next pass');
      });
    }
  }

  function keyOf(a: Action): number | string {
    if (a.kind === 'adopt') return a.instanceId;
    if (a.kind === 'remove') return a.instanceId ?? `c:${a.containerId}`;
    return a.instance.instance_id;
  }

  function setRecord(id: number, rec: InstanceRecord | undefined): void {
    if (rec === undefined) {
      if (!records.delete(id)) return;
    } else records.set(id, rec);
    deps.saveRecords(records);
  }

  /** Whether `d` would run on a GPU another instance's stopping container still has (the pass after that stop makes it). */
  const waitsForGpus = (d: DesiredInstanceT) =>
    d.state === 'running' && [...stoppingGpus].some(([id, gpus]) => id !== d.instance_id && gpus.some((g) => d.gpu_indices.includes(g)));

  function launch(a: Action): void {
    if (a.kind === 'adopt') {
      setRecord(a.instanceId, a.record);
      return;
    }
    const key = keyOf(a);
    if (tasks.has(key)) return;
    if ((a.kind === 'create' || a.kind === 'recreate' || a.kind === 'start') && waitsForGpus(a.instance)) {
      log.info({ instance_id: a.instance.instance_id, action: a.kind }, 'waiting for a stopping container to leave its GPUs');
      return;
    }
    const instanceId = a.kind === 'remove' ? a.instanceId : a.instance.instance_id;
    const generation = a.kind === 'remove' ? null : a.instance.generation;
    log.info({ instance_id: instanceId, action: a.kind, ...('containerId' in a ? { container_id: a.containerId.slice(0, 12) } : {}) }, 'reconcile');
    const task = run(a)
      .then(() => {
        if (instanceId !== null) failures.delete(instanceId);
      })
      .catch((err: unknown) => {
        const msg = String((err as Error)?.message ?? err).slice(0, 2000);
        log.warn({ instance_id: instanceId, action: a.kind, err: msg }, 'action failed');
        if (instanceId !== null && generation !== null) {
          const attempts = (failures.get(instanceId)?.generation === generation ? failures.get(instanceId)!.attempts : 0) + 1;
          // Jittered: hosts whose pulls failed together (a registry down) do not retry them together.
          const delay = backoffDelay(attempts - 1, { firstMs: RETRY_FIRST_S * 1000, maxMs: RETRY_MAX_S * 1000 }) / 1000;
          failures.set(instanceId, { generation, error: msg, attempts, retryAt: deps.now() + delay });
        }
      })
      .finally(() => {
        tasks.delete(key);
        mutations++;
        publish();
        trigger();
        checkIdle();
      });
    tasks.set(key, task);
  }

  const stillDesired = (d: DesiredInstanceT) => desired?.some((x) => x.instance_id === d.instance_id && x.generation === d.generation) ?? false;

  /**
   * A pull's progress moved: reported at once when the last report of progress is PULL_REPORT_INTERVAL_S old, else
   * when it will be (one timer for all pulls), so a pull of many layers sends a report every few seconds, not per event.
   */
  function progressed(): void {
    if (progressTimer || closed) return;
    const wait = progressReportedAt + PULL_REPORT_INTERVAL_S - deps.now();
    if (wait <= 0) {
      progressReportedAt = deps.now();
      publish();
      return;
    }
    progressTimer = setTimeout(() => {
      progressTimer = undefined;
      progressReportedAt = deps.now();
      publish();
    }, wait * 1000);
  }

  /** The image of `d`: pulled afresh when its generation asks for it (recycle), else a local one is used. */
  async function pull(d: DesiredInstanceT): Promise<void> {
    pulling.add(d.instance_id);
    const counter = pullProgress();
    progress.set(d.instance_id, counter);
    publish();
    try {
      await runtime.ensureImage(d.image, d.docker_login, {
        fresh: d.repull === true,
        onProgress: (e) => {
          counter.add(e);
          progressed();
        },
      });
    } finally {
      pulling.delete(d.instance_id);
      if (progress.get(d.instance_id) === counter) progress.delete(d.instance_id);
    }
  }

  /** Seconds between SIGTERM and SIGKILL for `d`: the server's (the operator's setting), else the agent's own. */
  const graceOf = (d: DesiredInstanceT) => d.stop_grace_s ?? deps.stopTimeoutS;

  /**
   * Stops the container after telling it (stop-notice.ts): the notice file is written just before SIGTERM, then
   * SIGKILL follows the grace. A notice that cannot be written (a runtime without files, a container going away)
   * does not hold up the stop.
   */
  async function stopWithNotice(d: DesiredInstanceT, containerId: string, reason: string): Promise<void> {
    const grace = graceOf(d);
    stoppingGpus.set(d.instance_id, lastGpus.get(d.instance_id) ?? d.gpu_indices);
    try {
      await noticeThenStop(d, containerId, reason, grace);
    } finally {
      stoppingGpus.delete(d.instance_id);
    }
  }

  async function noticeThenStop(d: DesiredInstanceT, containerId: string, reason: string, grace: number): Promise<void> {
    if (runtime.writeFile) {
      const text = stopNotice({ instanceId: d.instance_id, reason, now: deps.now(), graceS: grace });
      await runtime.writeFile(containerId, STOP_NOTICE_PATH, text).catch((err: unknown) => {
        log.warn({ instance_id: d.instance_id, err: String((err as Error)?.message ?? err) }, 'could not write the stop notice; stopping anyway');
      });
    }
    await runtime.stop(containerId, grace);
  }

  /** A start after a stop with notice: the old notice goes (best effort: `rm` from the image; stop-notice.ts). */
  async function clearNotice(instanceId: number, containerId: string): Promise<void> {
    if (!runtime.writeFile) return;
    await runtime.exec(containerId, ['rm', '-f', STOP_NOTICE_PATH], { maxChars: 1000, timeoutS: 10 }).catch((err: unknown) => {
      log.debug({ instance_id: instanceId, err: String((err as Error)?.message ?? err) }, 'could not remove the old stop notice');
    });
  }

  async function start(d: DesiredInstanceT, containerId: string, afterStop = false): Promise<void> {
    try {
      await runtime.start(containerId);
    } catch (err) {
      // Something else took one of its host ports since it was created: make it anew, on other ports.
      if (err instanceof PortInUseError) await runtime.remove(containerId);
      throw err;
    }
    setRecord(d.instance_id, { generation: d.generation, boot: d.boot, stopped: false });
    if (afterStop) await clearNotice(d.instance_id, containerId);
  }

  async function create(d: DesiredInstanceT, pulled = false): Promise<void> {
    if (!pulled) await pull(d);
    if (!stillDesired(d)) return; // changed while pulling: the next pass decides afresh
    // One pick at a time: two creates probing the same free port at once would both take it.
    const picked = portPicks.then(async () => {
      const reserved = [...containers.flatMap((c) => c.boundHostPorts), ...claimed];
      const ports = await pickHostPorts(wantedPorts(d), deps.portRange, reserved, deps.isPortFree);
      for (const p of Object.values(ports)) claimed.add(p);
      return ports;
    });
    portPicks = picked.then(() => undefined, () => undefined);
    const hostPorts = await picked;
    let id: string;
    try {
      if (d.mounts?.length && !volumes) throw new Error('this host\'s runtime has no volumes');
      await volumes?.ensure(d);
      id = await runtime.create(buildContainerSpec(d, deps.limits, hostPorts, deps.publishIp));
    } catch (err) {
      for (const p of Object.values(hostPorts)) claimed.delete(p);
      if (err instanceof NameConflictError) return; // it exists after all: the next pass sees it
      throw err;
    }
    setRecord(d.instance_id, { generation: d.generation, boot: d.boot, stopped: d.state !== 'running' });
    if (d.state === 'running') await start(d, id);
  }

  async function run(a: Action): Promise<void> {
    switch (a.kind) {
      case 'remove':
        await runtime.remove(a.containerId);
        if (a.instanceId !== null && a.reason === 'orphan') setRecord(a.instanceId, undefined);
        return;
      case 'create':
        return create(a.instance);
      case 'recreate':
        // Pull first: the old container keeps running until the new image is here. If the pull fails, it is stopped:
        // the renter's compute billing stopped when the recreate was asked for, so it must not run on meanwhile.
        try {
          await pull(a.instance);
        } catch (err) {
          await runtime.stop(a.containerId, deps.stopTimeoutS).catch(() => undefined);
          throw err;
        }
        await runtime.remove(a.containerId);
        return create(a.instance, true);
      case 'start':
        return start(a.instance, a.containerId, records.get(a.instance.instance_id)?.stopped === true);
      case 'restart':
        await stopWithNotice(a.instance, a.containerId, 'restart: its renter asked for a reboot; it starts again at once');
        return start(a.instance, a.containerId, true);
      case 'stop':
        // Remembered first: a crash right after the stop must not leave it looking as if it exited by itself.
        setRecord(a.instance.instance_id, { generation: a.instance.generation, boot: records.get(a.instance.instance_id)?.boot ?? a.instance.boot, stopped: true });
        await stopWithNotice(a.instance, a.containerId, a.instance.stop_reason ?? 'stopped');
        return;
      case 'adopt':
        return;
    }
  }

  return {
    /** A new desired state (its volumes too, when the server sends them): failed instances are retried at once, and a pass runs. */
    setDesired(list: DesiredInstanceT[], volumeList?: DesiredVolumeT[]): void {
      volumes?.setDesired(volumeList);
      desired = list;
      for (const d of list) if (d.state === 'running' && d.gpu_indices.length) lastGpus.set(d.instance_id, d.gpu_indices);
      for (const id of lastGpus.keys()) if (!list.some((d) => d.instance_id === id)) lastGpus.delete(id);
      for (const f of failures.values()) f.retryAt = 0;
      trigger();
    },
    trigger,
    observed,
    /** The container standing for an instance now (for its logs), if any. */
    containerOf(instanceId: number): RuntimeContainer | undefined {
      const gen = desired?.find((d) => d.instance_id === instanceId)?.generation;
      const own = containers.filter((c) => c.instanceId === instanceId && c.status !== 'removing');
      return own.find((c) => c.generation === gen) ?? own[0];
    },
    /** Resolves once no pass and no action is running or due. */
    idle(): Promise<void> {
      return new Promise((resolve) => {
        idleWaiters.push(resolve);
        checkIdle();
      });
    },
    async close(): Promise<void> {
      closed = true;
      if (progressTimer) clearTimeout(progressTimer);
      await loop;
      await Promise.allSettled([...tasks.values()]);
    },
  };
}

export type Reconciler = ReturnType<typeof createReconciler>;
