import { isIP } from 'node:net';
import { parseArgs } from 'node:util';

/** Every setting, parsed and validated in one place. Environment variables; `gpuplane serve --flag` mirrors each. */
export interface Config {
  host: string;
  port: number;
  databaseUrl: string;
  mode: 'emulator' | 'production';
  bootstrapApiKey: string | undefined;
  clock: 'real' | 'virtual';
  /** Unix seconds at which a virtual clock starts; undefined means "now". */
  clockStart: number | undefined;
  seed: number;
  simMachines: number;
  simBootSeconds: { min: number; max: number };
  /** Undefined in emulator mode means "generate one into the data folder". Required in production. */
  secretKey: string | undefined;
  publicUrl: string;
  /**
   * Where the other server processes on the same database reach this one, to open a stream on an agent tunnel it
   * holds (a hop; docs/AGENT-PROTOCOL.md, "The tunnel"). Unset: `http://HOST:PORT` of this process's listen address
   * (127.0.0.1 for a wildcard host), which only processes on the same machine can reach.
   */
  hopUrl: string | undefined;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** `auto`: readable lines when standard output is a terminal, JSON lines otherwise. @default 'auto' */
  logFormat: 'auto' | 'json' | 'pretty';
  /** When set, `GET /metrics` needs `Authorization: Bearer <token>`; unset, it is open. */
  metricsToken: string | undefined;
  /**
   * SQLite commit durability. `normal` (WAL): an acknowledged write survives the process being killed; `full` also
   * syncs every commit to disk, so it survives a power cut too, at several milliseconds per commit.
   * @default 'normal'
   */
  sqliteSync: 'normal' | 'full';
  /** SMTP server URL for e-mail in production, e.g. `smtp://user:pass@mail.example.com:587`. */
  /**
   * Seconds a SIGTERM or SIGINT waits for in-flight requests to finish (event streams and waits are ended at once);
   * past it, open connections are cut and the process exits 1.
   * @default 10
   */
  shutdownTimeout: number;
  /**
   * Days the audit log keeps an entry.
   * @default 90
   */
  auditRetentionDays: number;
  smtpUrl: string | undefined;
  smtpFrom: string;
  /**
   * Seconds without a status report from a real host's agent after which its machine is offline and its running
   * instances `offline` (docs/AGENT-PROTOCOL.md). Agents are told to report every third of it.
   * @default 30
   */
  agentOfflineAfter: number;
  /**
   * Machines one host account may have registered at once (deleted ones not counted); past it, registering another
   * is 429 `rate_limited`. A cap against made-up fleets (issue 29: 1,500 machines in 14 s).
   * @default 1000 (DEFAULT_HOST_MACHINES_MAX)
   */
  hostMachinesMax: number;
  /**
   * New machines one host account may register in an hour (deleted ones count); past it, 429 `rate_limited` with
   * Retry-After. A retried registration of the same machine (same registration id) is not a new one.
   * @default 100 (DEFAULT_HOST_REGISTRATIONS_PER_HOUR)
   */
  hostRegistrationsPerHour: number;
  /**
   * Instance event streams (`GET /api/v0/instances/events/`) one user may hold open at once, in each process; past
   * it, 429 `rate_limited`. Each held stream polls the database.
   * @default 20 (DEFAULT_EVENT_STREAMS_PER_USER)
   */
  eventStreamsPerUser: number;
  /** Base URL of the HTTP SMS provider in production. */
  smsUrl: string | undefined;
  smsAccount: string | undefined;
  smsToken: string | undefined;
  /** Fraction of what renters paid that the platform keeps; a host earns the rest (`show earnings`). @default 0.1 */
  hostServiceFee: number;
  /**
   * S3-compatible bucket for serverless deployment tarballs (src/serverless/serverless-blob.ts); unset, deployment
   * uploads answer 503 `service_unavailable` naming this variable.
   */
  blobStoreUrl: string | undefined;
  /**
   * The built web console (`npm run build` writes it to dist/console), served at `/`; unset or missing, `/` is the
   * JSON 404 it was before. bin/gpuplane.mjs defaults it to the package's own dist/console.
   */
  consoleDir: string | undefined;
  /**
   * Behind a reverse proxy that terminates TLS: trust its `X-Forwarded-Proto` (and `X-Forwarded-For`), so the session
   * cookie gets `Secure` when the browser came over https. Off, those headers are ignored (a client could forge them).
   * @default false
   */
  trustProxy: boolean;
  /**
   * Open connections the server takes at most; past it, a new one is closed at once (Node's `server.maxConnections`).
   * Unset: four fifths of the process's open-file limit, at most 65,536 (platform/connection-limits.ts), so that a
   * flood is refused before accept fails for everyone and the database can still open its files and connections.
   */
  maxConnections: number | undefined;
  /**
   * Open connections one client address takes at most (an IPv6 address counts by its /64); past it, its new
   * connections are closed at once. 0: no per-address cap. Clients behind one NAT share an address: each host agent
   * holds about two (its long-poll and a report).
   * @default 512
   */
  maxConnectionsPerSource: number;
  /**
   * Addresses and CIDR blocks the per-address cap does not apply to (the total cap still does): loopback by default,
   * where a local reverse proxy or tools connect from; a proxy on another machine belongs here too.
   * @default ['127.0.0.0/8', '::1']
   */
  connectionLimitExempt: string[];
  /**
   * Seconds a request's line and headers may take to arrive; past it, 408 `request_timeout` and the connection closes.
   * @default 20
   */
  headersTimeout: number;
  /**
   * Seconds a whole request (headers and body) may take to arrive. It bounds receiving only: a reply that takes
   * longer (an event stream, a long-poll, a wait) is not cut.
   * @default 60
   */
  requestTimeout: number;
  /**
   * PostgreSQL connections each process keeps at most. Unset: twice the machine's CPU cores, at least 4. More
   * connections than the database's cores can run at once only queue inside it (bench `pg-mixed`).
   */
  pgPoolSize: number | undefined;
  /**
   * Offer search (`POST /api/v0/bundles/`, `PUT /api/v0/search/asks/`, `GET /api/v0/bundles/`) needs an API key. Off,
   * a caller without one is served too, as Vast.ai serves it (dstack's catalogue, gpuhunt, sends none): offers only,
   * nothing of any account. On for an operator whose catalogue is private.
   * @default false
   */
  offerSearchRequiresKey: boolean;
  /**
   * Searches a minute one client address may make without a key (an IPv6 address counts by its /64), in each process;
   * past it, 429 `rate_limited` with Retry-After. Searches with a key are not counted.
   * @default 60 (DEFAULT_ANONYMOUS_SEARCHES_PER_MINUTE)
   */
  anonymousSearchesPerMinute: number;
  /**
   * The SSH gateway (src/gateway/): `gpuplane serve` listens for every live instance of an SSH or Jupyter runtype on
   * its ports of GPUPLANE_GATEWAY_PORTS and passes each connection to the instance through its host's tunnel.
   * @default true
   */
  gateway: boolean;
  /** Address the gateway's ports listen on. Unset: the server's listen address (GPUPLANE_HOST). */
  gatewayBind: string;
  /**
   * The gateway's port range, three ports per instance (src/gateway/gateway-contract.ts): slot k = id mod
   * floor(span / 3) starts at first + 3k.
   * @default { first: 10000, last: 65535 }
   */
  gatewayPorts: { first: number; last: number };
  /** The host renters connect to, shown as instances' `ssh_host`. Unset: the host of GPUPLANE_PUBLIC_URL. */
  gatewayHost: string;
  /**
   * Failed SSH logins (the agent's own SSH server says so) one source address may make within
   * `gatewayFailedLoginWindow` seconds; past it, the source is refused for `gatewayBlockSeconds` (per process).
   * @default 10
   */
  gatewayFailedLogins: number;
  /** @default 600 */
  gatewayFailedLoginWindow: number;
  /** @default 900 */
  gatewayBlockSeconds: number;
  /**
   * Connections one source address (an IPv6 address by its /64) may hold open through the gateway at once, per
   * process; past it, its new connections are closed as they are accepted.
   * @default 64
   */
  gatewayConnectionsPerSource: number;
  /**
   * Where each instance port is reached through the server (issue 32, src/ports/): an http(s) URL template whose host
   * starts with `*.`; `*` becomes `<instance id>-<port>` (`https://*.ports.example.com` gives
   * `https://1234-8080.ports.example.com/`). Needs wildcard DNS (and a wildcard certificate behind TLS) pointing at
   * the server. Unset: `*.localhost` on the scheme and port of GPUPLANE_PUBLIC_URL, which browsers and curl resolve to
   * loopback on their own (a local server; an operator sets it for anything else).
   */
  portUrls: string;
  /**
   * Seconds a container is given between SIGTERM and SIGKILL when it is stopped (issue 33: a renter's stop, an outbid
   * bid, a host's maintenance window): carried to the host's agent in the desired state (`stop_grace_s`), named in the
   * instance's `status_msg`, and written into the container's notice file (/run/gpuplane/stop).
   * @default 30
   */
  stopGraceSeconds: number;
  /** Issue 34 item 1: `docker` runs the simulated machines' instances as real local containers (emulator mode). */
  emuContainers: 'off' | 'docker';
  /** Issue 34 item 2: a file saved by `gpuplane emu save` to start from (emulator mode). */
  emuState: string | undefined;
  /** Issue 34 item 2: a seed file (fleet, users, keys, templates, SSH keys) loaded at start (emulator mode). */
  emuSeedFile: string | undefined;
  /** Issue 34 item 2: a folder of init scripts run once the emulator is ready (emulator mode). */
  emuInitDir: string | undefined;
  /** Issue 34 item 5: a file the recorder appends every API call to (emulator mode). */
  emuRecord: string | undefined;
}

