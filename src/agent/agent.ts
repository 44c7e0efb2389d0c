/**
 * `gpuplane agent`, the program on each GPU host (docs/AGENT-PROTOCOL.md): discovers the hardware, registers once,
 * then long-polls the machine's desired state, reconciles the containers to it, heartbeats the observed state and
 * answers log requests. Every loop survives the server being away; only a refused credential stops the agent.
 */
import {
  DESIRED_WAIT_DEFAULT_S, HEARTBEAT_DEFAULT_S, LOG_TEXT_MAX_CHARS, LOG_TAIL_MAX_LINES,
  type AgentHardwareT, type DesiredInstanceT, type LogRequestT,
} from '../protocol/agent-protocol-schemas.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { Backoff } from '../sdk/backoff.js';
import { createClient } from '../sdk/client.js';
import { GpuplaneError } from '../sdk/errors.js';
import type { FetchLike } from '../sdk/transport.js';
import type { AgentLog } from './agent-log.js';
import type { AgentSystem } from './agent-system.js';
import { selectLogLines } from './docker-log.js';
import { declaredHardware, readHardwareFile } from './hardware-file.js';
import { discoverGpus, discoveredHardware } from './hardware.js';
import { gpuSampler, GPU_TELEMETRY_DEFAULT_S, type GpuSampler } from './gpu-sampler.js';
import { ensureHostFirewall, logFirewall } from './host-firewall.js';
import { ownerId } from './owner.js';
import type { PortRange } from './host-ports.js';
import { containersByInstance } from './reconcile-plan.js';
import { createReconciler } from './reconciler.js';
import { createRequestRunner } from './agent-requests.js';
import { refuseEveryTarget, startAgentTunnel, type TunnelHandler } from './agent-tunnel.js';
import { createDirectSsh, type DirectSsh } from './direct-ssh.js';
import { createJupyterProbe } from './jupyter-probe.js';
import { AgentFatalError, ensureCredential, transient } from './registration.js';
import type { ContainerRuntime } from './runtime.js';
import { openStateDir } from './state-store.js';

/** The host ports published by default (the fleet's usual direct range). */
export const DEFAULT_PORT_RANGE: PortRange = { start: 40000, end: 40999 };
/** A periodic pass repairs what no event announced (a container changed behind the runtime's back). */
export const RESYNC_DEFAULT_S = 30;
/** Seconds a container gets to stop after SIGTERM, as `docker stop`. */
export const STOP_TIMEOUT_DEFAULT_S = 10;
/** Hardware is looked at again this often (free disk changes, drivers get upgraded). */
const HARDWARE_REFRESH_S = 600;
/** A long-poll with no reply this long after its `wait` is taken as a dead connection. */
const POLL_GRACE_S = 15;
/** Waits between failed long-polls: doubling from 1 s to this, jittered (sdk/backoff.ts). */
const POLL_RETRY_MAX_S = 30;

export interface AgentConfig {
  url?: string;
  apiKey?: string;
  stateDir: string;
  hardwareFile?: string;
  publicIp?: string;
  /** Host ports to publish on; default: the hardware file's, else DEFAULT_PORT_RANGE. */
  portRange?: PortRange;
  /** Address published ports are bound on. @default '0.0.0.0' */
  publishIp?: string;
  /** @default HEARTBEAT_DEFAULT_S */
  heartbeatS?: number;
  /** @default RESYNC_DEFAULT_S */
  resyncS?: number;
  /**
   * Seconds between GPU samples (gpu-sampler.ts), sent with the heartbeats; 0: none. Discovered hardware only (a
   * declared machine may have no nvidia-smi to ask). @default GPU_TELEMETRY_DEFAULT_S
   */
  gpuTelemetryS?: number;
  /** @default DESIRED_WAIT_DEFAULT_S */
  waitS?: number;
  /** @default STOP_TIMEOUT_DEFAULT_S */
  stopTimeoutS?: number;
  /** Processes and threads per container. @default PIDS_LIMIT_DEFAULT */
  pidsLimit?: number;
  /** A container's log rotates at this size, MiB. @default LOG_MAX_SIZE_MB_DEFAULT */
  logMaxSizeMb?: number;
  /** Rotated log files kept per container. @default LOG_MAX_FILES_DEFAULT */
  logMaxFiles?: number;
  /** Whether the agent keeps the host firewall rule in place (host-firewall.ts). @default true */
  hostFirewall?: boolean;
  /**
   * Run on a host whose storage driver cannot limit a container's disk; the hardware then says `disk_limit: false`.
   * Without it such an agent refuses to start (issue 29 item 14: no machine is offered with a `disk` it cannot hold).
   * @default false
   */
  allowUnlimitedDisk?: boolean;
  agentVersion: string;
  /** Whether the agent keeps its tunnel to the server (agent-tunnel.ts). @default true */
  tunnel?: boolean;
  /** The tunnel's reconnect waits, ms (tests shorten them). @default { firstMs: 1000, maxMs: 30000 } */
  tunnelBackoff?: { firstMs: number; maxMs: number };
}

