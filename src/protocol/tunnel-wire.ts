/**
 * The agent tunnel's wire constants, shared by the server (src/tunnels/) and the agent (src/agent/agent-tunnel.ts):
 * the upgrade that opens it, the headers of its streams, and the HTTP/2 flow-control windows both ends advertise
 * (docs/AGENT-PROTOCOL.md, "The tunnel"). No imports: both sides take it as it is.
 */

/** The agent's upgrade request: `GET` on the server URL's path, `Connection: Upgrade`, `Upgrade: TUNNEL_UPGRADE`. */
export const TUNNEL_PATH = '/api/v0/agent/tunnel/';
export const TUNNEL_UPGRADE = 'gpuplane-tunnel/1';

/** On each stream's CONNECT request: who is at the far end (tunnel-targets.ts `TunnelStreamInfo.source`). */
export const SOURCE_HEADER = 'x-gpuplane-source';
/** On a refusal (400, 404, 502): a sentence saying why, for the renter. */
export const REASON_HEADER = 'x-gpuplane-reason';
/** On the 101: seconds between the server's HTTP/2 PINGs; an agent that hears none for three of them reconnects. */
export const PING_INTERVAL_HEADER = 'x-gpuplane-ping-interval';

/**
 * Flow-control windows, bytes. HTTP/2's defaults (64 KiB) would hold a stream to 64 KiB per round trip, far under
 * line rate; these let one scp fill a link of a few hundred MB/s at tens of milliseconds of round trip.
 */
export const TUNNEL_STREAM_WINDOW = 8 * 1024 * 1024;
export const TUNNEL_SESSION_WINDOW = 32 * 1024 * 1024;
/**
 * The largest frame either end accepts. Node's HTTP/2 still sends DATA frames of 16 KiB at most (measured: a 200 MB
 * download arrived as 16,031 chunks, none larger), so this only lets another sender send fewer.
 */
export const TUNNEL_MAX_FRAME = 256 * 1024;
/** nghttp2's memory cap per session, MB (Node's `maxSessionMemory`): above the session window, with room. */
export const TUNNEL_SESSION_MEMORY_MB = 96;
/** Seconds between the server's PINGs, said to the agent on the 101. */
export const TUNNEL_PING_INTERVAL_S = 15;
