/** Issue 34 (state): `emu save FILE` and `emu restore FILE`, the whole emulated world to a file and back. */
import { writeFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { action } from '../context.js';
import { readJsonArg } from '../json-file.js';
import { utc } from '../output.js';

export function registerEmulatorState(emu: Command): void {
  emu
    .command('save')
    .description('save the whole emulated world (fleet, accounts, keys, instances, charges, the clock) to a file')
    .argument('<file>', 'where to write the JSON document ("-": standard output)')
    .addHelpText('after', '\nThe file holds the world\'s secrets (instance keys, tokens) readable: keep it as you keep a key.\n\nExample:\n  gpuplane emu save world.json')
    .action(
      action(async (ctx, file: string) => {
        const doc = await ctx.client.emulator.saveState();
        const text = `${JSON.stringify(doc)}\n`;
        if (file === '-') {
          ctx.io.stdout.write(text);
          return;
        }
        await writeFile(file, text, { mode: 0o600 });
        const rows = Object.values(doc.rows).reduce((n, r) => n + r.length, 0);
        const summary = { file, tables: Object.keys(doc.rows).length, rows, saved_at: doc.saved_at };
        ctx.out.print(summary, () => `saved ${rows} rows of ${summary.tables} tables to ${file} (clock ${doc.saved_at} = ${utc(doc.saved_at ?? 0)} UTC)`);
      }),
    );

  emu
    .command('restore')
    .description('replace the whole emulated world with one saved by "gpuplane emu save" (same ids, keys and clock)')
    .argument('<file>', 'a file written by "gpuplane emu save" ("-": standard input)')
    .addHelpText('after', '\nUse a key of the saved world afterwards (start both emulators with the same GPUPLANE_BOOTSTRAP_API_KEY).\n\nExample:\n  gpuplane emu restore world.json')
    .action(
      action(async (ctx, file: string) => {
        const doc = await readJsonArg(file, ctx.io.stdin, 'write it with "gpuplane emu save FILE"');
        const r = await ctx.client.emulator.restoreState(doc as Parameters<typeof ctx.client.emulator.restoreState>[0]);
        ctx.out.print(r, () => `restored ${r.rows} rows of ${r.tables} tables; clock ${r.clock.now} (${utc(r.clock.now)} UTC)`);
      }),
    );
}

