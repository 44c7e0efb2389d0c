/**
 * What the autoscaler tells about an endpoint, and what it is asked to do: `get endpt-workers`, `get endpt-logs`,
 * `get wrkgrp-logs`, `update workers` (the vastai client's names; docs/spec/client-compat-more.md §e).
 */
import { Option, type Command } from 'commander';
import { action, intArg } from '../context.js';
import { fixed, utc, type Column } from '../output.js';

const workerColumns: Column[] = [
  { key: 'id', header: 'instance' },
  { key: 'status', header: 'status' },
  { key: 'started_at', header: 'started', fmt: utc },
  { key: 'loaded_at', header: 'running since', fmt: (v: unknown) => (Number(v) ? utc(v) : '-') },
  { key: 'reliability', header: 'reliability', fmt: fixed(2) },
];
const LEVELS = ['info0', 'info1', 'trace', 'debug'] as const;

export function registerAutoscaler(verb: (name: string, what: string) => Command): void {
  verb('update', 'change: template, ssh-key, env-var, team-role, endpoint, workergroup, workers')
    .command('workers')
    .description("replace a workergroup's workers with workers of what it launches now (after a deployment's new version)")
    .argument('<workergroup_id>', 'workergroup id', intArg('workergroup_id'))
    .addHelpText('after', '\nExample:\n  gpuplane update workers 5')
    .action(
      action(async (ctx, id: number) => {
        const r = await ctx.client.serverless.updateWorkers(id);
        ctx.out.print(r, () => r.msg);
      }),
    );
  const get = verb('get', 'get: endpt-workers, endpt-logs, wrkgrp-logs');
  get
    .command('endpt-workers')
    .description("an endpoint's workers: the instances of its workergroups")
    .argument('<id>', 'endpoint id', intArg('id'))
    .addHelpText('after', '\nExample:\n  gpuplane get endpt-workers 4')
    .action(
      action(async (ctx, id: number) => {
        const workers = await ctx.client.serverless.endpointWorkers(id);
        ctx.out.print(workers, () => (workers.length ? ctx.out.table(workers as unknown as Record<string, unknown>[], workerColumns) : 'no workers'));
      }),
    );
  for (const [name, what, fetch] of [
    ['endpt-logs', "the autoscaler's log of an endpoint (all its workergroups)", (c: any, id: number, tail?: number) => c.serverless.endpointLogs(id, tail)],
    ['wrkgrp-logs', "the autoscaler's log of a workergroup", (c: any, id: number, tail?: number) => c.serverless.workergroupLogs(id, tail)],
  ] as const) {
    get
      .command(name)
      .description(`${what}: one line per decision, oldest first`)
      .argument('<id>', name === 'endpt-logs' ? 'endpoint id' : 'workergroup id', intArg('id'))
      .addOption(new Option('--level <n>', 'detail: 0 actions, 1 with reasons, 2 with instances, 3 with load').choices(['0', '1', '2', '3']).default('1'))
      .option('--tail <n>', 'the newest lines only', intArg('--tail'))
      .addHelpText('after', `\nExample:\n  gpuplane get ${name} 4 --level 2 --tail 20`)
      .action(
        action(async (ctx, id: number, opts: { level: string; tail?: number }) => {
          const r = await fetch(ctx.client, id, opts.tail);
          const text = r[LEVELS[Number(opts.level)]] as string;
          ctx.out.print(r, () => text || 'no autoscaler decisions yet');
        }),
      );
  }
}