/** What the agent hands its data plane when it starts it (AgentDeps.dataPlane). */
export interface AgentDataPlaneContext {
  machineId: number;
  /** The owner label of this agent's containers (owner.ts). */
  owner: string;
  stateDir: string;
  runtime: ContainerRuntime;
  log: AgentLog;
  /** The instances of the latest desired state (empty until the first one arrives). */
  desired(): DesiredInstanceT[];
  /** Called with every new desired state (a key attached or detached changes it). */
  onDesired(listener: (instances: DesiredInstanceT[]) => void): void;
}

/** The streams the tunnel brings are served by this: the instances' SSH endpoints, ports, rsync (issue 31). */
export interface AgentDataPlane {
  handle: TunnelHandler;
  close?(): Promise<void> | void;
}

export interface AgentDeps {
  runtime: ContainerRuntime;
  system: AgentSystem;
  log: AgentLog;
  fetch?: FetchLike;
  /** Starts the data plane once the machine is known; without it, the tunnel refuses every stream (404). */
  dataPlane?: (ctx: AgentDataPlaneContext) => AgentDataPlane;
}

export interface RunningAgent {
  machineId: number;
  hardware: AgentHardwareT;
  /** Stops every loop; containers are left as they are. */
  stop(): Promise<void>;
  /** Settles when the agent stops: rejects with AgentFatalError when it had to (its credential was refused). */
  done: Promise<void>;
}

async function detectHardware(config: AgentConfig, deps: AgentDeps, dataRoot: string): Promise<AgentHardwareT> {
  // Asked each time: a create the daemon refused a size for turns it off (runtime.ts RuntimeInfo).
  const { storageSizeLimit } = await deps.runtime.info();
  return { ...(await hostHardware(config, deps, dataRoot)), disk_limit: storageSizeLimit };
}

async function hostHardware(config: AgentConfig, deps: AgentDeps, dataRoot: string): Promise<AgentHardwareT> {
  const host = deps.system.hostFacts();
  const file = config.hardwareFile ? readHardwareFile(config.hardwareFile) : undefined;
  const fromFile = file?.direct_port_start !== undefined && file.direct_port_end !== undefined
    ? { start: file.direct_port_start, end: file.direct_port_end }
    : undefined;
  const portRange = config.portRange ?? fromFile ?? DEFAULT_PORT_RANGE;
  const publicIp = config.publicIp ?? file?.public_ipaddr ?? host.firstIpv4 ?? '127.0.0.1';
  let disk: number;
  try {
    disk = await deps.system.freeDiskGb(dataRoot);
  } catch {
    // The agent may run where the runtime's data root is not visible (in a container of its own).
    disk = await deps.system.freeDiskGb('/');
  }
  const addr = { publicIp, portRange };
  if (file) return declaredHardware(file, host, disk, addr);
  return discoveredHardware(await discoverGpus(deps.system.exec), host, disk, addr);
}

