import type { DialectName, Tx } from '../platform/db/connect.js';
import { USER_RUNNING_RATE } from '../billing/billing-contract.js';
import type { ReadCache } from '../platform/db/read-cache.js';
import type { UserRow } from '../users/users-contract.js';
import type { ApiKeysTable } from './keys-tables.js';
import { sql, type CompiledQuery, type Insertable, type Selectable } from 'kysely';
import { prepared } from '../platform/db/prepared.js';
import { coalescing } from '../platform/coalesce.js';
import { flushWaived, NO_FLUSH } from '../platform/db/no-flush.js';

export type KeyRow = Selectable<ApiKeysTable>;
export type { UserRow };

// The authenticator's principal carries this feature's whole rows (platform/auth.ts KeyLookup).
declare module '../platform/auth.js' {
  interface PrincipalUser extends UserRow {}
  interface PrincipalKey extends KeyRow {}
}

export interface NewKey {
  user_id: number;
  key_hash: string;
  kind: 'user' | 'session' | 'instance' | 'job';
  name?: string | null;
  permissions?: string | null;
  team_id?: number | null;
  instance_id?: number | null;
  is_bootstrap?: boolean;
  created_at: number;
}

/**
 * The live (not revoked) key with this hash and its user, packed into one JSON array. It runs on every request, and
 * better-sqlite3 spends more on making a 23-property row object than SQLite spends on finding the row: one text value
 * parsed with JSON.parse costs about half. PostgreSQL gets the same query, with its name for the function.
 * Both render a double precision exactly (shortest round-trip form), integers and NULL as themselves.
 *
 * Last comes the user's summed hourly rate of running meters (billing's running totals, 0 without a row): with none,
 * the balance is the stored credit, and users/current needs no second query (billing-service `balanceOf`).
 */
type Packed = { packed: string | unknown[] };

/** The packed row of the keys `keys` gives (a FROM item named `k`, with the columns of api_keys), joined to their users. */
function packedColumns(dialect: DialectName, keys = sql`api_keys k`) {
  const jsonArray = sql.raw(dialect === 'postgres' ? 'json_build_array' : 'json_array');
  return sql`${jsonArray}(k.id, k.user_id, k.team_id, k.name, k.key_hash, k.kind, k.permissions, k.instance_id,
        k.is_bootstrap, k.created_at, k.last_used_at, k.revoked_at,
        u.id, u.email, u.full_name, u.password_hash, u.credit_micro, u.ssh_key, u.is_admin, u.email_verified_at,
        u.tfa_status, u.phone_number, u.created_at, ${USER_RUNNING_RATE.column}) AS packed
    FROM ${keys} INNER JOIN users u ON u.id = k.user_id ${USER_RUNNING_RATE.join}`;
}

function packedLookup(db: Tx, dialect: DialectName): CompiledQuery<Packed> {
  return sql<Packed>`SELECT ${packedColumns(dialect)} WHERE k.key_hash = ${''} AND k.revoked_at IS NULL`.compile(db);
}

/**
 * `packedLookup` for `size` digests at once (PostgreSQL), each row with its digest; `batchSize` gives the sizes it is
 * written for. Each digest is looked up on its own (a LATERAL subquery with a LIMIT, which the planner cannot flatten
 * into a join): `key_hash = ANY($1)` as a prepared statement's generic plan was costed for an array of ten, so the
 * planner chose a sequential scan of every key, revoked ones included, until the table outgrew about a hundred pages
 * (bench pg-mixed, auto_explain: ~1,200 keys read per lookup, 40 buffers, 100–140 µs). The digests are a VALUES list
 * of `size` parameters, not an array: the planner took an array of unknown length for a hundred digests, so a generic
 * plan never looked as cheap as one planned for the array given, and PostgreSQL planned the statement again on every
 * run (pg_stat_statements, track_planning: 143 µs of planning per lookup against 35 µs of execution). A list's length
 * is in the text, so the generic plan is costed as the custom ones are, and wins after five runs. Exported for the
 * tests of its plan.
 */
export function packedBatchLookup(db: Tx, size: number): CompiledQuery<Packed & { hash: string }> {
  const digests = sql.join(Array.from({ length: size }, () => sql`(${''})`));
  const keys = sql`(VALUES ${digests}) AS h(hash)
    CROSS JOIN LATERAL (SELECT * FROM api_keys WHERE key_hash = h.hash AND revoked_at IS NULL LIMIT 1) k`;
  return sql<Packed & { hash: string }>`SELECT h.hash AS hash, ${packedColumns('postgres', keys)}`.compile(db);
}

/**
 * The size of lookup that takes `n` digests: the next power of two (a few statement texts, each prepared once per
 * connection), its extra places filled with the empty digest, which no key has.
 */
export function batchSize(n: number): number {
  return 2 ** Math.ceil(Math.log2(Math.max(1, n)));
}

/**
 * On PostgreSQL every lookup is a round trip, and each costs the server more than the lookup itself (the socket
 * write wakes a backend). Lookups outside a transaction that arrive while one is running go together in the next, one
 * statement for all (platform/coalesce.ts): each still reads rows committed before it was asked for. At most
 * `KEY_BATCH_IN_FLIGHT` run at once, each on its own connection.
 */
