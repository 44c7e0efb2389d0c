/** `set api-key`, `show user`: the account of the key in use. */
import { Argument, type Command } from 'commander';
import { action } from '../context.js';
import { saveApiKey } from '../config-file.js';
import { money2, renderRecord, utc, yesNo } from '../output.js';
import type { Groups } from '../program.js';

/** Longest key accepted by `set api-key` (a guard against pasting a file by mistake). */
const MAX_KEY_LENGTH = 512;

export function registerAccount(_program: Command, { set, show }: Groups): void {
  set
    .command('api-key')
    .description('save the API key that later commands use (file mode 0600, in your config directory)')
    .addArgument(new Argument('<key>', 'the API key'))
    .addHelpText('after', '\nExample:\n  gpuplane set api-key gpk_3f9c...')
    .action(
      action(async (ctx, key: string) => {
        if (key.trim() === '' || key.length > MAX_KEY_LENGTH || /\s/.test(key.trim())) {
          throw new Error('that does not look like an API key (empty, too long or with spaces)');
        }
        const file = saveApiKey(key.trim(), ctx.io.env);
        ctx.out.print({ success: true, file }, () => `API key saved to ${file}`);
      }),
    );

  show
    .command('user')
    .description('show the account of the API key in use')
    .addHelpText('after', '\nExample:\n  gpuplane show user')
    .action(
      action(async (ctx) => {
        const user = await ctx.client.account.currentUser();
        // The key is echoed by the API (client-compat); it is not printed, as the vastai client does not either.
        const { api_key: _key, ...shown } = user;
        ctx.out.print(shown, () =>
          renderRecord(shown as Record<string, unknown>, [
            { key: 'id' },
            { key: 'email' },
            { key: 'full_name', label: 'name' },
            { key: 'credit', label: 'credit', fmt: money2 },
            { key: 'is_admin', label: 'admin', fmt: yesNo },
            { key: 'tfa_status', label: '2FA' },
            { key: 'email_verified_at', label: 'e-mail verified', fmt: utc },
            { key: 'ssh_key', label: 'ssh key' },
            { key: 'created_at', label: 'created (UTC)', fmt: utc },
          ]),
        );
      }),
    );
}
