// The key lookup of every request is reused while the SQLite database is unchanged (platform/db/read-cache.ts): a
// write by this process must be seen by the very next lookup, a commit by another connection to the file by the next
// lookup of a later turn of the event loop (any request that arrives after it: connect.ts reads the other
// connections' version once a turn), and nothing a transaction has not committed may be cached.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setImmediate as nextTurn } from 'node:timers/promises';
import SQLite from 'better-sqlite3';
import type { Store } from '../src/platform/db/connect.js';
import { openDatabase } from '../src/database.js';
import { readCache } from '../src/platform/db/read-cache.js';
import { keysStore } from '../src/keys/keys-store.js';
import { sha256Hex } from '../src/platform/crypto.js';

async function withFile(fn: (ctx: { store: Store; file: string }) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'gpuplane-read-cache-'));
  const file = join(dir, 'gpuplane.db');
  const store = await openDatabase(`sqlite:${file}`);
  try {
    await fn({ store, file });
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A user with one key; returns the key's hash. */
async function seed(store: Store, secret: string, credit = 5_000_000): Promise<{ hash: string; userId: number }> {
  const user = await store.db
    .insertInto('users')
    .values({ email: `${secret}@example.com`, full_name: 'Read Cache', password_hash: null, credit_micro: credit, is_admin: 0, tfa_status: 'disabled', created_at: 1 })
    .returning('id')
    .executeTakeFirstOrThrow();
  const hash = sha256Hex(secret);
  await store.db.insertInto('api_keys').values({ user_id: user.id, key_hash: hash, kind: 'user', is_bootstrap: 0, created_at: 1 }).execute();
  return { hash, userId: user.id };
}

test('store.version: unchanged by reads, changed by a write of this process at once and by a commit of another connection from the next turn', async () => {
  await withFile(async ({ store, file }) => {
    const version = store.version!;
    assert.equal(typeof version, 'function');
    const v0 = version();
    await store.db.selectFrom('users').selectAll().execute();
    assert.equal(version(), v0);
    await seed(store, 'gpk_version_one');
    const v1 = version();
    assert.ok(v1 > v0);

    const other = new SQLite(file);
    try {
      other.prepare('UPDATE users SET full_name = ?').run('changed elsewhere');
    } finally {
      other.close();
    }
    // Read once a turn: the commit is seen by what runs in the next one (a request arriving after it).
    assert.equal(version(), v1);
    await nextTurn();
    const v2 = version();
    assert.ok(v2 > v1);
    await nextTurn();
    assert.equal(version(), v2);
  });
});

test('PostgreSQL has no version, so nothing is cached there', () => {
  assert.equal(readCache({ version: undefined }), undefined);
});

test('a cached key lookup sees a revocation or a credit change: from this process at once, from another connection in the next turn', async () => {
  await withFile(async ({ store, file }) => {
    const keys = keysStore(store.db, 'sqlite', readCache(store));
    const { hash, userId } = await seed(store, 'gpk_cached_lookup_key');
    const first = await keys.findLiveByHash(hash);
    assert.equal(first?.user.credit_micro, 5_000_000);
    // A reused lookup is shared, so it is frozen: no caller can change what the next one gets.
    assert.throws(() => {
      first!.user.credit_micro = 1;
    }, TypeError);
    assert.throws(() => {
      (first!.key as { revoked_at: number | null }).revoked_at = 1;
    }, TypeError);
    assert.equal((await keys.findLiveByHash(hash))?.user.credit_micro, 5_000_000);

    await store.db.updateTable('users').set({ credit_micro: 4_000_000 }).where('id', '=', userId).execute();
    assert.equal((await keys.findLiveByHash(hash))?.user.credit_micro, 4_000_000);

    const other = new SQLite(file);
    try {
      await nextTurn();
      other.prepare('UPDATE users SET credit_micro = 3000000 WHERE id = ?').run(userId);
      await nextTurn();
      assert.equal((await keys.findLiveByHash(hash))?.user.credit_micro, 3_000_000);
      other.prepare('UPDATE api_keys SET revoked_at = 2 WHERE key_hash = ?').run(hash);
      await nextTurn();
      assert.equal(await keys.findLiveByHash(hash), undefined);
    } finally {
      other.close();
    }

    const again = await seed(store, 'gpk_cached_lookup_two');
    assert.ok(await keys.findLiveByHash(again.hash));
    await keys.revoke((await keys.findLiveByHash(again.hash))!.key.id, 3);
    assert.equal(await keys.findLiveByHash(again.hash), undefined);
  });
});

test('a lookup inside a transaction reads that transaction’s rows, and they are not cached for anyone else', async () => {
  await withFile(async ({ store }) => {
    const keys = keysStore(store.db, 'sqlite', readCache(store));
    const { hash, userId } = await seed(store, 'gpk_cached_tx_key');
    assert.equal((await keys.findLiveByHash(hash))?.user.credit_micro, 5_000_000);
    await assert.rejects(
      store.db.transaction().execute(async (tx) => {
        await tx.updateTable('users').set({ credit_micro: 1 }).where('id', '=', userId).execute();
        assert.equal((await keys.findLiveByHash(hash, tx))?.user.credit_micro, 1);
        throw new Error('roll back');
      }),
      /roll back/,
    );
    assert.equal((await keys.findLiveByHash(hash))?.user.credit_micro, 5_000_000);
  });
});

test('the running rate read with the key is the sum over the user’s running meters (0 with none)', async () => {
  await withFile(async ({ store }) => {
    const keys = keysStore(store.db, 'sqlite', readCache(store));
    const { hash, userId } = await seed(store, 'gpk_running_rate_key');
    assert.equal((await keys.findLiveByHash(hash))?.runningRate, 0);
    await store.db
      .insertInto('billing_rates')
      .values({ user_id: userId, rate_micro_per_hour: 1_234_567, accrued: 0, ref_at: 10, charged_micro: 0 })
      .execute();
    assert.equal((await keys.findLiveByHash(hash))?.runningRate, 1_234_567);
  });
});
