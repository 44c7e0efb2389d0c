import { SESSION_COOKIE, type Principal } from '../platform/auth.js';
import type { Clock } from '../platform/clock.js';
import type { Db, Tx } from '../platform/db/connect.js';
import { ApiError } from '../platform/errors.js';
import type { Scheduler } from '../platform/scheduler.js';
import type { KeysService } from '../keys/keys-service.js';
import type { KeysStore } from '../keys/keys-store.js';

/**
 * How long a login session lives. A real cloud expires sessions; a week covers a working week of CLI use without
 * leaving a stolen session key valid for ever. API keys (made on purpose) do not expire; sessions do.
 */
export const SESSION_TTL_S = 7 * 86400;
export const SESSION_EXPIRE_JOB = 'session.expire';

export type Client = 'cli' | 'ui';

export interface SessionDeps {
  db: Db;
  keys: KeysStore;
  keysService: KeysService;
  scheduler: Scheduler;
  clock: Clock;
  /** Cookies get `Secure` when the service is served over https. */
  publicUrl: string;
}

/** The Set-Cookie header value of a UI session (or of its removal, with `secret` null). */
export function sessionCookieHeader(secret: string | null, maxAge: number, secure: boolean): string {
  const attrs = ['Path=/', 'HttpOnly', 'SameSite=Lax', `Max-Age=${secret === null ? 0 : Math.floor(maxAge)}`];
  if (secure) attrs.push('Secure');
  return [`${SESSION_COOKIE}=${secret ?? ''}`, ...attrs].join('; ');
}

/**
 * Sessions are `api_keys` rows of kind `session` (so a session key is a Bearer key everywhere) plus a `sessions` row
 * with the expiry; a scheduled job revokes the key when it expires, with the real or the virtual clock.
 */
export function sessionsFactory({ db, keys, keysService, scheduler, clock, publicUrl }: SessionDeps) {
  const secure = publicUrl.startsWith('https:');

  scheduler.register(SESSION_EXPIRE_JOB, async (payload: { key_id: number }, ctx) => {
    await keys.revoke(payload.key_id, ctx.now, ctx.tx);
  });

  return {
    async create(userId: number, client: Client, opts: { admin?: boolean } = {}, tx?: Tx): Promise<{ secret: string; expiresAt: number; cookie: string | null }> {
      const run = async (t: Tx) => {
        const now = clock.now();
        const expiresAt = now + SESSION_TTL_S;
        const { key, secret } = await keysService.create({ user_id: userId, kind: 'session', name: `${opts.admin ? 'admin ' : ''}${client} session` }, t);
        await t.insertInto('sessions').values({ key_id: key.id, user_id: userId, client, created_at: now, expires_at: expiresAt }).execute();
        await scheduler.schedule(SESSION_EXPIRE_JOB, expiresAt, { key_id: key.id }, { tx: t, ref: `session:${key.id}` });
        return { secret, expiresAt, cookie: client === 'ui' ? sessionCookieHeader(secret, SESSION_TTL_S, secure) : null };
      };
      return tx ? run(tx) : db.transaction().execute(run);
    },

    /** Ends the session that made the call (Bearer session key or cookie). */
    async logout(principal: Principal): Promise<{ success: true; msg: string; cookie: string }> {
      if (principal.key.kind !== 'session') {
        throw new ApiError('bad_request', 'this key is an API key, not a login session; delete API keys with DELETE /api/v0/auth/apikeys/{id}/');
      }
      await db.transaction().execute(async (tx) => {
        await keys.revoke(principal.key.id, clock.now(), tx);
        await scheduler.cancel(`session:${principal.key.id}`, { tx, kind: SESSION_EXPIRE_JOB });
      });
      return { success: true, msg: 'logged out', cookie: sessionCookieHeader(null, 0, secure) };
    },
  };
}

export type Sessions = ReturnType<typeof sessionsFactory>;
