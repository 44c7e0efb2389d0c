/** `emu …`: the emulator control API (contract §2), for driving a local gpuplane from scripts and tests. */
import { InvalidArgumentError, Option, type Command } from 'commander';
import { action, intArg, numberArg } from '../context.js';
import { columnsOption, renderRecord, utc, type Column } from '../output.js';
import { registerEmulatorEvents } from './emulator-events.js';
import { registerEmulatorState } from './emulator-state.js';
import { registerEmulatorRecorder } from './emulator-recorder.js';
import { registerRequestFaults } from './emulator-request-faults.js';
import { registerTransitions } from './emulator-transitions.js';
import { registerEmulatorSeed } from './emulator-seed.js';

const outboxColumns: Column[] = [
  { key: 'id', header: 'ID', align: 'right' },
  { key: 'channel', header: 'Channel' },
  { key: 'to', header: 'To' },
  { key: 'code', header: 'Code' },
  { key: 'sent_at', header: 'Sent (UTC)', fmt: utc },
  { key: 'text', header: 'Text' },
];

/** A user named on the command line: a user id (digits) or an account e-mail, sent as such. */
function userArg(value: string): number | string {
  if (/^\d+$/.test(value)) return intArg('user')(value);
  if (value.includes('@')) return value;
  throw new InvalidArgumentError('user must be a user id or an account e-mail.');
}

