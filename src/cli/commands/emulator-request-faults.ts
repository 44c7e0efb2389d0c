/** `emu request-fault …` (issue 34 item 3): faults by API operation, added, listed and cleared. */
import { InvalidArgumentError, Option, type Command } from 'commander';
import type { RequestFault, RequestFaultRequest } from '../../sdk/api/emulator.js';
import { action, intArg, numberArg } from '../context.js';
import { columnsOption, counted, renderRecord, type Column } from '../output.js';

const faultColumns: Column[] = [
  { key: 'id', header: 'ID', align: 'right' },
  { key: 'method', header: 'Method' },
  { key: 'route', header: 'Route', fmt: (v) => (v === null ? '-' : String(v)) },
  { key: 'category', header: 'Category', fmt: (v) => (v === null ? '-' : String(v)) },
  { key: 'probability', header: 'Prob', align: 'right' },
  { key: 'effect', header: 'Effect' },
  { key: 'latency_ms', header: 'Latency ms', align: 'right' },
  { key: 'count', header: 'Count', align: 'right', fmt: (v) => (v === null ? '-' : String(v)) },
  { key: 'seed', header: 'Seed', align: 'right', fmt: (v) => (v === null ? '-' : String(v)) },
  { key: 'matched', header: 'Matched', align: 'right' },
  { key: 'fired', header: 'Fired', align: 'right' },
];

/** What a rule does, in words: `429 (Retry-After 2)`, `503`, `timeout`, `latency`. */
export function faultEffect(f: RequestFault): string {
  if (f.timeout) return 'timeout';
  if (f.status === null) return 'latency';
  return f.retry_after !== null ? `${f.status} (Retry-After ${f.retry_after})` : String(f.status);
}

function nonNegativeInt(name: string) {
  return (value: string): number => {
    if (!/^\d+$/.test(value) || !Number.isSafeInteger(Number(value))) throw new InvalidArgumentError(`${name} must be a whole number of at least 0.`);
    return Number(value);
  };
}

export function registerRequestFaults(emu: Command): void {
  const group = emu
    .command('request-fault')
    .description('fault API requests by route, method or permission category: 429 with Retry-After, 5xx, latency, timeouts');

  group
    .command('add')
    .description('add a rule; requests it matches get its status (default 429), its latency, or no answer (--timeout)')
    .option('--route <path>', 'a route as the API reference shows it, e.g. /api/v0/bundles/ or /api/v0/instances/{id}/; end with * for a prefix; * alone: every request')
    .addOption(new Option('--method <method>', 'only this HTTP method (default any)').choices(['GET', 'POST', 'PUT', 'DELETE', '*']))
    .option('--category <category>', 'only routes of this permission category, e.g. instance_write')
    .addOption(new Option('--status <status>', 'the status to answer with (default 429)').choices(['429', '500', '502', '503', '504']))
    .option('--retry-after <seconds>', '429: the Retry-After header (default 1)', nonNegativeInt('--retry-after'))
    .option('--probability <p>', 'chance (0 to 1) that a matched request is faulted (default 1)', numberArg('--probability', 0))
    .option('--latency-ms <ms>', 'added before answering; without --status: latency only', nonNegativeInt('--latency-ms'))
    .option('--timeout', 'answer nothing: drop the connection after --latency-ms (default 30000)')
    .option('--count <n>', 'fault at most this many requests', intArg('--count'))
    .option('--seed <n>', 'seed of the draws (default: the server\'s GPUPLANE_SEED), so a run repeats exactly', nonNegativeInt('--seed'))
    .addHelpText(
      'after',
      '\nExample:\n  gpuplane emu request-fault add --route /api/v0/bundles/ --method POST --status 429 --retry-after 2 --count 2\n' +
        '  gpuplane emu request-fault add --category instance_write --status 503 --probability 0.5 --seed 7\n' +
        '  gpuplane emu request-fault add --route \'/api/v0/instances/*\' --latency-ms 1500',
    )
    .action(
      action(async (ctx, o: { route?: string; method?: RequestFaultRequest['method']; category?: string; status?: string; retryAfter?: number; probability?: number; latencyMs?: number; timeout?: boolean; count?: number; seed?: number }) => {
        const r = await ctx.client.emulator.addRequestFault({
          route: o.route,
          method: o.method,
          category: o.category,
          status: o.status === undefined ? undefined : (Number(o.status) as RequestFaultRequest['status']),
          retry_after: o.retryAfter,
          probability: o.probability,
          latency_ms: o.latencyMs,
          timeout: o.timeout,
          count: o.count,
          seed: o.seed,
        });
        ctx.out.print(r, () => `request fault ${r.fault.id}: ${faultEffect(r.fault)}\n${renderRecord(r.fault)}`);
      }),
    );

  group
    .command('list')
    .description('list the rules, with how many requests each matched and faulted')
    .addOption(columnsOption(faultColumns))
    .addHelpText('after', '\nExample:\n  gpuplane emu request-fault list')
    .action(
      action(async (ctx) => {
        const r = await ctx.client.emulator.requestFaults();
        ctx.out.print(r.faults, () =>
          r.faults.length === 0 ? 'no request faults' : ctx.out.table(r.faults.map((f) => ({ ...f, effect: faultEffect(f) })), faultColumns),
        );
      }),
    );

  group
    .command('clear')
    .description('remove one rule, or every rule without an id')
    .argument('[id]', 'the rule', intArg('id'))
    .addHelpText('after', '\nExample:\n  gpuplane emu request-fault clear 3\n  gpuplane emu request-fault clear')
    .action(
      action(async (ctx, id: number | undefined) => {
        const r = await ctx.client.emulator.clearRequestFaults(id);
        ctx.out.print(r, () => (id === undefined ? `removed ${counted(r.removed, 'request fault')}` : `removed request fault ${id}`));
      }),
    );
}
