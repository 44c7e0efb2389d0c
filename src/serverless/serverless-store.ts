import type { Insertable, Selectable, Updateable } from 'kysely';
import type { Scope } from '../platform/auth.js';
import type { DialectName, Tx } from '../platform/db/connect.js';
import type { ServerlessDecisionsTable, ServerlessEndpointsTable, ServerlessWorkergroupsTable, ServerlessWorkersTable } from './serverless-tables.js';

export type EndpointRow = Selectable<ServerlessEndpointsTable>;
export type WorkergroupRow = Selectable<ServerlessWorkergroupsTable>;
export type DecisionRow = Selectable<ServerlessDecisionsTable>;
export type WorkerRow = Selectable<ServerlessWorkersTable>;
/** What a worker's report sets (`POST /worker_status/`). */
export type WorkerReport = Pick<Updateable<ServerlessWorkersTable>, 'reported_at' | 'loaded' | 'error_msg' | 'cur_load' | 'max_perf' | 'cur_perf' | 'reported_url'>;

function inScope<Q extends { where: (...a: any[]) => Q }>(q: Q, scope: Scope): Q {
  q = q.where('team_id', scope.teamId === null ? 'is' : '=', scope.teamId);
  return scope.teamId === null ? q.where('user_id', '=', scope.userId) : q;
}

