/** `create subaccount`, `show subaccounts` (client-compat-more §b); fund one with `transfer credit`. */
import { InvalidArgumentError } from 'commander';
import { action, passwordIO } from '../context.js';
import { money2, yesNo } from '../output.js';
import { resolvePassword, type PasswordOpts } from '../password.js';
import { hinted } from '../hints.js';
import type { Groups } from '../program.js';

const columns = [
  { key: 'id', header: 'ID', align: 'right' as const },
  { key: 'username', header: 'Username' },
  { key: 'email', header: 'Email' },
  { key: 'credit', header: 'Credit', fmt: money2, align: 'right' as const },
  { key: 'host_only', header: 'Host only', fmt: yesNo },
  { key: 'email_verified', header: 'Email verified', fmt: yesNo },
];

/** As the vastai client's `--type`: `host` makes a host-only account; anything else (`client`) one that may rent. */
const accountType = (value: string): 'host' | 'client' => {
  const v = value.toLowerCase();
  if (v !== 'host' && v !== 'client') throw new InvalidArgumentError('--type must be host or client.');
  return v;
};

export function registerSubaccounts(g: Groups): void {
  g.create
    .command('subaccount')
    .description('make an account under yours; it logs in with this e-mail and password once its address is verified')
    .requiredOption('--email <email>', 'the subaccount\'s e-mail (its login name)')
    .option('--username <name>', 'a name for it, shown by `show subaccounts`')
    .option('--password-stdin', 'read its password (at least 8 characters) from standard input')
    .option('--password <password>', 'its password (unsafe: it stays in your shell history and shows in `ps`)')
    .option('--type <type>', 'host (may host machines but not rent) or client (default)', accountType)
    .addHelpText('after', `
Without --password-stdin or --password, the password is asked for on the terminal, without echo.

Example:
  gpuplane create subaccount --email bob@example.com --username bob --type host
  gpuplane transfer credit bob@example.com 20`)
    .action(
      action(async (ctx, o: { email: string; username?: string; type?: 'host' | 'client' } & PasswordOpts) => {
        const password = await resolvePassword(o, passwordIO(ctx));
        const r = await ctx.client.subaccounts.create({ email: o.email, password, username: o.username, host_only: o.type === 'host' });
        ctx.out.print(r, () => `${r.msg}\nthen: ${hinted(`verify email --email ${r.user.email} --code CODE`)}`);
      }),
    );

  g.show
    .command('subaccounts')
    .description('the accounts made under yours, with their balances')
    .addHelpText('after', '\nExample:\n  gpuplane show subaccounts')
    .action(
      action(async (ctx) => {
        const rows = await ctx.client.subaccounts.list();
        ctx.out.print(rows, () => (rows.length ? ctx.out.table(rows as unknown as Record<string, unknown>[], columns) : 'no subaccounts'));
      }),
    );
}
