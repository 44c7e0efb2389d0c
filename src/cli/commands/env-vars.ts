/** Account environment variables: `show env-vars [-s]`, `create env-var`, `update env-var`, `delete env-var`. */
import type { Command } from 'commander';
import { action } from '../context.js';
import type { Groups } from '../program.js';

/** As the vastai client: values are masked unless asked for. */
const MASK = '*****';

export function registerEnvVars(g: Groups): void {
  g.show
    .command('env-vars')
    .description('list your environment variables (added to every new instance; values masked unless -s)')
    .option('-s, --show-values', 'print the values')
    .addHelpText('after', '\nExample:\n  gpuplane show env-vars -s')
    .action(
      action(async (ctx, opts: { showValues?: boolean }) => {
        const vars = await ctx.client.envVars.list();
        const shown = Object.fromEntries(Object.entries(vars).map(([k, v]) => [k, opts.showValues ? v : MASK]));
        ctx.out.print(shown, () => {
          const names = Object.keys(shown);
          return names.length ? names.map((k) => `${k}=${shown[k]}`).join('\n') : 'no environment variables';
        });
      }),
    );
  const write = (verb: Command, name: string, what: string, call: 'create' | 'update') =>
    verb
      .command(name)
      .description(what)
      .argument('<name>', 'variable name (letters, digits, _; not starting with a digit)')
      .argument('<value>', 'value')
      .addHelpText('after', `\nExample:\n  gpuplane ${call} env-var HF_TOKEN hf_xxx`)
      .action(
        action(async (ctx, key: string, value: string) => {
          const r = await ctx.client.envVars[call](key, value);
          ctx.out.print(r, () => r.msg);
        }),
      );
  write(g.create, 'env-var', 'create an environment variable for your new instances', 'create');
  write(g.update, 'env-var', 'change an environment variable', 'update');
  g.delete
    .command('env-var')
    .description('delete an environment variable')
    .argument('<name>', 'variable name')
    .addHelpText('after', '\nExample:\n  gpuplane delete env-var HF_TOKEN')
    .action(
      action(async (ctx, key: string) => {
        const r = await ctx.client.envVars.remove(key);
        ctx.out.print(r, () => r.msg);
      }),
    );
}
