import type { Clock } from '../platform/clock.js';
import { sha256Hex } from '../platform/crypto.js';
import type { Db, Tx } from '../platform/db/connect.js';
import { secretToken, type Random } from '../platform/random.js';
import { FULL_ACCESS, intersect, isSubset, parsePermissionDoc, type PermissionDoc } from '../platform/permissions.js';
import { ApiError, badRequest, notFound } from '../platform/errors.js';
import type { Principal } from '../platform/auth.js';
import type { KeyRow, KeysStore, NewKey } from './keys-store.js';

/**
 * Fixed prefixes make leaked secrets easy to spot (and to scan for). `job`: made for one replay of a scheduled job and
 * revoked after it (src/scheduled-jobs/).
 */
export const KEY_PREFIX = { user: 'gpk_', session: 'gps_', instance: 'gpi_', job: 'gpj_' } as const;

/** Keys whose last use was recorded within this many seconds are not written again (one write per minute at most). */
export const KEY_TOUCH_INTERVAL_S = 60;

export interface KeysServiceDeps {
  keys: KeysStore;
  clock: Clock;
  random: Random;
}

export function keysServiceFactory({ keys, clock, random }: KeysServiceDeps) {
  /** Touches written after their request's reply, not yet done. */
  const pending = new Set<Promise<void>>();
  return {
    /** Creates a key and returns its secret: the only time the secret exists outside the caller's hands. */
    async create(
      input: Omit<NewKey, 'key_hash' | 'created_at' | 'permissions'> & { permissions?: PermissionDoc | null; secret?: string },
      tx?: Tx,
    ): Promise<{ key: KeyRow; secret: string }> {
      const secret = input.secret ?? secretToken(random, KEY_PREFIX[input.kind]);
      const key = await keys.insert(
        {
          ...input,
          permissions: input.permissions ? JSON.stringify(input.permissions) : null,
          key_hash: sha256Hex(secret),
          created_at: clock.now(),
        },
        tx,
      );
      return { key, secret };
    },

    /**
     * Records the key's use when the last record is older than KEY_TOUCH_INTERVAL_S: the write's promise, or
     * undefined when nothing is written (most requests; not an async function, so they make no promise at all).
     */
    touchIfStale(key: KeyRow): Promise<void> | undefined {
      const now = clock.now();
      if (key.last_used_at === null || now - key.last_used_at >= KEY_TOUCH_INTERVAL_S) {
        const write = keys.touch(key.id, now);
        pending.add(write);
        void write.finally(() => pending.delete(write)).catch(() => undefined);
        return write;
      }
      return undefined;
    },

    /** Resolves once every touch started so far is written (or failed): tests await it instead of sleeping. */
    async touchesWritten(): Promise<void> {
      await Promise.allSettled([...pending]);
    },
  };
}

export type KeysService = ReturnType<typeof keysServiceFactory>;

/** A key as the API shows it: never its secret (that exists only in the create reply). */
// A type alias (not an interface) so it is assignable to Record<string, unknown> (the CLI prints it as a row).
export type ApiKeyView = {
  id: number;
  name: string | null;
  permissions: PermissionDoc;
  team_id: number | null;
  created_at: number;
  last_used_at: number | null;
};

export interface CreateKeyInput {
  name?: string | null;
  permissions?: unknown;
  /** The real client sends it (constraint parameters); gpuplane has no constraints, so it is accepted and unused. */
  key_params?: string | null;
  team_id?: number | null;
}

export interface ApiKeysServiceDeps {
  /** For the one transaction of a key reset. */
  db: Db;
  keys: KeysStore;
  keysService: KeysService;
  clock: Clock;
  /** The member's current role document in a team (`undefined`: not a member); from the teams store. */
  memberPermissions(teamId: number, userId: number): Promise<{ permissions: string | null } | undefined>;
}

const storedDoc = (json: string | null): PermissionDoc | null => (json ? (JSON.parse(json) as PermissionDoc) : null);

export function toKeyView(k: KeyRow): ApiKeyView {
  return {
    id: k.id,
    name: k.name,
    permissions: storedDoc(k.permissions) ?? FULL_ACCESS,
    team_id: k.team_id,
    created_at: k.created_at,
    last_used_at: k.last_used_at,
  };
}

