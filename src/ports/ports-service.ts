/**
 * Who may reach an instance port through the server, and the credentials that say so (design "Port access
 * credentials"; issue 32 items 2 and 5). The HTTP side (ports-http.ts) asks `admit` for each request to a port host
 * and carries out the answer; the routes make tokens and grants.
 *
 * Who may: the instance's renter (`user_id`), or, for a team's instance, a member whose role allows instance_write.
 * What shows it, on the port host (each port is its own browser origin, so the API's session cookie never arrives):
 * - the port cookie, set after one of the below; its user's access is re-checked (cached ACCESS_CACHE_MS);
 * - the port's token (header or `?gpuplane_token=`), stored as its SHA-256; rotating it ends the old one and the
 *   cookies it set;
 * - Jupyter's own token on port 8080 of a Jupyter runtype (`?token=` or `Authorization: token`), passed on untouched;
 * - a console grant (one use, GRANT_TTL_S), redeemed at GRANT_PATH.
 * Refusals are ApiErrors with a sentence; `signIn` marks those a browser is sent to the console page for.
 */
import type { Config } from '../config.js';
import type { Principal } from '../platform/auth.js';
import type { Clock } from '../platform/clock.js';
import { digestEqual, safeEqual, sha256Hex } from '../platform/crypto.js';
import type { Db, Tx } from '../platform/db/connect.js';
import { kvState } from '../platform/db/kv.js';
import { ApiError, badRequest } from '../platform/errors.js';
import { secretToken, type Random } from '../platform/random.js';
import { TunnelError, type TunnelsApi } from '../tunnels/tunnels-contract.js';
import { JUPYTER_PORT, portUrl, portUrls } from './ports-contract.js';
import {
  ACCESS_CACHE_MS, CACHE_MAX_ENTRIES, COOKIE_SECRET_KV, GRANT_PATH, GRANT_TTL_S, INSTANCE_CACHE_MS, PORT_COOKIE_TTL_S, PORT_TOKEN_HEADER,
  PORT_TOKEN_PARAM, PORT_TOKEN_PREFIX,
} from './ports-constants.js';
import { safeReturnPath, setCookieHeader, signCookie, tokenMark, urlWithoutToken, verifyCookie, type CookieSubject, type Presented } from './ports-credentials.js';
import { portsStore } from './ports-store.js';

/** A live instance as the ports need it (the root reads it from the instances and machines features). */
export interface PortInstance {
  id: number;
  userId: number;
  teamId: number | null;
  machineId: number | null;
  actualStatus: string | null;
  runtype: string;
  /** The container ports Docker published (`8000/tcp`): those with a URL (ports-contract.ts `portUrls`). */
  published: string[];
  /** On the emulator's simulated machine: no container to reach. */
  simulated: boolean;
  /** Jupyter's token (Jupyter runtypes), or null. */
  jupyterToken: string | null;
}

export interface PortsInstancesPort {
  /** The live (not destroyed) instance, read afresh. */
  find(id: number): Promise<PortInstance | undefined>;
}

export interface PortsDeps {
  db: Db;
  clock: Clock;
  random: Random;
  config: Pick<Config, 'portUrls' | 'publicUrl'>;
  instances: PortsInstancesPort;
  /** Whether the member's current role in the team allows instance_write (false when not a member). */
  mayWrite(teamId: number, userId: number): Promise<boolean>;
}

/** A request for an instance port. */
export interface PortTarget {
  instanceId: number;
  port: number;
}

export type Admission =
  | {
      ok: true;
      machineId: number;
      instanceId: number;
      port: number;
      /** A Set-Cookie header to add to the reply (a token or Jupyter's token was shown in the URL). */
      setCookie?: string;
      /** Answer with a redirect here instead of forwarding (the URL without `?gpuplane_token=`). */
      redirectTo?: string;
    }
  | { ok: false; error: ApiError; signIn: boolean };

