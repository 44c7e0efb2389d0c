/** `show charges`: charges per instance, volume or serverless contract, as a table or a tree (spec: Show charges). */
import { InvalidArgumentError, Option, type Command } from 'commander';
import type { ChargeEntry } from '../../sdk/api/billing.js';
import { action, intArg } from '../context.js';
import { columnsOption, counted, utc, type Column } from '../output.js';
import { hinted } from '../hints.js';

const DAY_S = 86_400;
/** Default window of `show charges`: the last 30 days. */
const DEFAULT_DAYS = 30;
const TYPES = ['instance', 'volume', 'serverless'] as const;

/** A day as `YYYY-MM-DD` (UTC) or Unix seconds. */
/** A day (YYYY-MM-DD, UTC) or Unix seconds; as an end, a date means the whole of that day. */
export function dayArg(name: string, endOfDay = false) {
  return (v: string): number => {
    if (/^\d+(\.\d+)?$/.test(v)) return Number(v);
    const t = Date.parse(`${v}T00:00:00Z`);
    if (!/^\d{4}-\d{2}-\d{2}$/.test(v) || Number.isNaN(t)) throw new InvalidArgumentError(`${name} must be YYYY-MM-DD (UTC) or Unix seconds.`);
    // A date as the end means the whole of that day.
    return t / 1000 + (endOfDay ? DAY_S - 1 : 0);
  };
}

function typesArg(v: string): (typeof TYPES)[number][] {
  const list = v.split(',').map((s) => s.trim()).filter(Boolean);
  for (const t of list) if (!(TYPES as readonly string[]).includes(t)) throw new InvalidArgumentError(`types are ${TYPES.join(', ')}.`);
  return list as (typeof TYPES)[number][];
}

const amount = (v: unknown) => (typeof v === 'number' ? `$${v.toFixed(4)}` : String(v));

/** The tree format: each entry, then its items indented beneath it. */
export function renderTree(entries: ChargeEntry[], depth = 0): string[] {
  return entries.flatMap((e) => [
    `${'  '.repeat(depth)}${e.source ?? e.type}  ${e.description}  ${amount(e.amount)}  (${utc(e.start)} → ${utc(e.end)})`,
    ...renderTree(e.items, depth + 1),
  ]);
}

interface ChargesOpts {
  start?: number;
  end?: number;
  types?: (typeof TYPES)[number][];
  format: 'table' | 'tree';
  oldestFirst?: boolean;
  limit?: number;
  nextToken?: string;
}

/** The command for the next page: the same listing (window, types, order, format), after the token. */
function nextPage(o: ChargesOpts & { start: number; end: number }, token: string): string {
  const words = ['show charges', `-s ${o.start}`, `-e ${o.end}`];
  if (o.types) words.push(`--types ${o.types.join(',')}`);
  if (o.format !== 'table') words.push(`--format ${o.format}`);
  if (o.oldestFirst) words.push('--oldest-first');
  if (o.limit !== undefined) words.push(`--limit ${o.limit}`);
  words.push(`--next-token ${token}`);
  return hinted(words.join(' '));
}

const chargeColumns: Column<ChargeEntry>[] = [
  { key: 'source', header: 'Source' },
  { key: 'type', header: 'Type' },
  { key: 'description', header: 'Description' },
  { key: 'start', header: 'Start (UTC)', fmt: utc },
  { key: 'end', header: 'End (UTC)', fmt: utc },
  { key: 'amount', header: 'Amount $', fmt: (v: number) => v.toFixed(4), align: 'right' },
];

export function registerBilling(show: Command): void {
  show
    .command('charges')
    .description('show charges per contract (instance, volume, serverless), newest first; amounts in dollars')
    .option('-s, --start <day>', 'first day, YYYY-MM-DD (UTC) or Unix seconds (default: 30 days before --end)', dayArg('--start'))
    .option('-e, --end <day>', 'last day, YYYY-MM-DD (UTC) or Unix seconds (default: now)', dayArg('--end', true))
    .option('--types <list>', 'only these types: instance,volume,serverless', typesArg)
    .addOption(new Option('--format <format>', 'table (flat) or tree (serverless grouped by endpoint and workergroup)').choices(['table', 'tree']).default('table'))
    .option('--oldest-first', 'oldest first')
    .option('--limit <n>', 'contracts per page (1-500, default 20)', intArg('--limit'))
    .option('--next-token <token>', 'the next page (printed after a page that has more)')
    .addOption(columnsOption(chargeColumns))
    .addHelpText('after', '\nExample:\n  gpuplane show charges -s 2027-01-01 -e 2027-01-31 --types instance,volume\n  gpuplane show charges --format tree --raw')
    .action(
      action(async (ctx, o: ChargesOpts) => {
        const end = o.end ?? Math.floor(Date.now() / 1000);
        const start = o.start ?? end - DEFAULT_DAYS * DAY_S;
        const r = await ctx.client.billing.charges({ start, end, types: o.types, format: o.format, latestFirst: !o.oldestFirst, limit: o.limit, after: o.nextToken });
        ctx.out.print(r, () => {
          const body = o.format === 'tree'
            ? renderTree(r.results).join('\n')
            : ctx.out.table(r.results, chargeColumns);
          const total = r.results.reduce((s, e) => s + e.amount, 0);
          const more = r.next_token ? `\nmore: ${nextPage({ ...o, start, end }, r.next_token)}` : '';
          return `${r.results.length ? body : 'no charges in that period'}\n${r.count} of ${counted(r.total, 'contract')}, $${total.toFixed(4)} on this page${more}`;
        });
      }),
    );
}
