/** `emu event …` (issue 34 item 3): host events on the service clock, added, listed and cleared. */
import { Argument, Option, type Command } from 'commander';
import type { HostEvent, HostEventRequest } from '../../sdk/api/emulator.js';
import { action, intArg, numberArg } from '../context.js';
import { columnsOption, counted, renderRecord, utc, type Column } from '../output.js';

/** Ids shown in a table cell: the first few, then how many in all (`--raw` lists every one). */
const SHOWN_IDS = 8;
const idList = (v: unknown) =>
  !Array.isArray(v) || v.length === 0 ? '-' : v.length <= SHOWN_IDS ? v.join(',') : `${v.slice(0, SHOWN_IDS).join(',')},… (${v.length})`;

const dash = (v: unknown) => (v === null || v === undefined ? '-' : String(v));

const eventColumns: Column[] = [
  { key: 'id', header: 'ID', align: 'right' },
  { key: 'kind', header: 'Kind' },
  { key: 'state', header: 'State' },
  { key: 'at', header: 'At (UTC)', fmt: utc },
  { key: 'ends_at', header: 'Ends (UTC)', fmt: (v) => (v === null ? '-' : utc(v)) },
  { key: 'machine_ids', header: 'Machines', fmt: (v) => idList(v) },
  { key: 'detail', header: 'Detail' },
  { key: 'instance_ids', header: 'Instances', fmt: (v) => idList(v) },
  { key: 'seed', header: 'Seed', align: 'right' },
];

/** What the event does, in words: `pull 600 s`, `GPU 1`, `no_heartbeat`. */
export function eventDetail(e: HostEvent): string {
  if (e.kind === 'slow_pull') return `pull ${dash(e.pull_seconds)} s`;
  if (e.kind === 'gpu_lost') return `GPU ${dash(e.gpu_index)}`;
  if (e.kind === 'host_offline') return dash(e.fault);
  return '-';
}

const machineIdsArg = (v: string) => v.split(',').map((s) => intArg('--machine-ids')(s.trim()));

export function registerEmulatorEvents(emu: Command): void {
  const group = emu
    .command('event')
    .description('script host events on the service clock: an outbid wave, a host offline, a slow pull, a lost GPU');

  group
    .command('add')
    .description('add an event, now or later; its machines given, or drawn from the fleet by the seed')
    .addArgument(new Argument('<kind>', 'outbid_wave, host_offline, slow_pull or gpu_lost').choices(['outbid_wave', 'host_offline', 'slow_pull', 'gpu_lost']))
    .option('--after <seconds>', 'when, in seconds from now (default: now)', numberArg('--after', 0))
    .option('--at <unix>', 'when, in Unix seconds of the service clock', numberArg('--at', 0))
    .option('--machine-ids <ids>', 'the machines, comma separated (default: drawn by the seed)', machineIdsArg)
    .option('--fraction <f>', 'draw this share of the fleet, 0 to 1', numberArg('--fraction', 0))
    .option('--machines <n>', 'draw this many machines (default 1)', intArg('--machines'))
    .option('--duration <seconds>', 'how long it lasts (host_offline: back after; slow_pull; gpu_lost; outbid_wave: the higher bids leave); default: until cleared', numberArg('--duration', 0))
    .option('--pull-seconds <seconds>', 'slow_pull: how long a pull takes during it (default 300)', numberArg('--pull-seconds', 0))
    .option('--gpu-index <i>', 'gpu_lost: the GPU that falls off the bus (default 0)', (v: string) => intArg('--gpu-index')(v))
    .addOption(new Option('--fault <fault>', 'host_offline: no_heartbeat (noticed at the heartbeat timeout, default), offline or unknown (at once)').choices(['no_heartbeat', 'offline', 'unknown']))
    .option('--seed <n>', 'seed of the draw (default: from the server\'s GPUPLANE_SEED), so a run repeats exactly', (v: string) => intArg('--seed')(v))
    .addHelpText(
      'after',
      '\nExample:\n  gpuplane emu event add outbid_wave --after 60 --fraction 0.25 --seed 7\n' +
        '  gpuplane emu event add host_offline --machine-ids 3 --duration 300\n' +
        '  gpuplane emu event add slow_pull --machines 2 --pull-seconds 600 --duration 1800\n' +
        '  gpuplane emu event add gpu_lost --machine-ids 5 --gpu-index 1',
    )
    .action(
      action(async (ctx, kind: HostEventRequest['kind'], o: { after?: number; at?: number; machineIds?: number[]; fraction?: number; machines?: number; duration?: number; pullSeconds?: number; gpuIndex?: number; fault?: HostEventRequest['fault']; seed?: number }) => {
        const r = await ctx.client.emulator.addEvent({
          kind,
          after: o.after,
          at: o.at,
          machine_ids: o.machineIds,
          fraction: o.fraction,
          machines: o.machines,
          duration: o.duration,
          pull_seconds: o.pullSeconds,
          gpu_index: o.gpuIndex,
          fault: o.fault,
          seed: o.seed,
        });
        const e = r.event;
        ctx.out.print(r, () => `event ${e.id}: ${e.kind} ${e.state}, machines ${e.machine_ids.join(',') || 'none'}\n${renderRecord(e)}`);
      }),
    );

  group
    .command('list')
    .description('list the events: pending, active and done, with their machines and the instances they acted on')
    .addOption(columnsOption(eventColumns))
    .addHelpText('after', '\nExample:\n  gpuplane emu event list')
    .action(
      action(async (ctx) => {
        const r = await ctx.client.emulator.events();
        ctx.out.print(r.events, () =>
          r.events.length === 0 ? 'no host events' : ctx.out.table(r.events.map((e) => ({ ...e, detail: eventDetail(e) })), eventColumns),
        );
      }),
    );

  group
    .command('clear')
    .description('clear one event (a pending one never happens, an active one ends now), or every event without an id')
    .argument('[id]', 'the event', intArg('id'))
    .addHelpText('after', '\nExample:\n  gpuplane emu event clear 3\n  gpuplane emu event clear')
    .action(
      action(async (ctx, id: number | undefined) => {
        if (id === undefined) {
          const r = await ctx.client.emulator.clearEvents();
          ctx.out.print(r, () => `cleared ${counted(r.events.length, 'host event')}`);
        } else {
          const r = await ctx.client.emulator.clearEvent(id);
          ctx.out.print(r, () => `cleared host event ${id} (${r.event.kind})`);
        }
      }),
    );
}
