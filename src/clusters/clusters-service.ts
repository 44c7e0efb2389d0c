/**
 * Clusters (docs/spec/client-compat-more.md §f: `create/delete/join cluster`, `remove-machine-from-cluster`, `show clusters`): a
 * host's records of which of its machines share one physical LAN, one of them the manager. gpuplane only keeps these
 * records (the LAN itself is physical); it sets up no networking, so overlay networks on a cluster are refused
 * (network-routes.ts). A host sees and changes its own clusters, with its own machines; an admin may use any machine.
 */
import type { Principal } from '../platform/auth.js';
import type { Clock } from '../platform/clock.js';
import type { Db, DialectName, Tx } from '../platform/db/connect.js';
import { ApiError, badRequest } from '../platform/errors.js';
import { clustersStore } from './clusters-store.js';

export interface ClustersDeps {
  db: Db;
  dialect: DialectName;
  clock: Clock;
  /** The user who hosts the machine (null: the simulated fleet's), or undefined when there is no such machine. */
  hostOf(machineId: number, tx: Tx): Promise<number | null | undefined>;
}

const NOTE = 'gpuplane records the cluster; it sets up no networking between the machines';

function checkSubnet(subnet: string): void {
  const [ip, bits] = subnet.split('/');
  if (ip.split('.').some((o) => Number(o) > 255) || Number(bits) > 32) throw badRequest(`subnet: ${JSON.stringify(subnet)} is not an IPv4 subnet such as 10.0.0.0/24`);
}

export function clustersServiceFactory({ db, dialect, clock, hostOf }: ClustersDeps) {
  const store = clustersStore(db, dialect);

  async function ownMachine(p: Principal, machineId: number, tx: Tx): Promise<void> {
    const host = await hostOf(machineId, tx);
    if (host === undefined || (!p.user.is_admin && host !== p.user.id)) throw new ApiError('not_found', `machine ${machineId} not found`);
  }

  async function ownCluster(p: Principal, id: number, tx: Tx) {
    const c = await store.lockOwn(id, p.user.id, tx);
    if (!c) throw new ApiError('not_found', `cluster ${id} not found`);
    return c;
  }

  async function join(tx: Tx, clusterId: number, machineId: number, manager: boolean): Promise<void> {
    const inCluster = await store.join({ machine_id: machineId, cluster_id: clusterId, is_manager: manager ? 1 : 0, joined_at: clock.now() }, tx);
    if (inCluster !== clusterId) throw new ApiError('conflict', `machine ${machineId} is in cluster ${inCluster}: remove it from there first`);
  }

  return {
    async list(p: Principal) {
      const clusters = await store.ofUser(p.user.id);
      const nodes = await store.nodesOf(clusters.map((c) => c.id));
      const out: Record<string, { subnet: string; nodes: { machine_id: number; is_cluster_manager: boolean; local_ip: null }[] }> = {};
      for (const c of clusters) {
        const mine = nodes.filter((n) => n.cluster_id === c.id);
        // The manager first: the clients show the first manager node.
        mine.sort((a, b) => b.is_manager - a.is_manager);
        out[String(c.id)] = { subnet: c.subnet, nodes: mine.map((n) => ({ machine_id: n.machine_id, is_cluster_manager: n.is_manager === 1, local_ip: null })) };
      }
      return { success: true as const, clusters: out };
    },

    async create(p: Principal, subnet: string, managerId: number) {
      checkSubnet(subnet);
      const id = await db.transaction().execute(async (tx) => {
        await ownMachine(p, managerId, tx);
        const id = await store.insert({ user_id: p.user.id, subnet, created_at: clock.now() }, tx);
        await join(tx, id, managerId, true);
        return id;
      });
      return { success: true as const, id, msg: `cluster ${id} created on ${subnet} with manager machine ${managerId} (${NOTE})` };
    },

    async remove(p: Principal, id: number) {
      await db.transaction().execute(async (tx) => {
        await ownCluster(p, id, tx);
        await store.delete(id, tx);
      });
      return { success: true as const, msg: `cluster ${id} deleted` };
    },

    async join(p: Principal, id: number, machineIds: number[]) {
      const ids = [...new Set(machineIds)];
      await db.transaction().execute(async (tx) => {
        await ownCluster(p, id, tx);
        for (const m of ids) {
          await ownMachine(p, m, tx);
          await join(tx, id, m, false);
        }
      });
      return { success: true as const, msg: `machine${ids.length > 1 ? 's' : ''} ${ids.join(', ')} joined cluster ${id} (${NOTE})` };
    },

    /** Removes a machine; the manager only with `new_manager_id` (another node), unless it is the last node. */
    async removeMachine(p: Principal, id: number, machineId: number, newManagerId?: number) {
      const msg = await db.transaction().execute(async (tx) => {
        await ownCluster(p, id, tx);
        const nodes = await store.nodesOf([id], tx);
        const node = nodes.find((n) => n.machine_id === machineId);
        if (!node) throw new ApiError('not_found', `machine ${machineId} is not in cluster ${id}`);
        if (nodes.length === 1) {
          await store.delete(id, tx);
          return `machine ${machineId} removed; cluster ${id} had no other machine and is deleted`;
        }
        if (newManagerId !== undefined && (newManagerId === machineId || !nodes.some((n) => n.machine_id === newManagerId))) {
          throw badRequest(`new_manager_id: machine ${newManagerId} is not another machine of cluster ${id}`);
        }
        if (node.is_manager === 1 && newManagerId === undefined) {
          throw badRequest(`machine ${machineId} manages cluster ${id}: give new_manager_id, another machine of the cluster`);
        }
        await store.remove(machineId, tx);
        if (newManagerId !== undefined) await store.setManager(id, newManagerId, tx);
        return `machine ${machineId} removed from cluster ${id}${newManagerId !== undefined ? `; machine ${newManagerId} manages it` : ''}`;
      });
      return { success: true as const, msg };
    },
  };
}

export type ClustersService = ReturnType<typeof clustersServiceFactory>;
