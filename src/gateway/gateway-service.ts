/**
 * The SSH gateway (README "Connecting to an instance"; docs/ARCHITECTURE.md): a TCP listener on each port of every
 * live instance of an SSH or Jupyter runtype (gateway-contract.ts maps ids to ports), following the instances as they
 * come and go: the list is read again within about a second of a change in any process (the latest instance event's
 * id moves; a change in this process wakes it at once), and at least every SYNC_FULL_MS. A destroyed instance's
 * listener closes and its open sessions end. A port that cannot be bound (taken by another program) is logged once
 * and tried again at each pass. Each accepted connection is served by gateway-connection.ts.
 *
 * `gpuplane serve` starts it (GPUPLANE_GATEWAY, on by default); a test app builds it unstarted, and a test that
 * wants it calls `start()`. The tunnels feature is wired with `useTunnels` (until then every host reads as not
 * connected).
 */
import { createServer, type Server, type Socket } from 'node:net';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Clock } from '../platform/clock.js';
import { sourceKey } from '../platform/connection-limits.js';
import type { SecretBox } from '../platform/crypto.js';
import type { Db } from '../platform/db/connect.js';
import { TunnelError, type TunnelsApi } from '../tunnels/tunnels-contract.js';
import { gatewayEntries, type GatewayAudit, type GatewayInstancesPort, type GatewayRole } from './gateway-contract.js';
import { serveConnection } from './gateway-connection.js';
import { gatewayHostKey } from './gateway-host-key.js';
import { GatewayLimits } from './gateway-limits.js';

/** Longest wait between two looks at the instance events' mark. */
const SYNC_EVERY_MS = 1000;
/** Shortest gap between two passes (a burst of changes makes one pass, not one each). */
const SYNC_MIN_GAP_MS = 100;
/** The list is read in full at least this often, even when no event moved (a runtype changed by `update instance`). */
const SYNC_FULL_MS = 15_000;

export type GatewaySettings = Pick<
  Config,
  'gatewayBind' | 'gatewayHost' | 'gatewayPorts' | 'gatewayFailedLogins' | 'gatewayFailedLoginWindow' | 'gatewayBlockSeconds' | 'gatewayConnectionsPerSource'
>;

export interface GatewayDeps {
  config: GatewaySettings;
  db: Db;
  secretBox: SecretBox;
  clock: Clock;
  log: Logger;
  instances: GatewayInstancesPort;
  audit: GatewayAudit;
}

interface Listener {
  port: number;
  instanceId: number;
  role: GatewayRole;
  server: Server;
  sockets: Set<Socket>;
}

/** Until the tunnels feature is wired: no host is connected. */
const noTunnels: TunnelsApi = {
  open: () => Promise.reject(new TunnelError('not_connected', 'this server has no host tunnels')),
  connected: async () => false,
};

