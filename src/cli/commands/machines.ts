/**
 * The host side (client-compat-more.md §a), named as the vastai client names it: show machines/machine/maints/earnings,
 * list/unlist machine(s), set min-bid, set/remove defjob, schedule/cancel maint, cleanup/delete machine, reports,
 * defrag machines.
 */
import type { Command } from 'commander';
import { action, intArg, numberArg, UsageError, type Ctx } from '../context.js';
import { columnsOption, fixed, utc, yesNo } from '../output.js';
import type { Groups } from '../program.js';

const DAY_S = 86_400;

const machineColumns = [
  { key: 'id', header: 'ID', align: 'right' as const },
  { key: 'num_gpus', header: '#gpus', align: 'right' as const },
  { key: 'gpu_name', header: 'gpu_name' },
  { key: 'disk_space', header: 'disk GB', align: 'right' as const, fmt: fixed(0) },
  // Whether renters' disk is enforced on a real host (docs/HOST-SECURITY.md); '-' where no agent said.
  { key: 'disk_limit', header: 'disk lim', fmt: (v: unknown) => (v === null || v === undefined ? '-' : yesNo(v)) },
  { key: 'hostname', header: 'hostname', fmt: (v: unknown) => String(v).slice(0, 16) },
  { key: 'driver_version', header: 'driver' },
  { key: 'reliability2', header: 'reliab', align: 'right' as const, fmt: fixed(4) },
  { key: 'verification', header: 'veri' },
  { key: 'public_ipaddr', header: 'ip' },
  { key: 'listed', header: 'listed', fmt: yesNo },
  { key: 'rentable', header: 'rentable', fmt: yesNo },
  { key: 'listed_gpu_cost', header: 'gpuD_$/h', align: 'right' as const, fmt: fixed(4) },
  { key: 'min_bid_price', header: 'gpuI$/h', align: 'right' as const, fmt: fixed(4) },
  { key: 'credit_discount_max', header: 'rdisc', align: 'right' as const, fmt: fixed(2) },
  { key: 'listed_inet_up_cost', header: 'netu_$/TB', align: 'right' as const, fmt: fixed(2, 1024) },
  { key: 'listed_inet_down_cost', header: 'netd_$/TB', align: 'right' as const, fmt: fixed(2, 1024) },
  { key: 'gpu_occupancy', header: 'occup' },
  { key: 'end_date', header: 'listed until (UTC)', fmt: utc },
];

const maintColumns = [
  { key: 'machine_id', header: 'Machine', align: 'right' as const },
  { key: 'start_time', header: 'Start (UTC)', fmt: utc },
  { key: 'end_time', header: 'End (UTC)', fmt: utc },
  { key: 'duration_hours', header: 'Hours', align: 'right' as const },
  { key: 'maintenance_category', header: 'Category' },
];

/** Epoch seconds, `MM/DD/YYYY` or `YYYY-MM-DD` (UTC midnight), as a date argument; exits 2 otherwise. */
/** A command that takes a machine id, makes one call and prints the server's `msg`. */
function byMachineId(cmd: Command, description: string, help: string, call: (ctx: Ctx, id: number) => Promise<{ msg: string }>): void {
  cmd
    .description(description)
    .argument('<id>', 'machine id', intArg('id'))
    .addHelpText('after', help)
    .action(action(async (ctx, id: number) => {
      const r = await call(ctx, id);
      ctx.out.print(r, () => r.msg);
    }));
}

export function dateArg(name: string) {
  return (value: string): number => {
    if (/^\d+(\.\d+)?$/.test(value)) return Number(value);
    const us = /^(\d{1,2})\/(\d{1,2})\/(\d{4})$/.exec(value);
    const iso = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value);
    const t = us ? Date.UTC(+us[3], +us[1] - 1, +us[2]) : iso ? Date.UTC(+iso[1], +iso[2] - 1, +iso[3]) : Number.NaN;
    if (!Number.isFinite(t)) throw new UsageError(`${name} must be epoch seconds, MM/DD/YYYY or YYYY-MM-DD`);
    return t / 1000;
  };
}

