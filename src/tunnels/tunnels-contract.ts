/**
 * The tunnels feature's public face: streams to the containers of a machine, through the one outbound connection its
 * agent keeps to the server (docs/AGENT-PROTOCOL.md, "The tunnel"). Whichever server process holds that connection,
 * any process can open a stream (the hop between processes is this feature's business, not its callers').
 */
import type { Duplex } from 'node:stream';
import type { TunnelStreamEnd, TunnelStreamInfo, TunnelTarget } from '../protocol/tunnel-targets.js';

export type { TunnelStreamEnd, TunnelStreamInfo, TunnelTarget };

/** A byte stream to the target; `end` settles with the agent's trailers once the stream is over (`{}` if none). */
export interface TunnelStream {
  stream: Duplex;
  end: Promise<TunnelStreamEnd>;
}

/**
 * Why a stream could not be opened: `not_connected` (no agent tunnel for the machine, on any process),
 * `refused` (the agent answered no: not its instance, no such container, bad target), `unreachable` (the agent took
 * the stream but could not reach the target: container stopped, port closed). `message` is a sentence for a renter.
 */
export class TunnelError extends Error {
  constructor(
    readonly code: 'not_connected' | 'refused' | 'unreachable',
    message: string,
  ) {
    super(message);
    this.name = 'TunnelError';
  }
}

export interface TunnelsApi {
  /** Opens a stream to `target` on the machine's host; rejects with a TunnelError. */
  open(machineId: number, target: TunnelTarget, info: TunnelStreamInfo): Promise<TunnelStream>;
  /** Whether some server process holds a tunnel of the machine now. */
  connected(machineId: number): Promise<boolean>;
}