/** Offer searches a minute one address may make without a key (GPUPLANE_ANONYMOUS_SEARCHES_PER_MINUTE). */
export const DEFAULT_ANONYMOUS_SEARCHES_PER_MINUTE = 60;

/** Machines one host account may have registered at once (GPUPLANE_HOST_MACHINES_MAX). */
export const DEFAULT_HOST_MACHINES_MAX = 1000;
/** New machines one host account may register in an hour (GPUPLANE_HOST_REGISTRATIONS_PER_HOUR). */
export const DEFAULT_HOST_REGISTRATIONS_PER_HOUR = 100;
/** Seconds between SIGTERM and SIGKILL when a container is stopped (GPUPLANE_STOP_GRACE_SECONDS). */
export const DEFAULT_STOP_GRACE_SECONDS = 30;
/** Instance event streams one user may hold open at once, per process (GPUPLANE_EVENT_STREAMS_PER_USER). */
export const DEFAULT_EVENT_STREAMS_PER_USER = 20;

export class ConfigError extends Error {}

interface Setting {
  env: string;
  flag: string;
  help: string;
  default?: string;
}

/** The table behind the env vars, the flags and `gpuplane serve --help`. */
export const SETTINGS = {
  host: { env: 'GPUPLANE_HOST', flag: 'host', default: '127.0.0.1', help: 'listen address' },
  port: { env: 'GPUPLANE_PORT', flag: 'port', default: '8080', help: 'listen port (0 picks a free one)' },
  databaseUrl: {
    env: 'GPUPLANE_DATABASE_URL',
    flag: 'database-url',
    default: 'sqlite:./data/gpuplane.db',
    help: 'sqlite:PATH, sqlite::memory:, or postgres://…',
  },
  mode: { env: 'GPUPLANE_MODE', flag: 'mode', default: 'emulator', help: 'emulator or production' },
  bootstrapApiKey: {
    env: 'GPUPLANE_BOOTSTRAP_API_KEY',
    flag: 'bootstrap-api-key',
    help: 'API key of the owner account created on an empty database (default: generated and printed once)',
  },
  clock: { env: 'GPUPLANE_CLOCK', flag: 'clock', default: 'real', help: 'real or virtual' },
  clockStart: { env: 'GPUPLANE_CLOCK_START', flag: 'clock-start', help: 'Unix seconds at which a virtual clock starts (default: now)' },
  seed: { env: 'GPUPLANE_SEED', flag: 'seed', default: '1', help: 'seed of the simulated fleet' },
  simMachines: { env: 'GPUPLANE_SIM_MACHINES', flag: 'sim-machines', default: '200', help: 'size of the simulated fleet' },
  simBootSeconds: {
    env: 'GPUPLANE_SIM_BOOT_SECONDS',
    flag: 'sim-boot-seconds',
    default: '5-20',
    help: 'range of simulated boot times in seconds, MIN-MAX (a simulated machine pulls an image it lacks for that long)',
  },
  secretKey: {
    env: 'GPUPLANE_SECRET_KEY',
    flag: 'secret-key',
    help: 'key that encrypts secrets at rest (required in production; emulator: generated into the data folder, or the database on PostgreSQL)',
  },
  publicUrl: { env: 'GPUPLANE_PUBLIC_URL', flag: 'public-url', help: 'base of absolute URLs the API hands out (default http://HOST:PORT)' },
  hopUrl: {
    env: 'GPUPLANE_HOP_URL',
    flag: 'hop-url',
    help: 'URL the other server processes on this database reach this one at, for agent tunnels it holds (default http://HOST:PORT)',
  },
  sqliteSync: {
    env: 'GPUPLANE_SQLITE_SYNC',
    flag: 'sqlite-sync',
    default: 'normal',
    help: 'SQLite durability: normal (survives a killed process) or full (also a power cut; slower writes)',
  },
  shutdownTimeout: {
    env: 'GPUPLANE_SHUTDOWN_TIMEOUT',
    flag: 'shutdown-timeout',
    default: '10',
    help: 'seconds a SIGTERM/SIGINT waits for in-flight requests before cutting connections',
  },
  auditRetentionDays: {
    env: 'GPUPLANE_AUDIT_RETENTION_DAYS',
    flag: 'audit-retention-days',
    default: '90',
    help: 'days the audit log (logins, 2FA and key changes, instances, credit, roles) keeps an entry',
  },
  logLevel: { env: 'GPUPLANE_LOG_LEVEL', flag: 'log-level', default: 'info', help: 'fatal, error, warn, info, debug, trace or silent' },
  logFormat: {
    env: 'GPUPLANE_LOG_FORMAT',
    flag: 'log-format',
    default: 'auto',
    help: 'json, pretty (one readable line per request), or auto: pretty when standard output is a terminal',
  },
  metricsToken: {
    env: 'GPUPLANE_METRICS_TOKEN',
    flag: 'metrics-token',
    help: 'bearer token GET /metrics requires (16+ characters; default: /metrics is open)',
  },
  smtpUrl: { env: 'GPUPLANE_SMTP_URL', flag: 'smtp-url', help: 'SMTP server for e-mail in production, smtp://user:pass@host:port' },
  smtpFrom: { env: 'GPUPLANE_SMTP_FROM', flag: 'smtp-from', default: 'gpuplane <no-reply@gpuplane.local>', help: 'From address of e-mail' },
  smsUrl: { env: 'GPUPLANE_SMS_URL', flag: 'sms-url', help: 'base URL of the HTTP SMS provider in production' },
  smsAccount: { env: 'GPUPLANE_SMS_ACCOUNT', flag: 'sms-account', help: 'SMS provider account id' },
  smsToken: { env: 'GPUPLANE_SMS_TOKEN', flag: 'sms-token', help: 'SMS provider auth token' },
  agentOfflineAfter: {
    env: 'GPUPLANE_AGENT_OFFLINE_AFTER',
    flag: 'agent-offline-after',
    default: '30',
    help: 'seconds without a report from a host agent before its machine and instances are offline',
  },
  hostMachinesMax: {
    env: 'GPUPLANE_HOST_MACHINES_MAX',
    flag: 'host-machines-max',
    default: String(DEFAULT_HOST_MACHINES_MAX),
    help: 'machines one host account may have registered at once, 1-1000000',
  },
  hostRegistrationsPerHour: {
    env: 'GPUPLANE_HOST_REGISTRATIONS_PER_HOUR',
    flag: 'host-registrations-per-hour',
    default: String(DEFAULT_HOST_REGISTRATIONS_PER_HOUR),
    help: 'new machines one host account may register in an hour, 1-1000000',
  },
  eventStreamsPerUser: {
    env: 'GPUPLANE_EVENT_STREAMS_PER_USER',
    flag: 'event-streams-per-user',
    default: String(DEFAULT_EVENT_STREAMS_PER_USER),
    help: 'instance event streams one user may hold open at once in each process, 1-100000',
  },
  hostServiceFee: {
    env: 'GPUPLANE_HOST_SERVICE_FEE',
    flag: 'host-service-fee',
    default: '0.1',
    help: 'fraction (0 to 1) of what renters pay that the platform keeps; hosts earn the rest',
  },
  blobStoreUrl: {
    env: 'GPUPLANE_BLOB_STORE_URL',
    flag: 'blob-store-url',
    help: 'S3-compatible bucket for serverless deployment tarballs, https://ACCESS_KEY:SECRET_KEY@host/bucket?region=R (default: none; deployment uploads are refused)',
  },
  consoleDir: {
    env: 'GPUPLANE_CONSOLE_DIR',
    flag: 'console-dir',
    help: 'folder of the built web console served at / (default: the package\'s dist/console)',
  },
  trustProxy: {
    env: 'GPUPLANE_TRUST_PROXY',
    flag: 'trust-proxy',
    default: 'false',
    help: 'true behind a TLS-terminating reverse proxy: X-Forwarded-Proto decides whether cookies are Secure',
  },
  maxConnections: {
    env: 'GPUPLANE_MAX_CONNECTIONS',
    flag: 'max-connections',
    help: 'open connections the server takes at most, 1-1000000 (default: four fifths of the open-file limit, at most 65536)',
  },
  maxConnectionsPerSource: {
    env: 'GPUPLANE_MAX_CONNECTIONS_PER_SOURCE',
    flag: 'max-connections-per-source',
    default: '512',
    help: 'open connections one client address takes at most (an IPv6 address counts by its /64); 0: no cap',
  },
  connectionLimitExempt: {
    env: 'GPUPLANE_CONNECTION_LIMIT_EXEMPT',
    flag: 'connection-limit-exempt',
    default: '127.0.0.0/8,::1',
    help: 'comma-separated addresses and CIDR blocks without the per-address cap (a reverse proxy), or none',
  },
  headersTimeout: {
    env: 'GPUPLANE_HEADERS_TIMEOUT',
    flag: 'headers-timeout',
    default: '20',
    help: 'seconds a request line and headers may take to arrive, 1-3600 (past it: 408 and the connection closes)',
  },
  requestTimeout: {
    env: 'GPUPLANE_REQUEST_TIMEOUT',
    flag: 'request-timeout',
    default: '60',
    help: 'seconds a whole request (headers and body) may take to arrive, 1-3600, at least the headers timeout; replies are not cut',
  },
  pgPoolSize: {
    env: 'GPUPLANE_PG_POOL_SIZE',
    flag: 'pg-pool-size',
    help: 'PostgreSQL connections per process, 1-1000 (default: twice the CPU cores, at least 4; with several processes, about twice the database cores in all)',
  },
  offerSearchRequiresKey: {
    env: 'GPUPLANE_OFFER_SEARCH_REQUIRES_KEY',
    flag: 'offer-search-requires-key',
    default: 'false',
    help: 'true: offer search needs an API key (a private catalogue); false: callers without a key may search offers, rate-limited per address',
  },
  anonymousSearchesPerMinute: {
    env: 'GPUPLANE_ANONYMOUS_SEARCHES_PER_MINUTE',
    flag: 'anonymous-searches-per-minute',
    default: String(DEFAULT_ANONYMOUS_SEARCHES_PER_MINUTE),
    help: 'offer searches a minute one client address may make without a key, per process, 1-1000000 (an IPv6 address counts by its /64)',
  },
  gateway: {
    env: 'GPUPLANE_GATEWAY',
    flag: 'gateway',
    default: 'true',
    help: 'true: listen for SSH to instances on the gateway\'s ports (GPUPLANE_GATEWAY_PORTS); false: no gateway in this process',
  },
  gatewayBind: { env: 'GPUPLANE_GATEWAY_BIND', flag: 'gateway-bind', help: 'address the SSH gateway listens on (default: GPUPLANE_HOST)' },
  gatewayPorts: {
    env: 'GPUPLANE_GATEWAY_PORTS',
    flag: 'gateway-ports',
    default: '10000-65535',
    help: 'the SSH gateway\'s port range FIRST-LAST, three ports per instance (instance id mod floor(span/3) picks them)',
  },
  gatewayHost: {
    env: 'GPUPLANE_GATEWAY_HOST',
    flag: 'gateway-host',
    help: 'host name or address renters connect to for SSH, shown as ssh_host (default: the host of GPUPLANE_PUBLIC_URL)',
  },
  gatewayFailedLogins: {
    env: 'GPUPLANE_GATEWAY_FAILED_LOGINS',
    flag: 'gateway-failed-logins',
    default: '10',
    help: 'failed SSH logins one address may make in the window before the gateway refuses it, 1-1000000',
  },
  gatewayFailedLoginWindow: {
    env: 'GPUPLANE_GATEWAY_FAILED_LOGIN_WINDOW',
    flag: 'gateway-failed-login-window',
    default: '600',
    help: 'seconds over which failed SSH logins are counted, 1-86400',
  },
  gatewayBlockSeconds: {
    env: 'GPUPLANE_GATEWAY_BLOCK_SECONDS',
    flag: 'gateway-block-seconds',
    default: '900',
    help: 'seconds the gateway refuses an address after too many failed logins, 1-604800',
  },
  portUrls: {
    env: 'GPUPLANE_PORT_URLS',
    flag: 'port-urls',
    help: 'URL template of instance ports through the server, e.g. https://*.ports.example.com (`*` is ID-PORT; default: *.localhost on the public URL\'s scheme and port)',
  },
  gatewayConnectionsPerSource: {
    env: 'GPUPLANE_GATEWAY_CONNECTIONS_PER_SOURCE',
    flag: 'gateway-connections-per-source',
    default: '64',
    help: 'SSH connections one address (IPv6: its /64) may hold open through the gateway at once, 1-1000000',
  },
  stopGraceSeconds: {
    env: 'GPUPLANE_STOP_GRACE_SECONDS',
    flag: 'stop-grace-seconds',
    default: String(DEFAULT_STOP_GRACE_SECONDS),
    help: 'seconds a stopped container gets between SIGTERM and SIGKILL (a renter\'s stop, outbid, host maintenance), 0-3600',
  },
  emuContainers: {
    env: 'GPUPLANE_EMU_CONTAINERS',
    flag: 'emu-containers',
    default: 'off',
    help: 'emulator: off, or docker to run simulated machines\' instances as real local containers (needs Docker)',
  },
  emuState: { env: 'GPUPLANE_EMU_STATE', flag: 'emu-state', help: 'emulator: start from this file saved by `gpuplane emu save`' },
  emuSeedFile: { env: 'GPUPLANE_EMU_SEED_FILE', flag: 'emu-seed-file', help: 'emulator: a seed file (fleet, users and keys, templates, SSH keys) loaded at start' },
  emuInitDir: { env: 'GPUPLANE_EMU_INIT_DIR', flag: 'emu-init-dir', help: 'emulator: a folder of scripts run, in name order, once the emulator is ready' },
  emuRecord: { env: 'GPUPLANE_EMU_RECORD', flag: 'emu-record', help: 'emulator: append every API call (secrets redacted) to this file, for `gpuplane emu replay`' },
} satisfies Record<keyof Config, Setting>;

