/**
 * Host ports for published container ports, from the machine's direct port range: not reserved by another container
 * of the machine, and free to bind right now (another program on the host may hold one).
 */
import { createServer } from 'node:net';
import { createSocket } from 'node:dgram';

export interface PortRange {
  start: number;
  end: number;
}

export class NoFreePortError extends Error {}

/** Parses `LO-HI` (inclusive). */
export function parsePortRange(text: string): PortRange {
  const m = /^\s*(\d{1,5})\s*-\s*(\d{1,5})\s*$/.exec(text);
  const [start, end] = m ? [Number(m[1]), Number(m[2])] : [NaN, NaN];
  if (!m || start < 1 || end > 65535 || start > end) throw new Error(`a port range is LO-HI with 1 <= LO <= HI <= 65535, got ${JSON.stringify(text)}`);
  return { start, end };
}

/** Whether `port` can be bound on `ip` for `proto` now. */
export function canBind(ip: string, port: number, proto: 'tcp' | 'udp'): Promise<boolean> {
  return new Promise((resolve) => {
    if (proto === 'udp') {
      const s = createSocket(ip.includes(':') ? 'udp6' : 'udp4');
      s.once('error', () => resolve(false));
      s.bind(port, ip, () => s.close(() => resolve(true)));
      return;
    }
    const srv = createServer();
    srv.once('error', () => resolve(false));
    srv.listen({ port, host: ip, exclusive: true }, () => srv.close(() => resolve(true)));
  });
}

/**
 * One host port for each of `wanted` (`22/tcp`, `8081/udp`), the lowest of the range that is not in `reserved` and
 * that `isFree` accepts. Ports are picked one after another, so two container ports never share a host port.
 */
export async function pickHostPorts(
  wanted: string[],
  range: PortRange,
  reserved: Iterable<number>,
  isFree: (port: number, proto: 'tcp' | 'udp') => Promise<boolean>,
): Promise<Record<string, number>> {
  const taken = new Set(reserved);
  const out: Record<string, number> = {};
  let next = range.start;
  for (const p of wanted) {
    const proto = p.endsWith('/udp') ? 'udp' : 'tcp';
    let chosen: number | undefined;
    for (; next <= range.end && chosen === undefined; next++) {
      if (!taken.has(next) && (await isFree(next, proto))) chosen = next;
    }
    if (chosen === undefined) throw new NoFreePortError(`no free host port left in ${range.start}-${range.end} for ${p}`);
    taken.add(chosen);
    out[p] = chosen;
  }
  return out;
}
