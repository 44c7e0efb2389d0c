/**
 * The tunnels feature (docs/AGENT-PROTOCOL.md, "The tunnel"): each agent keeps one outbound connection to a server
 * process, upgraded from its HTTP request to reverse HTTP/2 (tunnels-session.ts), through which any process opens
 * streams to that machine's containers. This process holds its own agents' tunnels (a newer one of a machine replaces
 * the older), records in the database which process holds each (tunnels-store.ts), and reaches a tunnel held elsewhere
 * through a hop to its holder (tunnels-hop.ts). It implements TunnelsApi for the gateway and copy.
 */
import type { AddressInfo, Socket } from 'node:net';
import type { Clock } from '../platform/clock.js';
import type { Db } from '../platform/db/connect.js';
import { kvState } from '../platform/db/kv.js';
import type { Random } from '../platform/random.js';
import { TUNNEL_PING_INTERVAL_S } from '../protocol/tunnel-wire.js';
import { TunnelError, type TunnelsApi, type TunnelStream, type TunnelStreamInfo, type TunnelTarget } from './tunnels-contract.js';
import { hopClient, hopHolder } from './tunnels-hop.js';
import { NOT_CONNECTED, tunnelSession, type TunnelSession } from './tunnels-session.js';
import { tunnelsStore } from './tunnels-store.js';

/** The kv key of the cluster's hop secret, made once by the first process that needs it. */
const HOP_SECRET_KV = 'tunnels.hop_secret';

export interface TunnelsLog {
  info(fields: object, msg: string): void;
  warn(fields: object, msg: string): void;
}

export interface TunnelsDeps {
  db: Db;
  clock: Clock;
  random: Random;
  log: TunnelsLog;
  /** The machine a machine key belongs to, else an ApiError 401 (the agent server's `authenticate`). */
  authenticate: (key: string | null) => Promise<number>;
  /** Where the other processes reach this one (`GPUPLANE_HOP_URL`); unset, this process's listen address. */
  hopUrl: string | undefined;
  /** The listen address (GPUPLANE_HOST), for the default hop URL. */
  listenHost: string;
  /** Wall-clock milliseconds, for the hop's signatures. @default Date.now */
  nowMs?: () => number;
  /** @default TUNNEL_PING_INTERVAL_S × 1000 */
  pingIntervalMs?: number;
}

export function tunnelsServiceFactory(deps: TunnelsDeps) {
  const { db, clock, random, log } = deps;
  const store = tunnelsStore(db);
  const kv = kvState(db);
  const nowMs = deps.nowMs ?? Date.now;
  const pingIntervalMs = deps.pingIntervalMs ?? TUNNEL_PING_INTERVAL_S * 1000;
  /** This process, in the holder rows: drawn at each start, so a restarted process holds none of its old rows. */
  const processId = random.bytes(12).toString('base64url');
  const sessions = new Map<number, TunnelSession>();
  let closing = false;
  let listenAddress: () => AddressInfo | string | null = () => null;
  /** The hop URL: the setting, else `http://HOST:PORT` of where the server listens (a wildcard host: loopback). */
  const hopUrl = () => {
    if (deps.hopUrl) return deps.hopUrl;
    const a = listenAddress();
    const port = typeof a === 'object' && a ? a.port : 0;
    const host = deps.listenHost === '0.0.0.0' ? '127.0.0.1' : deps.listenHost === '::' ? '::1' : deps.listenHost;
    return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  };

  let secretRead: Promise<string> | undefined;
  const secret = () =>
    (secretRead ??= (async () => {
      await kv.claim(db, HOP_SECRET_KV, random.bytes(32).toString('base64url'));
      const value = await kv.get(db, HOP_SECRET_KV);
      if (!value) throw new Error('the hop secret is missing from the kv table');
      return value;
    })().catch((err) => {
      secretRead = undefined;
      throw err;
    }));

  async function openLocal(machineId: number, target: TunnelTarget, info: TunnelStreamInfo): Promise<TunnelStream> {
    const s = sessions.get(machineId);
    if (!s) throw new TunnelError('not_connected', NOT_CONNECTED);
    return s.open(target, info);
  }

  const hops = hopClient({ secret, random, nowMs });
  const holder = hopHolder({ secret, random, nowMs, openLocal });

  const api: TunnelsApi = {
    async open(machineId, target, info) {
      if (sessions.has(machineId)) return openLocal(machineId, target, info);
      const row = await store.holder(machineId);
      // No row, or this process's own (its tunnel is gone): nobody holds one.
      if (!row || row.process_id === processId) throw new TunnelError('not_connected', NOT_CONNECTED);
      return hops.open(row.hop_url, machineId, target, info);
    },
    async connected(machineId) {
      if (sessions.has(machineId)) return true;
      const row = await store.holder(machineId);
      return row !== undefined && row.process_id !== processId;
    },
  };

  /** Holds an authenticated agent's upgraded socket as its machine's tunnel. */
  function accept(machineId: number, socket: Socket, head: Buffer): void {
    const session = tunnelSession(machineId, socket, head, pingIntervalMs);
    const older = sessions.get(machineId);
    sessions.set(machineId, session);
    older?.close();
    log.info({ machine_id: machineId, remote: socket.remoteAddress, replaced: older !== undefined }, 'agent tunnel connected');
    const held = store
      .hold({ machine_id: machineId, process_id: processId, hop_url: hopUrl(), connected_at: clock.now() })
      .catch((err) => log.warn({ err, machine_id: machineId }, 'recording the agent tunnel\'s holder failed; other processes cannot reach it'));
    void session.closed.then(async () => {
      if (sessions.get(machineId) !== session) return;
      sessions.delete(machineId);
      log.info({ machine_id: machineId }, 'agent tunnel closed');
      await held;
      // A newer tunnel of the machine may be held by another process now: only this process's row goes.
      if (!closing) await store.release(machineId, processId).catch((err) => log.warn({ err, machine_id: machineId }, 'releasing the agent tunnel\'s row failed'));
    });
  }

  return {
    api,
    open: api.open,
    connected: api.connected,
    pingIntervalMs,
    accept,
    /** Tells where the server listens (app.ts), for the default hop URL. */
    useListenAddress(address: () => AddressInfo | string | null): void {
      listenAddress = address;
    },
    authenticate: deps.authenticate,
    hop: holder,
    /**
     * Ends the machine's tunnel if this process holds it (its agent reconnects, and is authenticated again: a deleted
     * machine's is refused). For when a machine is deleted, and for tests.
     */
    drop(machineId: number): void {
      sessions.get(machineId)?.close();
    },
    /** Machines whose tunnel this process holds now (metrics, tests). */
    held: (): number[] => [...sessions.keys()],
    /** This process's id in the holder rows. */
    processId,

    /** Ends every tunnel and hop of this process and releases its rows (before the database closes). */
    async close(): Promise<void> {
      closing = true;
      const mine = [...sessions.values()];
      sessions.clear();
      for (const s of mine) s.close();
      hops.close();
      holder.close();
      await Promise.all(mine.map((s) => store.release(s.machineId, processId).catch(() => undefined)));
    },
  };
}

export type TunnelsService = ReturnType<typeof tunnelsServiceFactory>;
