/**
 * Jupyter in the Jupyter runtypes (issue 32): each such instance gets a token of its own at rent time, kept sealed (the
 * owner is shown it and its machine's agent puts it in the container as `JUPYTER_TOKEN`, so it must open again; a
 * copy of the database alone does not open it). The instance object shows `jupyter_token` and `jupyter_url` to whoever
 * may act on the instance (its owner, or a team member whose role allows instance_write): the token runs code in the
 * container, as SSH does.
 */
import type { Principal } from '../platform/auth.js';
import type { SecretBox } from '../platform/crypto.js';
import { badRequest } from '../platform/errors.js';
import { allows } from '../platform/permissions.js';
import { secretToken, type Random } from '../platform/random.js';
import { JUPYTER_PORT } from '../ports/ports-contract.js';
import type { InstanceRow } from './instances-store.js';

/** The container port key of Jupyter, as `ports` and `port_urls` name it. */
export const JUPYTER_PORT_KEY = `${JUPYTER_PORT}/tcp`;

/** The longest `jupyter_dir` (the create body's own limit, instances-schemas.ts). */
export const JUPYTER_DIR_MAX_CHARS = 1024;

/** Whether the spec runtype starts Jupyter (`jupyter_direct`, `jupyter_proxy`). */
export function isJupyterRuntype(runtype: string): boolean {
  return runtype.startsWith('jupyter');
}

/**
 * A new Jupyter token: 256 random bits, base64url (URL-safe as it is in `?token=`, which Jupyter reads; Jupyter takes
 * any string as its token).
 */
export function newJupyterToken(random: Random): string {
  return secretToken(random, '');
}

/** The sealed token a row of this runtype gets: a new one for a Jupyter runtype, else null. */
export function sealedTokenFor(runtype: string, random: Random, secretBox: Pick<SecretBox, 'seal'>): string | null {
  return isJupyterRuntype(runtype) ? secretBox.seal(newJupyterToken(random)) : null;
}

/**
 * `jupyter_dir` is the renter's text that reaches a shell in the container: quoted there (src/agent/container-spec.ts)
 * so that nothing in it runs, and refused here when it holds a control character (a NUL cannot be in a process's
 * arguments at all, and a newline or escape has no place in a path one types).
 */
export function checkJupyterDir(dir: string | null, field = 'body.jupyter_dir'): void {
  if (dir === null) return;
  if (dir.length > JUPYTER_DIR_MAX_CHARS) throw badRequest(`${field} is longer than ${JUPYTER_DIR_MAX_CHARS} characters`);
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(dir)) throw badRequest(`${field} must not contain control characters (a newline, a tab, NUL)`);
}

/** Whether the caller may be shown the instance's Jupyter token: it lets one run code in the container. */
export function mayOpenJupyter(principal: Principal): boolean {
  return allows(principal.permissions, 'instance_write');
}

/** The instance's Jupyter token, opened; null for other runtypes, older instances, or one sealed under another key. */
export function jupyterTokenOf(inst: Pick<InstanceRow, 'runtype' | 'jupyter_token_sealed'>, secretBox: Pick<SecretBox, 'open'>): string | null {
  if (!isJupyterRuntype(inst.runtype) || !inst.jupyter_token_sealed) return null;
  return secretBox.open(inst.jupyter_token_sealed);
}

/**
 * Where the renter opens Jupyter, token included, while the instance runs: `jupyter_direct` at the host's published
 * 8080 (`http://<public_ipaddr>:<host port>/?token=`), `jupyter_proxy` through the server (`port_urls['8080/tcp']`,
 * src/ports/). Null when it does not run, has no token, or (direct) its 8080 is not published.
 */
export function jupyterUrl(
  runtype: string,
  token: string | null,
  at: { publicIp: string | null; ports: Record<string, { HostPort: string }[]>; portUrls: Record<string, string> },
): string | null {
  if (token === null || !isJupyterRuntype(runtype)) return null;
  const query = `?token=${encodeURIComponent(token)}`;
  if (runtype === 'jupyter_direct') {
    const hostPort = at.ports[JUPYTER_PORT_KEY]?.[0]?.HostPort;
    return at.publicIp && hostPort ? `http://${at.publicIp}:${hostPort}/${query}` : null;
  }
  const url = at.portUrls[JUPYTER_PORT_KEY];
  return url ? `${url}${query}` : null;
}
