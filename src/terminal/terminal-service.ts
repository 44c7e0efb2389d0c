/**
 * The console's terminal (issue 32 item 3; terminal-contract.ts says the wire): app.ts hands it every HTTP upgrade,
 * and it takes those to `/api/v0/instances/{id}/terminal/`. Before the upgrade completes, the request is checked as
 * an API request would be (terminal-access.ts: credential, Origin for the cookie, instance_write, the instance in the
 * caller's scope), the instance must be running on a host run by `gpuplane agent`, and the `terminal` stream through
 * its host's tunnel must open; any refusal is the API's error object with its status. Then the WebSocket is
 * accepted and joined to the stream (terminal-session.ts).
 *
 * An open terminal ends when the instance leaves `running` or is destroyed, or when its credential no longer holds
 * (signed out, key revoked, role changed): a watch re-reads each open session's instance, with its credential, when
 * the instances change in any process (the latest instance event's id moves; a change in this process wakes it at
 * once) and at least every REVALIDATE_MS. Every session, and every refusal of a known user, is in the audit log
 * (`instance.terminal_session`): instance, source address, outcome, duration, bytes; never what was typed.
 */
import { STATUS_CODES, type IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { Logger } from 'pino';
import { WebSocketServer, type WebSocket } from 'ws';
import type { AuditService } from '../audit/audit-service.js';
import type { Principal } from '../platform/auth.js';
import type { Clock } from '../platform/clock.js';
import { ApiError } from '../platform/errors.js';
import { TunnelError, type TunnelsApi, type TunnelStream } from '../tunnels/tunnels-contract.js';
import { checkPrincipal, clientAddress, mayOpen, ownOrigins, presentedCredential } from './terminal-access.js';
import { TERMINAL_CLOSE, TERMINAL_MESSAGE_MAX, TERMINAL_PATH } from './terminal-contract.js';
import { TerminalSession, type SessionEnd } from './terminal-session.js';

/** The audit log's action for a terminal session (and a refused one). */
export const TERMINAL_SESSION_ACTION = 'instance.terminal_session';
/** The route named in its audit records. */
const AUDIT_ROUTE = 'GET /api/v0/instances/:id/terminal/';
/** A WebSocket handshake's key: 16 bytes in base64 (RFC 6455 §4.2.1). */
const WEBSOCKET_KEY = /^[+/0-9A-Za-z]{22}==$/;
/** Longest wait between two looks at the instances' change mark. */
const WATCH_EVERY_MS = 1000;
/** Each open session's credential and instance are read again at least this often, changes or not. */
const REVALIDATE_MS = 15_000;

/** A live instance as the terminal needs it. */
export interface TerminalInstance {
  id: number;
  userId: number;
  teamId: number | null;
  machineId: number | null;
  actualStatus: string | null;
  /** What its renter asked for: a stop asked for ends open terminals at once, before the host reports it. */
  intendedStatus: string | null;
  /** On one of the emulator's simulated machines: no container to reach. */
  simulated: boolean;
}

export interface TerminalDeps {
  config: { publicUrl: string; trustProxy: boolean };
  /** The principal of a presented secret (platform/auth.ts `resolve`), or null. */
  resolve(secret: string): Promise<Principal | null>;
  instances: {
    /** The live instance `id`, or undefined once destroyed. */
    find(id: number): Promise<TerminalInstance | undefined>;
    /** A number that moves whenever an instance changes state, in any process. */
    changeMark(): Promise<number>;
    /** Resolves at the next change in this process, or after `ms`. */
    nextChange(ms: number): Promise<void>;
  };
  /** Whether the user is a member of the team whose current role allows instance_write. */
  mayWrite(teamId: number, userId: number): Promise<boolean>;
  audit: Pick<AuditService, 'record'>;
  clock: Clock;
  log: Logger;
}

interface Open {
  session: TerminalSession;
  instanceId: number;
  secret: string;
  cookie: boolean;
}

export function terminalServiceFactory(deps: TerminalDeps) {
  const { config, clock, log } = deps;
  let tunnels: TunnelsApi | null = null;
  const wss = new WebSocketServer({ noServer: true, maxPayload: TERMINAL_MESSAGE_MAX, perMessageDeflate: false, clientTracking: false });
  const open = new Set<Open>();
  let closing = false;
  let watching: Promise<void> | null = null;

  /** Why this session may not go on now (a close), or null. */
  async function stillAllowed(o: Open): Promise<{ code: number; reason: string } | null> {
    let principal: Principal;
    try {
      principal = checkPrincipal(await deps.resolve(o.secret), o.cookie);
    } catch {
      return { code: TERMINAL_CLOSE.signedOut, reason: 'signed out, or the key no longer allows this terminal' };
    }
    const inst = await deps.instances.find(o.instanceId);
    if (inst && !(await mayOpen(principal, inst, deps.mayWrite))) return { code: TERMINAL_CLOSE.signedOut, reason: 'access to this instance was taken away' };
    if (!inst) return { code: TERMINAL_CLOSE.destroyed, reason: `instance ${o.instanceId} was destroyed` };
    // A stop asked for counts at once: the host's stopping kills the shell before its report says so, and the close
    // should say why rather than the shell's exit status.
    if (inst.actualStatus !== 'running' || inst.intendedStatus !== 'running') {
      const now = inst.actualStatus !== 'running' ? (inst.actualStatus ?? 'not running') : 'stopping';
      return { code: TERMINAL_CLOSE.stopped, reason: `instance ${o.instanceId} stopped (${now})` };
    }
    return null;
  }

  async function checkAll(): Promise<void> {
    await Promise.all([...open].map(async (o) => {
      const why = await stillAllowed(o).catch((err: unknown) => {
        log.warn({ err, instance: o.instanceId }, 'terminal: could not check an open session');
        return null;
      });
      if (why) o.session.end(why.code, why.reason);
    }));
  }

  /** Runs while sessions are open. */
  async function watch(): Promise<void> {
    let mark = await deps.instances.changeMark().catch(() => -1);
    let checked = clock.now();
    while (open.size > 0 && !closing) {
      await deps.instances.nextChange(WATCH_EVERY_MS);
      const now = await deps.instances.changeMark().catch(() => mark);
      // The clock may be virtual: the full recheck also counts real passes (15 s of one-second waits at most).
      const due = clock.now() - checked >= REVALIDATE_MS / 1000;
      if (now === mark && !due) continue;
      mark = now;
      checked = clock.now();
      await checkAll();
    }
  }

  function startWatch(): void {
    watching ??= watch().catch((err: unknown) => log.error({ err }, 'terminal: the watch failed')).finally(() => {
      watching = null;
      if (open.size > 0 && !closing) startWatch();
    });
  }

  function refuseHttp(socket: Socket, err: ApiError): void {
    const body = JSON.stringify(err.body());
    const head = [
      `HTTP/1.1 ${err.status} ${STATUS_CODES[err.status] ?? 'Error'}`, 'Content-Type: application/json; charset=utf-8',
      `Content-Length: ${Buffer.byteLength(body)}`, 'Connection: close', '', '',
    ].join('\r\n');
    if (socket.writable) socket.end(head + body);
    else socket.destroy();
  }

  async function take(req: IncomingMessage, socket: Socket, head: Buffer, instanceId: number): Promise<void> {
    socket.on('error', () => undefined);
    const started = clock.now();
    const ip = clientAddress(req, config.trustProxy);
    const source = `${ip.includes(':') ? `[${ip}]` : ip}:${req.socket.remotePort ?? 0}`;
    let principal: Principal | null = null;
    const record = (params: Record<string, unknown>) => {
      if (!principal) return;
      deps.audit.record({
        userId: principal.user.id, teamId: principal.teamId, apiKeyId: (principal.key as { id?: number }).id ?? null,
        action: TERMINAL_SESSION_ACTION, route: AUDIT_ROUTE, ip, params: { instance_id: instanceId, source, started_at: started, ...params }, fields: [],
      }).catch((err: unknown) => log.warn({ err, instance: instanceId }, 'could not record a terminal session in the audit log'));
    };
    let tunnel: TunnelStream | undefined;
    try {
      if (closing) throw new ApiError('service_unavailable', 'the server is shutting down');
      // The handshake is checked here, before a shell is started for it: ws would refuse a bad one itself, but only
      // after the stream to the host was opened.
      const key = req.headers['sec-websocket-key'];
      if (req.method !== 'GET' || String(req.headers.upgrade ?? '').toLowerCase() !== 'websocket'
        || typeof key !== 'string' || !WEBSOCKET_KEY.test(key) || req.headers['sec-websocket-version'] !== '13') {
        throw new ApiError('bad_request', 'the terminal is a WebSocket: GET with "Upgrade: websocket", Sec-WebSocket-Version 13 and a Sec-WebSocket-Key');
      }
      const presented = presentedCredential(req, () => ownOrigins(req, config.publicUrl, config.trustProxy));
      principal = checkPrincipal(await deps.resolve(presented.secret), presented.cookie);
      const found = await deps.instances.find(instanceId);
      // Another account's instance reads as none at all, as on every instance route.
      const inst = found && (await mayOpen(principal, found, deps.mayWrite)) ? found : undefined;
      if (!inst) throw new ApiError('not_found', `instance ${instanceId} not found`);
      if (inst.simulated || inst.machineId === null) {
        throw new ApiError('conflict', `instance ${instanceId} is on a simulated machine (emulator): there is no container to open a terminal in`);
      }
      if (inst.actualStatus !== 'running' || inst.intendedStatus !== 'running') {
        const now = inst.actualStatus === 'running' ? 'stopping' : (inst.actualStatus ?? 'starting');
        throw new ApiError('conflict', `instance ${instanceId} is not running (its status: ${now}): start it first`);
      }
      if (!tunnels) throw new ApiError('bad_gateway', 'this server has no host tunnels');
      try {
        tunnel = await tunnels.open(inst.machineId, { kind: 'terminal', instanceId }, { source });
      } catch (err) {
        if (!(err instanceof TunnelError)) throw err;
        throw new ApiError('bad_gateway', err.code === 'not_connected'
          ? `the host of instance ${instanceId} is not connected: its agent is offline or reconnecting`
          : `instance ${instanceId} cannot be reached: ${err.message}`);
      }
      if (socket.destroyed || closing) {
        tunnel.stream.destroy();
        return;
      }
      const t = tunnel;
      const o: Open = { session: null as never, instanceId, secret: presented.secret, cookie: presented.cookie };
      // The browser gone before the upgrade completed: the shell goes too.
      const gone = () => t.stream.destroy();
      socket.once('close', gone);
      wss.handleUpgrade(req, socket, head, (ws: WebSocket) => {
        socket.off('close', gone);
        o.session = new TerminalSession(ws, t, {
          whyEnded: () => stillAllowed(o),
          ended: (e: SessionEnd) => {
            open.delete(o);
            const duration = Math.max(0, clock.now() - started);
            record({
              outcome: 'connected', closed: e.code, reason: e.reason, exit: e.exit,
              duration_s: Math.round(duration * 1000) / 1000, bytes_in: e.bytesIn, bytes_out: e.bytesOut,
            });
            log.info({ instance: instanceId, source, closed: e.code, reason: e.reason, exit: e.exit, duration_s: duration, bytes_in: e.bytesIn, bytes_out: e.bytesOut }, 'terminal session ended');
          },
        });
        open.add(o);
        startWatch();
      });
    } catch (err) {
      tunnel?.stream.destroy();
      const e = err instanceof ApiError ? err : new ApiError('internal_error', 'the terminal could not be opened');
      if (!(err instanceof ApiError)) log.error({ err, instance: instanceId }, 'terminal: an upgrade failed');
      record({ outcome: 'refused', status: e.status, reason: e.message, duration_s: 0, bytes_in: 0, bytes_out: 0 });
      refuseHttp(socket, e);
    }
  }

  return {
    /** app.ts's upgrade handler: true when the request is a terminal's (answered here, now or later). */
    upgrade(req: IncomingMessage, socket: Socket, head: Buffer): boolean {
      const m = TERMINAL_PATH.exec(req.url ?? '');
      if (!m) return false;
      void take(req, socket, head, Number(m[1]));
      return true;
    },

    /** Wires the tunnels (until then every terminal is refused with 502). */
    useTunnels(api: TunnelsApi): void {
      tunnels = api;
    },

    /** Ends every open terminal (1001) and refuses new ones: the server is closing. */
    async close(): Promise<void> {
      closing = true;
      for (const o of [...open]) o.session.end(TERMINAL_CLOSE.serverClosing, 'the server is shutting down');
      await watching;
    },

    /** Open terminals in this process (tests, metrics). */
    openCount: (): number => open.size,
  };
}

export type TerminalService = ReturnType<typeof terminalServiceFactory>;
