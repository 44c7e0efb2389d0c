/**
 * What a stream through an agent's tunnel leads to (docs/AGENT-PROTOCOL.md, "The tunnel"). The server names a target
 * when it opens a stream; the agent serves it for one of its own instances only. Shared by both sides, as the wire
 * form of a target is theirs to agree on.
 */

export type TunnelTarget =
  /** The instance's SSH endpoint: the image's own sshd when it answers on port 22, else the agent's own SSH server. */
  | { kind: 'ssh'; instanceId: number }
  /** Always the agent's own SSH server for the instance (copy's `vastai_kaalia` user lives only there). */
  | { kind: 'agent-ssh'; instanceId: number }
  /** A TCP port of the instance's container, on the instance's own network. */
  | { kind: 'tcp'; instanceId: number; port: number }
  /** An rsync daemon over the stream itself (`rsync --server --daemon`), one module named after the instance. */
  | { kind: 'rsync'; instanceId: number }
  /**
   * A login shell in the container on a TTY (issue 32: the console's terminal), spoken in terminal-wire.ts's frames
   * towards the agent (input, resize) and raw TTY output back. The server opens it only for the instance's owner.
   */
  | { kind: 'terminal'; instanceId: number };

/** Who is at the far end of a stream, for the agent's log lines and its answer. */
export interface TunnelStreamInfo {
  /** The renter's address as the server saw it (`203.0.113.7:51234`). */
  source: string;
}

/**
 * What the agent says when a stream ends (HTTP/2 trailers): at least `auth` for SSH targets served by the agent's own
 * server (`ok`, `failed`, or `none` when the peer left before authenticating) and `user` (the login name) once
 * authenticated. Text values only; never a key.
 */
export type TunnelStreamEnd = Record<string, string>;

const KINDS = new Set(['ssh', 'agent-ssh', 'tcp', 'rsync', 'terminal']);

/** The target as the `:authority` of the stream's CONNECT request: `<kind>.<instance id>:<port or 0>`. */
export function targetAuthority(t: TunnelTarget): string {
  return `${t.kind}.${t.instanceId}:${t.kind === 'tcp' ? t.port : 0}`;
}

/** The target an authority names, or null when it is not one (the agent answers 400). */
export function parseTargetAuthority(authority: string): TunnelTarget | null {
  const m = /^([a-z-]+)\.([1-9][0-9]{0,14}):([0-9]{1,5})$/.exec(authority);
  if (!m || !KINDS.has(m[1])) return null;
  const instanceId = Number(m[2]);
  const port = Number(m[3]);
  if (!Number.isSafeInteger(instanceId)) return null;
  if (m[1] === 'tcp') return port >= 1 && port <= 65535 ? { kind: 'tcp', instanceId, port } : null;
  if (port !== 0) return null;
  return { kind: m[1] as 'ssh' | 'agent-ssh' | 'rsync' | 'terminal', instanceId };
}
