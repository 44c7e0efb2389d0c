import { Type } from 'typebox';
import { Id } from '../platform/schemas.js';

/** `a.b.c.d/n`, as `create cluster SUBNET` takes it. */
const Subnet = Type.String({ maxLength: 18, pattern: '^\\d{1,3}(\\.\\d{1,3}){3}/\\d{1,2}$', description: 'IPv4 subnet, e.g. 10.0.0.0/24' });

export const ClusterNode = Type.Object({
  machine_id: Type.Integer(),
  is_cluster_manager: Type.Boolean(),
  local_ip: Type.Union([Type.String(), Type.Null()], { description: 'null: gpuplane does not know the machines\' LAN addresses' }),
});

/** `GET /api/v0/clusters/`: an object keyed by cluster id (as a string), not a list (docs/spec/client-compat-more.md §f). */
export const ClustersReply = Type.Object({
  success: Type.Literal(true),
  clusters: Type.Record(Type.String(), Type.Object({ subnet: Type.String(), nodes: Type.Array(ClusterNode) })),
});

export const CreateClusterBody = Type.Object({ subnet: Subnet, manager_id: Id({ description: 'machine id of the manager node' }) }, { additionalProperties: false });
export const CreateClusterReply = Type.Object({ success: Type.Literal(true), id: Type.Integer(), msg: Type.String() });
export const DeleteClusterBody = Type.Object({ cluster_id: Id() }, { additionalProperties: false });
export const JoinClusterBody = Type.Object({ cluster_id: Id(), machine_ids: Type.Array(Id(), { minItems: 1, maxItems: 1000 }) }, { additionalProperties: false });
export const RemoveMachineBody = Type.Object({ cluster_id: Id(), machine_id: Id(), new_manager_id: Type.Optional(Id()) }, { additionalProperties: false });
export const ClusterMsgReply = Type.Object({ success: Type.Literal(true), msg: Type.String() });
