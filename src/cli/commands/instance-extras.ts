/**
 * Instance extras in the vastai client's vocabulary: `reboot instance`, `recycle instance`, `update instance`,
 * `execute`, `take snapshot`, `show snapshots`, `copy`, and `cloud copy` (which the server refuses, saying why).
 */
import type { Command } from 'commander';
import { action, intArg, UsageError } from '../context.js';
import { parseEnv } from '../instance-args.js';
import { utc, type Column } from '../output.js';
import { encodeOnstart } from '../onstart.js';

const snapshotColumns: Column[] = [
  { key: 'id', header: 'ID', align: 'right' },
  { key: 'status', header: 'Status' },
  { key: 'image', header: 'Image' },
  { key: 'created_at', header: 'Requested (UTC)', fmt: utc },
  { key: 'finished_at', header: 'Finished (UTC)', fmt: utc },
  { key: 'error', header: 'Error' },
];

/** `--env`: a JSON object (as vastai's `update instance`), or Docker style as `create instance` takes it. */
function envOption(text: string | undefined): Record<string, string> | undefined {
  if (text === undefined) return undefined;
  if (text.trim().startsWith('{')) {
    try {
      const v = JSON.parse(text) as unknown;
      if (typeof v === 'object' && v !== null && !Array.isArray(v)) return v as Record<string, string>;
    } catch {
      /* reported below */
    }
    throw new UsageError('--env: not a JSON object of NAME: value');
  }
  return parseEnv(text) ?? undefined;
}