type Raw = Partial<Record<keyof Config, string>>;

/** Settings whose values are secrets (or may hold one, such as a URL with a password): never echoed in errors. */
const SECRET_SETTINGS: ReadonlySet<keyof Config> = new Set(['secretKey', 'bootstrapApiKey', 'metricsToken', 'smtpUrl', 'smsToken', 'databaseUrl', 'blobStoreUrl']);

/** Reads `gpuplane serve` flags; a flag wins over its environment variable. */
export function parseServeFlags(argv: string[]): Raw {
  const options = Object.fromEntries(
    Object.values(SETTINGS).map((s) => [s.flag, { type: 'string' as const }]),
  );
  let values: Record<string, unknown>;
  try {
    values = parseArgs({ args: argv, options, strict: true, allowPositionals: false }).values;
  } catch (err) {
    throw new ConfigError((err as Error).message);
  }
  const raw: Raw = {};
  for (const [name, s] of Object.entries(SETTINGS) as [keyof Config, Setting][]) {
    const v = values[s.flag];
    if (typeof v === 'string') raw[name] = v;
  }
  return raw;
}

/** `10.0.0.7`, `::1`, `10.0.0.0/8`, `2001:db8::/32`: an address, or one with a prefix length its family allows. */
function isAddressOrBlock(entry: string): boolean {
  const [address, prefix, ...rest] = entry.split('/');
  const family = isIP(address);
  if (!family || rest.length) return false;
  return prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128));
}

