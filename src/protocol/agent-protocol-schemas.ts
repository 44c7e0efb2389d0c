/**
 * The agent <-> server protocol (docs/AGENT-PROTOCOL.md): every request and reply, as TypeBox schemas. Schema-only
 * on purpose: it imports nothing but `typebox`, so the server's routes validate with it, the SDK takes its types with
 * `import type`, and the agent (src/agent/) uses it without pulling in any server code.
 *
 * Bodies the agent sends are closed (`additionalProperties: false`): a typo is a 400, not a silently lost field.
 * Replies the server sends are open: an older agent ignores fields a newer server adds. So a new agent field must be
 * optional and reach the server's schema first; a new server field needs nothing.
 */
import { Type, type Static, type TSchema } from 'typebox';

/** The highest GPU count one machine may report (the fleet's own limit). */
export const AGENT_MAX_GPUS = 64;
/** Instances one machine may run at once: at most one per GPU, plus room for GPU-less ones (CPU-only rentals). */
export const AGENT_MAX_INSTANCES = 256;
/** The longest a desired-state long-poll may be held, seconds; the server caps `wait` at this. */
export const DESIRED_WAIT_MAX_S = 60;
/** How long the agent holds a long-poll by default: under the 60 s idle timeout of common proxies. */
export const DESIRED_WAIT_DEFAULT_S = 25;
/** Heartbeat interval the agent uses unless the server's status reply names another, seconds. */
export const HEARTBEAT_DEFAULT_S = 10;
/** A log answer is cut to its last this-many characters. */
export const LOG_TEXT_MAX_CHARS = 1_000_000;
/** The most lines a log request may ask for (the `request_logs` route's own limit). */
export const LOG_TAIL_MAX_LINES = 100_000;
/** A command's output is cut to its first this-many characters. */
export const COMMAND_OUTPUT_MAX_CHARS = 1_000_000;
/** Words of a command (`execute`). */
export const COMMAND_MAX_WORDS = 64;

const Str = (max: number, min = 0) => Type.String({ minLength: min, maxLength: max });
const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);
const InstanceId = Type.Integer({ minimum: 1, maximum: 2_147_483_647 });
const Counter = Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER });
/** A container port as Docker names it: `22/tcp`, `8081/udp`. */
export const CONTAINER_PORT_PATTERN = '^[0-9]{1,5}/(tcp|udp)$';
const ContainerPort = Type.String({ pattern: CONTAINER_PORT_PATTERN });
const Ipv4 = Type.String({ pattern: '^\\d{1,3}(\\.\\d{1,3}){3}$' });
const Port = Type.Integer({ minimum: 1, maximum: 65535 });

/** One GPU as `nvidia-smi` (or the hardware file) describes it. Unknown values (`[N/A]`) are null. */
export const AgentGpu = Type.Object(
  {
    /** nvidia-smi's index: what `gpu_indices` of a desired instance refers to. */
    index: Type.Integer({ minimum: 0, maximum: AGENT_MAX_GPUS - 1 }),
    /** The product name as the driver reports it, e.g. `NVIDIA GeForce RTX 4090`. */
    name: Str(128, 1),
    uuid: Type.Union([Str(128, 1), Type.Null()]),
    /** VRAM, MB (MiB, as nvidia-smi counts). */
    gpu_ram: Nullable(Type.Number({ minimum: 0, maximum: 1_048_576 })),
    /** Highest PCIe generation of the GPU in this slot (`pcie.link.gen.max`). */
    pci_gen: Nullable(Type.Integer({ minimum: 1, maximum: 10 })),
    /** Widest PCIe link of the GPU in this slot (`pcie.link.width.max`), lanes. */
    pcie_width: Nullable(Type.Integer({ minimum: 1, maximum: 64 })),
    /** Power limit, W (`power.limit`). */
    gpu_max_power: Nullable(Type.Number({ minimum: 0, maximum: 10_000 })),
    /** CUDA compute capability × 100 (8.9 → 890), the offer field's unit. */
    compute_cap: Nullable(Type.Integer({ minimum: 0, maximum: 10_000 })),
  },
  { additionalProperties: false },
);

/**
 * The machine's hardware in the offer's field names and units. `hardware_declared` says it came from the host's
 * `--hardware` file rather than from discovery: such a machine is never `verified`.
 */
