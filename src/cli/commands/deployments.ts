/**
 * Serverless deployments in vastai's vocabulary (`show deployments`, `show deployment ID`, `show deployment-versions
 * ID`, `delete deployment ID | --name NAME [--tag TAG]`). Deployments are made by the serverless SDK's deploy flow;
 * the CLI shows and deletes them.
 */
import type { Command } from 'commander';
import { action, intArg, UsageError } from '../context.js';
import { columnsOption, renderRecord, utc, yesNo, type RecordField } from '../output.js';
import type { Groups } from '../program.js';

const deploymentColumns = [
  { key: 'id', header: 'ID', align: 'right' as const },
  { key: 'name', header: 'Name' },
  { key: 'tag', header: 'Tag' },
  { key: 'image', header: 'Image' },
  { key: 'endpoint_id', header: 'Endpoint', align: 'right' as const },
  { key: 'worker_count', header: 'Workers', align: 'right' as const },
  { key: 'file_hash', header: 'Hash' },
  { key: 'current_version_id', header: 'Version', align: 'right' as const },
  { key: 'ttl', header: 'TTL', align: 'right' as const },
  { key: 'updated_at', header: 'Updated (UTC)', fmt: utc },
];
const versionColumns = [
  { key: 'id', header: 'ID', align: 'right' as const },
  { key: 'current', header: 'Current', fmt: yesNo },
  { key: 'version_label', header: 'Label' },
  { key: 'file_hash', header: 'Hash' },
  { key: 'file_size', header: 'Bytes', align: 'right' as const },
  { key: 'image', header: 'Image' },
  { key: 'created_at', header: 'Created (UTC)', fmt: utc },
];
const detailFields: RecordField[] = [
  ...['id', 'name', 'tag', 'image', 'env', 'search_params', 'storage', 'endpoint_id', 'workergroup_id', 'endpoint_state', 'worker_count',
    'file_hash', 'file_size', 's3_key', 'version_label', 'current_version_id', 'last_healthy_version_id', 'ttl'].map((key) => ({ key })),
  ...['last_client_heartbeat', 'created_at', 'updated_at'].map((key) => ({ key, label: `${key} (UTC)`, fmt: utc })),
];

export function registerDeployments(g: Groups, verb: (name: string, what: string) => Command): void {
  for (const [name, what] of [['stop', "stop a deployment's endpoint: its workers are released, none run until it starts"], ['start', "start a stopped deployment's endpoint again"]] as const) {
    verb(name, `${name}: instance, deployment`)
      .command('deployment')
      .description(what)
      .argument('<id>', 'deployment id', intArg('id'))
      .addHelpText('after', `\nExample:\n  gpuplane ${name} deployment 4`)
      .action(
        action(async (ctx, id: number) => {
          const r = await ctx.client.deployments[name](id);
          ctx.out.print(r, () => r.msg);
        }),
      );
  }
  g.show
    .command('deployments')
    .description('list your serverless deployments (made with the serverless SDK)')
    .addOption(columnsOption(deploymentColumns))
    .addHelpText('after', '\nExample:\n  gpuplane show deployments')
    .action(
      action(async (ctx) => {
        const r = await ctx.client.deployments.list();
        ctx.out.print(r.deployments, () => (r.deployments.length ? ctx.out.table(r.deployments, deploymentColumns) : 'no deployments'));
      }),
    );
  g.show
    .command('deployment')
    .description('one deployment: its image, code, endpoint and workers')
    .argument('<id>', 'deployment id', intArg('id'))
    .addHelpText('after', '\nExample:\n  gpuplane show deployment 4')
    .action(
      action(async (ctx, id: number) => {
        const r = await ctx.client.deployments.get(id);
        ctx.out.print(r.deployment, () => renderRecord(r.deployment, detailFields));
      }),
    );
  g.show
    .command('deployment-versions')
    .description('the versions of a deployment, newest first')
    .argument('<id>', 'deployment id', intArg('id'))
    .addOption(columnsOption(versionColumns))
    .addHelpText('after', '\nExample:\n  gpuplane show deployment-versions 4')
    .action(
      action(async (ctx, id: number) => {
        const r = await ctx.client.deployments.versions(id);
        ctx.out.print(r.versions, () => ctx.out.table(r.versions, versionColumns));
      }),
    );
  g.delete
    .command('deployment')
    .description('delete a deployment by id, or every deployment of a name (one tag with --tag); their workers are destroyed')
    .argument('[id]', 'deployment id', intArg('id'))
    .option('--name <name>', 'delete the deployments of this name (every tag unless --tag)')
    .option('--tag <tag>', 'with --name: only this tag')
    .addHelpText('after', '\nExample:\n  gpuplane delete deployment 4\n  gpuplane delete deployment --name my-app --tag prod')
    .action(
      action(async (ctx, id: number | undefined, o: { name?: string; tag?: string }) => {
        if (id !== undefined && o.name !== undefined) throw new UsageError('give a deployment id or --name, not both');
        if (o.tag !== undefined && o.name === undefined) throw new UsageError('--tag needs --name');
        if (id !== undefined) {
          const r = await ctx.client.deployments.remove(id);
          ctx.out.print(r, () => r.msg);
        } else if (o.name !== undefined) {
          const r = await ctx.client.deployments.removeByName({ name: o.name, ...(o.tag !== undefined ? { tag: o.tag } : {}) });
          ctx.out.print(r, () => r.msg);
        } else {
          throw new UsageError('give a deployment id or --name NAME');
        }
      }),
    );
}
