/**
 * The key that encrypts secrets at rest (TOTP secrets). Every process that shares a database must use the same one,
 * or a secret written through one process cannot be read through another.
 * - Given (`GPUPLANE_SECRET_KEY`): that key. Production requires it (config.ts).
 * - Emulator mode on PostgreSQL (many processes may share it): one generated key kept in the database's `kv` table,
 *   created once by whichever process starts first. The caller warns: a key stored beside the data it protects
 *   protects nothing against someone who can read the database.
 * - Emulator mode on SQLite (one process): a generated key in the data folder, beside the database file.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Store } from './db/connect.js';
import type { Random } from './random.js';

/** The `kv` row holding a generated key on PostgreSQL. */
export const SECRET_KEY_KV = 'secret_key';
const KEY_BYTES = 32;

export interface ResolvedSecretKey {
  key: string;
  /** Where a generated key lives; undefined when it was given. */
  generatedIn?: 'database' | 'file';
}

/** Where generated files live: beside the SQLite file, or `./data`. */
export function dataDir(databaseUrl: string): string {
  const m = /^sqlite:(.+)$/.exec(databaseUrl);
  return m && m[1] !== ':memory:' ? dirname(m[1]) : './data';
}

export async function resolveSecretKey(given: string | undefined, databaseUrl: string, store: Store, random: Random): Promise<ResolvedSecretKey> {
  if (given) return { key: given };
  if (store.dialect === 'postgres') {
    // Two processes starting together: the primary key lets one insert win, and both read back the winner's key.
    await store.db
      .insertInto('kv')
      .values({ key: SECRET_KEY_KV, value: random.bytes(KEY_BYTES).toString('hex') })
      .onConflict((oc) => oc.column('key').doNothing())
      .execute();
    const row = await store.db.selectFrom('kv').select('value').where('key', '=', SECRET_KEY_KV).executeTakeFirstOrThrow();
    return { key: row.value, generatedIn: 'database' };
  }
  const file = join(dataDir(databaseUrl), 'secret.key');
  if (existsSync(file)) return { key: readFileSync(file, 'utf8').trim(), generatedIn: 'file' };
  mkdirSync(dirname(file), { recursive: true });
  const key = random.bytes(KEY_BYTES).toString('hex');
  writeFileSync(file, `${key}\n`, { mode: 0o600 });
  return { key, generatedIn: 'file' };
}