/** API key management (contract §3, API keys and Team context): a key never gets more rights than its creator. */
export function apiKeysServiceFactory({ db, keys, keysService, clock, memberPermissions }: ApiKeysServiceDeps) {
  /** A live `user` key of the caller, visible from the caller's context (a team key sees that team's keys only). */
  async function ownKey(p: Principal, id: number): Promise<KeyRow> {
    const k = await keys.findById(id);
    const visible = k && k.user_id === p.user.id && k.kind === 'user' && k.revoked_at === null && (p.teamId === null || k.team_id === p.teamId);
    if (!visible) throw notFound(`API key ${id}`);
    return k;
  }

  return {
    async create(p: Principal, input: CreateKeyInput): Promise<ApiKeyView & { success: true; key: string }> {
      let requested: PermissionDoc | undefined;
      if (input.permissions !== undefined && input.permissions !== null) {
        const parsed = parsePermissionDoc(input.permissions);
        if (typeof parsed === 'string') throw badRequest(`body.${parsed}`);
        requested = parsed;
      }
      let teamId = p.teamId;
      // What the caller may do right now: for a team key, already its document bounded by the member's role.
      let bound = p.permissions;
      if (input.team_id !== undefined && input.team_id !== null && input.team_id !== p.teamId) {
        if (p.teamId !== null) throw new ApiError('permission_denied', 'a team key can only make keys for its own team');
        const role = await memberPermissions(input.team_id, p.user.id);
        if (!role) throw notFound(`team ${input.team_id}`);
        bound = intersect(bound, storedDoc(role.permissions));
        teamId = input.team_id;
      }
      if (requested && !isSubset(requested, bound)) {
        throw new ApiError('permission_denied', 'a key cannot have more rights than the key (or team role) that creates it');
      }
      // Without a document the new key takes its creator's own document: a team key stays bounded by the member's
      // current role at every request, so it follows later role changes without ever exceeding its creator.
      const permissions = requested ?? storedDoc(p.key.permissions);
      const { key, secret } = await keysService.create({ user_id: p.user.id, kind: 'user', name: input.name ?? null, permissions, team_id: teamId });
      return { success: true, ...toKeyView(key), key: secret };
    },

    async list(p: Principal): Promise<{ success: true; apikeys: ApiKeyView[] }> {
      const rows = await keys.listApiKeys(p.user.id, p.teamId ?? undefined);
      return { success: true, apikeys: rows.map(toKeyView) };
    },

    async show(p: Principal, id: number): Promise<ApiKeyView> {
      return toKeyView(await ownKey(p, id));
    },

    /**
     * `PUT /api/v0/commands/reset_apikey/`: the key of this request is revoked at once and a new one with the same
     * name, rights and team takes its place (its secret is in this reply only). One transaction: never both, never none.
     */
    async reset(p: Principal): Promise<{ success: true; new_api_key: string; id: number; msg: string }> {
      if (p.key.kind !== 'user') throw badRequest('reset api-key works on API keys; this request was made with a session, instance or scheduled-job key');
      const made = await db.transaction().execute(async (tx) => {
        if (!(await keys.revokeLive(p.key.id, clock.now(), tx))) throw new ApiError('auth_error', 'this API key was revoked');
        return keysService.create(
          { user_id: p.user.id, kind: 'user', name: p.key.name, permissions: storedDoc(p.key.permissions), team_id: p.key.team_id, is_bootstrap: p.key.is_bootstrap === 1 },
          tx,
        );
      });
      return { success: true, new_api_key: made.secret, id: made.key.id, msg: `API key ${p.key.id} revoked; its replacement is key ${made.key.id}` };
    },

    /** Revocation is a row update; auth reads the row on every request, so every process refuses the key at once. */
    async remove(p: Principal, id: number): Promise<{ success: true; msg: string }> {
      const k = await ownKey(p, id);
      if (!isSubset(storedDoc(k.permissions), p.permissions)) {
        throw new ApiError('permission_denied', 'a key cannot delete a key with more rights than its own');
      }
      await keys.revoke(k.id, clock.now());
      return { success: true, msg: `API key ${id} deleted` };
    },
  };
}

export type ApiKeysService = ReturnType<typeof apiKeysServiceFactory>;