export function serverlessStore(db: Tx, dialect: DialectName) {
  const pg = dialect === 'postgres';
  return {
    db,
    async insertEndpoint(row: Insertable<ServerlessEndpointsTable>, tx: Tx = db): Promise<number> {
      return (await tx.insertInto('serverless_endpoints').values(row).returning('id').executeTakeFirstOrThrow()).id;
    },
    async endpointInScope(id: number, scope: Scope, tx: Tx = db, lock = false): Promise<EndpointRow | undefined> {
      let q = inScope(tx.selectFrom('serverless_endpoints').selectAll().where('id', '=', id).where('deleted_at', 'is', null), scope);
      if (pg && lock) q = q.forUpdate();
      return q.executeTakeFirst();
    },
    async endpointByName(name: string, scope: Scope, tx: Tx = db): Promise<EndpointRow | undefined> {
      const q = tx.selectFrom('serverless_endpoints').selectAll().where('endpoint_name', '=', name).where('deleted_at', 'is', null).orderBy('id');
      return inScope(q, scope).executeTakeFirst();
    },
    async endpoint(id: number, tx: Tx = db): Promise<EndpointRow | undefined> {
      return tx.selectFrom('serverless_endpoints').selectAll().where('id', '=', id).where('deleted_at', 'is', null).executeTakeFirst();
    },
    async endpointByKeyHash(hash: string, tx: Tx = db): Promise<EndpointRow | undefined> {
      return tx.selectFrom('serverless_endpoints').selectAll().where('api_key_hash', '=', hash).where('deleted_at', 'is', null).executeTakeFirst();
    },
    /** Gives an endpoint made before 0025 its key, unless another request just did; returns the row as it is now. */
    async setEndpointKeyIfNone(id: number, hash: string, sealed: string, tx: Tx = db): Promise<EndpointRow> {
      await tx.updateTable('serverless_endpoints').set({ api_key_hash: hash, api_key_sealed: sealed }).where('id', '=', id).where('api_key_sealed', 'is', null).execute();
      return tx.selectFrom('serverless_endpoints').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    },
    /** The next routed request's number (one atomic increment). */
    async nextReqnum(id: number, tx: Tx = db): Promise<number> {
      const row = await tx.updateTable('serverless_endpoints').set((eb) => ({ reqnum: eb('reqnum', '+', 1) })).where('id', '=', id).returning('reqnum').executeTakeFirstOrThrow();
      return Number(row.reqnum);
    },
    async endpointsInScope(scope: Scope, tx: Tx = db): Promise<EndpointRow[]> {
      return inScope(tx.selectFrom('serverless_endpoints').selectAll().where('deleted_at', 'is', null).orderBy('id'), scope).execute();
    },
    async updateEndpoint(id: number, set: Updateable<ServerlessEndpointsTable>, tx: Tx = db): Promise<void> {
      await tx.updateTable('serverless_endpoints').set(set).where('id', '=', id).execute();
    },
    async insertWorkergroup(row: Insertable<ServerlessWorkergroupsTable>, tx: Tx = db): Promise<number> {
      return (await tx.insertInto('serverless_workergroups').values(row).returning('id').executeTakeFirstOrThrow()).id;
    },
    async workergroupInScope(id: number, scope: Scope, tx: Tx = db, lock = false): Promise<WorkergroupRow | undefined> {
      let q = inScope(tx.selectFrom('serverless_workergroups').selectAll().where('id', '=', id).where('deleted_at', 'is', null), scope);
      if (pg && lock) q = q.forUpdate();
      return q.executeTakeFirst();
    },
    async workergroup(id: number, tx: Tx = db): Promise<WorkergroupRow | undefined> {
      return tx.selectFrom('serverless_workergroups').selectAll().where('id', '=', id).where('deleted_at', 'is', null).executeTakeFirst();
    },
    async workergroupsInScope(scope: Scope, tx: Tx = db): Promise<WorkergroupRow[]> {
      return inScope(tx.selectFrom('serverless_workergroups').selectAll().where('deleted_at', 'is', null).orderBy('id'), scope).execute();
    },
    async workergroupsOf(endpointId: number, tx: Tx = db): Promise<WorkergroupRow[]> {
      return tx.selectFrom('serverless_workergroups').selectAll().where('endpoint_id', '=', endpointId).where('deleted_at', 'is', null).orderBy('id').execute();
    },
    async updateWorkergroup(id: number, set: Updateable<ServerlessWorkergroupsTable>, tx: Tx = db): Promise<void> {
      await tx.updateTable('serverless_workergroups').set(set).where('id', '=', id).execute();
    },
    /** Live workers of the workergroups, oldest first. */
    async workers(workergroupIds: number[], tx: Tx = db): Promise<{ instance_id: number; workergroup_id: number }[]> {
      if (workergroupIds.length === 0) return [];
      return tx.selectFrom('serverless_workers').select(['instance_id', 'workergroup_id']).where('workergroup_id', 'in', workergroupIds)
        .where('released_at', 'is', null).orderBy('instance_id').execute();
    },
    /** A rented worker, with the SHA-256 of the MASTER_TOKEN its environment got (null: none given). */
    async addWorker(workergroupId: number, instanceId: number, at: number, tx: Tx = db, mtokenHash: string | null = null): Promise<void> {
      await tx.insertInto('serverless_workers').values({ workergroup_id: workergroupId, instance_id: instanceId, created_at: at, released_at: null, mtoken_hash: mtokenHash }).execute();
    },
    /** The live worker row of an instance (a report's `id`), or undefined. */
    async liveWorker(instanceId: number, tx: Tx = db): Promise<WorkerRow | undefined> {
      return tx.selectFrom('serverless_workers').selectAll().where('instance_id', '=', instanceId).where('released_at', 'is', null).executeTakeFirst();
    },
    /** The live worker rows of instances (the router's and the worker list's view of their reports). */
    async liveWorkerRows(instanceIds: number[], tx: Tx = db): Promise<WorkerRow[]> {
      if (instanceIds.length === 0) return [];
      return tx.selectFrom('serverless_workers').selectAll().where('instance_id', 'in', instanceIds).where('released_at', 'is', null).execute();
    },
    async recordReport(instanceId: number, set: WorkerReport, tx: Tx = db): Promise<void> {
      await tx.updateTable('serverless_workers').set(set).where('instance_id', '=', instanceId).where('released_at', 'is', null).execute();
    },
    async releaseWorker(instanceId: number, at: number, tx: Tx = db): Promise<void> {
      await tx.updateTable('serverless_workers').set({ released_at: at }).where('instance_id', '=', instanceId).execute();
    },
    async insertDecision(row: Insertable<ServerlessDecisionsTable>, tx: Tx = db): Promise<void> {
      await tx.insertInto('serverless_decisions').values(row).execute();
    },
    async decisions(workergroupId: number, limit: number, tx: Tx = db): Promise<DecisionRow[]> {
      return tx.selectFrom('serverless_decisions').selectAll().where('workergroup_id', '=', workergroupId).orderBy('id', 'desc').limit(limit).execute();
    },
  };
}

export type ServerlessStore = ReturnType<typeof serverlessStore>;