const idList = (value: string): number[] =>
  value.split(',').map((s) => {
    if (!/^\s*\d+\s*$/.test(s)) throw new UsageError(`--ids must be machine ids separated by commas, e.g. 5,6`);
    return Number(s);
  });

interface ListOpts {
  price_gpu?: number; price_disk?: number; price_inetu?: number; price_inetd?: number; price_min_bid?: number;
  min_chunk?: number; end_date?: number; discount_rate?: number; duration?: string; vol_size?: number; vol_price?: number;
}

function listOptions(c: Command): Command {
  return c
    .option('-g, --price_gpu <price>', 'on-demand price, $/GPU/hour', numberArg('--price_gpu', 0))
    .option('-s, --price_disk <price>', 'storage price, $/GB/month', numberArg('--price_disk', 0))
    .option('-u, --price_inetu <price>', 'upload price, $/GB', numberArg('--price_inetu', 0))
    .option('-d, --price_inetd <price>', 'download price, $/GB', numberArg('--price_inetd', 0))
    .option('-b, --price_min_bid <price>', 'lowest interruptible bid, $/GPU/hour', numberArg('--price_min_bid', 0))
    .option('-m, --min_chunk <gpus>', 'smallest bundle offered, GPUs', intArg('--min_chunk'), 1)
    .option('-e, --end_date <date>', 'the listing ends then: epoch seconds, MM/DD/YYYY or YYYY-MM-DD (UTC)')
    .option('-r, --discount_rate <fraction>', 'largest prepay discount (0.4 = 40 %)', numberArg('--discount_rate', 0))
    .option('-l, --duration <text>', 'keep the listing this far ahead, e.g. "3 months", "2 weeks", "86400"')
    .option('-v, --vol_size <gb>', 'volume offer size, GB', intArg('--vol_size'))
    .option('-z, --vol_price <price>', 'volume offer price, $/GB/month', numberArg('--vol_price', 0));
}

const listBody = (machine: number, o: ListOpts & { end_date?: unknown }) => ({
  machine,
  price_gpu: o.price_gpu ?? null,
  price_disk: o.price_disk ?? null,
  price_inetu: o.price_inetu ?? null,
  price_inetd: o.price_inetd ?? null,
  price_min_bid: o.price_min_bid ?? null,
  min_chunk: o.min_chunk ?? null,
  end_date: o.end_date === undefined ? null : dateArg('--end_date')(String(o.end_date)),
  credit_discount_max: o.discount_rate ?? null,
  duration: o.duration ?? null,
  vol_size: o.vol_size ?? null,
  vol_price: o.vol_price ?? null,
});

