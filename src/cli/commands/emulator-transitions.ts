/** `emu transitions …` and `emu advance-instance` (issue 34 item 4): transitions under control. */
import { Argument, Option, type Command } from 'commander';
import type { Transition, TransitionRequest } from '../../sdk/api/emulator.js';
import { action, intArg, numberArg } from '../context.js';
import { columnsOption, counted, renderRecord, utc, type Column } from '../output.js';

const transitionColumns: Column[] = [
  { key: 'kind', header: 'Kind' },
  { key: 'instance_id', header: 'Instance', align: 'right' },
  { key: 'mode', header: 'Mode' },
  { key: 'seconds', header: 'Seconds', align: 'right', fmt: (v) => (v === null ? '-' : String(v)) },
  { key: 'updated_at', header: 'Set (UTC)', fmt: utc },
];

/** A rule in words: `instances: manual`, `instance 12: delay 30 s`. */
export function ruleText(t: Transition): string {
  const who = t.instance_id === null ? `${t.kind}s` : `${t.kind} ${t.instance_id}`;
  return `${who}: ${t.mode}${t.mode === 'delay' ? ` ${t.seconds} s` : ''}`;
}

export function registerTransitions(emu: Command): void {
  const group = emu
    .command('transitions')
    .description("time the simulated hosts' work for instances: immediate, after a delay of service time, manual (advance each), or the seeded default");

  group
    .command('set')
    .description("set the rule of every instance, or of one (--instance), overriding the kind's")
    .addArgument(new Argument('<mode>', 'immediate, delay (with --seconds), manual, or default').choices(['immediate', 'delay', 'manual', 'default']))
    .option('--seconds <n>', 'delay: seconds of service time from the change to running', numberArg('--seconds', 0))
    .option('--instance <id>', 'only this instance', intArg('--instance'))
    .addOption(new Option('--kind <kind>', 'the resource kind').choices(['instance']).default('instance'))
    .addHelpText(
      'after',
      '\nExample:\n  gpuplane emu transitions set immediate\n  gpuplane emu transitions set delay --seconds 30\n' +
        '  gpuplane emu transitions set manual --instance 12\n  gpuplane emu transitions set default --instance 12',
    )
    .action(
      action(async (ctx, mode: TransitionRequest['mode'], o: { seconds?: number; instance?: number; kind: 'instance' }) => {
        const r = await ctx.client.emulator.setTransition({ kind: o.kind, mode, seconds: o.seconds, instance_id: o.instance });
        ctx.out.print(r, () => `${ruleText(r.transition)}\n${renderRecord(r.transition)}`);
      }),
    );

  group
    .command('list')
    .description('list the rules, the slow-pull windows open now, and the seeded timing')
    .addOption(columnsOption(transitionColumns))
    .addHelpText('after', '\nExample:\n  gpuplane emu transitions list')
    .action(
      action(async (ctx) => {
        const r = await ctx.client.emulator.transitions();
        ctx.out.print(r, () => {
          const lines = [r.transitions.length === 0 ? 'no transition rules' : ctx.out.table(r.transitions, transitionColumns)];
          for (const w of r.slow_pulls) {
            lines.push(`slow pull on machine ${w.machine_id}: ${w.pull_seconds} s per pull${w.until === null ? '' : ` until ${utc(w.until)} UTC`} (${w.ref})`);
          }
          lines.push(`default: the seeded boot time, ${r.default_boot_seconds.min}-${r.default_boot_seconds.max} s`);
          return lines.join('\n');
        });
      }),
    );

  group
    .command('clear')
    .description("remove every rule, or one instance's (--instance): back to the seeded timing")
    .option('--instance <id>', "only this instance's rule", intArg('--instance'))
    .addHelpText('after', '\nExample:\n  gpuplane emu transitions clear\n  gpuplane emu transitions clear --instance 12')
    .action(
      action(async (ctx, o: { instance?: number }) => {
        const r = await ctx.client.emulator.clearTransitions(o.instance);
        ctx.out.print(r, () => `removed ${counted(r.removed, 'transition rule')}`);
      }),
    );

  emu
    .command('advance-instance')
    .description('move an instance to its next state now (provisioning, loading, running; a pending stop), whatever its rule')
    .argument('<id>', 'the instance', intArg('id'))
    .addHelpText('after', '\nExample:\n  gpuplane emu advance-instance 12')
    .action(
      action(async (ctx, id: number) => {
        const r = await ctx.client.emulator.advanceInstance(id);
        ctx.out.print(r, () => `instance ${id}: ${r.actual_status ?? 'provisioning'}`);
      }),
    );
}
