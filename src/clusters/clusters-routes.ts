import type { TypedApp } from '../platform/http.js';
import { principalOf } from '../platform/auth.js';
import { ErrorReply } from '../platform/schemas.js';
import type { ClustersService } from './clusters-service.js';
import {
  ClusterMsgReply, ClustersReply, CreateClusterBody, CreateClusterReply, DeleteClusterBody, JoinClusterBody, RemoveMachineBody,
} from './clusters-schemas.js';

const tags = ['machines'];
// Vast files these under user_read/user_write; here they are the host side, as every machine route: machine_*.
const READ = { category: 'machine_read' } as const;
const WRITE = { category: 'machine_write' } as const;
const errors = { 400: ErrorReply, 401: ErrorReply, 403: ErrorReply, 404: ErrorReply };

/** Clusters of a host's machines (docs/spec/client-compat-more.md §f; bookkeeping only, see clusters-service.ts). */
export async function clustersRoutes(app: TypedApp, { clusters }: { clusters: ClustersService }): Promise<void> {
  app.get('/api/v0/clusters/', {
    config: READ,
    schema: { tags, summary: 'Your clusters: `{clusters: {"<id>": {subnet, nodes}}}`', response: { 200: ClustersReply, ...errors } },
  }, async (request) => clusters.list(principalOf(request)));

  app.post('/api/v0/cluster/', {
    config: WRITE,
    schema: {
      tags, summary: 'Record a cluster: machines of yours on one LAN (subnet), the manager first (no networking is set up)',
      body: CreateClusterBody, response: { 200: CreateClusterReply, 409: ErrorReply, ...errors },
    },
  }, async (request) => clusters.create(principalOf(request), request.body.subnet, request.body.manager_id));

  app.put('/api/v0/cluster/', {
    config: WRITE,
    schema: { tags, summary: 'Add machines of yours to a cluster', body: JoinClusterBody, response: { 200: ClusterMsgReply, 409: ErrorReply, ...errors } },
  }, async (request) => clusters.join(principalOf(request), request.body.cluster_id, request.body.machine_ids));

  app.delete('/api/v0/cluster/', {
    config: WRITE,
    schema: { tags, summary: 'Delete a cluster record', body: DeleteClusterBody, response: { 200: ClusterMsgReply, ...errors } },
  }, async (request) => clusters.remove(principalOf(request), request.body.cluster_id));

  app.delete('/api/v0/cluster/remove_machine/', {
    config: WRITE,
    schema: {
      tags, summary: 'Remove a machine from a cluster (the manager: with new_manager_id)',
      body: RemoveMachineBody, response: { 200: ClusterMsgReply, ...errors },
    },
  }, async (request) => clusters.removeMachine(principalOf(request), request.body.cluster_id, request.body.machine_id, request.body.new_manager_id));
}
