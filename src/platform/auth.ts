import type { FastifyContextConfig, FastifyReply, FastifyRequest } from 'fastify';
import { parseCookie } from 'cookie';
import { digestEqual, sha256Hex } from './crypto.js';
import { ApiError } from './errors.js';
import { allows, intersect, type Category, type PermissionDoc } from './permissions.js';

/**
 * The user a key belongs to: what the platform reads of it. The keys feature, which owns the lookup, extends it to
 * its whole user row (keys/keys-store.ts), so routes see every column.
 */
export interface PrincipalUser {
  id: number;
  is_admin: number;
}

/** The key a request presented: what the platform reads of it; extended to the key row like PrincipalUser. */
export interface PrincipalKey {
  key_hash: string;
  /** `user`, `session`, or `instance` (the restricted `instance_api_key`). */
  kind: string;
  permissions: string | null;
  team_id: number | null;
}

/** The port the authenticator looks keys up through; the keys feature implements it (services.ts wires it). */
export interface KeyLookup {
  /** The live key with this SHA-256 digest (hex) and its user, or undefined. */
  findLiveByHash(hash: string): Promise<FoundKey | undefined>;
  /** What `findLiveByHash` would answer now without reading the database, if it can (its cache); else undefined. */
  cachedLiveByHash?(hash: string): FoundKey | undefined;
  /** Records the key's use now and then (never awaited by the request). */
  touchIfStale(key: PrincipalKey): Promise<void> | undefined;
}

/** Who is calling: the user, the key they presented, and what that key may do. */
export interface Principal {
  user: PrincipalUser;
  key: PrincipalKey;
  /** Parsed permission document of the key; null is full access. */
  permissions: PermissionDoc | null;
  /** The team this key acts for (team context), or null for the personal context. */
  teamId: number | null;
  /** The secret the request presented (echoed as `api_key` by users/current; never logged). */
  presentedKey: string;
  /**
   * In a team context, the team's owner: the account that owns and pays for what the request creates (issue 29 item
   * 17: a member's work for the team is the team's, so removing the member never leaves them paying for it). Set
   * where the team is read with the member's role; `scopeOf` falls back to the user where it is not.
   */
  accountId?: number;
  /**
   * The user's summed hourly rate over their running meters, read with the key (billing-service `balanceOf`);
   * undefined when the principal was not made from a key lookup.
   */
  runningRate?: number;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The permission category of the route, or `public` for routes that need no key. Every route declares one. */
    category?: Category | 'public';
    /** The restricted `instance_api_key` may call this route; the service checks it is the key's own instance. */
    instanceKey?: boolean;
    /** Only admin accounts (the emulator control API). */
    adminOnly?: boolean;
    /** The route authenticates by itself (2FA routes, which also accept a `tfa_secret`). */
    customAuth?: boolean;
    /**
     * Without an Authorization header, the key may come as `?api_key=` (the serverless SDK's routes, which add it to
     * every request: docs/spec/client-compat-more.md "Everywhere"). Elsewhere that parameter is ignored. The request
     * log redacts it (`redactUrl`).
     */
    queryKey?: boolean;
    /**
     * Without a header or `?api_key=`, the key may come as the JSON body's `api_key` (the autoscaler routes the
     * serverless SDK posts with no Authorization header: `/get_endpoint_workers/` …). Such a route authenticates in
     * its preValidation hook, once the body is parsed and before it is checked against its schema.
     */
    bodyKey?: boolean;
    /**
     * A login session may call the route whatever its team role grants (the route's category still bounds API keys):
     * seeing and leaving a session's team context (`/api/v0/auth/sessions/team/`) must not depend on the role.
     */
    anySessionRole?: boolean;
    /**
     * The route also serves a caller who presents no credential at all (no Authorization header, no session cookie):
     * `request.principal` stays null and the route limits such callers itself (offer search, issue 29 item 1). A
     * credential that is presented is checked exactly as on any other route: a bad key is still 401.
     */
    keyOptional?: boolean;
  }
  interface FastifyRequest {
    principal: Principal | null;
  }
}

const BEARER = /^Bearer ([A-Za-z0-9._~+/=-]{1,512})$/;

/** Parses the Authorization header: the key, `null` when absent, or throws when malformed. */
export function bearerKey(header: string | undefined): string | null {
  if (header === undefined || header === '') return null;
  const m = BEARER.exec(header.trim());
  if (!m) throw new ApiError('auth_error', 'malformed Authorization header; expected "Bearer <api key>"');
  return m[1];
}

/** `?api_key=` of a request (or `api_key` of a parsed JSON body), when it is one string (a repeated parameter is no key). */
export function queryApiKey(query: unknown): string | null {
  const v = typeof query === 'object' && query !== null ? (query as Record<string, unknown>).api_key : undefined;
  return typeof v === 'string' && v !== '' ? v : null;
}