export const AgentHardware = Type.Object(
  {
    /** Marketplace name of the GPU model (`RTX 4090`, `A100 SXM4`, `H100 SXM`). */
    gpu_name: Str(64, 1),
    num_gpus: Type.Integer({ minimum: 1, maximum: AGENT_MAX_GPUS }),
    /** VRAM per GPU, MB (the smallest GPU's when they differ). */
    gpu_ram: Type.Number({ minimum: 0, maximum: 1_048_576 }),
    gpus: Type.Array(AgentGpu, { minItems: 1, maxItems: AGENT_MAX_GPUS }),
    /** e.g. `550.54.14`. */
    driver_version: Type.String({ pattern: '^\\d{1,4}(\\.\\d{1,4}){1,2}$' }),
    /** Newest CUDA version the driver supports (nvidia-smi's "CUDA Version"), e.g. 12.4. */
    cuda_max_good: Type.Number({ minimum: 0, maximum: 100 }),
    /** Lowest of the GPUs', × 100. */
    compute_cap: Nullable(Type.Integer({ minimum: 0, maximum: 10_000 })),
    pci_gen: Nullable(Type.Integer({ minimum: 1, maximum: 10 })),
    /** Host-to-GPU bandwidth per GPU, GB/s, from the PCIe generation and width. */
    pcie_bw: Nullable(Type.Number({ minimum: 0, maximum: 1000 })),
    gpu_max_power: Nullable(Type.Number({ minimum: 0, maximum: 10_000 })),
    cpu_name: Str(200, 1),
    /** Logical cores. */
    cpu_cores: Type.Integer({ minimum: 1, maximum: 4096 }),
    /** `amd64` or `arm64`. */
    cpu_arch: Str(32, 1),
    /** RAM, MB. */
    cpu_ram: Type.Number({ minimum: 1, maximum: 1e9 }),
    /** Free space of the container runtime's data root, GB. */
    disk_space: Type.Number({ minimum: 0, maximum: 1e8 }),
    hostname: Str(255, 1),
    /** The address renters connect to; it may be a NAT's, so it comes from configuration. */
    public_ipaddr: Ipv4,
    /** The host ports the agent publishes containers' ports on: `direct_port_start`..`direct_port_end`, inclusive. */
    direct_port_start: Port,
    direct_port_end: Port,
    hardware_declared: Type.Boolean(),
    /**
     * Whether the runtime enforces each container's `disk` (a storage driver with a size limit: overlay2 on xfs with
     * pquota, btrfs, zfs). False only when the host's operator let the agent run without one (`--allow-unlimited-disk`):
     * a container can then fill the host's disk. Absent from agents before it. Measured, never declared.
     */
    disk_limit: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);

/** `POST /api/v0/machines/register/`, with the host's API key. */
export const RegisterBody = Type.Object(
  {
    /**
     * Chosen by the agent once and kept in its state directory before the first attempt, so a retried registration
     * (the reply was lost) names the same machine instead of making a second one.
     */
    registration_id: Type.String({ pattern: '^[A-Za-z0-9_-]{16,64}$' }),
    agent_version: Str(64, 1),
    hardware: AgentHardware,
  },
  { additionalProperties: false },
);

/** The machine credential: shown once; the server keeps only its hash. */
export const RegisterReply = Type.Object(
  {
    success: Type.Literal(true),
    machine_id: InstanceId,
    machine_key: Type.String({ minLength: 16, maxLength: 256 }),
  },
  { additionalProperties: true },
);

/** `{"22/tcp": [{"HostIp": "0.0.0.0", "HostPort": "40001"}]}`: the instance's `ports` field, as the vastai client reads it. */
export const PortMap = Type.Record(
  Type.String({ pattern: CONTAINER_PORT_PATTERN }),
  Type.Array(Type.Object({ HostIp: Str(64), HostPort: Type.String({ pattern: '^[0-9]{1,5}$' }) }, { additionalProperties: false }), { maxItems: 4 }),
  { additionalProperties: false },
);

/**
 * What the agent sees of one desired instance:
 * - `pulling`: fetching the image, no container yet;
 * - `created`: the container exists and has not run yet;
 * - `running`;
 * - `exited`: it stopped by itself while it should run (`exit_code` says how); the agent leaves it until the next
 *   `boot`;
 * - `stopped`: it is not running, as desired;
 * - `failed`: no container could be made for this `generation` (`error` says why); the agent retries.
 * An instance with no entry has no container (yet).
 */
export const ObservedState = Type.Union([
  Type.Literal('pulling'),
  Type.Literal('created'),
  Type.Literal('running'),
  Type.Literal('exited'),
  Type.Literal('stopped'),
  Type.Literal('failed'),
]);

/** How far an image pull is (src/protocol/pull-progress.ts sums Docker's per-layer events into it). */
export const PullProgress = Type.Object(
  {
    phase: Type.Union([Type.Literal('downloading'), Type.Literal('extracting')]),
    /** Bytes of the phase done, over every layer that needs it. */
    done: Counter,
    /** Bytes of the layers whose size is known so far (a layer's size is known once its download starts). */
    total: Counter,
  },
  { additionalProperties: false },
);

export const ObservedInstance = Type.Object(
  {
    instance_id: InstanceId,
    /** The desired `generation` this container was made for. */
    generation: Counter,
    /** The desired `boot` the container was last started for. */
    boot: Counter,
    state: ObservedState,
    container_id: Type.Union([Type.String({ pattern: '^[A-Za-z0-9_.-]{1,128}$' }), Type.Null()]),
    /** Set while `exited` (and after a stop): the main process's exit status. */
    exit_code: Type.Union([Type.Integer({ minimum: -2_147_483_648, maximum: 2_147_483_647 }), Type.Null()]),
    /** The real port mapping while running; `{}` otherwise. */
    ports: PortMap,
    /** Why the last action failed (pull, create, start), or null. Never holds a secret. */
    error: Type.Union([Str(2000), Type.Null()]),
    /**
     * While `pulling`: how far, summed over the image's layers (Docker's per-layer progress): bytes downloaded of the
     * layers' total so far, then bytes extracted. Absent before the first progress and from agents before it (issue 33).
     */
    pull: Type.Optional(PullProgress),
    /**
     * `jupyter` only, while running (issue 32; absent from agents before it): true when the image has no `jupyter` on
     * its PATH, so the entrypoint started none (SSH and onstart still run). The instance's `status_msg` says so.
     */
    jupyter_missing: Type.Optional(Type.Boolean()),
    /**
     * While running: what its renter should know of it (issue 33: a volume it mounts holds more than its size, on a host
     * that cannot enforce one). The instance's `status_msg` says it. Absent from agents before it.
     */
    note: Type.Optional(Str(2000)),
  },
  { additionalProperties: false },
);

/**
 * One GPU's sample (issue 33, telemetry helper): `nvidia-smi --query-gpu` read at the agent's telemetry interval. Units
 * as nvidia-smi gives them; null where the GPU or driver cannot say (`[N/A]`). Compact on purpose: every heartbeat of
 * every machine may carry one per GPU (the 10,000-agent bench measured no cost from it against a same-day baseline:
 * docs/PERFORMANCE.md).
 */
export const GpuSample = Type.Object(
  {
    index: Type.Integer({ minimum: 0, maximum: AGENT_MAX_GPUS - 1 }),
    /** `utilization.gpu`, percent of the last sample period a kernel ran. */
    util: Nullable(Type.Number({ minimum: 0, maximum: 100 })),
    /** `utilization.memory`, percent of the period device memory was read or written (memory bandwidth in use). */
    mem_util: Nullable(Type.Number({ minimum: 0, maximum: 100 })),
    /** `memory.used` and `memory.total`, MiB. */
    mem_used: Nullable(Type.Number({ minimum: 0, maximum: 1_048_576 })),
    mem_total: Nullable(Type.Number({ minimum: 0, maximum: 1_048_576 })),
    /** `temperature.gpu`, °C. */
    temp: Nullable(Type.Number({ minimum: -100, maximum: 300 })),
    /** `power.draw`, W. */
    power: Nullable(Type.Number({ minimum: 0, maximum: 10_000 })),
    /** `ecc.errors.uncorrected.volatile.total`: uncorrectable ECC errors since the driver loaded (null: no ECC). */
    ecc_uncorrected: Nullable(Counter),
    /** The last critical Xid the kernel logged for this GPU within the agent's hold time, or null. */
    xid: Nullable(Type.Integer({ minimum: 0, maximum: 100_000 })),
    /** Why this GPU cannot be rented now (`GPU is lost`, `Xid 79: GPU has fallen off the bus`), or null: healthy. */
    fault: Nullable(Str(300)),
  },
  { additionalProperties: false },
);

/**
 * The machine's GPUs as last sampled. `nvml_error`: nvidia-smi could not read any GPU (`Failed to initialize NVML:
 * Driver/library version mismatch`, the driver not loaded): every GPU of the machine is then unusable.
 */
export const GpuTelemetry = Type.Object(
  {
    nvml_error: Nullable(Str(300)),
    gpus: Type.Array(GpuSample, { maxItems: AGENT_MAX_GPUS }),
  },
  { additionalProperties: false },
);

/**
 * `PUT /api/v0/agent/status/`, with the machine key: the heartbeat, with the whole observed state every time (level,
 * not edge: a lost report is repaired by the next one). `hardware` after each agent start and when it changes.
 */
export const StatusBody = Type.Object(
  {
    agent_version: Str(64, 1),
    /** The desired-state version the agent last received (null before the first). */
    desired_version: Type.Union([Counter, Type.Null()]),
    observed: Type.Array(ObservedInstance, { maxItems: AGENT_MAX_INSTANCES }),
    hardware: Type.Optional(AgentHardware),
    /** The latest GPU sample, when one was taken since the last report (absent from agents before issue 33). */
    gpu_telemetry: Type.Optional(GpuTelemetry),
  },
  { additionalProperties: false },
);

export const StatusReply = Type.Object(
  {
    success: Type.Literal(true),
    /** The machine's current desired-state version: when it is not the agent's, the agent fetches it at once. */
    desired_version: Counter,
    /** Seconds until the next heartbeat is due; the agent uses it when given. */
    heartbeat_interval: Type.Optional(Type.Number({ minimum: 1, maximum: 3600 })),
    /**
     * True while reported hardware waits to describe the machine: it had instances when it came, and renters keep
     * what they rented until the machine is free (only the address and port range change at once).
     */
    hardware_pending: Type.Optional(Type.Literal(true)),
  },
  { additionalProperties: true },
);

/** Registry credentials for a private image: sent only to the agent of the machine that runs the instance. */
export const DockerLogin = Type.Object(
  {
    username: Str(512, 1),
    password: Str(4096, 1),
    /** Registry host, e.g. `ghcr.io`; `docker.io` for Docker Hub. */
    server: Str(512, 1),
  },
  { additionalProperties: true },
);

/**
 * One live volume of the machine (issue 33 item 2): a Docker volume the agent makes, labelled as its own, kept while it
 * is listed (whether or not an instance mounts it) and removed with its data once it is not (never while a container
 * uses it). `size_gb`: the renter's size, a quota where the storage driver takes one, else the agent's accounting.
 */
export const DesiredVolume = Type.Object(
  {
    volume_id: InstanceId,
    size_gb: Type.Number({ exclusiveMinimum: 0, maximum: 1e8 }),
  },
  { additionalProperties: true },
);

/** Where an instance mounts a volume of its machine: an absolute path inside the container. */
export const VolumeMount = Type.Object(
  {
    volume_id: InstanceId,
    mount_path: Type.String({ minLength: 2, maxLength: 1024, pattern: '^/' }),
  },
  { additionalProperties: true },
);

/** One instance the machine must run (or keep stopped). An instance not in the list must not exist on the machine. */
export const DesiredInstance = Type.Object(
  {
    instance_id: InstanceId,
    state: Type.Union([Type.Literal('running'), Type.Literal('stopped')]),
    /**
     * Bumped whenever the container must be made anew (recycle, update of image/args/env/onstart): the agent removes
     * the old container, with its disk, and creates one from this spec.
     */
    generation: Counter,
    /**
     * True when this generation's container is made from a freshly pulled image even if the host has the image
     * (recycle). Absent or false: a local image is used as it is.
     */
    repull: Type.Optional(Type.Boolean()),
    /**
     * Bumped on every start and reboot the renter asks for: the agent (re)starts the container when `boot` is above
     * the one it last started it for. A container that exited by itself stays `exited` until then.
     */
    boot: Counter,
    image: Str(512, 1),
    docker_login: Type.Union([DockerLogin, Type.Null()]),
    /**
     * `args`: the image's own entrypoint, with `args` as its command (null: the image's command); `onstart` unused.
     * `ssh` and `jupyter`: the agent's entrypoint writes `ssh_keys` to /root/.ssh/authorized_keys, starts sshd when the
     * image has one, runs `onstart`, and keeps the container alive (the spec: the application starts only if onstart
     * starts it).
     */
    runtype: Type.Union([Type.Literal('args'), Type.Literal('ssh'), Type.Literal('jupyter')]),
    args: Type.Union([Type.Array(Type.String({ maxLength: 65536 }), { maxItems: 1024 }), Type.Null()]),
    onstart: Type.Union([Type.String({ maxLength: 262_144 }), Type.Null()]),
    /** Environment variables only: names are `[A-Za-z_][A-Za-z0-9_]*` (a `-p` key here is read as a port, see docs). */
    env: Type.Record(Type.String(), Type.String({ maxLength: 32_768 })),
    /** Container ports to publish on host ports of the machine's range: the runtype's and the env's `-p` ones. */
    ports: Type.Array(ContainerPort, { maxItems: 64 }),
    hostname: Type.Union([Str(63, 1), Type.Null()]),
    ssh_keys: Type.Array(Str(16_384, 1), { maxItems: 256 }),
    /** Exactly the GPUs allocated, by nvidia-smi index. */
    gpu_indices: Type.Array(Type.Integer({ minimum: 0, maximum: AGENT_MAX_GPUS - 1 }), { maxItems: AGENT_MAX_GPUS }),
    /** Fractions of the machine's CPU and RAM (the GPUs rented over the machine's GPUs). */
    cpu_share: Type.Number({ exclusiveMinimum: 0, maximum: 1 }),
    memory_share: Type.Number({ exclusiveMinimum: 0, maximum: 1 }),
    /** Disk, GB: a storage limit where the runtime's storage driver supports one. */
    disk: Type.Number({ exclusiveMinimum: 0, maximum: 1_000_000 }),
    /**
     * Seconds between SIGTERM and SIGKILL when the agent stops this container (the operator's
     * GPUPLANE_STOP_GRACE_SECONDS). Absent (servers before it): the agent's own built-in 10 s (issue 33).
     */
    stop_grace_s: Type.Optional(Type.Integer({ minimum: 0, maximum: 3600 })),
    /**
     * While `stopped`: why, as the instance's `status_msg` says it (outbid, host maintenance, its renter's stop). The
     * agent writes it into the container's notice file (/run/gpuplane/stop) just before SIGTERM.
     */
    stop_reason: Type.Optional(Str(2000)),
    /**
     * `jupyter` only (issue 32; absent from servers before it, and for instances made before it): the instance's
     * Jupyter token, the container's `JUPYTER_TOKEN` (a placement fact, over a renter's variable of that name).
     */
    jupyter_token: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9_-]{16,256}$' })),
    /** `jupyter` only: JupyterLab (`jupyter lab`) instead of Jupyter Notebook (`jupyter notebook`). */
    use_jupyter_lab: Type.Optional(Type.Boolean()),
    /** `jupyter` only: the directory Jupyter starts in and serves (the renter's text, quoted); absent: /root. */
    jupyter_dir: Type.Optional(Str(1024, 1)),
    /**
     * The machine's volumes this container mounts (issue 33 item 2), each one listed in the reply's `volumes`: the
     * agent mounts the volume's Docker volume at `mount_path`. Absent (servers before it): none.
     */
    mounts: Type.Optional(Type.Array(VolumeMount, { maxItems: 16 })),
  },
  { additionalProperties: true },
);