export async function startAgent(config: AgentConfig, deps: AgentDeps): Promise<RunningAgent> {
  const { runtime, system, log } = deps;
  const stopping = new AbortController();
  const state = openStateDir(config.stateDir);
  if (config.url === undefined && state.readCredentials() === undefined) {
    throw new AgentFatalError('no server URL: pass --url (or GPUPLANE_URL) on the first start');
  }
  const info = await runtime.info();
  if (!info.storageSizeLimit && config.allowUnlimitedDisk !== true) {
    throw new AgentFatalError(`the container runtime's storage driver (${info.storageDriver}) cannot limit a container's disk, so a renter `
      + 'could fill this host\'s disk: put Docker\'s data root on xfs mounted with pquota (docs/HOST-SECURITY.md), or pass '
      + '--allow-unlimited-disk to offer the machine anyway, shown as disk_limit false');
  }
  // Before any container of ours can exist (and before registering, so the first heartbeat is not held up by it), and
  // again with each hardware check: a firewall reload may have dropped the rule.
  const guardHost = async () => {
    if (config.hostFirewall !== false) logFirewall(log, await ensureHostFirewall(system.exec));
  };
  await guardHost();
  let hardware = await detectHardware(config, deps, info.dataRoot);
  log.info({ gpu_name: hardware.gpu_name, num_gpus: hardware.num_gpus, declared: hardware.hardware_declared }, 'hardware');
  const cred = await ensureCredential({
    state, url: config.url, apiKey: config.apiKey, hardware, agentVersion: config.agentVersion,
    randomId: system.randomId, log, signal: stopping.signal, fetch: deps.fetch,
  });
  const client = createClient({ url: cred.url, apiKey: cred.machineKey, fetch: deps.fetch });
  const owner = { machineId: cred.machineId, owner: ownerId(cred.registrationId) };
  void runtime.unowned?.(cred.machineId).then((unowned) => {
    if (unowned.length > 0) {
      log.warn({ containers: unowned.slice(0, 20), count: unowned.length },
        'containers carry this machine id but no owner label (made before owner labels): left alone; see docs/HOST-SECURITY.md');
    }
  }, () => undefined);
  const host = system.hostFacts();
  const waitS = config.waitS ?? DESIRED_WAIT_DEFAULT_S;
  let heartbeatS = config.heartbeatS ?? HEARTBEAT_DEFAULT_S;

  let fail!: (err: Error) => void;
  let finish!: () => void;
  const done = new Promise<void>((resolve, reject) => ([finish, fail] = [resolve, reject]));
  done.catch(() => {}); // observed by the caller through `done`; never an unhandled rejection here
  const fatal = (err: unknown) => {
    if (stopping.signal.aborted) return;
    const e = err as GpuplaneError;
    fail(new AgentFatalError(`the server refused this machine's credential (${e.msg}); the machine was deleted or its key revoked. `
      + `To register again, remove ${state.dir}/agent.json and start with --api-key`));
    void stop();
  };
  const refused = (err: unknown) => err instanceof GpuplaneError && err.status === 401;

  // --- status: heartbeat and observed state -------------------------------------------------------------
  let desiredVersion: number | null = null;
  let pendingHardware: AgentHardwareT | undefined = hardware;
  let statusInFlight: Promise<void> | null = null;
  let statusAgain = false;
  let heartbeatTimer: NodeJS.Timeout | undefined;
  let statusFailing = false;

  // Issue 33: the GPUs sampled at their own interval; each heartbeat carries the latest sample, and a change of health
  // reports at once.
  const telemetryS = config.gpuTelemetryS ?? GPU_TELEMETRY_DEFAULT_S;
  const gpus: GpuSampler | undefined = hardware.hardware_declared || telemetryS === 0 ? undefined : gpuSampler({
    exec: system.exec,
    uptimeS: () => system.now() - system.hostBootTime(),
    indices: hardware.gpus.map((g) => g.index),
    intervalS: telemetryS,
    onHealthChange: () => sendStatus(),
    warn: (msg) => log.warn({}, msg),
  });

  // Issue 32: whether each running Jupyter instance's image has Jupyter, told in the report (jupyter-probe.ts).
  const jupyterProbe = createJupyterProbe({ runtime, log, onMissing: () => sendStatus() });

  /** Set once the data plane is up (below); the reconcile hands it every listing. */
  let directSsh: DirectSsh | undefined;
  const reconciler = createReconciler({
    runtime,
    limits: {
      machineId: cred.machineId,
      owner: owner.owner,
      pidsLimit: config.pidsLimit,
      logMaxSizeMb: config.logMaxSizeMb,
      logMaxFiles: config.logMaxFiles,
      cpuCores: Math.min(hardware.cpu_cores, host.cpuCores),
      ramMb: Math.min(hardware.cpu_ram, host.ramMb),
      // Declared hardware is for hosts without the NVIDIA runtime: there is no driver to hand devices to.
      gpuDevices: !hardware.hardware_declared,
      publicIp: hardware.public_ipaddr,
    },
    publishIp: config.publishIp ?? '0.0.0.0',
    portRange: { start: hardware.direct_port_start, end: hardware.direct_port_end },
    records: state.readRecords(),
    saveRecords: (r) => state.writeRecords(r),
    now: system.now,
    hostBootTime: system.hostBootTime(),
    isPortFree: (port, proto) => system.isPortFree(config.publishIp ?? '0.0.0.0', port, proto),
    stopTimeoutS: config.stopTimeoutS ?? STOP_TIMEOUT_DEFAULT_S,
    log,
    onObserved: () => sendStatus(),
    onListed: (containers) => directSsh?.sync(containers),
  });

  function scheduleHeartbeat(): void {
    clearTimeout(heartbeatTimer);
    if (!stopping.signal.aborted) heartbeatTimer = setTimeout(sendStatus, heartbeatS * 1000);
  }

  function sendStatus(): void {
    if (stopping.signal.aborted) return;
    if (statusInFlight) {
      statusAgain = true;
      return;
    }
    const listed = reconciler.observed();
    // Nothing to report until the containers were listed once: an empty list would tell the server they are gone.
    if (listed === null) return scheduleHeartbeat();
    const observed = jupyterProbe.annotate(listed, desiredInstances);
    statusInFlight = (async () => {
      const hw = pendingHardware;
      const gpu = gpus?.take();
      try {
        const r = await client.agent.status({
          agent_version: config.agentVersion, desired_version: desiredVersion, observed, ...(hw ? { hardware: hw } : {}),
          ...(gpu ? { gpu_telemetry: gpu } : {}),
        });
        if (pendingHardware === hw) pendingHardware = undefined;
        if (statusFailing) log.info({}, 'status reports go through again');
        statusFailing = false;
        if (r.heartbeat_interval !== undefined) heartbeatS = r.heartbeat_interval;
        // The long-poll may have died without an error: the heartbeat says there is something newer.
        if (r.desired_version !== desiredVersion) wakePoll();
      } catch (err) {
        if (gpu) gpus?.giveBack(gpu);
        if (refused(err)) return fatal(err);
        if (!statusFailing) log.warn({ err: (err as Error).message }, 'status report failed; retrying with the next heartbeat');
        statusFailing = true;
      }
    })().finally(() => {
      statusInFlight = null;
      if (statusAgain) {
        statusAgain = false;
        sendStatus();
      } else scheduleHeartbeat();
    });
  }

  // --- the tunnel: the server's streams to this machine's containers, served by the data plane -----------
  let desiredInstances: DesiredInstanceT[] = [];
  const desiredListeners: ((instances: DesiredInstanceT[]) => void)[] = [];
  const dataPlane = deps.dataPlane?.({
    machineId: cred.machineId, owner: owner.owner, stateDir: state.dir, runtime, log,
    desired: () => desiredInstances,
    onDesired: (listener) => void desiredListeners.push(listener),
  });
  const tunnel = config.tunnel === false ? undefined : startAgentTunnel({
    url: cred.url, machineKey: cred.machineKey, handler: dataPlane?.handle ?? refuseEveryTarget, log, backoff: config.tunnelBackoff,
  });
  // Direct SSH (ssh_direct, jupyter_direct): the agent holds each SSH instance's 22/tcp host port itself and serves it
  // as the tunnel's `ssh` target, so any image is reachable directly (direct-ssh.ts).
  directSsh = dataPlane ? createDirectSsh({ handle: dataPlane.handle, log }) : undefined;

  // Renters' execute and snapshot requests (agent-requests.ts).
  const requests = createRequestRunner({ runtime, client, owner, log });

  // --- desired state: the long-poll ---------------------------------------------------------------------
  let pollAbort: AbortController | null = null;
  let woken = false;
  function wakePoll(): void {
    woken = true;
    pollAbort?.abort();
  }

  async function pollLoop(): Promise<void> {
    const retry = new Backoff({ firstMs: 1000, maxMs: POLL_RETRY_MAX_S * 1000 });
    while (!stopping.signal.aborted) {
      const ctl = (pollAbort = new AbortController());
      const deadline = setTimeout(() => ctl.abort(), (waitS + POLL_GRACE_S) * 1000);
      try {
        const r = await client.agent.desired({ ...(desiredVersion !== null ? { after: desiredVersion } : {}), wait: desiredVersion === null ? 0 : waitS }, ctl.signal);
        retry.reset();
        if (r.version !== desiredVersion || desiredVersion === null) {
          desiredVersion = r.version;
          log.info({ version: r.version, instances: r.instances.length }, 'desired state');
          reconciler.setDesired(r.instances, r.volumes);
          desiredInstances = r.instances;
          for (const listener of desiredListeners) {
            try {
              listener(r.instances);
            } catch (err) {
              log.warn({ err: (err as Error).message }, 'the data plane failed to take the new desired state');
            }
          }
          sendStatus();
        }
        answerLogRequests(r.log_requests, r.instances);
        requests.handle(r);
      } catch (err) {
        if (stopping.signal.aborted) break;
        if (woken) {
          woken = false;
          continue;
        }
        if (refused(err)) return fatal(err);
        const waitMs = retry.next();
        if (!transient(err) && !(err instanceof GpuplaneError && err.error === 'aborted')) {
          log.warn({ err: (err as Error).message }, 'desired-state request refused');
        } else log.warn({ err: (err as Error).message, retry_in_s: Math.round(waitMs) / 1000 }, 'desired-state request failed; retrying');
        // A wake-up or a stop aborts ctl and ends the pause early.
        await sleep(waitMs, undefined, { signal: ctl.signal }).catch(() => undefined);
        woken = false;
      } finally {
        clearTimeout(deadline);
      }
    }
  }

  // --- log requests -------------------------------------------------------------------------------------
  const answered = new Set<string>();
  const answering = new Set<string>();
  function answerLogRequests(requests: LogRequestT[], desired: DesiredInstanceT[]): void {
    const listed = new Set(requests.map((r) => r.request_id));
    for (const id of answered) if (!listed.has(id)) answered.delete(id);
    for (const r of requests) {
      if (answered.has(r.request_id) || answering.has(r.request_id)) continue;
      answering.add(r.request_id);
      void answerLog(r, desired)
        .then(() => answered.add(r.request_id))
        .catch((err) => {
          // Gone on the server (expired, or not this machine's): nothing more to do for it.
          if (err instanceof GpuplaneError && err.status === 404) answered.add(r.request_id);
          else log.warn({ request_id: r.request_id, err: (err as Error).message }, 'log answer failed; retrying with the next desired state');
        })
        .finally(() => answering.delete(r.request_id));
    }
  }

  async function answerLog(r: LogRequestT, desired: DesiredInstanceT[]): Promise<void> {
    const c = containersByInstance(await runtime.list(owner), desired).get(r.instance_id)?.find((x) => x.status !== 'removing');
    const body = c
      ? { text: selectLogLines(await runtime.logs(c.id, r.filter ? LOG_TAIL_MAX_LINES : (r.tail ?? LOG_TAIL_MAX_LINES)), r.tail, r.filter, LOG_TEXT_MAX_CHARS) }
      : { text: '', error: `instance ${r.instance_id} has no container on this machine` };
    await client.agent.answerLogs(r.request_id, body);
  }

  // --- hardware refresh, runtime events, resync ---------------------------------------------------------
  const hardwareTimer = setInterval(() => {
    void guardHost();
    void detectHardware(config, deps, info.dataRoot).then(
      (hw) => {
        if (JSON.stringify(hw) === JSON.stringify(hardware)) return;
        hardware = pendingHardware = hw;
        sendStatus();
      },
      (err) => log.warn({ err: (err as Error).message }, 'hardware check failed; keeping the last one'),
    );
  }, HARDWARE_REFRESH_S * 1000);
  const unwatch = runtime.watch?.(owner, () => reconciler.trigger());
  const resyncTimer = setInterval(() => reconciler.trigger(), (config.resyncS ?? RESYNC_DEFAULT_S) * 1000);

  gpus?.start();
  sendStatus();
  const polling = pollLoop();

  async function stop(): Promise<void> {
    if (stopping.signal.aborted) return;
    stopping.abort();
    pollAbort?.abort();
    clearTimeout(heartbeatTimer);
    clearInterval(hardwareTimer);
    clearInterval(resyncTimer);
    gpus?.stop();
    unwatch?.();
    await polling;
    await statusInFlight;
    await tunnel?.stop();
    directSsh?.close();
    await dataPlane?.close?.();
    await reconciler.close();
    finish();
  }

  return { machineId: cred.machineId, hardware, stop, done };
}
