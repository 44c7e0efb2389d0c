/** Issue 34 (seed): `emu seed FILE`, a seed document applied to a running emulator (as GPUPLANE_EMU_SEED_FILE at start). */
import type { Command } from 'commander';
import type { EmuSeed } from '../../sdk/api/emulator.js';
import { action } from '../context.js';
import { readJsonArg } from '../json-file.js';

export function registerEmulatorSeed(emu: Command): void {
  emu
    .command('seed')
    .description('apply a seed file: machines, users with the API keys they chose and credit, templates, SSH keys, variables')
    .argument('<file>', 'a seed document, JSON ("-": standard input)')
    .addHelpText(
      'after',
      [
        '',
        'Users, keys, templates, SSH keys and variables already there are kept; machines are added each time',
        '("fleet": "none" offers only the seed\'s machines). The same file loads at start with GPUPLANE_EMU_SEED_FILE.',
        '',
        'Example:',
        '  gpuplane emu seed seed.json',
      ].join('\n'),
    )
    .action(
      action(async (ctx, file: string) => {
        const doc = await readJsonArg(file, ctx.io.stdin);
        const r = await ctx.client.emulator.seed(doc as EmuSeed);
        const made = r.users.filter((u) => u.created).length;
        const keys = r.users.reduce((n, u) => n + u.api_keys_added, 0);
        ctx.out.print(r, () =>
          [
            `users: ${made} created, ${r.users.length - made} already there; API keys added: ${keys}`,
            `machines added: ${r.machines.length}${r.removed_machines ? ` (${r.removed_machines} taken out of the offers)` : ''}`,
            `templates added: ${r.templates_added}, SSH keys added: ${r.ssh_keys_added}, variables added: ${r.env_vars_added}`,
          ].join('\n'),
        );
      }),
    );
}

