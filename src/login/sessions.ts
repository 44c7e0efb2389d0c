import { stringifySetCookie } from 'cookie';
import { SESSION_COOKIE, type Principal } from '../platform/auth.js';
import type { Clock } from '../platform/clock.js';
import type { Db, Tx } from '../platform/db/connect.js';
import { ApiError, notFound } from '../platform/errors.js';
import type { Scheduler } from '../platform/scheduler.js';
import type { KeysService } from '../keys/keys-service.js';
import type { KeyRow, KeysContract } from '../keys/keys-contract.js';
import { sessionsStore } from './sessions-store.js';

/**
 * How long a login session lives. A real cloud expires sessions; a week covers a working week of CLI use without
 * leaving a stolen session key valid for ever. API keys (made on purpose) do not expire; sessions do.
 */
export const SESSION_TTL_S = 7 * 86400;
export const SESSION_EXPIRE_JOB = 'session.expire';

export type Client = 'cli' | 'ui';

export interface SessionDeps {
  db: Db;
  keys: Pick<KeysContract, 'findById' | 'liveSessionKeysOf' | 'revoke' | 'setSessionTeam'>;
  keysService: KeysService;
  scheduler: Scheduler;
  clock: Clock;
  /** The teams a user is a member of, with their role name (teams store): the contexts a session may switch into. */
  memberships(userId: number): Promise<{ team_id: number; team_name: string; role: string }[]>;
  /** Cookies always get `Secure` when the service's public URL is https (and per request when it came over https). */
  publicUrl: string;
}

/**
 * The Set-Cookie header value of a UI session (or of its removal, with `secret` null): HttpOnly (no script reads
 * it), SameSite=Strict (no other site's page sends it: issue 15), Secure when the browser came over https.
 */
export function sessionCookieHeader(secret: string | null, maxAge: number, secure: boolean): string {
  return stringifySetCookie({
    name: SESSION_COOKIE, value: secret ?? '', path: '/', httpOnly: true, sameSite: 'strict', maxAge: secret === null ? 0 : Math.floor(maxAge), secure,
  });
}

/** The cookie of a reply, given whether the request came over https (request.protocol; GPUPLANE_TRUST_PROXY). */
export type CookieFor = (overHttps: boolean) => string;

/** A live session as `GET /api/v0/auth/sessions/` lists it. */
export interface SessionView {
  id: number;
  client: string;
  created_at: number;
  expires_at: number;
  last_used_at: number | null;
  /** The session that made this request. */
  current: boolean;
  /** The team the session acts for (team context), or null for the personal context. */
  team_id: number | null;
}

/** The caller's context and the teams the session may switch into (`GET /api/v0/auth/sessions/team/`). */
export interface SessionTeamView {
  team_id: number | null;
  teams: { team_id: number; team_name: string; role: string }[];
}

/**
 * Sessions are `api_keys` rows of kind `session` (so a session key is a Bearer key everywhere) plus a `sessions` row
 * with the expiry; a scheduled job revokes the key when it expires, with the real or the virtual clock. A session's
 * id is its key's id.
 */
