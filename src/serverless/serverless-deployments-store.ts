import type { Insertable, Selectable, Updateable } from 'kysely';
import type { Scope } from '../platform/auth.js';
import type { DialectName, Tx } from '../platform/db/connect.js';
import type { ServerlessDeploymentsTable, ServerlessDeploymentVersionsTable } from './serverless-tables.js';

export type DeploymentRow = Selectable<ServerlessDeploymentsTable>;
export type VersionRow = Selectable<ServerlessDeploymentVersionsTable>;

function inScope<Q extends { where: (...a: any[]) => Q }>(q: Q, scope: Scope): Q {
  q = q.where('team_id', scope.teamId === null ? 'is' : '=', scope.teamId);
  return scope.teamId === null ? q.where('user_id', '=', scope.userId) : q;
}

/** Deployments and their versions (serverless-deployments.ts). */
export function deploymentsStore(db: Tx, dialect: DialectName) {
  const pg = dialect === 'postgres';
  const live = (tx: Tx) => tx.selectFrom('serverless_deployments').selectAll().where('deleted_at', 'is', null);
  return {
    async insert(row: Insertable<ServerlessDeploymentsTable>, tx: Tx = db): Promise<number> {
      return (await tx.insertInto('serverless_deployments').values(row).returning('id').executeTakeFirstOrThrow()).id;
    },
    async update(id: number, set: Updateable<ServerlessDeploymentsTable>, tx: Tx = db): Promise<void> {
      await tx.updateTable('serverless_deployments').set(set).where('id', '=', id).execute();
    },
    async inScope(id: number, scope: Scope, tx: Tx = db, lock = false): Promise<DeploymentRow | undefined> {
      let q = inScope(live(tx).where('id', '=', id), scope);
      if (pg && lock) q = q.forUpdate();
      return q.executeTakeFirst();
    },
    async byId(id: number, tx: Tx = db): Promise<DeploymentRow | undefined> {
      return live(tx).where('id', '=', id).executeTakeFirst();
    },
    /** The live deployments of a name (one tag, or every tag), oldest first. */
    async byName(scope: Scope, name: string, tag: string | null, tx: Tx = db, lock = false): Promise<DeploymentRow[]> {
      let q = inScope(live(tx).where('name', '=', name), scope);
      if (tag !== null) q = q.where('tag', '=', tag);
      if (pg && lock) q = q.forUpdate();
      return q.orderBy('id').execute();
    },
    async list(scope: Scope, tx: Tx = db): Promise<DeploymentRow[]> {
      return inScope(live(tx), scope).orderBy('id').execute();
    },
    async insertVersion(row: Insertable<ServerlessDeploymentVersionsTable>, tx: Tx = db): Promise<number> {
      return (await tx.insertInto('serverless_deployment_versions').values(row).returning('id').executeTakeFirstOrThrow()).id;
    },
    async version(id: number, tx: Tx = db): Promise<VersionRow | undefined> {
      return tx.selectFrom('serverless_deployment_versions').selectAll().where('id', '=', id).executeTakeFirst();
    },
    /** A deployment's versions, newest first. */
    async versions(deploymentId: number, tx: Tx = db): Promise<VersionRow[]> {
      return tx.selectFrom('serverless_deployment_versions').selectAll().where('deployment_id', '=', deploymentId).orderBy('id', 'desc').execute();
    },
    async deleteVersions(ids: number[], tx: Tx = db): Promise<void> {
      if (ids.length) await tx.deleteFrom('serverless_deployment_versions').where('id', 'in', ids).execute();
    },
  };
}

export type DeploymentsStore = ReturnType<typeof deploymentsStore>;