/** A renter's `request_logs` for an instance of this machine, until the agent answers it (or it expires). */
export const LogRequest = Type.Object(
  {
    request_id: Type.String({ pattern: '^[A-Za-z0-9_-]{8,128}$' }),
    instance_id: InstanceId,
    /** The last this-many lines (after `filter`); null: all, up to LOG_TEXT_MAX_CHARS. */
    tail: Type.Union([Type.Integer({ minimum: 1, maximum: LOG_TAIL_MAX_LINES }), Type.Null()]),
    /** Only lines containing this text; null: every line. */
    filter: Type.Union([Str(256), Type.Null()]),
  },
  { additionalProperties: true },
);

const RequestId = Type.String({ pattern: '^[A-Za-z0-9_-]{8,128}$' });

/**
 * A renter's `execute` on an instance of this machine, until the agent answers it (or it expires): run `argv` in the
 * instance's running container (no shell; the working directory is `/`). The server allows only `ls`, `rm` and `du`.
 */
export const CommandRequest = Type.Object(
  {
    request_id: RequestId,
    instance_id: InstanceId,
    argv: Type.Array(Type.String({ maxLength: 4096 }), { minItems: 1, maxItems: COMMAND_MAX_WORDS }),
  },
  { additionalProperties: true },
);

/**
 * A renter's `take snapshot`, until the agent answers it: commit the instance's container (paused while committing
 * when `pause`) and push it as `image` with `docker_login` (null: no login). The registry password is sent only to
 * the agent of the machine that runs the instance, only while the request is open.
 */
