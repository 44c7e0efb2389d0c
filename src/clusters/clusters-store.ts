import type { Selectable } from 'kysely';
import type { DialectName, Tx } from '../platform/db/connect.js';
import type { ClusterNodesTable, ClustersTable } from './clusters-tables.js';

export type ClusterRow = Selectable<ClustersTable>;
export type NodeRow = Selectable<ClusterNodesTable>;

export function clustersStore(db: Tx, dialect: DialectName) {
  const pg = dialect === 'postgres';
  return {
    async insert(row: { user_id: number; subnet: string; created_at: number }, tx: Tx): Promise<number> {
      return (await tx.insertInto('clusters').values(row).returning('id').executeTakeFirstOrThrow()).id;
    },
    /** The user's cluster, locked (PostgreSQL) for the caller's transaction. */
    async lockOwn(id: number, userId: number, tx: Tx): Promise<ClusterRow | undefined> {
      let q = tx.selectFrom('clusters').selectAll().where('id', '=', id).where('user_id', '=', userId);
      if (pg) q = q.forUpdate();
      return q.executeTakeFirst();
    },
    async ofUser(userId: number, tx: Tx = db): Promise<ClusterRow[]> {
      return tx.selectFrom('clusters').selectAll().where('user_id', '=', userId).orderBy('id').execute();
    },
    async nodesOf(clusterIds: number[], tx: Tx = db): Promise<NodeRow[]> {
      if (clusterIds.length === 0) return [];
      return tx.selectFrom('cluster_nodes').selectAll().where('cluster_id', 'in', clusterIds).orderBy('cluster_id').orderBy('joined_at').orderBy('machine_id').execute();
    },
    /** Adds the machine unless it is in a cluster already; the cluster it is in afterwards. */
    async join(node: NodeRow, tx: Tx): Promise<number> {
      await tx.insertInto('cluster_nodes').values(node).onConflict((oc) => oc.column('machine_id').doNothing()).execute();
      const r = await tx.selectFrom('cluster_nodes').select('cluster_id').where('machine_id', '=', node.machine_id).executeTakeFirstOrThrow();
      return r.cluster_id;
    },
    async remove(machineId: number, tx: Tx): Promise<void> {
      await tx.deleteFrom('cluster_nodes').where('machine_id', '=', machineId).execute();
    },
    async setManager(clusterId: number, machineId: number, tx: Tx): Promise<void> {
      await tx.updateTable('cluster_nodes').set({ is_manager: 0 }).where('cluster_id', '=', clusterId).execute();
      await tx.updateTable('cluster_nodes').set({ is_manager: 1 }).where('cluster_id', '=', clusterId).where('machine_id', '=', machineId).execute();
    },
    async delete(id: number, tx: Tx): Promise<void> {
      await tx.deleteFrom('cluster_nodes').where('cluster_id', '=', id).execute();
      await tx.deleteFrom('clusters').where('id', '=', id).execute();
    },
  };
}