export function registerMachines(program: Command, g: Groups, verb: (name: string, what: string) => Command): void {
  g.show
    .command('machines')
    .description('your machines (admins: --all for every host\'s)')
    .option('-q, --quiet', 'only the ids')
    .option('--all', 'every host\'s machines (admins)')
    .addOption(columnsOption(machineColumns))
    .addHelpText('after', '\nExample:\n  gpuplane show machines')
    .action(action(async (ctx, o: { quiet?: boolean; all?: boolean }) => {
      const r = await ctx.client.machines.list(o.all ? 'all' : 'me');
      if (o.quiet && !ctx.out.raw) return ctx.out.line(r.machines.map((m) => m.id).join(' '));
      ctx.out.print(r, () => ctx.out.table(r.machines, machineColumns));
    }));
  g.show
    .command('machine')
    .description('one of your machines')
    .argument('<id>', 'machine id', intArg('id'))
    .option('-q, --quiet', 'only the id')
    .addHelpText('after', '\nExample:\n  gpuplane show machine 12')
    .action(action(async (ctx, id: number, o: { quiet?: boolean }) => {
      const m = await ctx.client.machines.show(id);
      if (!m) throw new UsageError(`machine ${id} not found`);
      if (o.quiet && !ctx.out.raw) return ctx.out.line(String(m.id));
      ctx.out.print([m], () => ctx.out.table([m], machineColumns));
    }));
  g.show
    .command('maints')
    .description('maintenance windows to come of your machines, or of --ids (machines you host or rent on)')
    .option('--ids <ids>', 'machine ids, comma separated', idList)
    .option('-q, --quiet', 'only the machine ids')
    .addHelpText('after', '\nExample:\n  gpuplane show maints --ids 5,6')
    .action(action(async (ctx, o: { ids?: number[]; quiet?: boolean }) => {
      const r = await ctx.client.machines.maintenances(o.ids);
      if (o.quiet && !ctx.out.raw) return ctx.out.line(r.map((w) => w.machine_id).join(' '));
      ctx.out.print(r, () => ctx.out.table(r, maintColumns));
    }));
  g.show
    .command('earnings')
    .description('what renters paid for your machines, less the service fee (default: the server\'s today, UTC)')
    .option('-s, --start_date <date>', 'first day: epoch seconds, MM/DD/YYYY or YYYY-MM-DD (UTC)')
    .option('-e, --end_date <date>', 'last day (included)')
    .option('-m, --machine_id <id>', 'one machine', intArg('--machine_id'))
    .addHelpText('after', '\nExample:\n  gpuplane show earnings -s 2027-01-01 -e 2027-01-31')
    .action(action(async (ctx, o: { start_date?: string; end_date?: string; machine_id?: number }) => {
      // Without dates the server's today (its clock, virtual in the emulator).
      const sday = o.start_date ? dateArg('--start_date')(o.start_date) / DAY_S : undefined;
      const eday = o.end_date ? dateArg('--end_date')(o.end_date) / DAY_S : undefined;
      const r = await ctx.client.machines.earnings({ sday, eday, machineId: o.machine_id });
      ctx.out.print(r, () => {
        const s = r.summary;
        const lines = [
          `days ${utc(r.sday * DAY_S).slice(0, 10)} to ${utc(r.eday * DAY_S).slice(0, 10)}, service fee ${(r.service_fee * 100).toFixed(1)} %`,
          `renters paid $${s.gross.toFixed(2)} (GPU $${s.gpu_earn.toFixed(2)}, storage $${s.sto_earn.toFixed(2)}, bandwidth $${s.bw_earn.toFixed(2)}); fee $${s.fee.toFixed(2)}; you earn $${s.earn.toFixed(2)}`,
        ];
        for (const m of r.per_machine) lines.push(`machine ${m.machine_id}: $${m.earn.toFixed(2)}`);
        return lines.join('\n');
      });
    }));

  const list = verb('list', 'list: machine, machines (offer them for rent)');
  listOptions(list.command('machine').description('list a machine for rent, or change its listing').argument('<id>', 'machine id', intArg('id')))
    .addHelpText('after', '\nExample:\n  gpuplane list machine 12 -g 0.45 -b 0.2 -s 0.1 -e 12/31/2027')
    .action(action(async (ctx, id: number, o: ListOpts) => {
      const r = await ctx.client.machines.listMachine(listBody(id, o));
      ctx.out.print(r, () => r.msg);
    }));
  listOptions(list.command('machines').description('list several machines with the same options').argument('<ids...>', 'machine ids'))
    .addHelpText('after', '\nExample:\n  gpuplane list machines 12 13 -g 0.45')
    .action(action(async (ctx, ids: string[], o: ListOpts) => {
      const replies: Awaited<ReturnType<typeof ctx.client.machines.listMachine>>[] = [];
      for (const id of ids.map(intArg('id'))) replies.push(await ctx.client.machines.listMachine(listBody(id, o)));
      ctx.out.print(replies, () => replies.map((r) => r.msg).join('\n'));
    }));
  byMachineId(verb('unlist', 'unlist: machine (no new rentals; running ones continue)').command('machine'), 'stop offering a machine; running rentals continue', '\nExample:\n  gpuplane unlist machine 12', (ctx, id) => ctx.client.machines.unlist(id));
  g.set
    .command('min-bid')
    .description('the lowest interruptible bid of a machine, $/GPU/hour')
    .argument('<id>', 'machine id', intArg('id'))
    .requiredOption('--price <price>', '$/GPU/hour', numberArg('--price', 0))
    .addHelpText('after', '\nExample:\n  gpuplane set min-bid 12 --price 0.25')
    .action(action(async (ctx, id: number, o: { price: number }) => {
      const r = await ctx.client.machines.setMinBid(id, o.price);
      ctx.out.print(r, () => r.msg);
    }));
  g.set
    .command('defjob')
    .description('a machine\'s default job: your container on idle GPUs (recorded; not run yet)')
    .argument('<id>', 'machine id', intArg('id'))
    .requiredOption('--image <image>', 'docker image')
    .option('--price_gpu <price>', '$/GPU/hour', numberArg('--price_gpu', 0))
    .option('--price_inetu <price>', '$/GB', numberArg('--price_inetu', 0))
    .option('--price_inetd <price>', '$/GB', numberArg('--price_inetd', 0))
    .option('--args <args...>', 'arguments of the container')
    .addHelpText('after', '\nExample:\n  gpuplane set defjob 12 --image me/miner:latest --price_gpu 0.05 --args --threads 4')
    .action(action(async (ctx, id: number, o: { image: string; price_gpu?: number; price_inetu?: number; price_inetd?: number; args?: string[] }) => {
      const r = await ctx.client.machines.setDefaultJob({
        machine: id, image: o.image, price_gpu: o.price_gpu ?? null, price_inetu: o.price_inetu ?? null, price_inetd: o.price_inetd ?? null, args: o.args ?? null,
      });
      ctx.out.print(r, () => r.msg);
    }));
  byMachineId(verb('remove', 'remove: defjob').command('defjob'), 'remove a machine\'s default job', '\nExample:\n  gpuplane remove defjob 12', (ctx, id) => ctx.client.machines.removeDefaultJob(id));
  verb('schedule', 'schedule: maint')
    .command('maint')
    .description('announce a maintenance window to the machine\'s renters; no new rentals during it')
    .argument('<id>', 'machine id', intArg('id'))
    .requiredOption('--sdate <date>', 'start: epoch seconds, MM/DD/YYYY or YYYY-MM-DD (UTC)')
    .requiredOption('--duration <hours>', 'hours', numberArg('--duration', 0))
    .option('--maintenance_category <category>', 'power, internet, disk, gpu, software or other', 'not provided')
    .addHelpText('after', '\nExample:\n  gpuplane schedule maint 12 --sdate 1800003600 --duration 2 --maintenance_category power')
    .action(action(async (ctx, id: number, o: { sdate: string; duration: number; maintenance_category: string }) => {
      const r = await ctx.client.machines.scheduleMaintenance(id, dateArg('--sdate')(o.sdate), o.duration, o.maintenance_category);
      ctx.out.print(r, () => r.msg);
    }));
  byMachineId(verb('cancel', 'cancel: maint').command('maint'), 'cancel every maintenance window of a machine', '\nExample:\n  gpuplane cancel maint 12', (ctx, id) => ctx.client.machines.cancelMaintenance(id));
  byMachineId(verb('cleanup', 'cleanup: machine').command('machine'), 'delete a machine\'s expired instances', '\nExample:\n  gpuplane cleanup machine 12', (ctx, id) => ctx.client.machines.cleanup(id));
  g.delete
    .command('machine')
    .description('delete a machine (refused while clients have instances on it)')
    .argument('<id>', 'machine id', intArg('id'))
    .addHelpText('after', '\nExample:\n  gpuplane delete machine 12')
    .action(action(async (ctx, id: number) => {
      const r = await ctx.client.machines.remove(id);
      ctx.out.print(r, () => r.msg);
    }));
  program
    .command('reports')
    .description('renters\' reports about one of your machines')
    .argument('<id>', 'machine id', intArg('id'))
    .addHelpText('after', '\nExample:\n  gpuplane reports 12')
    .action(action(async (ctx, id: number) => {
      const r = await ctx.client.machines.reports(id);
      ctx.out.print(r, () => (r.length ? `reports: ${JSON.stringify(r, null, 2)}` : `machine ${id}: no reports`));
    }));
  verb('defrag', 'defrag: machines')
    .command('machines')
    .description('re-pack GPU assignments so larger offers appear')
    .argument('<ids...>', 'machine ids')
    .addHelpText('after', '\nExample:\n  gpuplane defrag machines 12 13')
    .action(action(async (ctx, ids: string[]) => {
      const r = await ctx.client.machines.defrag(ids.map(intArg('id')));
      ctx.out.print(r, () => r.msg);
    }));
}