const KEY_BATCH_IN_FLIGHT = 2;
const KEY_BATCH_MAX = 256;

/** A live key, its user, and the user's running rate (micro-dollars per hour over their running meters). */
export interface FoundKey {
  key: KeyRow;
  user: UserRow;
  runningRate: number;
}

/** The rows from `packedLookup`'s array, in its order (a test compares them with the tables' own rows). */
function unpack(v: any[]): FoundKey {
  const key: KeyRow = {
    id: v[0], user_id: v[1], team_id: v[2], name: v[3], key_hash: v[4], kind: v[5], permissions: v[6], instance_id: v[7],
    is_bootstrap: v[8], created_at: v[9], last_used_at: v[10], revoked_at: v[11],
  };
  const user: UserRow = {
    id: v[12], email: v[13], full_name: v[14], password_hash: v[15], credit_micro: v[16], ssh_key: v[17], is_admin: v[18],
    email_verified_at: v[19], tfa_status: v[20], phone_number: v[21], created_at: v[22],
  };
  return { key, user, runningRate: Number(v[23]) };
}

/** A packed lookup's rows, frozen. pg parses json values itself; better-sqlite3 returns the text. */
function frozen(packed: string | unknown[]): FoundKey {
  const found = unpack(typeof packed === 'string' ? JSON.parse(packed) : packed);
  Object.freeze(found.key);
  Object.freeze(found.user);
  return Object.freeze(found);
}

/**
 * `lookups` reuses key lookups while the database is unchanged (SQLite; platform/db/read-cache.ts). What the lookup
 * returns is frozen, on both dialects: the same objects may serve every request until the next write.
 */