export function sessionsFactory({ db, keys, keysService, scheduler, clock, publicUrl, memberships }: SessionDeps) {
  const secureUrl = publicUrl.startsWith('https:');
  const sessions = sessionsStore(db);
  /** A user's live session keys by id: the keys feature says which are live (a revoked key is an ended session). */
  const liveKeysOf = async (userId: number): Promise<Map<number, KeyRow>> => new Map((await keys.liveSessionKeysOf(userId)).map((k) => [k.id, k]));
  const cookieFor = (secret: string | null, maxAge: number): CookieFor => (overHttps) => sessionCookieHeader(secret, maxAge, secureUrl || overHttps);

  scheduler.register(SESSION_EXPIRE_JOB, async (payload: { key_id: number }, ctx) => {
    await keys.revoke(payload.key_id, ctx.now, ctx.tx);
  });

  async function end(keyId: number): Promise<void> {
    await db.transaction().execute(async (tx) => {
      await keys.revoke(keyId, clock.now(), tx);
      await scheduler.cancel(`session:${keyId}`, { tx, kind: SESSION_EXPIRE_JOB });
    });
  }

  return {
    async create(userId: number, client: Client, opts: { admin?: boolean } = {}, tx?: Tx): Promise<{ secret: string; expiresAt: number; cookie: CookieFor | null }> {
      const run = async (t: Tx) => {
        const now = clock.now();
        const expiresAt = now + SESSION_TTL_S;
        const { key, secret } = await keysService.create({ user_id: userId, kind: 'session', name: `${opts.admin ? 'admin ' : ''}${client} session` }, t);
        await sessions.insert({ key_id: key.id, user_id: userId, client, created_at: now, expires_at: expiresAt }, t);
        await scheduler.schedule(SESSION_EXPIRE_JOB, expiresAt, { key_id: key.id }, { tx: t, ref: `session:${key.id}` });
        return { secret, expiresAt, cookie: client === 'ui' ? cookieFor(secret, SESSION_TTL_S) : null };
      };
      return tx ? run(tx) : db.transaction().execute(run);
    },

    /**
     * Ends every live session of a user but `keepKeyId` (the one in use, after a password change); all of them after a
     * reset by e-mail code, since whoever knew the old password may hold one. Returns how many ended.
     */
    async endAllOf(userId: number, keepKeyId: number | null = null): Promise<number> {
      const live = await liveKeysOf(userId);
      const ended = (await sessions.keyIdsOf(userId, [...live.keys()])).filter((id) => id !== keepKeyId);
      for (const id of ended) await end(id);
      return ended.length;
    },

    /** Ends the session that made the call (Bearer session key or cookie). */
    async logout(principal: Principal): Promise<{ success: true; msg: string; cookie: CookieFor }> {
      if (principal.key.kind !== 'session') {
        throw new ApiError('bad_request', 'this key is an API key, not a login session; delete API keys with DELETE /api/v0/auth/apikeys/{id}/');
      }
      await end(principal.key.id);
      return { success: true, msg: 'logged out', cookie: cookieFor(null, 0) };
    },

    /** The caller's live sessions (CLI and browser), newest first. */
    async list(principal: Principal): Promise<SessionView[]> {
      const now = clock.now();
      const live = await liveKeysOf(principal.user.id);
      if (live.size === 0) return [];
      const rows = await sessions.unexpired(principal.user.id, [...live.keys()], now);
      const currentId = principal.key.kind === 'session' ? principal.key.id : null;
      return rows.map((r) => {
        const key = live.get(r.key_id)!;
        return {
          id: r.key_id, client: r.client, created_at: r.created_at, expires_at: r.expires_at, last_used_at: key.last_used_at ?? null,
          current: r.key_id === currentId, team_id: key.team_id ?? null,
        };
      });
    },

    /** The caller's context (the key's team, whatever the key) and the teams the user may act for. */
    async team(principal: Principal): Promise<SessionTeamView> {
      return { team_id: principal.teamId, teams: await memberships(principal.user.id) };
    },

    /**
     * Switches the calling session into a team's context (issue 15: the console's team switcher), or back to the
     * personal context with null. The team is the session key's `team_id`, the column a team key has (contract §3
     * Team context: a key made with `team_id`), so from the next request on the authenticator treats the session as
     * it treats a team key of this member: it acts for the team, bounded by the member's current role, and stops
     * working if they leave the team (their team keys, this session with them, are revoked). Only a login session
     * switches; an API key's team is fixed when it is made. A team the caller is not a member of is 404, as when
     * making a team key for it.
     */
    async setTeam(principal: Principal, teamId: number | null): Promise<SessionTeamView & { success: true; msg: string }> {
      if (principal.key.kind !== 'session') {
        throw new ApiError('bad_request', 'only a login session switches context; an API key acts for the team it was made for (POST /api/v0/auth/apikeys/ with team_id)');
      }
      const teams = await memberships(principal.user.id);
      const team = teamId === null ? null : teams.find((t) => t.team_id === teamId);
      if (team === undefined) throw notFound(`team ${teamId}`);
      if (!(await keys.setSessionTeam(principal.key.id, teamId))) throw new ApiError('auth_error', 'invalid or revoked API key');
      const msg = team === null ? 'switched to your personal context' : `switched to team ${team.team_name} (#${team.team_id}) as ${team.role}`;
      return { success: true, msg, team_id: teamId, teams };
    },

    /** Revokes one of the caller's sessions (a lost laptop's, say); someone else's or an ended one is 404. */
    async revoke(principal: Principal, id: number): Promise<{ success: true; msg: string; cookie: CookieFor | null }> {
      const [mine] = await sessions.keyIdsOf(principal.user.id, [id]);
      const key = mine === undefined ? undefined : await keys.findById(id);
      if (!key || key.revoked_at !== null) throw new ApiError('not_found', `session ${id} not found (or already ended)`);
      await end(id);
      const current = principal.key.kind === 'session' && principal.key.id === id;
      // Ending the session in use also clears its cookie.
      return { success: true, msg: `session ${id} ended`, cookie: current ? cookieFor(null, 0) : null };
    },
  };
}

export type Sessions = ReturnType<typeof sessionsFactory>;
