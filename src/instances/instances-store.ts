import { sql, type Expression, type Insertable, type Selectable, type SqlBool, type Updateable } from 'kysely';
import type { DialectName, Tx } from '../platform/db/connect.js';
import { prepared, preparedByKeys, preparedForOne, preparedRows } from '../platform/db/prepared.js';
import { rowsTable } from '../platform/db/values.js';
import type { Scope } from '../platform/auth.js';
import type { InstanceEventsTable, InstancesTable } from './instances-tables.js';
import type { PlacedInstance } from './instances-contract.js';

export type InstanceRow = Selectable<InstancesTable>;
export type InstanceEventRow = Selectable<InstanceEventsTable>;
export type InstancePatch = Updateable<InstancesTable>;
/** What a state change writes to an instance's row (instances-lifecycle.ts `transition`). */
export type InstanceState = Pick<
  InstanceRow,
  'id' | 'actual_status' | 'intended_status' | 'status_msg' | 'ports' | 'running_since' | 'gpu_indexes' | 'state_version'
>;

/** Rows of the caller's scope: its team's in a team context, else its own personal ones (auth.ts Scope). */
function inScope<Q extends { where: (...a: any[]) => Q }>(q: Q, scope: Scope, prefix = ''): Q {
  q = q.where(`${prefix}team_id`, scope.teamId === null ? 'is' : '=', scope.teamId);
  return scope.teamId === null ? q.where(`${prefix}user_id`, '=', scope.userId) : q;
}

export interface InstancesStoreOptions {
  /** MachinesApi.machineLockCondition: how a statement here locks an instance's machine before the instance. */
  machineLock?: (machineId: Expression<number | null>) => Expression<SqlBool>;
}

/** How a scope read locks: not at all, the instance, or its machine then the instance. */
type ScopeLock = 'none' | 'instance' | 'machine';