/** The UI's login session cookie (set by `POST /api/v0/auth/login/` and the 2FA login; see src/login/sessions.ts). */
export const SESSION_COOKIE = 'gpuplane_session';

/** What a session secret looks like (`gps_` and URL-safe base64): any other value of the cookie is no credential. */
const SESSION_SECRET = /^[A-Za-z0-9_-]{1,512}$/;

/**
 * The session secret from a Cookie header, or null. Only `session` keys are accepted this way. The value is taken as
 * sent (no percent-decoding): a secret never needs it, so an encoded one is no secret of ours.
 */
export function sessionCookie(header: string | undefined): string | null {
  const value = header ? parseCookie(header, { decode: (v) => v })[SESSION_COOKIE] : undefined;
  return value !== undefined && SESSION_SECRET.test(value) ? value : null;
}

/**
 * The header every state-changing request authenticated by the session cookie must carry (issue 15: CSRF protection
 * of the UI session). A cross-site form cannot send a custom header, and a cross-site script cannot add one without
 * a CORS preflight, which this server never grants; with SameSite=Strict on the cookie that is two locks. Requests
 * with `Authorization: Bearer` (the CLI, the vastai client, the SDK with a key) carry no ambient credential and need
 * none of it.
 */
export const CSRF_HEADER = 'x-gpuplane-csrf';
const SAFE_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS']);

/** Refuses a cookie-authenticated change without the CSRF header (403 `csrf_failed`). */
export function checkCsrf(request: FastifyRequest): void {
  if (SAFE_METHODS.has(request.method)) return;
  const v = request.headers[CSRF_HEADER];
  if (typeof v !== 'string' || v === '') {
    throw new ApiError('csrf_failed', `a change signed in by the session cookie must send the ${CSRF_HEADER} header (the web console does); API clients send "Authorization: Bearer <key>" instead`);
  }
}

/** A key found by its digest, with its user. */
export interface FoundKey {
  user: PrincipalUser;
  key: PrincipalKey;
  runningRate?: number;
}

export interface AuthDeps {
  keys: KeyLookup;
  /**
   * The member's current team role document (`undefined`: not a member); bounds every team key (teams store). With
   * it, the team's owner: the account a team context acts for (`Principal.accountId`).
   */
  teamRole(teamId: number, userId: number): Promise<{ permissions: string | null; owner_id: number } | undefined>;
}

