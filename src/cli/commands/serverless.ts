/** Volumes (`search/create/show/delete volume(s)`), serverless endpoints and workergroups, in vastai's vocabulary. */
import type { Command } from 'commander';
import { action, intArg, numberArg, UsageError } from '../context.js';
import { OFFER_QUERY, parseOfferQuery, parseOrder, QueryError } from '../offer-query.js';
import { columnsOption, fixed, type Column } from '../output.js';
import type { Groups } from '../program.js';

/** vastai's default volume size in GB. */
const DEFAULT_VOLUME_GB = 15;
/** vastai's default volume query (its `search volumes`): verified, non-external hosts with at least 1 GB free. Drop with -n. */
const DEFAULT_VOLUME_QUERY = () => ({ verified: { eq: true }, external: { eq: false }, disk_space: { gte: 1 } });
/** `--storage`: GB priced into `storage_total_cost` (vastai's default for volumes). */
const DEFAULT_VOLUME_STORAGE_GB = 1;

function checked<T>(f: () => T): T {
  try {
    return f();
  } catch (err) {
    if (err instanceof QueryError) throw new UsageError(err.message);
    throw err;
  }
}

const ENDPOINT_OPTIONS: [string, string, 'num' | 'int'][] = [
  ['min_load', 'minimum load (perf units/s)', 'num'],
  ['target_util', 'target utilization, 0-1', 'num'],
  ['cold_mult', 'cold capacity as a multiple of hot', 'num'],
  ['cold_workers', 'workers kept cold with no load', 'int'],
  ['max_workers', 'most workers', 'int'],
];

function settingOptions(cmd: Command, extra: [string, string, 'num' | 'int'][] = []): Command {
  for (const [name, what, kind] of [...ENDPOINT_OPTIONS, ...extra]) {
    cmd.option(`--${name} <n>`, what, kind === 'int' ? (v: string) => (v === '0' ? 0 : intArg(`--${name}`)(v)) : numberArg(`--${name}`, 0));
  }
  return cmd;
}

const pick = (o: Record<string, unknown>, keys: string[]) => Object.fromEntries(keys.filter((k) => o[k] !== undefined).map((k) => [k, o[k]]));
const ENDPOINT_KEYS = [...ENDPOINT_OPTIONS.map(([k]) => k), 'endpoint_name'];
const WG_KEYS = [...ENDPOINT_KEYS, 'test_workers', 'gpu_ram', 'template_hash', 'template_id', 'search_params', 'launch_args', 'endpoint_id'];

const volumeOfferColumns: Column[] = [
  { key: 'id', header: 'ID', align: 'right' },
  { key: 'disk_space', header: 'Disk GB', fmt: fixed(0), align: 'right' },
  { key: 'storage_cost', header: '$/GB/month', fmt: fixed(2), align: 'right' },
  { key: 'disk_bw', header: 'Disk MB/s', fmt: fixed(0), align: 'right' },
  { key: 'inet_up', header: 'Up Mb/s', fmt: fixed(1), align: 'right' },
  { key: 'inet_down', header: 'Down Mb/s', fmt: fixed(1), align: 'right' },
  { key: 'reliability', header: 'R %', fmt: fixed(1, 100), align: 'right' },
  { key: 'machine_id', header: 'Machine', align: 'right' },
  { key: 'geolocation', header: 'Country' },
];
const volumeColumns: Column[] = [
  { key: 'id', header: 'ID', align: 'right' },
  { key: 'label', header: 'Name' },
  { key: 'disk_space', header: 'Disk GB', fmt: fixed(0), align: 'right' },
  { key: 'status', header: 'Status' },
  { key: 'machine_id', header: 'Machine', align: 'right' },
  { key: 'geolocation', header: 'Country' },
  { key: 'instances', header: 'Instances' },
];
const workergroupColumns: Column[] = [
  { key: 'id', header: 'ID', align: 'right' },
  { key: 'endpoint_id', header: 'Endpoint', align: 'right' },
  { key: 'template_hash', header: 'Template' },
  { key: 'search_params', header: 'Query' },
  { key: 'test_workers', header: 'Test workers', align: 'right' },
];

