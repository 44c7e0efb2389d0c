/**
 * Reuse of a hot read while the database has not changed (`Store.version`, SQLite only): the key lookup of every
 * request. An entry records the version taken before its read began, so any write that could have changed the rows
 * makes it stale; callers cache no read made inside a transaction (it may see that transaction's uncommitted rows).
 * There is none without a version (PostgreSQL, where other processes write).
 *
 * A cached value is shared by every caller, so it must be one none of them can change: a string, or frozen.
 */
import { LRUCache } from 'lru-cache';
import type { Store } from './connect.js';

/** Entries kept; when full, the least recently used goes (a lookup of a key not in it only costs its read). */
const MAX_ENTRIES = 10_000;

export interface ReadCache<V> {
  /** The value `read` gives for `key`, reused while the store's version is the one it was read at. */
  through(key: string, read: () => Promise<V | undefined>): Promise<V | undefined>;
  /** The reusable value for `key` now, without reading (undefined: none, or stale): what `through` would reuse. */
  peek(key: string): V | undefined;
}

export function readCache<V extends string | Readonly<object>>(store: Pick<Store, 'version'>): ReadCache<V> | undefined {
  const version = store.version;
  if (!version) return undefined;
  const entries = new LRUCache<string, { at: number; value: V }>({ max: MAX_ENTRIES });
  return {
    async through(key, read) {
      const at = version();
      const hit = entries.get(key);
      if (hit?.at === at) return hit.value;
      const value = await read();
      if (value === undefined) {
        // Nothing is kept for a miss: unknown keys must not fill the cache.
        entries.delete(key);
      } else {
        entries.set(key, { at, value });
      }
      return value;
    },
    peek(key) {
      const hit = entries.get(key);
      return hit !== undefined && hit.at === version() ? hit.value : undefined;
    },
  };
}