export function instancesStore(db: Tx, dialect: DialectName, options: InstancesStoreOptions = {}) {
  // The statements of renting and booting (platform/db/prepared.ts).
  const insertRow = preparedByKeys((row: Insertable<InstancesTable>) => db.insertInto('instances').values(row).returning('id'));
  const updateRow = preparedByKeys(({ $id, ...patch }: InstancePatch & { $id: number }) => db.updateTable('instances').set(patch).where('id', '=', $id));
  const live = (q: { id: number }) => db.selectFrom('instances').selectAll().where('id', '=', q.id).where('destroyed_at', 'is', null);
  const findLive = prepared(['id'], live);
  const ownScope = (q: { userId: number }): Scope => ({ userId: q.userId, teamId: null });
  const listed = () => db.selectFrom('instances').selectAll().where('destroyed_at', 'is', null).orderBy('id');
  const listOwn = prepared(['userId'], (q: { userId: number }) => inScope(listed(), ownScope(q)));
  const listTeams = prepared(['teamId'], (q: { teamId: number }) => inScope(listed(), { userId: 0, teamId: q.teamId }));
  // `lockMany` (and `lock`, of one): the live ones of the instances, in id order, locked on PostgreSQL.
  const lockLive = preparedForOne(db, [], (tx, ids) => {
    const q = tx.selectFrom('instances').selectAll().where('id', 'in', ids).where('destroyed_at', 'is', null).orderBy('id');
    return dialect === 'postgres' ? q.forUpdate() : q;
  });
  // A scope's live instance, one statement per kind of scope (a user's own, or a team's) and per lock: a read, the
  // instance locked (`lockInScope`), or, for a destroy, stop, start or bid change, its machine's row locked first. On
  // PostgreSQL the machine's row is locked by the filter (evaluated on the found row, so only an instance of the
  // caller's scope takes it), then the instance's by FOR UPDATE: the lock order of MachinesApi.lockMachine. SQLite runs
  // one writer at a time: the read alone.
  const inScopeLocked = (q: { id: number }, scope: Scope, lock: ScopeLock) => {
    const found = inScope(live(q), scope);
    if (dialect !== 'postgres' || lock === 'none') return found;
    if (lock === 'instance') return found.forUpdate();
    if (!options.machineLock) throw new Error('instancesStore: machineLock is needed to lock an instance with its machine');
    return found.where(options.machineLock(sql.ref<number | null>('instances.machine_id'))).forUpdate();
  };
  const scopeRead = (lock: ScopeLock) => {
    const own = prepared(['id', 'userId'], (q: { id: number; userId: number }) => inScopeLocked(q, ownScope(q), lock));
    const team = prepared(['id', 'teamId'], (q: { id: number; teamId: number }) => inScopeLocked(q, { userId: 0, teamId: q.teamId }, lock));
    return async (id: number, scope: Scope, tx: Tx): Promise<InstanceRow | undefined> =>
      (scope.teamId === null ? await own(tx, { id, userId: scope.userId }) : await team(tx, { id, teamId: scope.teamId })).rows[0];
  };
  const oneInScope = { none: scopeRead('none'), instance: scopeRead('instance'), machine: scopeRead('machine') };
  // `listOnMachines`: the live instances on machines, in id order, locked (PostgreSQL) or not. Every status report of a
  // real host's agent reads its one machine's.
  const liveOnMachines = (lock: boolean) => preparedForOne(db, [], (tx, machineIds) => {
    const q = tx.selectFrom('instances').selectAll().where('machine_id', 'in', machineIds).where('destroyed_at', 'is', null).orderBy('id');
    return lock && dialect === 'postgres' ? q.forUpdate() : q;
  });
  const onMachines = { read: liveOnMachines(false), lock: liveOnMachines(true) };
  // Every stop and destroy looks for instances there waiting for GPUs (outbid): only their ids, not every instance row.
  const selectWaitingOnMachine = prepared(['machine_id'], (q: { machine_id: number }) =>
    db.selectFrom('instances').select(['id', 'bid_per_gpu_micro']).where('machine_id', '=', q.machine_id).where('destroyed_at', 'is', null)
      .where('actual_status', '=', 'stopped').where('intended_status', '=', 'running'));
  const insertEventRows = preparedRows(db, (tx, events: readonly Omit<InstanceEventRow, 'id'>[]) => tx.insertInto('instance_events').values([...events]));
  // A state change and its event in one statement on PostgreSQL (a data-modifying CTE): every rent, stop and destroy
  // makes one. The event's values are named `event_*`, the row's by their columns.
  type EventValues = { [K in keyof Omit<InstanceEventRow, 'id'> as `event_${K}`]: InstanceEventRow[K] };
  const updateRowWithEvent = preparedByKeys(
    ({ $id, event_instance_id, event_user_id, event_team_id, event_actual_status, event_intended_status, event_status_msg, event_at, ...patch }:
      InstancePatch & EventValues & { $id: number }) =>
      db
        .with('event', (w) => w.insertInto('instance_events').values({
          instance_id: event_instance_id, user_id: event_user_id, team_id: event_team_id, actual_status: event_actual_status,
          intended_status: event_intended_status, status_msg: event_status_msg, at: event_at,
        }))
        .updateTable('instances').set(patch).where('id', '=', $id),
  );

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
      return (await lockLive(tx, [id])).rows[0];
    },

    /** The live ones of these instances, in id order, locked as `lock` locks one (one statement; lock order: id order). */
    async lockMany(ids: readonly number[], tx: Tx): Promise<InstanceRow[]> {
      if (ids.length === 0) return [];
      return (await lockLive(tx, ids)).rows;
    },

    /**
     * The new states of many instances, one statement (an agent's pass over many machines at once moves many).
     * The same columns as `update` with `transition`'s patch.
     */
    async updateStates(rows: readonly InstanceState[], tx: Tx = db): Promise<void> {
      if (rows.length === 0) return;
      if (rows.length === 1) {
        const { id, ...patch } = rows[0];
        await updateRow(tx, { ...patch, $id: id });
        return;
      }
      const v = rowsTable(rows, {
        id: 'integer', actual_status: 'text', intended_status: 'text', status_msg: 'text', ports: 'text',
        running_since: 'double precision', gpu_indexes: 'text', state_version: 'integer',
      });
      await sql`
        UPDATE instances SET actual_status = v.actual_status, intended_status = v.intended_status, status_msg = v.status_msg,
          ports = v.ports, running_since = v.running_since, gpu_indexes = v.gpu_indexes, state_version = v.state_version
        FROM ${v} AS v WHERE instances.id = v.id`.execute(tx);
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

    /** The instance, live or destroyed. */
    async findAny(id: number, tx: Tx = db): Promise<InstanceRow | undefined> {
      return tx.selectFrom('instances').selectAll().where('id', '=', id).executeTakeFirst();
    },

    /**
     * The scope's live instance `id`, locked for the rest of `tx` on PostgreSQL; with `machineFirst`, its machine's
     * row is locked before it (MachinesApi.lockMachine's order). One statement.
     */
    lockInScope(id: number, scope: Scope, tx: Tx, machineFirst = false): Promise<InstanceRow | undefined> {
      return oneInScope[machineFirst ? 'machine' : 'instance'](id, scope, tx);
    },

    findInScope(id: number, scope: Scope, tx: Tx = db): Promise<InstanceRow | undefined> {
      return oneInScope.none(id, scope, tx);
    },

    async listInScope(scope: Scope, tx: Tx = db): Promise<InstanceRow[]> {
      return (scope.teamId === null ? await listOwn(tx, { userId: scope.userId }) : await listTeams(tx, { teamId: scope.teamId })).rows;
    },

    /** The live instances on the machine stopped while meant to run (outbid, waiting for GPUs): id and bid. */
    async waitingOnMachine(machineId: number, tx: Tx = db): Promise<Pick<InstanceRow, 'id' | 'bid_per_gpu_micro'>[]> {
      return (await selectWaitingOnMachine(tx, { machine_id: machineId })).rows;
    },

    /** `listOnMachines` of one machine, not locked. */
    async listOnMachine(machineId: number, tx: Tx = db): Promise<InstanceRow[]> {
      return (await onMachines.read(tx, [machineId])).rows;
    },

    /**
     * The live instances on these machines, in id order; with `lock`, locked (PostgreSQL) as `lockMany` locks them: the
     * caller holds the machines' rows (MachinesApi.lockMachine), taken before any instance.
     */
    async listOnMachines(machineIds: readonly number[], tx: Tx, lock = false): Promise<InstanceRow[]> {
      if (machineIds.length === 0) return [];
      return (await (lock ? onMachines.lock : onMachines.read)(tx, machineIds)).rows;
    },

    async insertEvent(e: Omit<InstanceEventRow, 'id'>, tx: Tx = db): Promise<void> {
      await insertEventRows(tx, [e]);
    },

    /** `update`, and `insertEvent` of the change's event: one statement on PostgreSQL. */
    async updateWithEvent(id: number, patch: InstancePatch, e: Omit<InstanceEventRow, 'id'>, tx: Tx = db): Promise<void> {
      if (dialect !== 'postgres') {
        await updateRow(tx, { ...patch, $id: id });
        await insertEventRows(tx, [e]);
        return;
      }
      await updateRowWithEvent(tx, {
        ...patch, $id: id, event_instance_id: e.instance_id, event_user_id: e.user_id, event_team_id: e.team_id,
        event_actual_status: e.actual_status, event_intended_status: e.intended_status, event_status_msg: e.status_msg, event_at: e.at,
      });
    },

    /** Events in one statement, in the order given. */
    async insertEvents(events: readonly Omit<InstanceEventRow, 'id'>[], tx: Tx = db): Promise<void> {
      await insertEventRows(tx, events);
    },

    async eventsSince(scope: Scope, afterId: number, limit: number, tx: Tx = db): Promise<InstanceEventRow[]> {
      const q = tx.selectFrom('instance_events').selectAll().where('id', '>', afterId).orderBy('id').limit(limit);
      return inScope(q, scope).execute();
    },

    /**
     * Every live (not destroyed) instance placed on a machine, only its id and runtype, in id order: the SSH gateway's
     * listeners follow these on each change. One lean statement: reading every machine and then every live instance
     * row on them (10,000 machines' ids bound in one IN list) cost the three servers of the 10,000-agent bench about a
     * fifth of their CPU, a pass on each rent.
     */
    async liveRuntypes(tx: Tx = db): Promise<{ id: number; runtype: string }[]> {
      return tx.selectFrom('instances').select(['id', 'runtype']).where('destroyed_at', 'is', null).where('machine_id', 'is not', null).orderBy('id').execute();
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

    /**
     * The scope's instances, destroyed ones too, by id: those among `ids` (when given) with this `label` (when given).
     * `contracts/fetch`: invoices name destroyed instances.
     */
    async everInScope(scope: Scope, q: { ids?: readonly number[]; label?: string }, tx: Tx = db): Promise<InstanceRow[]> {
      const rows: InstanceRow[] = [];
      const ids = q.ids ?? [undefined];
      for (let i = 0; i < ids.length; i += 500) {
        let sel = tx.selectFrom('instances').selectAll().orderBy('id');
        sel = scope.teamId === null ? sel.where('team_id', 'is', null).where('user_id', '=', scope.userId) : sel.where('team_id', '=', scope.teamId);
        if (q.ids) sel = sel.where('id', 'in', ids.slice(i, i + 500) as number[]);
        if (q.label !== undefined) sel = sel.where('label', '=', q.label);
        rows.push(...(await sel.execute()));
      }
      return rows.sort((a, b) => a.id - b.id);
    },

    // What other features' hooks and reads run through instances-module.ts.

    /** The user's live instances meant to run, with their machines (credit exhausted), by id. */
    async meantToRunOf(userId: number, tx: Tx = db): Promise<Pick<InstanceRow, 'id' | 'machine_id'>[]> {
      return tx.selectFrom('instances').select(['id', 'machine_id']).where('user_id', '=', userId).where('destroyed_at', 'is', null)
        .where('intended_status', '=', 'running').orderBy('id').execute();
    },

    /** Those of `ids` not destroyed. */
    async liveIds(ids: readonly number[], tx: Tx = db): Promise<number[]> {
      if (ids.length === 0) return [];
      return (await tx.selectFrom('instances').select('id').where('id', 'in', ids).where('destroyed_at', 'is', null).execute()).map((r) => r.id);
    },

    /** The running ones of `ids`, by id: their machine, container ports and environment (the serverless router). */
    async runningOf(ids: readonly number[], tx: Tx = db): Promise<Pick<InstanceRow, 'id' | 'machine_id' | 'ports' | 'env'>[]> {
      if (ids.length === 0) return [];
      return tx.selectFrom('instances').select(['id', 'machine_id', 'ports', 'env']).where('id', 'in', ids)
        .where('actual_status', '=', 'running').where('destroyed_at', 'is', null).orderBy('id').execute();
    },

    /** The live ones of `ids` with their state and times, by id (the serverless autoscaler's worker list). */
    async statesOf(ids: readonly number[], tx: Tx = db): Promise<Pick<InstanceRow, 'id' | 'actual_status' | 'created_at' | 'running_since' | 'disk'>[]> {
      if (ids.length === 0) return [];
      return tx.selectFrom('instances').select(['id', 'actual_status', 'created_at', 'running_since', 'disk']).where('id', 'in', ids)
        .where('destroyed_at', 'is', null).orderBy('id').execute();
    },

    /** Every instance that ran on these machines, destroyed ones too, by id (the hosting feature). */
    async placedOn(machineIds: readonly number[], tx: Tx = db): Promise<PlacedInstance[]> {
      const out: PlacedInstance[] = [];
      for (let i = 0; i < machineIds.length; i += 500) {
        const rows = await tx
          .selectFrom('instances')
          .select(['id', 'machine_id', 'user_id', 'team_id', 'destroyed_at'])
          .where('machine_id', 'in', machineIds.slice(i, i + 500))
          .orderBy('id')
          .execute();
        for (const r of rows) out.push({ id: r.id, machine_id: r.machine_id!, user_id: r.user_id, team_id: r.team_id, live: r.destroyed_at === null });
      }
      return out;
    },

    /** Ids of the team's live instances, by id; with `userId`, only those that user pays for. */
    async liveOfTeam(teamId: number, userId?: number, tx: Tx = db): Promise<number[]> {
      let q = tx.selectFrom('instances').select('id').where('team_id', '=', teamId).where('destroyed_at', 'is', null);
      if (userId !== undefined) q = q.where('user_id', '=', userId);
      return (await q.orderBy('id').execute()).map((r) => r.id);
    },
  };
}

export type InstancesStore = ReturnType<typeof instancesStore>;
