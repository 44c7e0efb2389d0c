/** `search offers`: the vastai query language, validated before anything is sent. */
import { Option, type Command } from 'commander';
import { action, intArg, numberArg, UsageError } from '../context.js';
import { DEFAULT_OFFER_QUERY, fieldsHelp, parseOfferQuery, parseOrder, QueryError } from '../offer-query.js';
import { fixed, columnsOption, type Column } from '../output.js';

/** `--storage`: GB of disk the price includes (vastai's default). */
const DEFAULT_STORAGE_GB = 5;
const MB_PER_GB = 1000;
const DAY_S = 86_400;
const PERCENT = 100;

type Row = Record<string, unknown>;
const n1 = fixed(1);

/**
 * The offer columns from the most useful to the least: on a narrow terminal the table keeps the first ones that fit
 * (what you rent, its price and whether `--direct` can work), in the vastai client's column order.
 */
const USEFULNESS = [
  'id', 'gpu_name', 'num_gpus', 'dph_total', 'gpu_ram', 'reliability', 'direct_port_count', 'geolocation',
  'cpu_cores_effective', 'cpu_ram', 'disk_space', 'inet_down', 'cuda_max_good', 'dlperf_per_dphtotal', 'inet_up',
  'verification', 'duration', 'score', 'dlperf', 'driver_version', 'pcie_bw', 'machine_id',
];

export function offerColumns(reserved: boolean): Column<Row>[] {
  return ([
    { key: 'id', header: 'ID', align: 'right' },
    { key: 'cuda_max_good', header: 'CUDA', fmt: n1, align: 'right' },
    { key: 'num_gpus', header: 'N', fmt: (v) => `${v}x`, align: 'right' },
    { key: 'gpu_name', header: 'Model' },
    { key: 'gpu_ram', header: 'VRAM GB', fmt: fixed(0, 1 / MB_PER_GB), align: 'right' },
    { key: 'pcie_bw', header: 'PCIe GB/s', fmt: n1, align: 'right' },
    { key: 'cpu_cores_effective', header: 'vCPUs', fmt: n1, align: 'right' },
    { key: 'cpu_ram', header: 'RAM GB', fmt: fixed(1, 1 / MB_PER_GB), align: 'right' },
    { key: 'disk_space', header: 'Disk GB', fmt: fixed(0), align: 'right' },
    { key: reserved ? 'discounted_dph_total' : 'dph_total', name: 'dph_total', header: '$/hr', fmt: fixed(4), align: 'right' },
    { key: 'dlperf', header: 'DLP', fmt: n1, align: 'right' },
    { key: 'dlperf_per_dphtotal', header: 'DLP/$', fmt: fixed(2), align: 'right' },
    { key: 'score', header: 'Score', fmt: n1, align: 'right' },
    { key: 'driver_version', header: 'Driver' },
    { key: 'inet_up', header: 'Up Mb/s', fmt: n1, align: 'right' },
    { key: 'inet_down', header: 'Down Mb/s', fmt: n1, align: 'right' },
    { key: 'reliability', header: 'R %', fmt: fixed(1, PERCENT), align: 'right' },
    { key: 'duration', header: 'Max days', fmt: fixed(1, 1 / DAY_S), align: 'right' },
    { key: 'machine_id', header: 'Machine', align: 'right' },
    { key: 'verification', header: 'Status' },
    { key: 'direct_port_count', header: 'Ports', align: 'right' },
    { key: 'geolocation', header: 'Country' },
  ] as Column<Row>[]).map((c) => ({ ...c, rank: USEFULNESS.indexOf(c.name ?? c.key) }));
}

const HELP = `
Query syntax (as the vastai client's):
  query      = comparison comparison ...
  comparison = field op value
  op         = one of = == != < <= > >= in notin (also eq neq lt lte gt gte nin, "not in")
  value      = number | true/false | text (write spaces as _, or "quote them") | any | [v1,v2,...]
  field=any drops the field's filter (a default included). Unknown fields, unknown operators and values of the
  wrong type are errors, reported before anything is sent.

Defaults (drop them with -n): verified=true external=false rentable=true rented=false, order score-.
Units: gpu_ram, gpu_total_ram and cpu_ram are written in GB (sent in MB), duration in days (sent in seconds),
driver_version as 535.86.05. Prices are $/hour.

Fields:
${fieldsHelp()}
Aliases: cuda_vers=cuda_max_good dph=dph_total dlperf_usd=dlperf_per_dphtotal flops_usd=flops_per_dphtotal
display_active=gpu_display_active

Example:
  gpuplane search offers 'gpu_name=RTX_4090 num_gpus>=2 reliability>0.99 geolocation in [US,CA]' -o 'dph_total,score-'
  gpuplane search offers 'gpu_ram>=40 driver_version>=535.86.05' --type bid --limit 5 --raw
  gpuplane search offers 'num_gpus=1' --columns id,gpu_name,dph_total,direct_port_count
`;

interface SearchOpts {
  type: string;
  default: boolean;
  limit?: number;
  storage: number;
  order: string;
  new?: boolean;
}

export function registerOffers(search: Command): void {
  search
    .command('offers')
    .description('search offers (machines to rent) with a query; prints a table with units, or JSON with --raw')
    .argument('[query...]', 'comparisons, e.g. gpu_name=RTX_4090 num_gpus>=2 (quote the whole query)')
    .addOption(new Option('-t, --type <type>', 'pricing: on-demand, bid (interruptible) or reserved').choices(['on-demand', 'ondemand', 'bid', 'interruptible', 'reserved']).default('on-demand'))
    .addOption(new Option('-i, --interruptible', 'alias of --type bid').implies({ type: 'bid' }))
    .addOption(new Option('-b, --bid', 'alias of --type bid').implies({ type: 'bid' }))
    .addOption(new Option('-r, --reserved', 'alias of --type reserved').implies({ type: 'reserved' }))
    .addOption(new Option('-d, --on-demand', 'alias of --type on-demand').implies({ type: 'on-demand' }))
    .option('-n, --no-default', 'drop the default filters (verified, external, rentable, rented)')
    .option('--limit <n>', 'at most this many offers', intArg('--limit'))
    .option('--storage <GB>', 'disk (GB) included in the price', numberArg('--storage', 0), DEFAULT_STORAGE_GB)
    .option('-o, --order <fields>', 'comma-separated fields to sort on; a trailing - sorts descending', 'score-')
    .option('--new', 'the new-style search (PUT /api/v0/search/asks/): the same offers')
    // -o is --order here, as in the vastai client: the columns are chosen with --columns alone.
    .addOption(columnsOption(offerColumns(false), false))
    .addHelpText('after', HELP)
    .action(
      action(async (ctx, words: string[], o: SearchOpts) => {
        let body: Record<string, unknown>;
        try {
          body = parseOfferQuery(words.join(' '), o.default ? DEFAULT_OFFER_QUERY() : {});
          body.order = parseOrder(o.order);
        } catch (err) {
          if (err instanceof QueryError) throw new UsageError(err.message);
          throw err;
        }
        body.type = o.type === 'interruptible' ? 'bid' : o.type;
        if (o.limit !== undefined) body.limit = o.limit;
        body.allocated_storage = o.storage;
        const { offers } = o.new ? await ctx.client.offers.searchNew(body) : await ctx.client.offers.search(body);
        ctx.out.print(offers, () => (offers.length ? ctx.out.table(offers as Row[], offerColumns(o.type === 'reserved')) : 'no offers match'));
      }),
    );
}
