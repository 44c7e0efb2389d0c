/**
 * Sign-up and sessions (contract §3): `create account`, `verify email`, `logout`. `login` lives with the 2FA commands
 * (tfa.ts), since a login may need a second factor.
 */
import { rmSync } from 'node:fs';
import type { Command } from 'commander';
import { action, intArg, passwordIO, UsageError } from '../context.js';
import { apiKeyFile, readSavedApiKey } from '../config-file.js';
import { resolvePassword, type PasswordOpts } from '../password.js';
import { hinted } from '../hints.js';
import { columnsOption, utc, type Column } from '../output.js';

const sessionColumns: Column<Record<string, unknown>>[] = [
  { key: 'id', header: 'ID', align: 'right' },
  { key: 'client', header: 'Client', fmt: (v) => (v === 'ui' ? 'browser' : 'CLI') },
  { key: 'current', header: 'In use', fmt: (v) => (v ? 'yes' : '') },
  { key: 'created_at', header: 'Started (UTC)', fmt: utc },
  { key: 'last_used_at', header: 'Last used (UTC)', fmt: utc },
  { key: 'expires_at', header: 'Ends (UTC)', fmt: utc },
];

export function registerSession(program: Command, verb: (name: string, what: string) => Command): void {
  verb('create', 'create: account')
    .command('account')
    .description('sign up (no key needed); a verification code is e-mailed to the address, for `verify email`')
    .requiredOption('--email <email>', 'the account e-mail (also the login username)')
    .option('--password-stdin', 'read the password (at least 8 characters) from standard input')
    .option('--password <password>', 'the password (unsafe: it stays in your shell history and shows in `ps`)')
    .option('--full_name <name>', 'your name')
    .addHelpText('after', `
Without --password-stdin or --password, the password is asked for on the terminal, without echo.

Example:
  gpuplane create account --email ada@example.com --full_name "Ada L"
  gpuplane verify email --email ada@example.com --code 123456`)
    .action(
      action(async (ctx, o: { email: string; full_name?: string } & PasswordOpts) => {
        const password = await resolvePassword(o, passwordIO(ctx));
        const r = await ctx.client.auth.signUp({ email: o.email, password, full_name: o.full_name });
        ctx.out.print(r, () => `created account ${r.user.id} (${r.user.email}); ${r.msg}\nthen: ${hinted(`verify email --email ${r.user.email} --code CODE`)}`);
      }),
    );

  verb('verify', 'verify: email')
    .command('email')
    .description('verify an account e-mail address with the code sent to it (or --resend a new code)')
    .requiredOption('--email <email>', 'the account e-mail')
    .option('--code <code>', 'the code from the e-mail')
    .option('--resend', 'e-mail a new code instead')
    .option('--password-stdin', 'with --code: also read the password you signed up with from standard input (needed to keep it when the address was signed up more than once)')
    .addHelpText('after', '\nExample:\n  gpuplane verify email --email ada@example.com --code 123456\n  gpuplane verify email --email ada@example.com --resend')
    .action(
      action(async (ctx, o: { email: string; code?: string; resend?: boolean; passwordStdin?: boolean }) => {
        if (Boolean(o.resend) === (o.code !== undefined)) throw new UsageError('give exactly one of --code and --resend');
        if (o.resend && o.passwordStdin) throw new UsageError('--password-stdin goes with --code');
        // Issue 29 item 22: after a second sign-up of an address, only a code given with the latest password keeps it.
        const password = o.passwordStdin ? await resolvePassword({ passwordStdin: true }, passwordIO(ctx)) : undefined;
        const r = o.resend
          ? await ctx.client.auth.resendVerification({ email: o.email })
          : await ctx.client.auth.verifyEmail({ email: o.email, code: o.code!, ...(password === undefined ? {} : { password }) });
        ctx.out.print(r, () => r.msg);
      }),
    );

  // Issue 29 item 7: a forgotten password is not a lost account.
  verb('reset', '')
    .command('password')
    .description('forgot your password: e-mails a reset code (no key needed); with --code, sets a new password and ends every session')
    .requiredOption('--email <email>', 'the account e-mail')
    .option('--code <code>', 'the code from the e-mail')
    .option('--password-stdin', 'with --code: read the new password (at least 8 characters) from standard input')
    .option('--password <password>', 'with --code: the new password (unsafe: it stays in your shell history and shows in `ps`)')
    .addHelpText('after', `
With --code but without --password-stdin or --password, the new password is asked for on the terminal, without echo.

Example:
  gpuplane reset password --email ada@example.com
  gpuplane reset password --email ada@example.com --code 123456`)
    .action(
      action(async (ctx, o: { email: string; code?: string } & PasswordOpts) => {
        if (o.code === undefined) {
          if (o.password !== undefined || o.passwordStdin) throw new UsageError('first ask for a code (without a password), then give it with --code');
          const r = await ctx.client.auth.requestPasswordReset({ email: o.email });
          ctx.out.print(r, () => `${r.msg}\nthen: ${hinted(`reset password --email ${o.email} --code CODE`)}`);
          return;
        }
        const password = await resolvePassword(o, passwordIO(ctx));
        const r = await ctx.client.auth.resetPassword({ email: o.email, code: o.code, new_password: password });
        ctx.out.print(r, () => `${r.msg}\nthen: ${hinted(`login --username ${o.email}`)}`);
      }),
    );

  verb('show', '')
    .command('sessions')
    .description('list your login sessions (web console and CLI logins), the one in use marked')
    .addOption(columnsOption(sessionColumns))
    .addHelpText('after', '\nExample:\n  gpuplane show sessions')
    .action(
      action(async (ctx) => {
        const r = await ctx.client.auth.sessions();
        ctx.out.print(r.sessions, () => (r.sessions.length ? ctx.out.table(r.sessions, sessionColumns) : 'no sessions'));
      }),
    );
  verb('delete', '')
    .command('session')
    .description('end one of your login sessions (e.g. a browser left signed in elsewhere)')
    .argument('<id>', 'session id (from `show sessions`)', intArg('id'))
    .addHelpText('after', '\nExample:\n  gpuplane delete session 12')
    .action(
      action(async (ctx, id: number) => {
        const r = await ctx.client.auth.revokeSession(id);
        ctx.out.print(r, () => r.msg);
      }),
    );

  program
    .command('logout')
    .description('end the login session in use (from `gpuplane login`) and forget its saved key')
    .addHelpText('after', '\nExample:\n  gpuplane logout')
    .action(
      action(async (ctx) => {
        const r = await ctx.client.auth.logout();
        // The session is over on the server: a saved copy of that key is of no use any more.
        let forgot: string | undefined;
        if (ctx.keySource === 'saved' && readSavedApiKey(ctx.io.env) === ctx.client.transport.apiKey) {
          forgot = apiKeyFile(ctx.io.env);
          rmSync(forgot, { force: true });
        }
        ctx.out.print({ ...r, ...(forgot ? { removed: forgot } : {}) }, () => `${r.msg}${forgot ? `; removed the saved key ${forgot}` : ''}`);
      }),
    );
}
