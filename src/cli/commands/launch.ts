/**
 * `launch instance` (search and rent in one call, as the vastai client's), `show instance-filters` and
 * `show contracts` (your instances by label and id).
 */
import { containerOptions } from '../instance-args.js';
import type { Command } from 'commander';
import { action, intArg, numberArg, UsageError } from '../context.js';
import { DEFAULT_OFFER_QUERY, parseOfferQuery, parseOrder, QueryError } from '../offer-query.js';
import { columnsOption, utc, type Column } from '../output.js';
import type { Groups } from '../program.js';
import { createBody } from './instances.js';

/** vastai's defaults: 16 GB of disk, the best 3 offers tried, best score first. */
const DEFAULT_DISK_GB = 16;
const DEFAULT_LIMIT = 3;

interface LaunchOpts {
  gpuName: string; numGpus: number; image?: string; region?: string; disk: number; limit: number; order: string;
  [option: string]: unknown;
}

const queryOf = (text: string) => {
  try {
    return parseOfferQuery(text, DEFAULT_OFFER_QUERY());
  } catch (err) {
    if (err instanceof QueryError) throw new UsageError(err.message);
    throw err;
  }
};

const contractColumns: Column[] = [
  { key: 'id', header: 'ID', align: 'right' },
  { key: 'label', header: 'Label' },
  { key: 'actual_status', header: 'Status' },
  { key: 'machine_id', header: 'Machine', align: 'right' },
  { key: 'num_gpus', header: 'N', align: 'right' },
  { key: 'gpu_name', header: 'Model' },
  { key: 'start_date', header: 'Created (UTC)', fmt: utc },
  { key: 'end_date', header: 'Destroyed (UTC)', fmt: (v) => (v === null ? '-' : utc(v)) },
];
const filterColumns: Column[] = [{ key: 'actual_status', header: 'Status' }, { key: 'verification', header: 'Verification' }, { key: 'gpu_name', header: 'Model' }];

export function registerLaunch(g: Groups, verb: (name: string, what: string) => Command): void {
  containerOptions(verb('launch', 'launch: instance (search and rent in one call)')
    .command('instance')
    .description('rent the best on-demand offer for a GPU model and count, in one call')
    .requiredOption('-g, --gpu-name <name>', 'GPU model, spaces as _ (RTX_4090)')
    .requiredOption('-n, --num-gpus <n>', 'GPUs', intArg('--num-gpus'))
    .option('-i, --image <image>', 'Docker image')
    .option('-r, --region <list>', 'countries or a region, as search offers compares geolocation: [US,CA], US or North_America')
    .option('-d, --disk <GB>', 'local disk in GB', numberArg('--disk', 0), DEFAULT_DISK_GB)
    .option('--limit <n>', 'offers tried, best first', intArg('--limit'), DEFAULT_LIMIT)
    .option('-o, --order <fields>', 'comma-separated fields; a trailing - sorts descending', 'score-'))
    .option('--cancel-unavail', 'fail at once if the offer cannot start now')
    .option('--args <words...>', 'arguments for the image ENTRYPOINT; must be last (everything after it is taken)')
    .addHelpText('after', `
Example:
  gpuplane launch instance -g RTX_4090 -n 1 -i pytorch/pytorch -d 32 --ssh --direct
  gpuplane launch instance -g RTX_3090 -n 2 -i pytorch/pytorch -r '[US,CA]' --limit 5
  gpuplane launch instance -g RTX_4090 -n 1 -i pytorch/pytorch -r Europe`)
    .action(action(async (ctx, o: LaunchOpts) => {
      let text = `num_gpus=${o.numGpus} gpu_name=${o.gpuName} disk_space>=${o.disk}`;
      if (o.region) text += ` geolocation in ${o.region.startsWith('[') ? o.region : `[${o.region}]`}`;
      const q: Record<string, unknown> = queryOf(text);
      try {
        q.order = parseOrder(o.order);
      } catch (err) {
        if (err instanceof QueryError) throw new UsageError(err.message);
        throw err;
      }
      Object.assign(q, { type: 'on-demand', limit: o.limit, allocated_storage: o.disk });
      const body = createBody({ ...o, timeout: 0 } as never, ctx.run.argsRemainder);
      for (const k of ['client_id', 'price', 'force', 'user']) delete body[k];
      const r = await ctx.client.launch.instance({ ...body, q } as never);
      ctx.out.print(r, () => `launched instance ${r.new_contract} from offer ${r.offer_id}\ninstance API key (shown once): ${r.instance_api_key}`);
    }));

  g.show
    .command('instance-filters')
    .description('the distinct status, verification and GPU model of your live instances')
    .addHelpText('after', '\nExample:\n  gpuplane show instance-filters')
    .action(action(async (ctx) => {
      const rows = await ctx.client.contracts.instanceFilters();
      ctx.out.print(rows, () => (rows.length ? ctx.out.table(rows, filterColumns) : 'no instances'));
    }));

  g.show
    .command('contracts')
    .description('your contracts (instances, destroyed ones too) with a label and/or among ids')
    .option('--label <label>', 'only those with this label')
    .option('--ids <ids>', 'only these instance ids, comma separated', (v: string) => v.split(',').map((s) => intArg('--ids')(s.trim())))
    .addOption(columnsOption(contractColumns))
    .addHelpText('after', '\nExample:\n  gpuplane show contracts --label train\n  gpuplane show contracts --ids 12,13')
    .action(action(async (ctx, o: { label?: string; ids?: number[] }) => {
      const rows = await ctx.client.contracts.fetch({ label: o.label, contract_ids: o.ids });
      ctx.out.print(rows, () => (rows.length ? ctx.out.table(rows, contractColumns) : 'no contracts match'));
    }));
}
