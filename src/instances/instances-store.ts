import type { Insertable, Selectable, Updateable } from 'kysely';
import type { DialectName, Tx } from '../platform/db/connect.js';
import { prepared, preparedByKeys } from '../platform/db/prepared.js';
import type { Scope } from '../platform/auth.js';
import type { InstanceEventsTable, InstancesTable } from './instances-tables.js';

export type InstanceRow = Selectable<InstancesTable>;
export type InstanceEventRow = Selectable<InstanceEventsTable>;
export type InstancePatch = Updateable<InstancesTable>;

/** Rows of the caller's scope: its team's in a team context, else its own personal ones (auth.ts Scope). */
function inScope<Q extends { where: (...a: any[]) => Q }>(q: Q, scope: Scope, prefix = ''): Q {
  q = q.where(`${prefix}team_id`, scope.teamId === null ? 'is' : '=', scope.teamId);
  return scope.teamId === null ? q.where(`${prefix}user_id`, '=', scope.userId) : q;
}

export function instancesStore(db: Tx, dialect: DialectName) {
  // The statements of renting and booting (platform/db/prepared.ts).
  const insertRow = preparedByKeys((row: Insertable<InstancesTable>) => db.insertInto('instances').values(row).returning('id'));
  const updateRow = preparedByKeys(({ $id, ...patch }: InstancePatch & { $id: number }) => db.updateTable('instances').set(patch).where('id', '=', $id));
  const live = (q: { id: number }) => db.selectFrom('instances').selectAll().where('id', '=', q.id).where('destroyed_at', 'is', null);
  const findLive = prepared(['id'], live);
  const lockLive = prepared(['id'], (q: { id: number }) => (dialect === 'postgres' ? live(q).forUpdate() : live(q)));
  // Every status report of a real host's agent reads its machine's instances.
  const selectLiveOnMachine = prepared(['machine_id'], (q: { machine_id: number }) =>
    db.selectFrom('instances').selectAll().where('machine_id', '=', q.machine_id).where('destroyed_at', 'is', null).orderBy('id'));
  const insertEventRow = preparedByKeys((e: Omit<InstanceEventRow, 'id'>) => db.insertInto('instance_events').values(e));

  return {
    dialect,

    async insert(row: Insertable<InstancesTable>, tx: Tx = db): Promise<number> {
      return (await insertRow(tx, row)).rows[0].id;
    },

    async update(id: number, patch: InstancePatch, tx: Tx = db): Promise<void> {
      await updateRow(tx, { ...patch, $id: id });
    },

    /** A live instance; on PostgreSQL the row is locked for the rest of the transaction (state changes serialize). */
    async lock(id: number, tx: Tx): Promise<InstanceRow | undefined> {
      return (await lockLive(tx, { id })).rows[0];
    },

    /** How many live instances are in each `actual_status` (null while provisioning), for metrics. */
    async countByState(tx: Tx = db): Promise<{ state: string | null; count: number }[]> {
      const rows = await tx
        .selectFrom('instances')
        .select((eb) => ['actual_status', eb.fn.countAll<number>().as('n')])
        .where('destroyed_at', 'is', null)
        .groupBy('actual_status')
        .execute();
      return rows.map((r) => ({ state: r.actual_status, count: Number(r.n) }));
    },

    async find(id: number, tx: Tx = db): Promise<InstanceRow | undefined> {
      return (await findLive(tx, { id })).rows[0];
    },

    async findInScope(id: number, scope: Scope, tx: Tx = db): Promise<InstanceRow | undefined> {
      const q = tx.selectFrom('instances').selectAll().where('id', '=', id).where('destroyed_at', 'is', null);
      return inScope(q, scope).executeTakeFirst();
    },

    async listInScope(scope: Scope, tx: Tx = db): Promise<InstanceRow[]> {
      const q = tx.selectFrom('instances').selectAll().where('destroyed_at', 'is', null).orderBy('id');
      return inScope(q, scope).execute();
    },

    async listOnMachine(machineId: number, tx: Tx = db): Promise<InstanceRow[]> {
      return (await selectLiveOnMachine(tx, { machine_id: machineId })).rows;
    },

    async insertEvent(e: Omit<InstanceEventRow, 'id'>, tx: Tx = db): Promise<void> {
      await insertEventRow(tx, e);
    },

    async eventsSince(scope: Scope, afterId: number, limit: number, tx: Tx = db): Promise<InstanceEventRow[]> {
      const q = tx.selectFrom('instance_events').selectAll().where('id', '>', afterId).orderBy('id').limit(limit);
      return inScope(q, scope).execute();
    },

    async lastEventId(tx: Tx = db): Promise<number> {
      const r = await tx.selectFrom('instance_events').select((eb) => eb.fn.max('id').as('m')).executeTakeFirst();
      return Number(r?.m ?? 0);
    },

    async eventsOf(instanceId: number, tx: Tx = db): Promise<InstanceEventRow[]> {
      return tx.selectFrom('instance_events').selectAll().where('instance_id', '=', instanceId).orderBy('id').execute();
    },

    async findIdempotent(userId: number, key: string, notBefore: number, tx: Tx = db) {
      return tx
        .selectFrom('instance_idempotency')
        .selectAll()
        .where('user_id', '=', userId)
        .where('idem_key', '=', key)
        .where('created_at', '>=', notBefore)
        .executeTakeFirst();
    },

    /** Forgets the key's record when it is older than `before` (its retention ended). */
    async deleteExpiredIdempotent(userId: number, key: string, before: number, tx: Tx = db): Promise<void> {
      await tx.deleteFrom('instance_idempotency').where('user_id', '=', userId).where('idem_key', '=', key).where('created_at', '<', before).execute();
    },

    async insertIdempotent(row: { user_id: number; idem_key: string; request_hash: string; reply: string; created_at: number }, tx: Tx = db) {
      await tx.insertInto('instance_idempotency').values(row).execute();
    },

    async attachSshKey(instanceId: number, sshKey: string, at: number, tx: Tx = db): Promise<number> {
      const r = await tx.insertInto('instance_ssh_keys').values({ instance_id: instanceId, ssh_key: sshKey, created_at: at }).returning('id').executeTakeFirstOrThrow();
      return r.id;
    },

    async sshKeysOf(instanceId: number, tx: Tx = db) {
      return tx.selectFrom('instance_ssh_keys').selectAll().where('instance_id', '=', instanceId).orderBy('id').execute();
    },

    async detachSshKey(instanceId: number, keyId: number, tx: Tx = db): Promise<boolean> {
      const r = await tx.deleteFrom('instance_ssh_keys').where('instance_id', '=', instanceId).where('id', '=', keyId).executeTakeFirst();
      return Number(r.numDeletedRows) > 0;
    },

    async insertLogRequest(row: { instance_id: number; token_hash: string; tail: number | null; filter: string | null; expires_at: number }, tx: Tx = db) {
      const r = await tx.insertInto('instance_log_requests').values(row).returning('id').executeTakeFirstOrThrow();
      return r.id;
    },

    async findLogRequest(tokenHash: string, tx: Tx = db) {
      return tx.selectFrom('instance_log_requests').selectAll().where('token_hash', '=', tokenHash).executeTakeFirst();
    },
  };
}

export type InstancesStore = ReturnType<typeof instancesStore>;
