/**
 * One renter's connection to a gateway port (README "Connecting to an instance"): its instance is read afresh; an
 * instance on a simulated machine, one not running, a host whose agent is not connected, or a source refused for
 * failed logins gets the reason as SSH (gateway-refusal.ts); otherwise a stream to the instance's SSH endpoint is
 * opened through its host's tunnel and the bytes are passed both ways, untouched: SSH stays end to end. When it ends,
 * the agent's trailers say whether a login failed (the per-source limit counts it), and the audit log records who
 * (the instance's owner, the login name), which instance, from where, when, how long and how many bytes.
 */
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import type { Clock } from '../platform/clock.js';
import { TunnelError, type TunnelsApi, type TunnelStream, type TunnelStreamEnd, type TunnelTarget } from '../tunnels/tunnels-contract.js';
import { SSH_SESSION_ACTION, type GatewayAudit, type GatewayInstance, type GatewayInstancesPort, type GatewayRole } from './gateway-contract.js';
import type { GatewayLimits } from './gateway-limits.js';
import { refuseAsSsh, type Refusal } from './gateway-refusal.js';

/** How long the agent's trailers are awaited once the bytes stopped; past it, the session is recorded without them. */
const TRAILERS_WAIT_MS = 5000;

export interface ConnectionDeps {
  instances: Pick<GatewayInstancesPort, 'find'>;
  tunnels(): TunnelsApi;
  limits: GatewayLimits;
  audit: GatewayAudit;
  hostKey(): Promise<string>;
  clock: Clock;
  log: Logger;
  /** Shown in the audit record's route: `ssh <gateway host>:<port>`. */
  gatewayHost: string;
}

export interface GatewayConnection {
  socket: Socket;
  port: number;
  instanceId: number;
  role: GatewayRole;
  /** The limits' key for the socket's address (platform/connection-limits.ts `sourceKey`). */
  source: string;
}

const refusalFor = {
  simulated: (id: number): Refusal => ({
    reason: `instance ${id} is on a simulated machine: there is no container to reach`,
    detail: 'The emulator simulates this host. Rent an offer of a real host (one run by `gpuplane agent`) to log in.',
  }),
  notRunning: (inst: GatewayInstance): Refusal => ({
    reason: `instance ${inst.id} is not running (its status: ${inst.actualStatus ?? 'starting'})`,
    detail: `Start it (vastai start instance ${inst.id}) and connect once show instance says running.`,
  }),
  gone: (id: number): Refusal => ({ reason: `instance ${id} does not exist any more` }),
  blocked: (seconds: number): Refusal => ({
    reason: `too many failed logins from your address: refused for ${seconds} more seconds`,
  }),
  tunnel: (inst: GatewayInstance, err: TunnelError): Refusal =>
    err.code === 'not_connected'
      ? {
          reason: `the host of instance ${inst.id} is not connected: its agent is offline or reconnecting`,
          detail: 'Try again in a minute; if it stays so, the host is down (show instance says offline after a while).',
        }
      : { reason: `instance ${inst.id} cannot be reached: ${err.message}` },
};

/** Serves one accepted connection to its end. Never rejects. */
export async function serveConnection(deps: ConnectionDeps, c: GatewayConnection): Promise<void> {
  const { socket } = c;
  const started = deps.clock.now();
  const ip = socket.remoteAddress ?? '';
  const from = `${ip.includes(':') ? `[${ip}]` : ip}:${socket.remotePort ?? 0}`;
  let inst: GatewayInstance | undefined;

  const record = (params: Record<string, unknown>) => {
    if (!inst) return;
    deps.audit
      .record({
        userId: inst.userId, teamId: inst.teamId, apiKeyId: null, action: SSH_SESSION_ACTION, route: `ssh ${deps.gatewayHost}:${c.port}`, ip,
        params: { instance_id: inst.id, port: c.port, role: c.role, source: from, started_at: started, ...params }, fields: [],
      })
      .catch((err: unknown) => deps.log.warn({ err, instance: inst?.id }, 'could not record an SSH session in the audit log'));
  };
  const refuse = async (r: Refusal) => {
    record({ outcome: 'refused', reason: r.reason, duration_s: 0, bytes_in: 0, bytes_out: 0 });
    deps.log.info({ instance: c.instanceId, port: c.port, source: from, reason: r.reason }, 'ssh gateway: connection refused');
    try {
      await refuseAsSsh(socket, r, await deps.hostKey());
    } catch (err) {
      deps.log.warn({ err }, 'ssh gateway: the refusal could not be said');
      socket.destroy();
    }
  };

  try {
    inst = await deps.instances.find(c.instanceId);
    const blocked = deps.limits.blockedFor(c.source);
    if (blocked > 0) return await refuse(refusalFor.blocked(blocked));
    if (!inst) return await refuse(refusalFor.gone(c.instanceId));
    if (inst.simulated || inst.machineId === null) return await refuse(refusalFor.simulated(inst.id));
    if (inst.actualStatus !== 'running') return await refuse(refusalFor.notRunning(inst));
    const target: TunnelTarget = c.role === 'copy' ? { kind: 'agent-ssh', instanceId: inst.id } : { kind: 'ssh', instanceId: inst.id };
    let tunnel: TunnelStream;
    try {
      tunnel = await deps.tunnels().open(inst.machineId, target, { source: from });
    } catch (err) {
      if (err instanceof TunnelError) return await refuse(refusalFor.tunnel(inst, err));
      throw err;
    }
    await splice(deps, c, inst, tunnel, from, started, record);
  } catch (err) {
    deps.log.error({ err, instance: c.instanceId, port: c.port }, 'ssh gateway: a connection failed');
    socket.destroy();
  }
}

/** Passes bytes both ways until either side closes, then counts a failed login and records the session. */
async function splice(
  deps: ConnectionDeps, c: GatewayConnection, inst: GatewayInstance, tunnel: TunnelStream, from: string, started: number,
  record: (params: Record<string, unknown>) => void,
): Promise<void> {
  const { socket } = c;
  const { stream } = tunnel;
  // The trailers may settle (or fail) before they are awaited below: never an unhandled rejection.
  const trailers = tunnel.end.catch((): TunnelStreamEnd => ({}));
  // Either side gone: the other goes too (a destroyed instance's listener destroys the renter's socket, which may
  // already have happened while the stream was being opened).
  const gone = (a: Duplex, b: Duplex) => (a.closed ? Promise.resolve() : new Promise<void>((r) => a.once('close', () => r()))).then(() => {
    b.destroy();
  });
  const both = Promise.all([gone(socket, stream), gone(stream, socket)]);
  socket.on('error', () => stream.destroy());
  stream.on('error', () => socket.destroy());
  if (socket.destroyed) stream.destroy();
  else {
    socket.pipe(stream);
    stream.pipe(socket);
  }
  await both;
  let timer: NodeJS.Timeout | undefined;
  const end = await Promise.race([trailers, new Promise<TunnelStreamEnd>((r) => (timer = setTimeout(() => r({}), TRAILERS_WAIT_MS)))]);
  clearTimeout(timer);
  if (end.auth === 'failed') deps.limits.failed(c.source);
  const duration = Math.max(0, deps.clock.now() - started);
  const bytes = { bytes_in: socket.bytesRead, bytes_out: socket.bytesWritten };
  record({ outcome: 'connected', login: end.user ?? null, auth: end.auth ?? null, duration_s: Math.round(duration * 1000) / 1000, ...bytes });
  deps.log.info({ instance: inst.id, port: c.port, source: from, user: end.user, auth: end.auth, duration_s: duration, ...bytes }, 'ssh gateway: session ended');
}
