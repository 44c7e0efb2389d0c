/**
 * Where a renter's rsync reaches an instance's copy endpoint: the SSH gateway's host and the instance's copy port
 * (design of issue 31: the gateway gives instance slot k = id mod floor(span / 3) the ports base + 3k … base + 3k + 2,
 * the last being the copy port, always the agent's own SSH server, which has the `vastai_kaalia` user). The gateway
 * serves instances of every runtype but `args`.
 *
 * Stand-in until the gateway's own `gatewayPorts(config, instanceId, runtype)` (src/gateway/gateway-contract.ts) is in
 * the tree: the root then wires that instead, and this file goes. It reads the gateway's settings' defaults: host =
 * the public URL's host, ports 10000-65535.
 */
import type { CopyInstance } from './copy-service.js';

const DEFAULT_BASE = 10000;
const DEFAULT_LAST = 65535;

export function defaultCopyEndpoint(publicUrl: string, inst: CopyInstance): { host: string; port: number } | undefined {
  if (inst.image_runtype === 'args') return undefined;
  const slots = Math.floor((DEFAULT_LAST - DEFAULT_BASE + 1) / 3);
  const first = DEFAULT_BASE + 3 * (inst.id % slots);
  return { host: new URL(publicUrl).hostname.replace(/^\[(.*)\]$/, '$1'), port: first + 2 };
}
