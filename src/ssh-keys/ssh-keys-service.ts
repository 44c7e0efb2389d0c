import type { Clock } from '../platform/clock.js';
import type { Db, DialectName, Tx } from '../platform/db/connect.js';
import { ApiError, badRequest } from '../platform/errors.js';
import { parseSshPublicKey } from './ssh-keys-contract.js';
import type { SshKeyRow, SshKeysStore } from './ssh-keys-store.js';
import { checkEchoedId } from '../platform/validation.js';
import type { SshKeyObject, SshKeyUpdateBody } from './ssh-keys-types.js';

/** Most SSH keys one account may register. */
export const SSH_KEYS_MAX_PER_USER = 100;

export interface SshKeysServiceDeps {
  db: Db;
  dialect: DialectName;
  sshKeys: SshKeysStore;
  clock: Clock;
}

const keyNotFound = (id: number) => new ApiError('not_found', `ssh key ${id} not found`);

export function toSshKeyObject(row: SshKeyRow): SshKeyObject {
  return {
    id: row.id, user_id: row.user_id, ssh_key: row.public_key, key: row.public_key,
    created_at: row.created_at, updated_at: row.updated_at,
  };
}

/** The key material without the comment: two lines with the same material are the same key. */
const material = (line: string) => line.split(' ').slice(0, 2).join(' ');

/** SSH keys of an account (contract §3). Keys belong to the user, also when the caller acts for a team. */
export function sshKeysServiceFactory({ db, dialect, sshKeys, clock }: SshKeysServiceDeps) {
  async function assertNotDuplicate(userId: number, line: string, exceptId: number | null, tx: Tx): Promise<void> {
    const mine = await sshKeys.listByUser(userId, tx);
    if (mine.some((k) => k.id !== exceptId && material(k.public_key) === material(line))) {
      throw new ApiError('conflict', 'this SSH key is already registered on your account');
    }
  }

  return {
    async create(userId: number, sshKey: string): Promise<{ success: true; key: SshKeyObject }> {
      const { normalized } = parseSshPublicKey(sshKey);
      const row = await db.transaction().execute(async (tx) => {
        await sshKeys.lockUser(userId, dialect, tx);
        await assertNotDuplicate(userId, normalized, null, tx);
        if ((await sshKeys.listByUser(userId, tx)).length >= SSH_KEYS_MAX_PER_USER) {
          throw badRequest(`an account can hold at most ${SSH_KEYS_MAX_PER_USER} SSH keys; delete one first`);
        }
        const inserted = await sshKeys.insert(userId, normalized, clock.now(), tx);
        await sshKeys.syncUserSshKey(userId, tx);
        return inserted;
      });
      return { success: true, key: toSshKeyObject(row) };
    },

    async list(userId: number): Promise<SshKeyObject[]> {
      return (await sshKeys.listByUser(userId)).map(toSshKeyObject);
    },

    async update(userId: number, id: number, body: SshKeyUpdateBody): Promise<{ success: true; key: SshKeyObject }> {
      checkEchoedId(body.id, id, 'id');
      const { normalized } = parseSshPublicKey(body.ssh_key);
      const row = await db.transaction().execute(async (tx) => {
        await sshKeys.lockUser(userId, dialect, tx);
        if (!(await sshKeys.get(userId, id, tx))) throw keyNotFound(id);
        await assertNotDuplicate(userId, normalized, id, tx);
        const updated = await sshKeys.update(userId, id, normalized, clock.now(), tx);
        if (!updated) throw keyNotFound(id);
        await sshKeys.syncUserSshKey(userId, tx);
        return updated;
      });
      return { success: true, key: toSshKeyObject(row) };
    },

    async remove(userId: number, id: number): Promise<{ success: true; msg: string }> {
      await db.transaction().execute(async (tx) => {
        await sshKeys.lockUser(userId, dialect, tx);
        if (!(await sshKeys.remove(userId, id, tx))) throw keyNotFound(id);
        await sshKeys.syncUserSshKey(userId, tx);
      });
      return { success: true, msg: `ssh key ${id} deleted` };
    },

    /** Every key of the user, oldest first (for instances: keys to install at creation). */
    async listForUser(userId: number, tx: Tx = db): Promise<SshKeyRow[]> {
      return sshKeys.listByUser(userId, tx);
    },

    /** The public key lines of the user, oldest first (SshKeysPort of instances-ports.ts). */
    async publicKeysOf(userId: number, tx: Tx = db): Promise<string[]> {
      return (await sshKeys.listByUser(userId, tx)).map((k) => k.public_key);
    },

    /**
     * The public key lines of each of these users, oldest first, read in one statement (a machine's desired state puts
     * the renters' and team members' account keys into its containers); a user without keys is absent.
     */
    async publicKeysOfMany(userIds: readonly number[], tx: Tx = db): Promise<Map<number, string[]>> {
      const out = new Map<number, string[]>();
      const ids = [...new Set(userIds)];
      // In batches: bound parameters stay far below SQLite's and PostgreSQL's limits.
      for (let i = 0; i < ids.length; i += 1000) {
        for (const k of await sshKeys.listByUsers(ids.slice(i, i + 1000), tx)) out.set(k.user_id, [...(out.get(k.user_id) ?? []), k.public_key]);
      }
      return out;
    },

    /** One key of the user; someone else's or a missing one is ApiError not_found (for attach/detach). */
    async get(userId: number, keyId: number, tx: Tx = db): Promise<SshKeyRow> {
      const row = await sshKeys.get(userId, keyId, tx);
      if (!row) throw keyNotFound(keyId);
      return row;
    },

    /** Checks a pasted public key (attach takes a key line) and returns it normalised; 400 when implausible. */
    normalize(sshKey: string): string {
      return parseSshPublicKey(sshKey).normalized;
    },
  };
}

export type SshKeysService = ReturnType<typeof sshKeysServiceFactory>;
