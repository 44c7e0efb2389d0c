/**
 * Instance ports through the server (issue 32): the public face of the port URLs, pure so the instance view
 * (`port_urls`, `jupyter_url`), the CLI and the proxy agree without asking each other.
 *
 * Scheme: one host name per instance port, `<instance id>-<port>.<domain>`, from the template GPUPLANE_PORT_URLS
 * (`https://*.ports.example.com`). A host name (not a path prefix) leaves a web app's absolute links, cookies and
 * WebSocket paths as the app wrote them, and it works behind one TLS reverse proxy with a wildcard certificate and
 * wildcard DNS; each port is its own browser origin, so one renter's app cannot read another's cookies.
 */
import type { Config } from '../config.js';

export type PortUrlAddressing = Pick<Config, 'portUrls'>;

/** `<id>-<port>`: the label that replaces `*`. */
export function portHostLabel(instanceId: number, port: number): string {
  return `${instanceId}-${port}`;
}

/** The instance port's URL through the server, with a trailing slash. */
export function portUrl(a: PortUrlAddressing, instanceId: number, port: number): string {
  return `${a.portUrls.replace('*', portHostLabel(instanceId, port))}/`;
}

/** The template's host part after `*.` (lower case, without the port): `ports.example.com`. */
export function portDomain(a: PortUrlAddressing): string {
  return new URL(a.portUrls.replace('*', 'x')).hostname.slice(2).toLowerCase();
}

const LABEL = /^([1-9][0-9]{0,14})-([1-9][0-9]{0,4})$/;

/**
 * The instance port a request's Host header names (`1234-8080.ports.example.com[:443]`), or null when the host is not
 * under the port domain (the request is for the API or the console).
 */
export function parsePortHost(a: PortUrlAddressing, host: string | undefined): { instanceId: number; port: number } | null {
  if (!host) return null;
  const name = host.replace(/:\d+$/, '').toLowerCase();
  const domain = portDomain(a);
  if (!name.endsWith(`.${domain}`)) return null;
  const m = LABEL.exec(name.slice(0, -domain.length - 1));
  if (!m) return null;
  const instanceId = Number(m[1]);
  const port = Number(m[2]);
  if (!Number.isSafeInteger(instanceId) || port > 65535) return null;
  return { instanceId, port };
}

/** The container port Jupyter listens on in Jupyter runtypes (the spec's `jupyter_direct` publishes it). */
export const JUPYTER_PORT = 8080;

/**
 * The instance's ports with a URL: every published TCP port (but SSH's 22 in SSH and Jupyter runtypes), and Jupyter's port for Jupyter runtypes (the proxy
 * reaches the container's port on the instance's own network, published or not). Keys as in `ports`: `8080/tcp`.
 */
export function portUrls(a: PortUrlAddressing, instanceId: number, runtype: string, published: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  const ports = new Set<number>();
  for (const key of published) {
    const m = /^(\d{1,5})\/tcp$/.exec(key);
    // SSH runtypes' 22 is SSH's (ssh-url), not a web app's.
    if (m && !(key === '22/tcp' && runtype !== 'args')) ports.add(Number(m[1]));
  }
  if (runtype.includes('jupyter')) ports.add(JUPYTER_PORT);
  for (const p of [...ports].sort((x, y) => x - y)) {
    if (p >= 1 && p <= 65535) out[`${p}/tcp`] = portUrl(a, instanceId, p);
  }
  return out;
}
