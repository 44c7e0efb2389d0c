/**
 * One agent's tunnel as this server process holds it: after the 101, the server is the HTTP/2 *client* on the agent's
 * socket (reverse HTTP/2), so it opens a CONNECT stream per renter connection while the agent only answers. PINGs
 * every TUNNEL_PING_INTERVAL_S find a dead connection the kernel would keep for hours; one left unanswered for an
 * interval in which nothing else arrived either closes the session (and the agent, hearing no PING, reconnects).
 */
import { connect, type ClientHttp2Session } from 'node:http2';
import type { Socket } from 'node:net';
import { SOURCE_HEADER, TUNNEL_SESSION_WINDOW } from '../protocol/tunnel-wire.js';
import { targetAuthority } from '../protocol/tunnel-targets.js';
import type { TunnelStream, TunnelStreamInfo, TunnelTarget } from './tunnels-contract.js';
import { H2_OPTIONS, openStream } from './tunnels-streams.js';

export interface TunnelSession {
  readonly machineId: number;
  /** Opens a stream to a target on the machine; rejects with a TunnelError. */
  open(target: TunnelTarget, info: TunnelStreamInfo): Promise<TunnelStream>;
  /** Ends the session now (its streams with it). */
  close(): void;
  /** Settles once the session is over, whoever ended it. */
  readonly closed: Promise<void>;
}

export const NOT_CONNECTED = "the machine's agent is not connected to the server";

/** Takes over an upgraded socket (its `head`, bytes read past the request, first) as the HTTP/2 client of a tunnel. */
export function tunnelSession(machineId: number, socket: Socket, head: Buffer, pingIntervalMs: number): TunnelSession {
  if (head.length > 0) socket.unshift(head);
  socket.setNoDelay(true);
  socket.setTimeout(0);
  socket.setKeepAlive(true, pingIntervalMs);
  const h2: ClientHttp2Session = connect('http://agent.invalid', { ...H2_OPTIONS, createConnection: () => socket });
  h2.on('connect', () => h2.setLocalWindowSize(TUNNEL_SESSION_WINDOW));
  // A session error ends it ('close' follows); the streams see their own errors.
  h2.on('error', () => undefined);
  h2.on('goaway', () => h2.destroy());

  // Dead when a PING went unanswered for an interval AND nothing at all arrived in it: a PING queued behind a full
  // flow-control window of data (32 MiB over a slow link, or a loaded host) answers late, and that is no death.
  let unanswered = false;
  let lastRead = socket.bytesRead;
  const pinger = setInterval(() => {
    const read = socket.bytesRead;
    const quiet = read === lastRead;
    lastRead = read;
    if (unanswered && quiet) return h2.destroy();
    unanswered = true;
    try {
      h2.ping((err) => {
        if (!err) unanswered = false;
      });
    } catch {
      h2.destroy();
    }
  }, pingIntervalMs).unref();
  const closed = new Promise<void>((done) =>
    h2.once('close', () => {
      clearInterval(pinger);
      socket.destroy();
      done();
    }),
  );

  return {
    machineId,
    open: (target, info) => openStream(h2, targetAuthority(target), { [SOURCE_HEADER]: info.source }, NOT_CONNECTED),
    close: () => h2.destroy(),
    closed,
  };
}