export function registerEmulator(emu: Command): void {
  emu
    .command('clock')
    .description('show the service clock (Unix seconds and UTC)')
    .addHelpText('after', '\nExample:\n  gpuplane emu clock')
    .action(
      action(async (ctx) => {
        const r = await ctx.client.emulator.clock();
        ctx.out.print(r, () => `${r.now} (${utc(r.now)} UTC)`);
      }),
    );

  emu
    .command('advance')
    .description('move a virtual clock forward, running everything that falls due on the way')
    .argument('<seconds>', 'how far to move the clock, in seconds', numberArg('seconds', 0))
    .addHelpText('after', '\nExample:\n  gpuplane emu advance 3600')
    .action(
      action(async (ctx, seconds: number) => {
        const r = await ctx.client.emulator.advance(seconds);
        ctx.out.print(r, () => `clock now ${r.now} (${utc(r.now)} UTC)`);
      }),
    );

  emu
    .command('create-user')
    .description('create a user and a full-access API key for it')
    .requiredOption('--email <email>', 'e-mail of the new user')
    .option('--password <password>', 'password (for login)')
    .option('--full-name <name>', 'display name')
    .option('--credit <dollars>', 'starting credit in dollars (default 100)', numberArg('--credit', 0))
    .option('--admin', 'make the user an admin')
    .option('--unverified', 'leave the e-mail unverified')
    .option('--phone-number <e164>', 'phone number on file')
    .addHelpText('after', '\nExample:\n  gpuplane emu create-user --email ada@example.com --credit 50')
    .action(
      action(async (ctx, o: { email: string; password?: string; fullName?: string; credit?: number; admin?: boolean; unverified?: boolean; phoneNumber?: string }) => {
        const r = await ctx.client.emulator.createUser({
          email: o.email,
          password: o.password,
          full_name: o.fullName,
          credit: o.credit,
          is_admin: o.admin,
          email_verified: o.unverified ? false : undefined,
          phone_number: o.phoneNumber,
        });
        ctx.out.print(r, () => `created user ${r.user.id} <${r.user.email}>\nAPI key (shown once): ${r.api_key}`);
      }),
    );

  emu
    .command('outbox')
    .description('list the e-mails and SMS the service "sent", newest last')
    .option('--to <address>', 'only messages to this address or number')
    .addOption(new Option('--channel <channel>', 'only this channel').choices(['email', 'sms']))
    .addOption(columnsOption(outboxColumns))
    .addHelpText('after', '\nExample:\n  gpuplane emu outbox --to ada@example.com --channel email')
    .action(
      action(async (ctx, o: { to?: string; channel?: 'email' | 'sms' }) => {
        const r = await ctx.client.emulator.outbox({ to: o.to, channel: o.channel });
        ctx.out.print(r.messages, () =>
          ctx.out.table(r.messages, outboxColumns),
        );
      }),
    );

  emu
    .command('fault')
    .description('inject a fault: exited, unknown, offline, stall, recover (instance or machine); sms_error, sms_rate_limited, store_unavailable, challenge_store_error')
    .argument('<fault>', 'the fault')
    .option('--instance <id>', 'the instance to fault', intArg('--instance'))
    .option('--machine <id>', 'the machine to fault', intArg('--machine'))
    .option('--count <n>', 'how many sends/checks fail (provider faults)', intArg('--count'))
    .addHelpText('after', '\nExample:\n  gpuplane emu fault exited --instance 12')
    .action(
      action(async (ctx, fault: string, o: { instance?: number; machine?: number; count?: number }) => {
        const r = await ctx.client.emulator.fault({ fault, instance_id: o.instance, machine_id: o.machine, count: o.count });
        ctx.out.print(r, () => renderRecord(r));
      }),
    );

  emu
    .command('credit')
    .description('add credit (dollars) to a user, named by id or e-mail; a negative amount removes it')
    .argument('<user>', 'the user: id or account e-mail', userArg)
    .argument('<dollars>', 'dollars to add (negative to remove)', numberArg('dollars'))
    .addHelpText('after', '\nExample:\n  gpuplane emu credit ada@example.com 25\n  gpuplane emu credit 7 -5')
    .action(
      action(async (ctx, user: number | string, dollars: number) => {
        const r = await ctx.client.emulator.credit(user, dollars);
        ctx.out.print(r, () => `user ${user} credit now $${r.credit.toFixed(2)}`);
      }),
    );

  emu
    .command('add-machine')
    .description('add a simulated machine; its offers appear in search (unset fields: catalogue defaults)')
    .option('--gpu-name <name>', 'GPU model, e.g. "RTX 4090"')
    .option('--num-gpus <n>', 'GPUs in the machine', intArg('--num-gpus'))
    .option('--gpu-ram <mb>', 'memory per GPU, MB', numberArg('--gpu-ram', 1))
    .option('--price-gpu <dollars>', 'price per GPU per hour', numberArg('--price-gpu', 0))
    .option('--reliability <r>', 'reliability, 0 to 1', numberArg('--reliability', 0))
    .option('--geolocation <place>', 'e.g. "Oslo, NO"')
    .addHelpText('after', '\nExample:\n  gpuplane emu add-machine --gpu-name "H100 SXM" --num-gpus 8 --price-gpu 2.5')
    .action(
      action(async (ctx, o: { gpuName?: string; numGpus?: number; gpuRam?: number; priceGpu?: number; reliability?: number; geolocation?: string }) => {
        const r = await ctx.client.emulator.addMachine({
          gpu_name: o.gpuName,
          num_gpus: o.numGpus,
          gpu_ram: o.gpuRam,
          price_gpu: o.priceGpu,
          reliability: o.reliability,
          geolocation: o.geolocation,
        });
        ctx.out.print(r, () => `machine ${r.machine_id}, offers ${r.offer_ids.join(' ')}`);
      }),
    );

  emu
    .command('load')
    .description('set the load on a serverless endpoint; the simulated autoscaler follows it from its next run')
    .argument('<endpoint_id>', 'the endpoint', intArg('endpoint_id'))
    .argument('<load>', 'perf units per second', numberArg('load', 0))
    .addHelpText('after', '\nExample:\n  gpuplane emu load 3 250')
    .action(
      action(async (ctx, endpointId: number, load: number) => {
        const r = await ctx.client.emulator.setLoad(endpointId, load);
        ctx.out.print(r, () => `endpoint ${endpointId} load ${r.load}`);
      }),
    );

  emu
    .command('reset')
    .description('put the emulator back to a fresh, seeded state (the bootstrap key stays valid)')
    .addHelpText('after', '\nExample:\n  gpuplane emu reset')
    .action(
      action(async (ctx) => {
        const r = await ctx.client.emulator.reset();
        ctx.out.print(r, () => 'emulator reset');
      }),
    );
  // Issue 34, each from its own file: `emu save|restore`, `emu seed`, `emu request-fault …`, `emu event …`,
  // `emu transitions …` and `emu advance-instance`, `emu replay`.
  registerEmulatorState(emu);
  registerEmulatorSeed(emu);
  registerRequestFaults(emu);
  registerEmulatorEvents(emu);
  registerTransitions(emu);
  registerEmulatorRecorder(emu);
}