export function registerInstanceExtras(program: Command, verb: (name: string, what: string) => Command): void {
  verb('reboot', 'reboot: instance')
    .command('instance')
    .description('reboot an instance: its container stops and starts again; it keeps its GPUs')
    .argument('<id>', 'instance id', intArg('id'))
    .addHelpText('after', '\nExample:\n  gpuplane reboot instance 12')
    .action(
      action(async (ctx, id: number) => {
        const r = await ctx.client.instances.reboot(id);
        ctx.out.print(r, () => r.msg);
      }),
    );

  verb('recycle', 'recycle: instance')
    .command('instance')
    .description('recycle an instance: its container is made anew from a freshly pulled image; it keeps its GPUs')
    .argument('<id>', 'instance id', intArg('id'))
    .addHelpText('after', '\nExample:\n  gpuplane recycle instance 12')
    .action(
      action(async (ctx, id: number) => {
        const r = await ctx.client.instances.recycle(id);
        ctx.out.print(r, () => r.msg);
      }),
    );

  verb('update', 'change: instance')
    .command('instance')
    .description('update an instance from a template, or with a new image, args, env or onstart (its container is made anew)')
    .argument('<id>', 'instance id', intArg('id'))
    .option('--template_id <id>', 'the template, by its numeric id', intArg('--template_id'))
    .option('--template_hash_id <hash>', 'the template, by its hash_id')
    .option('--image <image>', 'new Docker image')
    .option('--args <args>', 'new arguments for the image (runtype args), as one string')
    .option('--env <env>', 'new environment: a JSON object, or Docker style "-e TZ=UTC -p 8080:8080"')
    .option('--onstart <script>', 'new onstart script')
    .addHelpText('after', '\nExample:\n  gpuplane update instance 12 --image pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime\n  gpuplane update instance 12 --env \'{"TZ": "UTC"}\'')
    .action(
      action(async (ctx, id: number, o: { template_id?: number; template_hash_id?: string; image?: string; args?: string; env?: string; onstart?: string }) => {
        const body = {
          template_id: o.template_id, template_hash_id: o.template_hash_id, image: o.image, args: o.args, env: envOption(o.env),
          onstart: o.onstart === undefined ? undefined : encodeOnstart(o.onstart, '--onstart'),
        };
        if (Object.values(body).every((v) => v === undefined)) throw new UsageError('give at least one of --template_id, --template_hash_id, --image, --args, --env, --onstart');
        const r = await ctx.client.instances.update(id, body);
        ctx.out.print(r, () => r.msg);
      }),
    );

  program
    .command('execute')
    .description('run ls, rm or du in a running instance and print the output (no shell; relative paths start at /)')
    .argument('<id>', 'instance id', intArg('id'))
    .argument('<command>', 'the command, quoted as one argument')
    .addHelpText('after', "\nExample:\n  gpuplane execute 12 'ls -l /workspace'\n  gpuplane execute 12 'du -s -h /workspace'\n  gpuplane execute 12 'rm -r /workspace/old'")
    .action(
      action(async (ctx, id: number, command: string) => {
        const text = await ctx.client.instances.execute(id, command);
        if (ctx.raw) ctx.out.print({ id, output: text }, () => text);
        else ctx.io.stdout.write(text.endsWith('\n') || text === '' ? text : `${text}\n`);
      }),
    );

  verb('take', 'take: snapshot')
    .command('snapshot')
    .description("commit a running instance's container and push it to your registry (real hosts only)")
    .argument('<id>', 'instance id', intArg('id'))
    .requiredOption('--repo <repo>', 'repository to push to, e.g. myname/my-snapshot[:tag]')
    .option('--container_registry <host>', 'registry host', 'docker.io')
    .option('--docker_login_user <user>', 'registry user')
    .option('--docker_login_pass <pass>', 'registry password or token')
    .option('--pause <bool>', 'pause the container while committing: true or false', 'true')
    .addHelpText('after', '\nExample:\n  gpuplane take snapshot 12 --repo myname/my-snapshot --docker_login_user myname --docker_login_pass TOKEN\n  gpuplane show snapshots 12')
    .action(
      action(async (ctx, id: number, o: { repo: string; container_registry: string; docker_login_user?: string; docker_login_pass?: string; pause: string }) => {
        if (o.pause !== 'true' && o.pause !== 'false') throw new UsageError('--pause must be true or false');
        if ((o.docker_login_user === undefined) !== (o.docker_login_pass === undefined)) throw new UsageError('give both --docker_login_user and --docker_login_pass, or neither');
        const login = o.docker_login_user !== undefined ? { username: o.docker_login_user, password: o.docker_login_pass! } : undefined;
        const r = await ctx.client.instances.takeSnapshot(id, { repo: o.repo, registry: o.container_registry, login, pause: o.pause === 'true' });
        ctx.out.print(r, () => r.msg);
      }),
    );

  verb('show', 'show: snapshots')
    .command('snapshots')
    .description("an instance's snapshots: pending, pushed, or failed and why")
    .argument('<id>', 'instance id', intArg('id'))
    .addHelpText('after', '\nExample:\n  gpuplane show snapshots 12')
    .action(
      action(async (ctx, id: number) => {
        const r = await ctx.client.instances.snapshots(id);
        ctx.out.print(r.snapshots, () => (r.snapshots.length ? ctx.out.table(r.snapshots, snapshotColumns) : `no snapshots of instance ${id}`));
      }),
    );

  program
    .command('copy')
    .description('copy a directory between instances (the server relays it), or ask where rsync over SSH reaches an instance for a copy with this machine (dst_addr/dst_port)')
    .argument('<src>', '[instance_id:]path')
    .argument('<dst>', '[instance_id:]path')
    .addHelpText('after', '\nExample:\n  gpuplane copy 12:/workspace/ 13:/workspace/')
    .action(
      action(async (ctx, src: string, dst: string) => {
        const r = await ctx.client.instances.copy(src, dst);
        ctx.out.print(r, () => JSON.stringify(r));
      }),
    );

  verb('cloud', 'cloud: copy')
    .command('copy')
    .description('copy between an instance and cloud storage (the server says what it lacks for this)')
    .requiredOption('--instance <id>', 'instance id', intArg('--instance'))
    .requiredOption('--connection <id>', 'cloud connection id')
    .option('--src <path>', 'source path')
    .option('--dst <path>', 'destination path', '/workspace')
    .option('--transfer <direction>', '"Instance to Cloud" or "Cloud To Instance"', 'Instance to Cloud')
    .addHelpText('after', '\nExample:\n  gpuplane cloud copy --instance 12 --connection 3 --src /workspace --dst /backups')
    .action(
      action(async (ctx, o: { instance: number; connection: string; src?: string; dst: string; transfer: string }) => {
        const r = await ctx.client.instances.cloudCopy({ instance_id: String(o.instance), selected: o.connection, src: o.src ?? null, dst: o.dst, transfer: o.transfer, flags: [] });
        ctx.out.print(r, () => JSON.stringify(r));
      }),
    );
}
