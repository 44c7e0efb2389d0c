/** `search benchmarks` (recorded results, the offers' query language) and the emulator's `emu add-benchmark`. */
import type { Command } from 'commander';
import { action, intArg, numberArg, UsageError } from '../context.js';
import { fieldsHelp, parseOfferQuery, QueryError, type FieldDef, type QueryFields } from '../offer-query.js';
import { columnsOption, fixed, utc, type Column } from '../output.js';

const BENCHMARK_FIELDS: Record<string, FieldDef> = {
  contract_id: { type: 'int', desc: 'the instance that ran it' },
  gpu_name: { type: 'string', desc: 'GPU model; write spaces as _ (RTX_4090)' },
  id: { type: 'int', desc: 'result id' },
  image: { type: 'string', desc: 'image that ran it' },
  last_update: { type: 'float', unit: 'epoch s', desc: 'when it was measured' },
  launch_args: { type: 'string', desc: 'launch arguments of the benchmarked worker' },
  machine_id: { type: 'int', desc: 'machine benchmarked' },
  num_gpus: { type: 'int', desc: 'GPUs used' },
  template_hash: { type: 'string', desc: 'template benchmarked (alias name)' },
  template_id: { type: 'int', desc: 'template benchmarked' },
  type: { type: 'string', desc: 'what was measured (perf …)' },
  value: { type: 'float', desc: 'the result (alias score)' },
};
const BENCHMARK_QUERY: QueryFields = { fields: BENCHMARK_FIELDS, aliases: { score: 'value', name: 'template_hash' }, command: 'search benchmarks' };

const columns: Column[] = [
  { key: 'id', header: 'ID', align: 'right' },
  { key: 'machine_id', header: 'Machine', align: 'right' },
  { key: 'gpu_name', header: 'Model' },
  { key: 'num_gpus', header: 'N', align: 'right' },
  { key: 'value', header: 'Value', fmt: fixed(2), align: 'right' },
  { key: 'type', header: 'Type' },
  { key: 'template_hash', header: 'Template' },
  { key: 'template_id', header: 'Template id', align: 'right' },
  { key: 'contract_id', header: 'Instance', align: 'right' },
  { key: 'image', header: 'Image' },
  { key: 'last_update', header: 'Measured (UTC)', fmt: utc },
];

/** `-o last_update-,value` → `[{col, dir}]`. */
function orderBy(text: string): { col: string; dir: 'asc' | 'desc' }[] {
  return text.split(',').map((s) => s.trim()).filter(Boolean).map((s) => {
    const desc = s.endsWith('-');
    const col = s.replace(/[-+]$/, '');
    const field = BENCHMARK_QUERY.aliases[col] ?? col;
    if (!BENCHMARK_FIELDS[field]) throw new UsageError(`-o: unknown field ${JSON.stringify(col)} (see \`gpuplane search benchmarks --help\` for the fields)`);
    return { col: field, dir: desc ? 'desc' : 'asc' };
  });
}

export function registerBenchmarks(search: Command, emu: Command): void {
  search
    .command('benchmarks')
    .description('search recorded benchmark results with a query (none until results are recorded)')
    .argument('[query...]', 'comparisons, e.g. gpu_name=RTX_4090 num_gpus=1 type=perf')
    .option('--limit <n>', 'at most this many results', intArg('--limit'))
    .option('-o, --order <fields>', 'comma-separated fields; a trailing - sorts descending', 'last_update-')
    .addOption(columnsOption(columns, false))
    .addHelpText('after', `\nFields:\n${fieldsHelp(BENCHMARK_FIELDS)}\nExample:\n  gpuplane search benchmarks 'gpu_name=RTX_4090 num_gpus=1 type=perf' --limit 10`)
    .action(action(async (ctx, words: string[], o: { limit?: number; order: string }) => {
      let filters: Record<string, unknown>;
      try {
        filters = parseOfferQuery(words.join(' '), {}, BENCHMARK_QUERY);
      } catch (err) {
        if (err instanceof QueryError) throw new UsageError(err.message);
        throw err;
      }
      const rows = await ctx.client.benchmarks.search(filters, { orderBy: orderBy(o.order), limit: o.limit });
      ctx.out.print(rows, () => (rows.length ? ctx.out.table(rows, columns) : 'no benchmark results match'));
    }));

  emu
    .command('add-benchmark')
    .description('record a benchmark result of a machine (emulator mode, admin key)')
    .argument('<machine_id>', 'machine id', intArg('machine_id'))
    .argument('<value>', 'the result', numberArg('value'))
    .option('--type <type>', 'what was measured', 'perf')
    .option('--num-gpus <n>', 'GPUs used (default: all the machine\'s)', intArg('--num-gpus'))
    .option('--template-hash <hash>', 'template benchmarked')
    .option('--image <image>', 'image that ran it')
    .addHelpText('after', '\nExample:\n  gpuplane emu add-benchmark 12 41.5 --template-hash 4f2a9c')
    .action(action(async (ctx, machineId: number, value: number, o: { type: string; numGpus?: number; templateHash?: string; image?: string }) => {
      const r = await ctx.client.emulator.addBenchmark({ machine_id: machineId, value, type: o.type, num_gpus: o.numGpus, template_hash: o.templateHash, image: o.image });
      ctx.out.print(r, () => `benchmark result ${r.id} recorded`);
    }));
}
