/**
 * Clusters of your machines, as `vast.py` names them (`vastai` has these commands switched off): `show clusters`,
 * `create cluster`, `delete cluster`, `join cluster`, `remove-machine-from-cluster`. Records only: gpuplane sets up
 * no networking between the machines.
 */
import type { Command } from 'commander';
import { action, intArg } from '../context.js';
import { columnsOption, type Column } from '../output.js';
import type { Groups } from '../program.js';

const columns: Column[] = [
  { key: 'id', header: 'ID', align: 'right' },
  { key: 'subnet', header: 'Subnet' },
  { key: 'node_count', header: 'Nodes', align: 'right' },
  { key: 'manager_id', header: 'Manager ID', align: 'right' },
  { key: 'machine_ids', header: 'Machine IDs' },
];

export function registerClusters(program: Command, g: Groups, verb: (name: string, what: string) => Command): void {
  g.show
    .command('clusters')
    .description('your clusters: machines of yours on one LAN, and their manager')
    .addOption(columnsOption(columns))
    .addHelpText('after', '\nExample:\n  gpuplane show clusters')
    .action(action(async (ctx) => {
      const clusters = await ctx.client.clusters.list();
      const rows = Object.entries(clusters).map(([id, c]) => ({
        id: Number(id),
        subnet: c.subnet,
        node_count: c.nodes.length,
        manager_id: c.nodes.find((n) => n.is_cluster_manager)?.machine_id ?? null,
        machine_ids: c.nodes.map((n) => n.machine_id).join(','),
      }));
      ctx.out.print(clusters, () => (rows.length ? ctx.out.table(rows, columns) : 'no clusters'));
    }));
  g.create
    .command('cluster')
    .description('record a cluster: a LAN subnet and the machine of yours that manages it (no networking is set up)')
    .argument('<subnet>', 'the LAN, e.g. 10.0.0.0/24')
    .argument('<manager_id>', 'machine id', intArg('manager_id'))
    .addHelpText('after', '\nExample:\n  gpuplane create cluster 10.0.0.0/24 12')
    .action(action(async (ctx, subnet: string, managerId: number) => {
      const r = await ctx.client.clusters.create(subnet, managerId);
      ctx.out.print(r, () => r.msg);
    }));
  g.delete
    .command('cluster')
    .description('delete a cluster record')
    .argument('<cluster_id>', 'cluster id', intArg('cluster_id'))
    .addHelpText('after', '\nExample:\n  gpuplane delete cluster 3')
    .action(action(async (ctx, id: number) => {
      const r = await ctx.client.clusters.remove(id);
      ctx.out.print(r, () => r.msg);
    }));
  verb('join', 'join: cluster, overlay')
    .command('cluster')
    .description('add machines of yours to a cluster')
    .argument('<cluster_id>', 'cluster id', intArg('cluster_id'))
    .argument('<machine_ids...>', 'machine ids')
    .addHelpText('after', '\nExample:\n  gpuplane join cluster 3 13 14')
    .action(action(async (ctx, id: number, machines: string[]) => {
      const r = await ctx.client.clusters.join(id, machines.map(intArg('machine_ids')));
      ctx.out.print(r, () => r.msg);
    }));
  program
    .command('remove-machine-from-cluster')
    .description('remove a machine from a cluster; its manager only with a new manager, another machine of the cluster')
    .argument('<cluster_id>', 'cluster id', intArg('cluster_id'))
    .argument('<machine_id>', 'machine id', intArg('machine_id'))
    .argument('[new_manager_id]', 'machine id of the new manager', intArg('new_manager_id'))
    .addHelpText('after', '\nExample:\n  gpuplane remove-machine-from-cluster 3 12 13')
    .action(action(async (ctx, id: number, machineId: number, newManager?: number) => {
      const r = await ctx.client.clusters.removeMachine(id, machineId, newManager);
      ctx.out.print(r, () => r.msg);
    }));
}