export function gatewayServiceFactory(deps: GatewayDeps) {
  const { config, clock, log } = deps;
  let tunnels: TunnelsApi = noTunnels;
  const limits = new GatewayLimits({
    connectionsPerSource: config.gatewayConnectionsPerSource,
    failedLogins: config.gatewayFailedLogins,
    failedLoginWindow: config.gatewayFailedLoginWindow,
    blockSeconds: config.gatewayBlockSeconds,
  }, clock);
  const listeners = new Map<number, Listener>();
  /** Ports whose bind failed, each logged once until it succeeds. */
  const unbound = new Set<number>();
  let hostKey: Promise<string> | undefined;
  let running = false;
  let loop: Promise<void> | undefined;
  let wake: (() => void) | undefined;
  let syncing: Promise<void> = Promise.resolve();

  const connectionDeps = {
    instances: deps.instances,
    tunnels: () => tunnels,
    limits,
    audit: deps.audit,
    hostKey: () => {
      hostKey ??= gatewayHostKey(deps.db, deps.secretBox).catch((err: unknown) => {
        hostKey = undefined;
        throw err;
      });
      return hostKey;
    },
    clock,
    log,
    gatewayHost: config.gatewayHost,
  };

  function accept(l: Listener, socket: Socket): void {
    const source = sourceKey(socket.remoteAddress ?? '');
    socket.on('error', () => {}); // a reset is an ordinary end here; the connection's own handlers act on it
    if (!limits.admit(source)) {
      socket.destroy();
      return;
    }
    l.sockets.add(socket);
    socket.once('close', () => {
      l.sockets.delete(socket);
      limits.release(source);
    });
    void serveConnection(connectionDeps, { socket, port: l.port, instanceId: l.instanceId, role: l.role, source });
  }

  function open(port: number, instanceId: number, role: GatewayRole): Promise<void> {
    const l: Listener = { port, instanceId, role, server: createServer({ allowHalfOpen: true }), sockets: new Set() };
    l.server.on('connection', (socket) => accept(l, socket));
    return new Promise((resolve) => {
      const failed = (err: NodeJS.ErrnoException) => {
        if (!unbound.has(port)) log.warn({ port, instance: instanceId, code: err.code }, `ssh gateway: cannot listen on ${config.gatewayBind}:${port} (${err.code ?? err.message}); trying again later`);
        unbound.add(port);
        resolve();
      };
      l.server.once('error', failed);
      l.server.listen({ port, host: config.gatewayBind, exclusive: true }, () => {
        l.server.off('error', failed);
        l.server.on('error', (err) => log.warn({ err, port }, 'ssh gateway: listener error'));
        unbound.delete(port);
        listeners.set(port, l);
        resolve();
      });
    });
  }

  /** Stops listening on the port and ends its sessions. */
  function shut(l: Listener): Promise<void> {
    listeners.delete(l.port);
    for (const s of l.sockets) s.destroy();
    return new Promise((resolve) => l.server.close(() => resolve()));
  }

  /** One pass: the listeners become those of the live instances now. */
  async function syncOnce(): Promise<void> {
    const live = (await deps.instances.live()).slice().sort((a, b) => a.id - b.id);
    const wanted = new Map<number, { instanceId: number; role: GatewayRole }>();
    for (const inst of live) {
      for (const e of gatewayEntries(config, inst.id, inst.runtype)) {
        // Ids past the range wrap onto taken ports: the older instance keeps them.
        if (!wanted.has(e.port)) wanted.set(e.port, { instanceId: inst.id, role: e.role });
      }
    }
    const closing: Promise<void>[] = [];
    for (const l of listeners.values()) {
      const w = wanted.get(l.port);
      if (!w || w.instanceId !== l.instanceId || w.role !== l.role) closing.push(shut(l));
    }
    await Promise.all(closing);
    for (const port of unbound) if (!wanted.has(port)) unbound.delete(port);
    const opening: Promise<void>[] = [];
    for (const [port, w] of wanted) if (!listeners.has(port)) opening.push(open(port, w.instanceId, w.role));
    await Promise.all(opening);
  }

  /** Runs a pass after any pass under way (passes never overlap). */
  function sync(): Promise<void> {
    syncing = syncing.then(syncOnce, syncOnce);
    return syncing;
  }

  async function follow(): Promise<void> {
    let mark: number | undefined;
    let fullAt = performance.now();
    while (running) {
      try {
        const now = performance.now();
        const m = await deps.instances.changeMark();
        if (m !== mark || now - fullAt >= SYNC_FULL_MS) {
          mark = m;
          fullAt = now;
          await sync();
        }
      } catch (err) {
        if (running) log.warn({ err }, 'ssh gateway: reading the live instances failed; trying again');
      }
      if (!running) break;
      await new Promise<void>((resolve) => {
        wake = resolve;
        void deps.instances.nextChange(SYNC_EVERY_MS).then(() => setTimeout(resolve, SYNC_MIN_GAP_MS));
      });
      wake = undefined;
    }
  }

  return {
    /** Wires the tunnels feature (services.ts); tests pass a fake. */
    useTunnels(api: TunnelsApi): void {
      tunnels = api;
    },

    /** Opens the listeners of the live instances and follows them until `close`. */
    async start(): Promise<void> {
      if (running) return;
      running = true;
      await sync();
      loop = follow();
    },

    /** Reads the live instances now and opens and closes listeners to match (tests; `start` does it on its own). */
    sync,

    /** The ports listened on now, and what each leads to. */
    listening(): Map<number, { instanceId: number; role: GatewayRole }> {
      return new Map([...listeners.values()].map((l) => [l.port, { instanceId: l.instanceId, role: l.role }]));
    },

    /** Stops following, closes every listener and ends every session. */
    async close(): Promise<void> {
      running = false;
      wake?.();
      await loop;
      await syncing.catch(() => {});
      await Promise.all([...listeners.values()].map(shut));
    },
  };
}

export type GatewayService = ReturnType<typeof gatewayServiceFactory>;
