/**
 * What an agent says of its machine, checked beyond its schema, one way for registration and for status reports
 * (issue 29 item 20: reports skipped registration's checks, so ports `99999` and `0` and markup in `HostIp` were
 * stored and shown to renters, and an inverted port range was accepted). Whatever a host sends, renters are shown
 * only addresses and ports that can be real, inside the range the machine declared.
 */
import { isIP } from 'node:net';
import type { AgentHardwareT, ObservedInstanceT } from '../protocol/agent-protocol-schemas.js';
import type { MachineInfo } from '../machines/machines-contract.js';
import { badRequest } from '../platform/errors.js';

/** Text shown to renters (GPU, CPU and host names) carries no markup and no control characters. */
const SHOWN_TEXT = /^[^<>\p{Cc}]*$/u;

/** A registration's or a report's hardware: a port range in order, one GPU entry per GPU, text fit to show. */
export function checkHardware(hw: AgentHardwareT): void {
  if (hw.direct_port_end < hw.direct_port_start) {
    throw badRequest('hardware.direct_port_end must not be below hardware.direct_port_start');
  }
  if (hw.gpus.length !== hw.num_gpus) throw badRequest(`hardware.gpus lists ${hw.gpus.length} GPUs but num_gpus is ${hw.num_gpus}`);
  if (new Set(hw.gpus.map((g) => g.index)).size !== hw.gpus.length) throw badRequest('hardware.gpus: each GPU index must appear once');
  if (isIP(hw.public_ipaddr) !== 4) throw badRequest(`hardware.public_ipaddr: ${JSON.stringify(hw.public_ipaddr)} is not an IPv4 address`);
  for (const field of ['gpu_name', 'cpu_name', 'hostname', 'cpu_arch'] as const) {
    if (!SHOWN_TEXT.test(hw[field])) throw badRequest(`hardware.${field}: must not contain '<', '>' or control characters`);
  }
  hw.gpus.forEach((g, i) => {
    if (!SHOWN_TEXT.test(g.name)) throw badRequest(`hardware.gpus[${i}].name: must not contain '<', '>' or control characters`);
  });
}

/**
 * A report's port mappings: each host port inside the machine's declared range (the agent publishes only there,
 * agent/host-ports.ts), each host address an IP literal or empty (Docker's "all addresses").
 */
export function checkObservedPorts(observed: readonly ObservedInstanceT[], machine: Pick<MachineInfo, 'direct_port_start' | 'direct_port_count'>): void {
  const first = machine.direct_port_start;
  const last = first + machine.direct_port_count - 1;
  for (const [i, o] of observed.entries()) {
    for (const [port, bindings] of Object.entries(o.ports)) {
      for (const b of bindings) {
        const where = `observed[${i}].ports["${port}"]`;
        if (b.HostIp !== '' && isIP(b.HostIp) === 0) throw badRequest(`${where}.HostIp: ${JSON.stringify(b.HostIp)} is not an IP address`);
        const hostPort = Number(b.HostPort);
        if (!(hostPort >= first && hostPort <= last)) {
          throw badRequest(`${where}.HostPort: ${b.HostPort} is outside the machine's port range ${first}-${last}`);
        }
      }
    }
  }
}