export function loadConfig(env: NodeJS.ProcessEnv, flags: Raw = {}): Config {
  const get = (name: keyof Config): string | undefined => {
    const s: Setting = SETTINGS[name];
    const v = flags[name] ?? env[s.env];
    return v === undefined || v === '' ? s.default : v;
  };
  const label = (name: keyof Config) => `${SETTINGS[name].env} (--${SETTINGS[name].flag})`;
  const fail = (name: keyof Config, why: string): never => {
    const raw = flags[name] ?? env[SETTINGS[name].env];
    // A rejected secret is not printed: error output ends up in terminals, logs and CI transcripts.
    const got = SECRET_SETTINGS.has(name) ? `a value of ${raw?.length ?? 0} characters` : JSON.stringify(raw);
    throw new ConfigError(`${label(name)}: ${why}, got ${got}`);
  };
  const int = (name: keyof Config, min: number, max: number): number => {
    const v = get(name)!;
    if (!/^\d+$/.test(v) || Number(v) < min || Number(v) > max) fail(name, `must be an integer from ${min} to ${max}`);
    return Number(v);
  };
  const fraction = (name: keyof Config): number => {
    const v = get(name)!;
    if (!/^(0(\.\d+)?|1(\.0+)?|\.\d+)$/.test(v)) fail(name, 'must be a number from 0 to 1');
    return Number(v);
  };
  const oneOf = <T extends string>(name: keyof Config, allowed: readonly T[]): T => {
    const v = get(name)!;
    if (!allowed.includes(v as T)) fail(name, `must be one of ${allowed.join(', ')}`);
    return v as T;
  };

  const host = get('host')!;
  const port = int('port', 0, 65535);
  const databaseUrl = get('databaseUrl')!;
  if (!/^sqlite:.+/.test(databaseUrl) && !/^postgres(ql)?:\/\/[^\s]+$/.test(databaseUrl)) {
    fail('databaseUrl', 'must be sqlite:PATH, sqlite::memory: or postgres://…');
  }
  if (databaseUrl.startsWith('postgres')) {
    try {
      // libpq's form for a Unix socket may leave the host out (`postgres://user@/db?host=/var/run/postgresql`), which
      // WHATWG URLs refuse; pg reads it as given, so only the check fills in a host.
      new URL(databaseUrl.replace(/^(postgres(?:ql)?:\/\/[^/?#]*@)\//, '$1localhost/'));
    } catch {
      fail('databaseUrl', 'is not a valid postgres:// URL');
    }
  }
  const mode = oneOf('mode', ['emulator', 'production'] as const);
  const clock = oneOf('clock', ['real', 'virtual'] as const);
  const clockStartRaw = get('clockStart');
  let clockStart: number | undefined;
  if (clockStartRaw !== undefined) {
    clockStart = Number(clockStartRaw);
    if (!Number.isFinite(clockStart) || clockStart < 0) fail('clockStart', 'must be Unix seconds');
  }
  const bootRaw = get('simBootSeconds')!;
  const boot = /^(\d+(?:\.\d+)?)(?:-(\d+(?:\.\d+)?))?$/.exec(bootRaw);
  if (!boot) fail('simBootSeconds', 'must be SECONDS or MIN-MAX');
  const simBootSeconds = { min: Number(boot![1]), max: Number(boot![2] ?? boot![1]) };
  if (simBootSeconds.max < simBootSeconds.min) fail('simBootSeconds', 'MIN must not exceed MAX');
  const secretKey = get('secretKey');
  if (secretKey !== undefined && secretKey.length < 16) fail('secretKey', 'must be at least 16 characters');
  if (mode === 'production' && secretKey === undefined) {
    throw new ConfigError(`${label('secretKey')}: required in production mode`);
  }
  const publicUrlRaw = get('publicUrl') ?? `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  try {
    const u = new URL(publicUrlRaw);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error();
  } catch {
    fail('publicUrl', 'must be an http:// or https:// URL');
  }
  const hopUrl = get('hopUrl');
  if (hopUrl !== undefined) {
    try {
      if (!/^https?:$/.test(new URL(hopUrl).protocol)) throw new Error();
    } catch {
      fail('hopUrl', 'must be an http:// or https:// URL');
    }
  }
  const publicUrlParsed = new URL(publicUrlRaw);
  const portUrls = (get('portUrls') ?? `${publicUrlParsed.protocol}//*.localhost${publicUrlParsed.port ? `:${publicUrlParsed.port}` : ''}`).replace(/\/+$/, '');
  if (!/^https?:\/\/\*\.[A-Za-z0-9.-]+(?::\d{1,5})?$/.test(portUrls)) {
    fail('portUrls', 'must be http(s)://*.DOMAIN[:PORT] (the `*` becomes INSTANCE-PORT)');
  }
  const smtpUrl = get('smtpUrl');
  if (smtpUrl !== undefined && !/^smtps?:\/\/[^\s]+$/.test(smtpUrl)) fail('smtpUrl', 'must be smtp:// or smtps:// URL');
  const smsUrl = get('smsUrl');
  if (smsUrl !== undefined && !/^https?:\/\/[^\s]+$/.test(smsUrl)) fail('smsUrl', 'must be an http(s):// URL');

  const blobStoreUrl = get('blobStoreUrl');
  if (blobStoreUrl !== undefined) {
    try {
      if (!/^https?:$/.test(new URL(blobStoreUrl).protocol)) throw new Error();
    } catch {
      fail('blobStoreUrl', 'must be an http:// or https:// URL');
    }
  }

  const metricsToken = get('metricsToken');
  if (metricsToken !== undefined && metricsToken.length < 16) fail('metricsToken', 'must be at least 16 characters');

  const headersTimeout = int('headersTimeout', 1, 3600);
  const requestTimeout = int('requestTimeout', 1, 3600);
  // Node refuses a headers timeout longer than the request's: say so at start, naming both.
  if (requestTimeout < headersTimeout) fail('requestTimeout', `must be at least ${label('headersTimeout')} (${headersTimeout})`);
  const exemptRaw = get('connectionLimitExempt')!.trim();
  const connectionLimitExempt = exemptRaw === 'none' ? [] : exemptRaw.split(',').map((e) => e.trim());
  if (!connectionLimitExempt.every(isAddressOrBlock)) fail('connectionLimitExempt', 'must be comma-separated IP addresses or CIDR blocks (10.0.0.0/8), or none');

  const gatewayRange = /^(\d{1,5})-(\d{1,5})$/.exec(get('gatewayPorts')!);
  const gatewayPorts = gatewayRange ? { first: Number(gatewayRange[1]), last: Number(gatewayRange[2]) } : undefined;
  if (!gatewayPorts || gatewayPorts.first < 1 || gatewayPorts.last > 65535 || gatewayPorts.last - gatewayPorts.first + 1 < 3) {
    fail('gatewayPorts', 'must be FIRST-LAST within 1-65535, at least 3 ports (three per instance)');
  }
  const gatewayHost = get('gatewayHost') ?? new URL(publicUrlRaw).hostname.replace(/^\[(.*)\]$/, '$1');
  if (!/^[A-Za-z0-9.:_-]+$/.test(gatewayHost)) fail('gatewayHost', 'must be a host name or an IP address');
  const gatewayBind = get('gatewayBind') ?? host;

  const bootstrapApiKey = get('bootstrapApiKey');
  if (bootstrapApiKey !== undefined && bootstrapApiKey.length < 16) {
    fail('bootstrapApiKey', 'must be at least 16 characters');
  }

  return {
    host,
    port,
    databaseUrl,
    mode,
    bootstrapApiKey,
    clock,
    clockStart,
    seed: int('seed', 0, 2 ** 32 - 1),
    simMachines: int('simMachines', 0, 1_000_000),
    simBootSeconds,
    secretKey,
    publicUrl: publicUrlRaw.replace(/\/+$/, ''),
    hopUrl: hopUrl?.replace(/\/+$/, ''),
    sqliteSync: oneOf('sqliteSync', ['normal', 'full'] as const),
    shutdownTimeout: int('shutdownTimeout', 0, 3600),
    auditRetentionDays: int('auditRetentionDays', 1, 36_500),
    logLevel: oneOf('logLevel', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const),
    logFormat: oneOf('logFormat', ['auto', 'json', 'pretty'] as const),
    metricsToken,
    smtpUrl,
    smtpFrom: get('smtpFrom')!,
    smsUrl,
    smsAccount: get('smsAccount'),
    smsToken: get('smsToken'),
    agentOfflineAfter: int('agentOfflineAfter', 3, 86_400),
    hostMachinesMax: int('hostMachinesMax', 1, 1_000_000),
    hostRegistrationsPerHour: int('hostRegistrationsPerHour', 1, 1_000_000),
    eventStreamsPerUser: int('eventStreamsPerUser', 1, 100_000),
    hostServiceFee: fraction('hostServiceFee'),
    blobStoreUrl,
    consoleDir: get('consoleDir'),
    pgPoolSize: get('pgPoolSize') === undefined ? undefined : int('pgPoolSize', 1, 1000),
    maxConnections: get('maxConnections') === undefined ? undefined : int('maxConnections', 1, 1_000_000),
    maxConnectionsPerSource: int('maxConnectionsPerSource', 0, 1_000_000),
    connectionLimitExempt,
    headersTimeout,
    requestTimeout,
    trustProxy: oneOf('trustProxy', ['true', 'false'] as const) === 'true',
    offerSearchRequiresKey: oneOf('offerSearchRequiresKey', ['true', 'false'] as const) === 'true',
    anonymousSearchesPerMinute: int('anonymousSearchesPerMinute', 1, 1_000_000),
    gateway: oneOf('gateway', ['true', 'false'] as const) === 'true',
    gatewayBind,
    gatewayPorts: gatewayPorts!,
    gatewayHost,
    gatewayFailedLogins: int('gatewayFailedLogins', 1, 1_000_000),
    gatewayFailedLoginWindow: int('gatewayFailedLoginWindow', 1, 86_400),
    gatewayBlockSeconds: int('gatewayBlockSeconds', 1, 604_800),
    gatewayConnectionsPerSource: int('gatewayConnectionsPerSource', 1, 1_000_000),
    portUrls,
    stopGraceSeconds: int('stopGraceSeconds', 0, 3600),
    ...emulatorSettings(),
  };

  /** Issue 34: the emulator's own settings, refused in production mode (where there is nothing for them to act on). */
  function emulatorSettings(): Pick<Config, 'emuContainers' | 'emuState' | 'emuSeedFile' | 'emuInitDir' | 'emuRecord'> {
    const emuContainers = oneOf('emuContainers', ['off', 'docker'] as const);
    const files = { emuState: get('emuState'), emuSeedFile: get('emuSeedFile'), emuInitDir: get('emuInitDir'), emuRecord: get('emuRecord') };
    if (mode === 'production') {
      if (emuContainers !== 'off') fail('emuContainers', 'is for emulator mode only');
      for (const [name, v] of Object.entries(files)) if (v !== undefined) fail(name as keyof Config, 'is for emulator mode only');
    }
    return { emuContainers, ...files };
  }
}