export const SnapshotRequest = Type.Object(
  {
    request_id: RequestId,
    instance_id: InstanceId,
    image: Str(512, 1),
    docker_login: Type.Union([DockerLogin, Type.Null()]),
    pause: Type.Boolean(),
  },
  { additionalProperties: true },
);

/** `GET /api/v0/agent/desired/?after=V&wait=S`. */
export const DesiredQuery = Type.Object(
  {
    /** The version the agent has; absent on its first call. */
    after: Type.Optional(Counter),
    /** How long the server may hold the request when nothing changed, seconds (0: answer at once). */
    wait: Type.Optional(Type.Integer({ minimum: 0, maximum: DESIRED_WAIT_MAX_S })),
  },
  { additionalProperties: false },
);

/**
 * The whole desired state of the machine. The server answers as soon as its version is not `after` (any difference,
 * not only a larger one: a restored database may count lower), else when `wait` runs out, with the same version.
 */
export const DesiredReply = Type.Object(
  {
    success: Type.Literal(true),
    version: Counter,
    instances: Type.Array(DesiredInstance, { maxItems: AGENT_MAX_INSTANCES }),
    log_requests: Type.Array(LogRequest, { maxItems: 1024 }),
    /** Open `execute` requests (absent from servers before them). */
    commands: Type.Optional(Type.Array(CommandRequest, { maxItems: 1024 })),
    /** Open `take snapshot` requests (absent from servers before them). */
    snapshots: Type.Optional(Type.Array(SnapshotRequest, { maxItems: 1024 })),
    /** The machine's live volumes (absent from servers before issue 33: the agent then leaves its volumes alone). */
    volumes: Type.Optional(Type.Array(DesiredVolume, { maxItems: 4096 })),
  },
  { additionalProperties: true },
);