export function keysStore(db: Tx, dialect: DialectName, lookups?: ReadCache<FoundKey>) {
  // The statements of renting and destroying (platform/db/prepared.ts): an instance's key made, then revoked.
  const insertKey = prepared(
    ['user_id', 'key_hash', 'kind', 'name', 'permissions', 'team_id', 'instance_id', 'is_bootstrap', 'created_at'],
    (k: Insertable<ApiKeysTable>) => db.insertInto('api_keys').values(k).returningAll(),
  );
  const revokeOfInstance = prepared(['now', 'userId', 'instanceId'], (q: { now: number; userId: number; instanceId: number }) =>
    db.updateTable('api_keys').set({ revoked_at: q.now }).where('user_id', '=', q.userId).where('kind', '=', 'instance')
      .where('instance_id', '=', q.instanceId).where('revoked_at', 'is', null));
  // Every first use of a key in a while, every destroy's instance key among them; PostgreSQL, outside a transaction.
  const touchUnflushed = prepared(['now', 'id'], (q: { now: number; id: number }) => ({
    compile: () => sql`UPDATE api_keys SET last_used_at = ${q.now} FROM ${NO_FLUSH} WHERE id = ${q.id}`.compile(db),
  }));
  let liveByHash: CompiledQuery<Packed> | undefined;
  const liveByHashes = new Map<number, CompiledQuery<Packed & { hash: string }>>();
  const readBatch = async (hashes: string[]): Promise<(FoundKey | undefined)[]> => {
    const digests = [...new Set(hashes)];
    const size = batchSize(digests.length);
    let query = liveByHashes.get(size);
    if (!query) liveByHashes.set(size, (query = packedBatchLookup(db, size)));
    while (digests.length < size) digests.push('');
    const rows = (await db.executeQuery<Packed & { hash: string }>({ ...query, parameters: digests })).rows;
    const found = new Map(rows.map((r) => [r.hash, frozen(r.packed)]));
    return hashes.map((h) => found.get(h));
  };
  const batchedRead = dialect === 'postgres' ? coalescing(readBatch, { maxBatch: KEY_BATCH_MAX, maxInFlight: KEY_BATCH_IN_FLIGHT }) : undefined;
  return {
    async insert(k: NewKey, tx: Tx = db): Promise<KeyRow> {
      const { rows } = await insertKey(tx, {
        user_id: k.user_id,
        key_hash: k.key_hash,
        kind: k.kind,
        name: k.name ?? null,
        permissions: k.permissions ?? null,
        team_id: k.team_id ?? null,
        instance_id: k.instance_id ?? null,
        is_bootstrap: k.is_bootstrap ? 1 : 0,
        created_at: k.created_at,
      });
      return rows[0];
    },

    /** The live (not revoked) key with this hash, and its user, in one query: the hot path of every request. */
    async findLiveByHash(hash: string, tx: Tx = db): Promise<FoundKey | undefined> {
      // PostgreSQL, outside a transaction: with the lookups asked meanwhile, in one statement.
      if (batchedRead && tx === db) return batchedRead(hash);
      // Building this query costs several times what running it does, and it runs on every request: it is built
      // and compiled once, then run with the digest as its one parameter.
      const query = (liveByHash ??= packedLookup(db, dialect));
      const read = async () => {
        const packed = (await tx.executeQuery<Packed>({ ...query, parameters: [hash] })).rows[0]?.packed;
        return packed === undefined ? undefined : frozen(packed);
      };
      // Cached only outside a transaction, which may hold rows not yet committed.
      return lookups && tx === db ? lookups.through(hash, read) : read();
    },

    /** The live key with this digest as `findLiveByHash` would reuse it now, without a read; undefined when it would read. */
    cachedLiveByHash(hash: string): FoundKey | undefined {
      return lookups?.peek(hash);
    },

    /** Sets the team a live session key acts for (null: the personal context); false when it is no live session. */
    async setSessionTeam(id: number, teamId: number | null, tx: Tx = db): Promise<boolean> {
      const r = await tx.updateTable('api_keys').set({ team_id: teamId }).where('id', '=', id).where('kind', '=', 'session').where('revoked_at', 'is', null).executeTakeFirst();
      return Number(r.numUpdatedRows) > 0;
    },

    /** Records a key's last use; PostgreSQL commits it without a flush (platform/db/no-flush.ts). */
    async touch(id: number, now: number, tx: Tx = db): Promise<void> {
      if (flushWaived(tx, dialect)) await touchUnflushed(tx, { now, id });
      else await tx.updateTable('api_keys').set({ last_used_at: now }).where('id', '=', id).execute();
    },

    /** Revokes a live key; false when it was already revoked (a racing revoke or reset won). */
    async revokeLive(id: number, now: number, tx: Tx = db): Promise<boolean> {
      const r = await tx.updateTable('api_keys').set({ revoked_at: now }).where('id', '=', id).where('revoked_at', 'is', null).executeTakeFirst();
      return Number(r.numUpdatedRows) > 0;
    },

    async revoke(id: number, now: number, tx: Tx = db): Promise<void> {
      await tx.updateTable('api_keys').set({ revoked_at: now }).where('id', '=', id).where('revoked_at', 'is', null).execute();
    },

    /** Revokes the live instance keys of the user's instance (its destroy), in one statement. */
    async revokeInstanceKeys(userId: number, instanceId: number, now: number, tx: Tx = db): Promise<void> {
      await revokeOfInstance(tx, { userId, instanceId, now });
    },

    /**
     * An instance's live keys become another account's, with the instance (a team's, when the member who rented it
     * leaves the team: revoking the member's team keys then leaves the instance's own key working).
     */
    async moveInstanceKeys(instanceId: number, fromUserId: number, toUserId: number, tx: Tx = db): Promise<void> {
      await tx.updateTable('api_keys').set({ user_id: toUserId }).where('user_id', '=', fromUserId).where('kind', '=', 'instance')
        .where('instance_id', '=', instanceId).where('revoked_at', 'is', null).execute();
    },

    async listByUser(userId: number, tx: Tx = db): Promise<KeyRow[]> {
      return tx.selectFrom('api_keys').selectAll().where('user_id', '=', userId).where('revoked_at', 'is', null).orderBy('id').execute();
    },

    async findById(id: number, tx: Tx = db): Promise<KeyRow | undefined> {
      return tx.selectFrom('api_keys').selectAll().where('id', '=', id).executeTakeFirst();
    },

    /** A user's live (not revoked) session keys, in id order: login's sessions that are still on. */
    async liveSessionKeysOf(userId: number, tx: Tx = db): Promise<KeyRow[]> {
      return tx.selectFrom('api_keys').selectAll().where('user_id', '=', userId).where('kind', '=', 'session').where('revoked_at', 'is', null).orderBy('id').execute();
    },

    /** A user's live API keys (kind `user`; sessions and instance keys are not managed here), optionally one team's. */
    async listApiKeys(userId: number, teamId: number | undefined, tx: Tx = db): Promise<KeyRow[]> {
      let q = tx.selectFrom('api_keys').selectAll().where('user_id', '=', userId).where('kind', '=', 'user').where('revoked_at', 'is', null);
      if (teamId !== undefined) q = q.where('team_id', '=', teamId);
      return q.orderBy('id').execute();
    },

    /** Revokes every live key acting for a team: one member's (they left) or everyone's (the team is deleted). */
    async revokeByTeam(teamId: number, userId: number | null, now: number, tx: Tx = db): Promise<void> {
      let q = tx.updateTable('api_keys').set({ revoked_at: now }).where('team_id', '=', teamId).where('revoked_at', 'is', null);
      if (userId !== null) q = q.where('user_id', '=', userId);
      await q.execute();
    },
  };
}

export type KeysStore = ReturnType<typeof keysStore>;

/** The emulator's reset keeps the live bootstrap keys: read before the tables are emptied, written back after. */
export const bootstrapKeys = {
  async live(tx: Tx): Promise<KeyRow[]> {
    return tx.selectFrom('api_keys').selectAll().where('is_bootstrap', '=', 1).where('revoked_at', 'is', null).execute();
  },
  async restore(tx: Tx, rows: KeyRow[]): Promise<void> {
    for (const row of rows) await tx.insertInto('api_keys').values(row).execute();
  },
};
