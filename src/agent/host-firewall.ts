/**
 * The host firewall rule that keeps instances away from the host's own services (issue 29 item 13; the operator's
 * side is docs/HOST-SECURITY.md). Docker isolates one bridge from another (its FORWARD rules), but a packet from a
 * container to an address of the host itself (the bridge's gateway, the host's public address) goes through INPUT,
 * which Docker leaves alone: a service listening on the host's 0.0.0.0 (a database, the node exporter, the agent's
 * own server on one box) answers every renter. One rule over every instance bridge (all named BRIDGE_PREFIX…) drops
 * new connections from them to the host; replies to connections the host opened (the published ports' proxy) pass,
 * and ports published on the host's addresses are reached through Docker's DNAT, which never enters INPUT.
 */
import type { AgentLog } from './agent-log.js';
import { BRIDGE_PREFIX } from './container-spec.js';
import type { Exec } from './hardware.js';

/** Tagged, so an operator can tell it from their own rules (`iptables -S INPUT`). */
export const HOST_FIREWALL_COMMENT = 'gpuplane-agent: instances reach no host service';

/** The rule of the INPUT chain, as iptables' arguments (the same for ip6tables). */
export const HOST_FIREWALL_RULE: readonly string[] = Object.freeze([
  '-i', `${BRIDGE_PREFIX}+`, '-m', 'conntrack', '!', '--ctstate', 'ESTABLISHED,RELATED',
  '-m', 'comment', '--comment', HOST_FIREWALL_COMMENT, '-j', 'DROP',
]);

/** `iptables -C`'s exit status when the rule is not there (others: not root, no such table, …). */
const RULE_MISSING = 1;
/** IPv4 always; IPv6 too, where the host has it: a container's link-local address reaches a service on `::`. */
const TOOLS = ['iptables', 'ip6tables'] as const;

export interface FirewallOutcome {
  tool: (typeof TOOLS)[number];
  /** `present`: already there; `installed`: inserted now; `failed`: could not (`detail` says why). */
  result: 'present' | 'installed' | 'failed';
  detail?: string;
}

const firstLine = (text: string) => text.trim().split('\n')[0] ?? '';

/** Makes sure the rule is first in INPUT for each tool; never throws. */
export async function ensureHostFirewall(exec: Exec): Promise<FirewallOutcome[]> {
  const out: FirewallOutcome[] = [];
  for (const tool of TOOLS) {
    const check = await exec(tool, ['-w', '-C', 'INPUT', ...HOST_FIREWALL_RULE]);
    if (check.notFound) {
      out.push({ tool, result: 'failed', detail: `${tool} was not found on PATH` });
      continue;
    }
    if (check.code === 0) {
      out.push({ tool, result: 'present' });
      continue;
    }
    if (check.code !== RULE_MISSING) {
      out.push({ tool, result: 'failed', detail: firstLine(check.stderr) || `exit status ${check.code}` });
      continue;
    }
    const add = await exec(tool, ['-w', '-I', 'INPUT', '1', ...HOST_FIREWALL_RULE]);
    out.push(add.code === 0 ? { tool, result: 'installed' } : { tool, result: 'failed', detail: firstLine(add.stderr) || `exit status ${add.code}` });
  }
  return out;
}

/** Logs what `ensureHostFirewall` found: a failure is a warning naming what the operator must set instead. */
export function logFirewall(log: AgentLog, outcomes: FirewallOutcome[]): void {
  for (const o of outcomes) {
    if (o.result === 'installed') log.info({ tool: o.tool }, 'host firewall rule installed');
    else if (o.result === 'failed') {
      log.warn({ tool: o.tool, err: o.detail }, 'cannot install the host firewall rule: containers can reach services on this host; see docs/HOST-SECURITY.md');
    }
  }
}
