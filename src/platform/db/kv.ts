/**
 * The platform's `kv` table (one text value per key) as an API: features keep small pieces of shared state there
 * (e.g. the lock row of a self-rescheduling job chain) without writing the platform's table themselves.
 * Every call takes the caller's transaction.
 */
import type { Db, Tx } from './connect.js';
import { prepared } from './prepared.js';

export interface KvState {
  /** Inserts `key` unless it exists; true when this call made it (the row is then a lock only its maker holds). */
  claim(tx: Tx, key: string, value: string): Promise<boolean>;
  get(tx: Tx, key: string): Promise<string | undefined>;
  set(tx: Tx, key: string, value: string): Promise<void>;
  remove(tx: Tx, key: string): Promise<void>;
}

/**
 * The statement of `KvState.claim`, for a feature that runs the claim inside a statement of its own (billing claims the
 * settlement chain's key in the statement that starts a meter, as a data-modifying CTE on PostgreSQL: one round trip).
 * It returns the key when it made the row, nothing when the row existed.
 */
export function kvClaimStatement(db: Tx, key: string, value: string) {
  return db.insertInto('kv').values({ key, value }).onConflict((oc) => oc.column('key').doNothing()).returning('key');
}

export function kvState(db: Db): KvState {
  // A claim runs on every meter start: built once (platform/db/prepared.ts).
  const claim = prepared(['key', 'value'], (q: { key: string; value: string }) => kvClaimStatement(db, q.key, q.value));
  return {
    claim: async (tx, key, value) => (await claim(tx, { key, value })).rows.length > 0,
    get: async (tx, key) => (await tx.selectFrom('kv').select('value').where('key', '=', key).executeTakeFirst())?.value,
    set: async (tx, key, value) => {
      await tx.updateTable('kv').set({ value }).where('key', '=', key).execute();
    },
    remove: async (tx, key) => {
      await tx.deleteFrom('kv').where('key', '=', key).execute();
    },
  };
}