const refuse = (error: ApiError, signIn = false): Admission => ({ ok: false, error, signIn });

/** The highest TCP port. */
const MAX_PORT = 65535;

/** A small map whose entries are reused for `ttl` seconds. */
class TtlCache<K, V> {
  private readonly entries = new Map<K, { value: V; at: number }>();
  constructor(private readonly ttlS: number, private readonly now: () => number) {}
  async get(key: K, read: () => Promise<V>): Promise<V> {
    const hit = this.entries.get(key);
    const now = this.now();
    if (hit && now - hit.at < this.ttlS && now >= hit.at) return hit.value;
    const value = await read();
    if (this.entries.size >= CACHE_MAX_ENTRIES) this.entries.clear();
    this.entries.set(key, { value, at: now });
    return value;
  }
  delete(key: K): void {
    this.entries.delete(key);
  }
}

export function portsServiceFactory(deps: PortsDeps) {
  const { db, clock, random, config } = deps;
  const store = portsStore(db);
  const kv = kvState(db);
  const now = () => clock.now();
  const instances = new TtlCache<number, PortInstance | undefined>(INSTANCE_CACHE_MS / 1000, now);
  const access = new TtlCache<string, boolean>(ACCESS_CACHE_MS / 1000, now);
  const tokens = new TtlCache<string, string | undefined>(ACCESS_CACHE_MS / 1000, now);
  const secure = config.portUrls.startsWith('https:');
  let tunnels: TunnelsApi = {
    open: () => Promise.reject(new TunnelError('not_connected', 'this server has no host tunnels')),
    connected: async () => false,
  };

  let secretRead: Promise<string> | undefined;
  const cookieSecret = () =>
    (secretRead ??= (async () => {
      await kv.claim(db, COOKIE_SECRET_KV, random.bytes(32).toString('base64url'));
      const value = await kv.get(db, COOKIE_SECRET_KV);
      if (!value) throw new Error('the port cookie secret is missing from the kv table');
      return value;
    })().catch((err) => {
      secretRead = undefined;
      throw err;
    }));

  const tokenHashOf = (instanceId: number, port: number) => tokens.get(`${instanceId}:${port}`, () => store.tokenHash(instanceId, port));

  /** The instance's renter, or a member of its team whose role allows instance_write. */
  async function allowed(inst: PortInstance, userId: number, cached: boolean): Promise<boolean> {
    if (inst.userId === userId) return true;
    if (inst.teamId === null) return false;
    const teamId = inst.teamId;
    if (!cached) return deps.mayWrite(teamId, userId);
    return access.get(`${teamId}:${userId}`, () => deps.mayWrite(teamId, userId));
  }

  async function cookieFor(instanceId: number, port: number, subject: CookieSubject): Promise<string> {
    const value = signCookie(await cookieSecret(), { instanceId, port, subject, expiresAt: now() + PORT_COOKIE_TTL_S });
    return setCookieHeader(value, PORT_COOKIE_TTL_S, secure);
  }

  /** The instance for a renter's route: theirs (or their team's, with instance_write), else 404 as the API's scope answers. */
  async function forUser(principal: Principal, id: number, port: number): Promise<PortInstance> {
    if (port > MAX_PORT) throw badRequest(`params.port must be <= ${MAX_PORT} (a TCP port)`);
    const inst = await deps.instances.find(id);
    if (!inst || !(await allowed(inst, principal.user.id, false))) throw new ApiError('not_found', `instance ${id} not found`);
    return inst;
  }

  /** Whether the credentials shown let the request in (null: none shown; false: shown and wrong). */
  async function credential(t: PortTarget, inst: PortInstance, p: Presented, method: string, url: string): Promise<Admission | 'none' | 'bad' | 'ok'> {
    const { instanceId, port } = t;
    const token = p.headerToken ?? p.queryToken;
    if (token !== undefined) {
      const want = await tokenHashOf(instanceId, port);
      const hash = sha256Hex(token);
      if (!want || !token.startsWith(PORT_TOKEN_PREFIX) || !digestEqual(want, hash)) {
        return refuse(new ApiError('auth_error', `the port token is not the one of port ${port} of instance ${instanceId} (made for another port or instance, or rotated since)`));
      }
      if (p.headerToken !== undefined || p.queryToken === undefined) return 'ok';
      // A token in the URL: it becomes the cookie, and the browser goes on without it in its address bar and history.
      const setCookie = await cookieFor(instanceId, port, { kind: 't', mark: tokenMark(want) });
      if (method === 'GET' || method === 'HEAD') return { ok: true, machineId: 0, instanceId, port, setCookie, redirectTo: urlWithoutToken(url) };
      return { ok: true, machineId: 0, instanceId, port, setCookie };
    }
    const jupyter = port === JUPYTER_PORT && inst.runtype.includes('jupyter') ? inst.jupyterToken : null;
    if (jupyter) {
      if (p.jupyterHeader !== undefined && safeEqual(p.jupyterHeader, jupyter)) return 'ok';
      if (p.jupyterQuery !== undefined && safeEqual(p.jupyterQuery, jupyter)) {
        return { ok: true, machineId: 0, instanceId, port, setCookie: await cookieFor(instanceId, port, { kind: 'j', mark: tokenMark(sha256Hex(jupyter)) }) };
      }
    }
    if (p.cookie === undefined) return 'none';
    const subject = verifyCookie(await cookieSecret(), p.cookie, instanceId, port, now());
    if (!subject) return 'bad';
    if (subject.kind === 'u') {
      if (await allowed(inst, subject.userId, true)) return 'ok';
      return refuse(new ApiError('permission_denied', `port ${port} of instance ${instanceId} is open only to the instance's renter and its team's members with instance access`));
    }
    if (subject.kind === 't') {
      const want = await tokenHashOf(instanceId, port);
      return want && tokenMark(want) === subject.mark ? 'ok' : 'bad';
    }
    return jupyter && tokenMark(sha256Hex(jupyter)) === subject.mark ? 'ok' : 'bad';
  }

  return {
    /** Wires the tunnels feature (services.ts); tests pass a fake. */
    useTunnels(api: TunnelsApi): void {
      tunnels = api;
    },

    /** The tunnels the proxy opens its streams through. */
    tunnels: (): TunnelsApi => tunnels,

    /**
     * Whether a request to a port host goes on to the container, and how: the instance exists, a credential lets the
     * caller in, the instance is running on a real host, and the port has a URL. The first that fails is the answer.
     */
    async admit(t: PortTarget, p: Presented, method: string, url: string): Promise<Admission> {
      const { instanceId, port } = t;
      const inst = await instances.get(instanceId, () => deps.instances.find(instanceId));
      if (!inst) return refuse(new ApiError('not_found', `instance ${instanceId} does not exist (or was destroyed)`));
      const c = await credential(t, inst, p, method, url);
      if (c === 'none') {
        return refuse(new ApiError('auth_error',
          `port ${port} of instance ${instanceId} needs a credential: open it from the console, or send the port's token ` +
          `(header ${PORT_TOKEN_HEADER}, or ?${PORT_TOKEN_PARAM}= in the URL; POST /api/v0/instances/{id}/ports/{port}/token/ makes one)`), true);
      }
      if (c === 'bad') return refuse(new ApiError('auth_error', `the port cookie is expired, or not for port ${port} of instance ${instanceId}: open the port from the console again`), true);
      if (c !== 'ok' && !c.ok) return c;
      if (inst.simulated || inst.machineId === null) {
        return refuse(new ApiError('not_found', `instance ${instanceId} is on one of the emulator's simulated machines, which have no containers: there is no port to reach. Rent an offer of a real host (run by gpuplane agent)`));
      }
      if (inst.actualStatus !== 'running') {
        return refuse(new ApiError('service_unavailable', `instance ${instanceId} is not running (its status: ${inst.actualStatus ?? 'starting'}); start it and try again once it runs`));
      }
      const key = `${port}/tcp`;
      const urls = portUrls(config, instanceId, inst.runtype, inst.published);
      if (!(key in urls)) {
        const listed = Object.keys(urls);
        return refuse(new ApiError('not_found', `port ${port} of instance ${instanceId} has no URL: only its published ports have one (${listed.length ? listed.join(', ') : 'it publishes none'}; rent with -p ${port}:${port})`));
      }
      if (c === 'ok') return { ok: true, machineId: inst.machineId, instanceId, port };
      return { ...c, machineId: inst.machineId };
    },

    /** Redeems a console grant shown on the port host: the cookie to set and where to go, or a refusal. */
    async redeemGrant(t: PortTarget, grant: string | null, path: string | null): Promise<{ ok: true; setCookie: string; location: string } | { ok: false; error: ApiError }> {
      const used = new ApiError('permission_denied', `this link to port ${t.port} of instance ${t.instanceId} was used already, has expired (it lasts ${GRANT_TTL_S} s) or is for another port: open the port from the console again`);
      if (!grant || grant.length > 200) return { ok: false, error: used };
      const row = await store.takeGrant(sha256Hex(grant));
      if (!row || row.instance_id !== t.instanceId || row.port !== t.port || row.expires_at < now()) return { ok: false, error: used };
      const inst = await deps.instances.find(t.instanceId);
      if (!inst) return { ok: false, error: new ApiError('not_found', `instance ${t.instanceId} does not exist (or was destroyed)`) };
      if (!(await allowed(inst, row.user_id, false))) return { ok: false, error: used };
      return { ok: true, setCookie: await cookieFor(t.instanceId, t.port, { kind: 'u', userId: row.user_id }), location: safeReturnPath(path) };
    },

    /** `POST /instances/{id}/ports/{port}/token/`: a new token for the port (the old one stops working). */
    async rotateToken(principal: Principal, id: number, port: number): Promise<{ success: true; token: string; url: string }> {
      await forUser(principal, id, port);
      const token = secretToken(random, PORT_TOKEN_PREFIX);
      await store.putToken({ instance_id: id, port, token_hash: sha256Hex(token), user_id: principal.user.id, created_at: now() });
      tokens.delete(`${id}:${port}`);
      return { success: true, token, url: `${portUrl(config, id, port)}?${PORT_TOKEN_PARAM}=${token}` };
    },

    /** `POST /instances/{id}/ports/{port}/grant/`: a one-use link that signs this browser in on the port's host. */
    async grant(principal: Principal, id: number, port: number, path: string | undefined): Promise<{ success: true; url: string }> {
      await forUser(principal, id, port);
      const grant = secretToken(random, '');
      await store.putGrant({ grant_hash: sha256Hex(grant), instance_id: id, port, user_id: principal.user.id, expires_at: now() + GRANT_TTL_S }, now());
      const back = safeReturnPath(path);
      const base = portUrl(config, id, port).slice(0, -1);
      return { success: true, url: `${base}${GRANT_PATH}?g=${grant}${back === '/' ? '' : `&path=${encodeURIComponent(back)}`}` };
    },

    /** The console page a browser without a credential is sent to (it asks for a grant, or signs in first). */
    signInUrl(t: PortTarget, url: string): string {
      const path = safeReturnPath(urlWithoutToken(url));
      const q = new URLSearchParams({ instance: String(t.instanceId), port: String(t.port), path });
      return `${config.publicUrl.replace(/\/+$/, '')}/ports/open?${q.toString()}`;
    },

    /** A destroyed instance's tokens and grants go with it (instances' destroy hook). */
    instanceDestroyed: (tx: Tx, instanceId: number) => store.removeOfInstance(instanceId, tx),
  };
}

export type PortsService = ReturnType<typeof portsServiceFactory>;