export function authenticatorFactory({ keys, teamRole }: AuthDeps) {
  /** A team key acts within the member's current role (read on every request); other keys need no more reading. */
  const needsRole = (found: FoundKey) => found.key.team_id !== null && found.key.kind !== 'instance';

  /** The principal of a found key whose own permissions are all it has (not a team key). */
  function principalOf(found: FoundKey, secret: string, permissions: PermissionDoc | null): Principal {
    keys.touchIfStale(found.key)?.catch(() => undefined);
    return { user: found.user, key: found.key, permissions, teamId: found.key.team_id, presentedKey: secret, runningRate: found.runningRate };
  }

  const ownPermissions = (found: FoundKey) => (found.key.permissions ? (JSON.parse(found.key.permissions) as PermissionDoc) : null);

  /** The principal for a presented key, or null when it matches no live key. */
  async function resolve(secret: string): Promise<Principal | null> {
    const hash = sha256Hex(secret);
    const found = await keys.findLiveByHash(hash);
    // The lookup is by digest; the final check is constant-time all the same.
    if (!found || !digestEqual(found.key.key_hash, hash)) return null;
    let permissions = ownPermissions(found);
    // A team key acts within the member's CURRENT role, read on every request (one extra query, team keys only), so
    // role changes apply at once and a removed member's team keys stop working. Instance keys are bound to their
    // instance instead.
    if (needsRole(found)) {
      const role = await teamRole(found.key.team_id!, found.user.id);
      if (!role) return null;
      permissions = intersect(permissions, role.permissions ? (JSON.parse(role.permissions) as PermissionDoc) : null);
      return { ...principalOf(found, secret, permissions), accountId: role.owner_id };
    }
    return principalOf(found, secret, permissions);
  }

  /**
   * `resolve` without waiting, when the key's lookup can be reused now and nothing else needs reading (not a team
   * key): the principal, or undefined to resolve it in full. Every request with a known key takes this path.
   */
  function resolveCached(secret: string): Principal | undefined {
    if (!keys.cachedLiveByHash) return undefined;
    const hash = sha256Hex(secret);
    const found = keys.cachedLiveByHash(hash);
    if (!found || needsRole(found) || !digestEqual(found.key.key_hash, hash)) return undefined;
    return principalOf(found, secret, ownPermissions(found));
  }

  /** The secret a request presents, and whether it came as the session cookie; an ApiError without one. */
  function presented(request: FastifyRequest, config: FastifyContextConfig): { secret: string; cookie: boolean } {
    const header = bearerKey(request.headers.authorization);
    // The header wins; `?api_key=`, then the body's `api_key`, count only on the routes that take them.
    const bearer = header ?? (config.queryKey ? queryApiKey(request.query) : null) ?? (config.bodyKey ? queryApiKey(request.body) : null);
    if (bearer !== null) return { secret: bearer, cookie: false };
    // Without a key, the UI's session cookie; a cookie never carries an API key, only a session.
    const cookie = sessionCookie(request.headers.cookie);
    if (cookie === null) throw new ApiError('auth_error', 'an API key is required: send "Authorization: Bearer <api key>"');
    checkCsrf(request);
    return { secret: cookie, cookie: true };
  }

  /**
   * No credential of any kind: no Authorization header (an empty one is none, as `bearerKey` reads it; a malformed one
   * is a credential, refused as ever) and no session cookie.
   */
  const presentsNothing = (request: FastifyRequest) =>
    !request.headers.authorization && sessionCookie(request.headers.cookie) === null;

  /** Authenticates a request to a route of this category: a live key that covers it, or an ApiError. */
  async function authenticate(request: FastifyRequest, config: FastifyContextConfig, category: Category): Promise<void> {
    const { secret, cookie } = presented(request, config);
    admit(request, await resolve(secret), cookie, config, category);
  }

  /**
   * `authenticate` at once when the key's lookup can be reused (`resolveCached`): true when done, false when the
   * full path must run. Throws what `authenticate` would.
   */
  function authenticateCached(request: FastifyRequest, config: FastifyContextConfig, category: Category): boolean {
    const { secret, cookie } = presented(request, config);
    const principal = resolveCached(secret);
    if (!principal) return false;
    admit(request, principal, cookie, config, category);
    return true;
  }

  /** Admits the principal to a route of this category (request.principal), or throws the ApiError that refuses it. */
  function admit(request: FastifyRequest, principal: Principal | null, cookie: boolean, config: FastifyContextConfig, category: Category): void {
    if (!principal || (cookie && principal.key.kind !== 'session')) throw new ApiError('auth_error', 'invalid or revoked API key');
    request.principal = principal;
    if (principal.key.kind === 'instance' && !config.instanceKey) {
      throw new ApiError('permission_denied', 'an instance API key can only start, stop or destroy its own instance');
    }
    if (config.adminOnly && !principal.user.is_admin) {
      throw new ApiError('permission_denied', 'this route needs an admin account');
    }
    if (!allows(principal.permissions, category) && !(config.anySessionRole && principal.key.kind === 'session')) {
      throw new ApiError('permission_denied', `this API key lacks the ${category} permission`);
    }
  }

  /**
   * The onRequest hook of one route (app.ts adds it to each route as it is registered), or null for a route that needs
   * no key (public, or authenticating by itself). Bound to the route's config: one global hook would read
   * `request.routeOptions`, which builds a new frozen object on every request, and would run on public routes too.
   */
  function hookFor(config: FastifyContextConfig | undefined): AuthHook | null {
    const category = config?.category;
    if (!config || category === undefined || category === 'public' || config.customAuth) return null;
    // A callback hook: a known key is admitted without a promise (authenticateCached); any other goes the full way.
    return (request, _reply, done) => {
      if (config.keyOptional && presentsNothing(request)) return done();
      try {
        if (authenticateCached(request, config, category)) return done();
      } catch (err) {
        return done(err as Error);
      }
      authenticate(request, config, category).then(() => done(), done);
    };
  }

  /** Authenticates a request as a route of this category would (for a route that does so only in some cases). */
  const require = (request: FastifyRequest, category: Category) => authenticate(request, { category }, category);

  return { resolve, hookFor, require };
}

/** A route's authentication hook (onRequest or preValidation): callback style. */
export type AuthHook = (request: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void) => void;

export type Authenticator = ReturnType<typeof authenticatorFactory>;

/**
 * Who owns what a request creates or may see: resources carry `user_id` and `team_id`. In a team context
 * (a key made for a team) resources belong to the team and members see the team's; otherwise the user's own,
 * with `team_id` null.
 */
export interface Scope {
  userId: number;
  teamId: number | null;
}

export function scopeOf(principal: Principal): Scope {
  // In a team context the team's owner pays for, and owns, what is made there (issue 29 item 17); the team sees it
  // by `team_id` whoever made it.
  const userId = principal.teamId !== null ? (principal.accountId ?? principal.user.id) : principal.user.id;
  return { userId, teamId: principal.teamId };
}

/** The principal of an authenticated route (the hook guarantees it). */
export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw new ApiError('auth_error', 'an API key is required');
  return request.principal;
}
