/** Clusters of your machines (records only: gpuplane sets up no networking): `/api/v0/cluster/`, `/api/v0/clusters/`. */
import type { Static } from 'typebox';
import type { ClusterMsgReply, ClustersReply, CreateClusterReply } from '../../clusters/clusters-schemas.js';
import type { Transport } from '../transport.js';

type Msg = Static<typeof ClusterMsgReply>;

export function clustersApi(t: Transport) {
  return {
    list: async () => (await t.request<Static<typeof ClustersReply>>('GET', '/api/v0/clusters/')).clusters,
    create: (subnet: string, managerId: number) =>
      t.request<Static<typeof CreateClusterReply>>('POST', '/api/v0/cluster/', { body: { subnet, manager_id: managerId } }),
    remove: (clusterId: number) => t.request<Msg>('DELETE', '/api/v0/cluster/', { body: { cluster_id: clusterId } }),
    join: (clusterId: number, machineIds: number[]) => t.request<Msg>('PUT', '/api/v0/cluster/', { body: { cluster_id: clusterId, machine_ids: machineIds } }),
    /** Removes a machine; the manager only with `newManagerId`, another machine of the cluster. */
    removeMachine: (clusterId: number, machineId: number, newManagerId?: number) =>
      t.request<Msg>('DELETE', '/api/v0/cluster/remove_machine/', { body: { cluster_id: clusterId, machine_id: machineId, new_manager_id: newManagerId } }),
  };
}
