import type { Generated } from 'kysely';

/**
 * Clusters (docs/spec/client-compat-more.md §f): a host's record of which of its machines share one physical LAN, and which of
 * them manages it. Bookkeeping only: gpuplane sets up no networking between them (overlays need that and are refused).
 */
export interface ClustersTable {
  id: Generated<number>;
  /** The host (a user) whose machines these are. */
  user_id: number;
  /** The LAN's subnet as the host gave it, e.g. `10.0.0.0/24`. */
  subnet: string;
  created_at: number;
}

/** A machine in a cluster; a machine is in one cluster at most. */
export interface ClusterNodesTable {
  machine_id: number;
  cluster_id: number;
  is_manager: number;
  joined_at: number;
}

export interface ClustersTables {
  clusters: ClustersTable;
  cluster_nodes: ClusterNodesTable;
}
