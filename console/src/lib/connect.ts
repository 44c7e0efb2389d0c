/**
 * The instance page's Connect panel (issue 32), without React (tested in test/console-connect.test.ts): from the
 * instance object, the ways in that apply to it and the exact text of each line the renter copies.
 *
 * - SSH, scp and rsync reach the address the `vastai` client's `ssh-url` gives (client-compat-connect.md): the host's
 *   own address and `ports["22/tcp"]` when the instance has it (direct runtypes), else `ssh_host:ssh_port`, plus 1 for
 *   Jupyter runtypes (the gateway's SSH port for them is the next one: src/gateway/gateway-contract.ts). So the panel
 *   and `vastai ssh-url` never disagree. Runtype `args` has no SSH, and so no copy either (`vastai copy` between a
 *   local path and an instance goes over the instance's SSH endpoint).
 * - Jupyter: `jupyter_url` (its token in it) for Jupyter runtypes.
 * - Each of `port_urls`: opened through the server's port proxy after a grant (the console's session is not a
 *   credential on the port's own host name; src/ports/).
 * - The terminal page, for every runtype: it needs only `/bin/sh` in the image.
 * Everything but the lines is "available while the instance runs": the server shows addresses only then.
 */
import type { InstanceRow } from './instances-live.js';

/** Where `vastai copy` and the scp/rsync lines put files: the working directory the project's examples use. */
export const WORK_DIR = '/workspace';

type PortMap = Record<string, { HostIp?: string; HostPort: string }[] | undefined>;

const isJupyter = (r: InstanceRow): boolean => String(r.image_runtype ?? '').includes('jupyter');

/** The instance's SSH address as `vastai ssh-url` computes it, or null (not running, or runtype `args`). */
export function sshAddress(r: InstanceRow): { host: string; port: number } | null {
  if (r.image_runtype === 'args') return null;
  const direct = ((r.ports ?? {}) as PortMap)['22/tcp']?.[0];
  if (direct && typeof r.public_ipaddr === 'string' && r.public_ipaddr) return { host: r.public_ipaddr, port: Number(direct.HostPort) };
  if (!r.ssh_host || !r.ssh_port) return null;
  return { host: String(r.ssh_host), port: Number(r.ssh_port) + (isJupyter(r) ? 1 : 0) };
}

/** The SSH command of a running instance, or null. */
export function sshCommand(r: InstanceRow): string | null {
  const a = sshAddress(r);
  return a ? `ssh -p ${a.port} root@${a.host}` : null;
}

/** Port mappings (`{"8080/tcp": [{HostIp, HostPort}]}`) as `host:port → container/proto` lines. */
export function portLines(r: InstanceRow): { container: string; address: string }[] {
  const ports = (r.ports ?? {}) as PortMap;
  const ip = (r.public_ipaddr as string | null) ?? (r.ssh_host as string | null) ?? '';
  return Object.entries(ports).flatMap(([container, maps]) => (maps ?? []).map((m) => ({ container, address: `${ip}:${m.HostPort}` })));
}

/** One line to copy: what it is for (the copy button's name says it) and its text. */
export interface ConnectLine {
  /** Short name, also the copy button's accessible name: `Copy <what>`. */
  what: string;
  text: string;
}

/** A web port through the server. */
export interface PortEntry {
  /** `8080/tcp`. */
  key: string;
  port: number;
  url: string;
  /** Jupyter's own port in a Jupyter runtype (its link with the token is the Jupyter line). */
  jupyter: boolean;
}

export interface ConnectInfo {
  running: boolean;
  /** SSH, scp, rsync: null when the instance has no SSH (runtype `args`) or no address yet. */
  ssh: ConnectLine[] | null;
  /** `vastai copy` up and down, when it has SSH. */
  copy: ConnectLine[] | null;
  /** `jupyter_url` of a running Jupyter instance (null until the server has it). */
  jupyterUrl: string | null;
  /** Whether the runtype has Jupyter at all (to say "while it runs" rather than nothing). */
  hasJupyter: boolean;
  hasSsh: boolean;
  ports: PortEntry[];
  /** The terminal page. */
  terminalHref: string;
}

/** The Connect panel's content for one instance. */
export function connectInfo(r: InstanceRow): ConnectInfo {
  const running = r.actual_status === 'running';
  const hasSsh = r.image_runtype !== 'args';
  const hasJupyter = isJupyter(r);
  const a = running && hasSsh ? sshAddress(r) : null;
  const ssh = a
    ? [
      { what: 'SSH command', text: `ssh -p ${a.port} root@${a.host}` },
      { what: 'scp command', text: `scp -P ${a.port} ./file root@${a.host}:${WORK_DIR}/` },
      { what: 'rsync command', text: `rsync -avz -e 'ssh -p ${a.port}' ./data/ root@${a.host}:${WORK_DIR}/data/` },
    ]
    : null;
  const copy = a
    ? [
      { what: 'vastai copy (upload)', text: `vastai copy ./data ${r.id}:${WORK_DIR}/data` },
      { what: 'vastai copy (download)', text: `vastai copy ${r.id}:${WORK_DIR}/data ./data` },
    ]
    : null;
  const jupyterUrl = running && hasJupyter && typeof r.jupyter_url === 'string' && r.jupyter_url ? r.jupyter_url : null;
  const ports = running ? portEntries(r) : [];
  return { running, ssh, copy, jupyterUrl, hasJupyter, hasSsh, ports, terminalHref: terminalHref(r.id) };
}

/** `port_urls` (`{"8080/tcp": "http://1-8080.localhost:8080/"}`) in port order. */
export function portEntries(r: InstanceRow): PortEntry[] {
  const urls = (r.port_urls ?? {}) as Record<string, unknown>;
  return Object.entries(urls)
    .flatMap(([key, url]) => {
      const m = /^(\d{1,5})\/tcp$/.exec(key);
      return m && typeof url === 'string' ? [{ key, port: Number(m[1]), url, jupyter: isJupyter(r) && m[1] === '8080' }] : [];
    })
    .sort((x, y) => x.port - y.port);
}

/** The console's terminal page for an instance (console/src/pages/Terminal.tsx). */
export function terminalHref(id: number): string {
  return `/instances/terminal?id=${id}`;
}

/** The route that hands the console a one-use URL into a port (src/ports/: `{success, url}`). */
export function portGrantPath(id: number, port: number): string {
  return `/api/v0/instances/${id}/ports/${port}/grant/`;
}