export const LogAnswerParams = Type.Object({ request_id: Type.String({ pattern: '^[A-Za-z0-9_-]{8,128}$' }) });

/** `PUT /api/v0/agent/logs/{request_id}/`: the container's real log tail (or why there is none). */
export const LogAnswerBody = Type.Object(
  {
    text: Type.String({ maxLength: LOG_TEXT_MAX_CHARS }),
    /** Set when the agent could not read a log (no container for the instance): `text` is then empty. */
    error: Type.Optional(Str(2000)),
  },
  { additionalProperties: false },
);

export const LogAnswerReply = Type.Object({ success: Type.Literal(true) }, { additionalProperties: true });

/** `PUT /api/v0/agent/commands/{request_id}/`: what the command printed (stdout and stderr, as written). */
export const CommandAnswerBody = Type.Object(
  {
    output: Type.String({ maxLength: COMMAND_OUTPUT_MAX_CHARS }),
    /** The command's exit status; null when it could not be run (then `error` says why). */
    exit_code: Type.Union([Type.Integer({ minimum: -2_147_483_648, maximum: 2_147_483_647 }), Type.Null()]),
    error: Type.Optional(Str(2000)),
  },
  { additionalProperties: false },
);

/** `PUT /api/v0/agent/snapshots/{request_id}/`: the push is done (no `error`), or why the commit or push failed. */
export const SnapshotAnswerBody = Type.Object(
  {
    error: Type.Optional(Str(2000)),
  },
  { additionalProperties: false },
);

export const AnswerReply = Type.Object({ success: Type.Literal(true) }, { additionalProperties: true });

export type AgentHardwareT = Static<typeof AgentHardware>;
export type AgentGpuT = Static<typeof AgentGpu>;
export type GpuSampleT = Static<typeof GpuSample>;
export type GpuTelemetryT = Static<typeof GpuTelemetry>;
export type DesiredInstanceT = Static<typeof DesiredInstance>;
export type DesiredVolumeT = Static<typeof DesiredVolume>;
export type VolumeMountT = Static<typeof VolumeMount>;
export type ObservedInstanceT = Static<typeof ObservedInstance>;
export type ObservedStateT = Static<typeof ObservedState>;
export type LogRequestT = Static<typeof LogRequest>;
export type CommandRequestT = Static<typeof CommandRequest>;
export type SnapshotRequestT = Static<typeof SnapshotRequest>;
export type PortMapT = Static<typeof PortMap>;
export type PullProgressT = Static<typeof PullProgress>;
export type DockerLoginT = Static<typeof DockerLogin>;
