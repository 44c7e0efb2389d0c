/**
 * The tunnels feature's table (migration 0046_agent_tunnels): which server process holds each machine's agent tunnel
 * now, and the URL the other processes make their hop to (docs/AGENT-PROTOCOL.md, "The tunnel", many processes).
 */

/** One row per machine whose agent holds a tunnel; written by the process that holds it, deleted only by that process. */
export interface AgentTunnelsTable {
  machine_id: number;
  /** A random id of the holding process, drawn at its start. */
  process_id: string;
  /** Where another process reaches the holder (`GPUPLANE_HOP_URL`). */
  hop_url: string;
  /** When the tunnel was accepted (Unix seconds). */
  connected_at: number;
}

export interface TunnelsTables {
  agent_tunnels: AgentTunnelsTable;
}