export function registerServerless(g: Groups): void {
  g.search
    .command('volumes')
    .description('search volume offers (same query language as search offers)')
    .argument('[query...]', 'comparisons, e.g. disk_space>=100 reliability>0.99')
    .option('-n, --no-default', 'drop the default filters (verified=true external=false disk_space>=1)')
    .option('--limit <n>', 'at most this many offers', intArg('--limit'))
    .option('--storage <GB>', 'GB priced into storage_total_cost', numberArg('--storage', 0), DEFAULT_VOLUME_STORAGE_GB)
    .option('-o, --order <fields>', 'comma-separated fields; a trailing - sorts descending', 'score-')
    // -o is --order here, as in the vastai client: the columns are chosen with --columns alone.
    .addOption(columnsOption(volumeOfferColumns, false))
    .addHelpText('after', "\nDefaults (drop them with -n): verified=true external=false disk_space>=1, order score-.\n\nExample:\n  gpuplane search volumes 'disk_space>=200 geolocation in [US,CA]' -o storage_cost")
    .action(
      action(async (ctx, words: string[], o: { default: boolean; limit?: number; order: string; storage: number }) => {
        const body: Record<string, unknown> = checked(() => parseOfferQuery(words.join(' '), o.default ? DEFAULT_VOLUME_QUERY() : {}));
        body.order = checked(() => parseOrder(o.order));
        if (o.limit !== undefined) body.limit = o.limit;
        body.allocated_storage = o.storage;
        const r = await ctx.client.volumes.search(body);
        ctx.out.print(r.offers, () =>
          r.offers.length
            ? ctx.out.table(r.offers, volumeOfferColumns)
            : 'no volume offers match',
        );
      }),
    );
  g.create
    .command('volume')
    .description('create a volume from a volume offer (from search volumes)')
    .argument('<offer_id>', 'volume offer id', intArg('offer_id'))
    .option('-s, --size <GB>', `size in GB (default ${DEFAULT_VOLUME_GB})`, numberArg('--size', 0), DEFAULT_VOLUME_GB)
    .option('-n, --name <name>', 'a name for the volume')
    .addHelpText('after', '\nExample:\n  gpuplane create volume 5001 --size 50 --name datasets')
    .action(
      action(async (ctx, id: number, o: { size: number; name?: string }) => {
        const r = await ctx.client.volumes.create({ id, size: o.size, name: o.name });
        ctx.out.print(r, () => `created volume ${r.volume_id} (${o.size} GB)`);
      }),
    );
  g.show
    .command('volumes')
    .description('list your volumes')
    .addOption(columnsOption(volumeColumns))
    .addHelpText('after', '\nExample:\n  gpuplane show volumes')
    .action(
      action(async (ctx) => {
        const r = await ctx.client.volumes.list();
        const rows = r.volumes as Record<string, unknown>[];
        ctx.out.print(rows, () =>
          rows.length
            ? ctx.out.table(rows, volumeColumns)
            : 'no volumes',
        );
      }),
    );
  g.delete
    .command('volume')
    .description('delete a volume')
    .argument('<id>', 'volume id', intArg('id'))
    .addHelpText('after', '\nExample:\n  gpuplane delete volume 7')
    .action(
      action(async (ctx, id: number) => {
        const r = await ctx.client.volumes.remove(id);
        ctx.out.print(r, () => r.msg);
      }),
    );

  const endpointColumns = [
    { key: 'id', header: 'ID', align: 'right' as const },
    { key: 'endpoint_name', header: 'Name' },
    { key: 'min_load', header: 'Min load', align: 'right' as const },
    { key: 'target_util', header: 'Target util', align: 'right' as const },
    { key: 'cold_mult', header: 'Cold mult', align: 'right' as const },
    { key: 'cold_workers', header: 'Cold workers', align: 'right' as const },
    { key: 'max_workers', header: 'Max workers', align: 'right' as const },
  ];
  for (const mode of ['create', 'update'] as const) {
    const cmd = settingOptions(mode === 'create' ? g.create.command('endpoint') : g.update.command('endpoint').argument('<id>', 'endpoint id', intArg('id')))
      .description(mode === 'create' ? 'create a serverless endpoint' : 'change a serverless endpoint')
      .option('--endpoint_name <name>', 'endpoint name')
      .addHelpText('after', mode === 'create' ? '\nExample:\n  gpuplane create endpoint --endpoint_name llama --target_util 0.9 --max_workers 10' : '\nExample:\n  gpuplane update endpoint 3 --max_workers 30');
    cmd.action(
      action(async (ctx, ...a: unknown[]) => {
        const o = a[a.length - 1] as Record<string, unknown>;
        const body = pick(o, ENDPOINT_KEYS);
        if (mode === 'create') {
          const r = await ctx.client.serverless.createEndpoint(body);
          ctx.out.print(r, () => `created endpoint ${r.result}`);
        } else {
          if (Object.keys(body).length === 0) throw new UsageError('nothing to change: give at least one option');
          const r = await ctx.client.serverless.updateEndpoint(a[0] as number, body);
          ctx.out.print(r, () => r.msg);
        }
      }),
    );
  }
  g.show
    .command('endpoints')
    .description('list your serverless endpoints')
    .addOption(columnsOption(endpointColumns))
    .addHelpText('after', '\nExample:\n  gpuplane show endpoints')
    .action(
      action(async (ctx) => {
        const r = await ctx.client.serverless.endpoints();
        ctx.out.print(r.results, () => (r.results.length ? ctx.out.table(r.results as Record<string, unknown>[], endpointColumns) : 'no endpoints'));
      }),
    );
  g.delete
    .command('endpoint')
    .description('delete a serverless endpoint (its workers are destroyed)')
    .argument('<id>', 'endpoint id', intArg('id'))
    .addHelpText('after', '\nExample:\n  gpuplane delete endpoint 3')
    .action(
      action(async (ctx, id: number) => {
        const r = await ctx.client.serverless.deleteEndpoint(id);
        ctx.out.print(r, () => r.msg);
      }),
    );

  for (const mode of ['create', 'update'] as const) {
    const cmd = settingOptions(mode === 'create' ? g.create.command('workergroup') : g.update.command('workergroup').argument('<id>', 'workergroup id', intArg('id')), [
      ['test_workers', 'workers started to measure performance', 'int'],
      ['gpu_ram', 'GPU RAM the model needs, GB', 'num'],
    ])
      .description(mode === 'create' ? 'create a workergroup: a template, an offer query and autoscaling settings' : 'change a workergroup')
      .option('--template_hash <hash>', 'the template to launch')
      .option('--template_id <id>', 'the template, by numeric id', intArg('--template_id'))
      .option('--search_params <query>', 'offer query, e.g. "gpu_name=RTX_4090 num_gpus=1" (checked before sending)')
      .option('--launch_args <args>', 'create instance arguments')
      .option('--endpoint_name <name>', 'the endpoint, by name')
      .option('--endpoint_id <id>', 'the endpoint, by id', intArg('--endpoint_id'))
      .addHelpText('after', mode === 'create'
        ? "\nExample:\n  gpuplane create workergroup --template_hash 4f2a9c... --endpoint_name llama --search_params 'gpu_ram>=23 num_gpus=1'"
        : '\nExample:\n  gpuplane update workergroup 5 --test_workers 2');
    cmd.action(
      action(async (ctx, ...a: unknown[]) => {
        const o = a[a.length - 1] as Record<string, unknown>;
        // The query travels as text, as vastai sends it; it is checked here so a typo fails before anything is sent.
        if (typeof o.search_params === 'string') checked(() => parseOfferQuery(o.search_params as string, {}, OFFER_QUERY));
        const body = pick(o, WG_KEYS);
        if (mode === 'create') {
          const r = await ctx.client.serverless.createWorkergroup(body);
          ctx.out.print(r, () => `created workergroup ${r.id}`);
        } else {
          if (Object.keys(body).length === 0) throw new UsageError('nothing to change: give at least one option');
          const r = await ctx.client.serverless.updateWorkergroup(a[0] as number, body);
          ctx.out.print(r, () => r.msg);
        }
      }),
    );
  }
  g.show
    .command('workergroups')
    .description('list your workergroups')
    .addOption(columnsOption(workergroupColumns))
    .addHelpText('after', '\nExample:\n  gpuplane show workergroups')
    .action(
      action(async (ctx) => {
        const r = await ctx.client.serverless.workergroups();
        ctx.out.print(r.results, () =>
          r.results.length
            ? ctx.out.table(r.results as Record<string, unknown>[], workergroupColumns)
            : 'no workergroups',
        );
      }),
    );
  g.delete
    .command('workergroup')
    .description('delete a workergroup (its workers are destroyed)')
    .argument('<id>', 'workergroup id', intArg('id'))
    .addHelpText('after', '\nExample:\n  gpuplane delete workergroup 5')
    .action(
      action(async (ctx, id: number) => {
        const r = await ctx.client.serverless.deleteWorkergroup(id);
        ctx.out.print(r, () => r.msg);
      }),
    );
}
