/**
 * Machine keys: which machine a key belongs to, remembered by the key's digest while the machine's change-feed epoch
 * stands (agent-server-changes.ts), so a held agent renewing its long-poll costs no query; and their revoking.
 */
import { LRUCache } from 'lru-cache';
import { digestEqual, sha256Hex } from '../platform/crypto.js';
import type { Db, Tx } from '../platform/db/connect.js';
import { ApiError } from '../platform/errors.js';
import type { DesiredChanges } from './agent-server-changes.js';
import type { AgentStore } from './agent-server-store.js';

/** Keys remembered at most (one per machine whose agent calls this process); past it, the least recently used goes. */
const KEY_CACHE_MAX = 50_000;

export function machineKeys({ db, agents, changes }: { db: Db; agents: AgentStore; changes: () => Promise<DesiredChanges> }) {
  /** Machine keys' digests and the machine each belongs to, as of an epoch of that machine (`authenticate`). */
  const keyCache = new LRUCache<string, { machineId: number; epoch: string }>({ max: KEY_CACHE_MAX });

  /** A machine's key changed here: this process forgets it at once; the others when the change notice reaches them. */
  function forget(machineId: number): void {
    // Collected first: the cache is not changed while it is walked.
    const gone = [...keyCache.entries()].filter(([, known]) => known.machineId === machineId);
    for (const [hash] of gone) keyCache.delete(hash);
  }

  return {
    forget,

    /**
     * The machine a machine key belongs to, or 401. Remembered by the key's digest while the machine's change-feed
     * epoch stands: a new key or a revoke (a write of its row's key) moves it, in every process
     * (agent-server-changes.ts), so a held agent renewing its long-poll costs no query.
     */
    async authenticate(key: string | null): Promise<number> {
      if (key === null) throw new ApiError('auth_error', 'a machine key is required: send "Authorization: Bearer <machine key>"');
      const hash = sha256Hex(key);
      const changeFeed = await changes();
      const known = keyCache.get(hash);
      if (known && changeFeed.epoch(known.machineId) === known.epoch) return known.machineId;
      const seq = changeFeed.seq();
      const row = await agents.byKeyHash(hash);
      // Looked up by digest; the final comparison is constant-time all the same.
      if (!row || row.key_hash === null || !digestEqual(row.key_hash, hash)) throw new ApiError('auth_error', 'invalid or revoked machine key');
      // Remembered only when no change at all was heard during the read: then the machine's epoch now is the one its
      // row was read at, and a revoke committed after the read moves it.
      if (changeFeed.seq() === seq) {
        keyCache.set(hash, { machineId: row.machine_id, epoch: changeFeed.epoch(row.machine_id) });
      }
      return row.machine_id;
    },

    /** Revokes the machine's key (the machine was deleted): its agent gets 401 from now on. */
    async revoke(machineId: number, tx: Tx = db): Promise<void> {
      await agents.update(machineId, { key_hash: null }, tx);
      forget(machineId);
    },
  };
}

export type MachineKeys = ReturnType<typeof machineKeys>;
