/**
 * `login` and the `tfa` commands (spec: 2FA endpoints): status, login, send-email/send-sms, authorize, totp-setup
 * (with the QR code drawn in the terminal), activate, update, regen-codes, delete.
 */
import { Option, type Command } from 'commander';
import qrcode from 'qrcode-terminal';
import { action, intArg, passwordIO, UsageError } from '../context.js';
import { saveApiKey } from '../config-file.js';
import { utc, yesNo } from '../output.js';
import { resolvePassword, type PasswordOpts } from '../password.js';
import { hinted } from '../hints.js';
import { TFA_AUTH_WINDOW_S } from '../../tfa/tfa-constants.js';

interface FactorOpts {
  method?: 'sms' | 'totp' | 'email';
  code?: string;
  secret?: string;
  methodId?: number;
  backupCode?: string;
}

/** The options that prove a factor: a code (with its secret for SMS/e-mail) or a backup code. */
function withFactor(cmd: Command): Command {
  return cmd
    .addOption(new Option('--method <method>', 'the method verifying: sms, totp or email').choices(['sms', 'totp', 'email']))
    .option('--code <code>', 'the 6-digit code')
    .option('--secret <secret>', 'the secret of the SMS or e-mail challenge (from send-sms/send-email, or login)')
    .option('--method-id <id>', 'which method, when you have several of one kind', intArg('--method-id'))
    .option('--backup-code <code>', 'a backup code (XXXX-XXXX-XXXX) instead of a code');
}

/** Empty fields are dropped, as the vastai client does with 2FA bodies. */
function factor(o: FactorOpts) {
  const b = { tfa_method: o.method, code: o.code, secret: o.secret, tfa_method_id: o.methodId, backup_code: o.backupCode };
  return Object.fromEntries(Object.entries(b).filter(([, v]) => v !== undefined && v !== '')) as typeof b;
}

const methodColumns = [
  { key: 'id', header: 'ID', align: 'right' as const },
  { key: 'method', header: 'Method' },
  { key: 'label', header: 'Label' },
  { key: 'phone_number', header: 'Phone' },
  { key: 'is_primary', header: 'Primary', fmt: yesNo },
  { key: 'fail_count', header: 'Fails', align: 'right' as const },
  { key: 'locked_until', header: 'Locked until (UTC)', fmt: utc },
  { key: 'last_used', header: 'Last used (UTC)', fmt: utc },
];

/** The ways to finish a login that needs a second factor, for the account's methods (`secret`: the login's). */
function tfaLoginHints(secret: string, methods: { method: string }[]): string[] {
  const kinds = new Set(methods.map((m) => m.method));
  const login = (how: string) => hinted(`tfa login --secret ${secret} ${how}`);
  return [
    ...(kinds.has('totp') ? [login('--method totp --code CODE')] : []),
    ...(kinds.has('sms') ? [`${hinted(`tfa send-sms --secret ${secret}`)}, then ${login('--method sms --code CODE')}`] : []),
    `${hinted(`tfa send-email --secret ${secret}`)}, then ${login('--method email --code CODE')}`,
    login('--backup-code BACKUP_CODE'),
  ];
}

const codes = (list: string[]) => `backup codes (shown only this once; keep them safe):\n${list.map((c) => `  ${c}`).join('\n')}`;

export function registerTfa(program: Command): void {
  program
    .command('login')
    .description('log in with e-mail and password; saves the session key for later commands (or asks for 2FA)')
    .requiredOption('--username <email>', 'account e-mail')
    .option('--password-stdin', 'read the password from standard input')
    .option('--password <password>', 'the password (unsafe: it stays in your shell history and shows in `ps`)')
    .addHelpText('after', `
Without --password-stdin or --password, the password is asked for on the terminal, without echo.

Example:
  gpuplane login --username ada@example.com
  gpuplane login --username ada@example.com --password-stdin < ~/.gpuplane-password`)
    .action(
      action(async (ctx, o: { username: string } & PasswordOpts) => {
        const password = await resolvePassword(o, passwordIO(ctx));
        const r = (await ctx.client.auth.login({ username: o.username, password, client: 'cli' })) as Record<string, any>;
        if (r.tfa_required) {
          ctx.out.print(r, () => `2FA required: finish the login with one of\n${tfaLoginHints(r.tfa_secret, r.methods ?? []).map((h) => `  ${h}`).join('\n')}`);
          return;
        }
        const file = saveApiKey(r.session_key, ctx.io.env);
        ctx.out.print({ success: true, file }, () => `logged in as ${r.email}; session key saved to ${file}`);
      }),
    );

  const tfa = program.command('tfa').description('two-factor authentication: status, login, send-email, send-sms, authorize, authorize-finish, totp-setup, activate, update, regen-codes, delete');

  tfa
    .command('status')
    .description('show whether 2FA is on, your methods, and the backup codes left')
    .addHelpText('after', '\nExample:\n  gpuplane tfa status')
    .action(
      action(async (ctx) => {
        const r = await ctx.client.tfa.status();
        ctx.out.print(r, () =>
          [
            `2FA: ${r.tfa_enabled ? 'enabled' : 'disabled'}; backup codes left: ${r.backup_codes_remaining}; new method authorized: ${yesNo(r.new_method_authorized)}`,
            r.methods.length ? ctx.out.table(r.methods, methodColumns) : 'no methods',
          ].join('\n'),
        );
      }),
    );

  withFactor(tfa.command('login'))
    .description('complete a login with a second factor; the session key it returns is saved and used from then on')
    .addHelpText('after', '\nExample:\n  gpuplane tfa login --method totp --code 123456\n  gpuplane tfa login --backup-code ABCD-EFGH-JKLM')
    .action(
      action(async (ctx, o: FactorOpts) => {
        const r = await ctx.client.tfa.login(factor(o));
        if (!r.session_key) throw new UsageError('the server returned no session key (UI sessions use a cookie)');
        const file = saveApiKey(r.session_key, ctx.io.env);
        ctx.out.print(r, () => `2FA login complete; session key saved to ${file}${r.backup_codes_remaining !== undefined ? `\nbackup codes left: ${r.backup_codes_remaining}` : ''}`);
      }),
    );

  tfa
    .command('send-email')
    .description('e-mail a verification code; prints the secret to pass with --secret')
    .option('--secret <secret>', 'the login tfa_secret (logged-out flow)')
    .addHelpText('after', '\nExample:\n  gpuplane tfa send-email')
    .action(
      action(async (ctx, o: { secret?: string }) => {
        const r = await ctx.client.tfa.sendEmail(o.secret ? { secret: o.secret } : {});
        ctx.out.print(r, () => `${r.msg}\nsecret: ${r.secret}`);
      }),
    );

  tfa
    .command('send-sms')
    .description('text a verification code; prints the secret to pass with --secret')
    .option('--phone-number <e164>', 'phone number, E.164 (+15551234567)')
    .option('--method-id <id>', 'use this SMS method’s number', intArg('--method-id'))
    .option('--secret <secret>', 'the login tfa_secret (logged-out flow)')
    .option('--resend', 'send the code of the current challenge again')
    .addHelpText('after', '\nExample:\n  gpuplane tfa send-sms --phone-number +15551234567')
    .action(
      action(async (ctx, o: { phoneNumber?: string; methodId?: number; secret?: string; resend?: boolean }) => {
        const body = { phone_number: o.phoneNumber, tfa_method_id: o.methodId, secret: o.secret };
        const r = o.resend ? await ctx.client.tfa.resendSms(body) : await ctx.client.tfa.sendSms(body);
        ctx.out.print(r, () => `${r.msg}\nsecret: ${r.secret}`);
      }),
    );

  tfa
    .command('authorize')
    .description('authorize adding a method, step 1: sends a code (e-mail for your first method) unless a backup code is given')
    .addOption(new Option('--method <method>', 'the method to verify with').choices(['sms', 'totp', 'email']))
    .option('--method-id <id>', 'which method, when ambiguous', intArg('--method-id'))
    .option('--backup-code <code>', 'authorize at once with a backup code')
    .addHelpText('after', '\nExample:\n  gpuplane tfa authorize --method email\n  gpuplane tfa authorize-finish --code 123456 --secret SECRET')
    .action(
      action(async (ctx, o: FactorOpts) => {
        const r = await ctx.client.tfa.authorizeStart(factor(o));
        ctx.out.print(r, () =>
          r.secret
            ? `finish with the code (e-mailed, texted, or from your authenticator app): ${hinted(`tfa authorize-finish --code CODE --secret ${r.secret}`)}`
            : (r.msg ?? 'authorized'),
        );
      }),
    );

  tfa
    .command('authorize-finish')
    .description(`authorize adding a method, step 2: opens a ${TFA_AUTH_WINDOW_S / 60}-minute window to add one`)
    .requiredOption('--code <code>', 'the code received')
    .requiredOption('--secret <secret>', 'the secret printed by tfa authorize')
    .addHelpText('after', '\nExample:\n  gpuplane tfa authorize-finish --code 123456 --secret SECRET')
    .action(
      action(async (ctx, o: { code: string; secret: string }) => {
        const r = await ctx.client.tfa.authorizeFinish({ code: o.code, secret: o.secret });
        ctx.out.print(r, () => r.msg);
      }),
    );

  tfa
    .command('totp-setup')
    .description('start adding an authenticator app: draws the QR code to scan and prints the secret')
    .addHelpText('after', `
Then, unless \`gpuplane tfa status\` says a new method is authorized: \`gpuplane tfa authorize\` and
\`gpuplane tfa authorize-finish\`. Last: \`gpuplane tfa activate CODE --secret SECRET\` with a code from the app.

Example:
  gpuplane tfa totp-setup`)
    .action(
      action(async (ctx) => {
        const r = await ctx.client.tfa.totpSetup();
        // Adding the method needs the authorization window: say how to open it when it is not open.
        const { new_method_authorized: authorized } = await ctx.client.tfa.status();
        ctx.out.print(r, () => {
          let qr = '';
          qrcode.generate(r.provisioning_uri, { small: true }, (s) => (qr = s));
          const activate = hinted(`tfa activate CODE --secret ${r.secret}`);
          const then = authorized
            ? `Then, with a code from the app: ${activate}`
            : `Then authorize adding a method with ${hinted('tfa authorize')} and the command it prints;\nthen add it with a code from the app: ${activate}`;
          return `${qr}\nScan it with your authenticator app, or enter the secret: ${r.secret}\n${r.provisioning_uri}\n${then}`;
        });
      }),
    );

  tfa
    .command('activate')
    .description('add a TOTP (or SMS) method with a code from it; the first method also prints your backup codes')
    .argument('<code>', 'the 6-digit code from the app (or the SMS)')
    .requiredOption('--secret <secret>', 'the TOTP secret from totp-setup (or the SMS challenge secret)')
    .option('--sms', 'add an SMS method (default TOTP)')
    .option('--phone-number <e164>', 'phone number of an SMS method')
    .option('--label <label>', 'a label, at most 30 characters')
    .addHelpText('after', '\nExample:\n  gpuplane tfa activate 123456 --secret JBSWY3DPEHPK3PXP --label phone')
    .action(
      action(async (ctx, code: string, o: { secret: string; sms?: boolean; phoneNumber?: string; label?: string }) => {
        const r = await ctx.client.tfa.confirmNew({ tfa_method: o.sms ? 'sms' : 'totp', code, secret: o.secret, phone_number: o.phoneNumber, label: o.label });
        ctx.out.print(r, () => [r.msg, ...(r.backup_codes ? [codes(r.backup_codes)] : [])].join('\n'));
      }),
    );

  tfa
    .command('update')
    .description('change the label of a method, or make it the primary one')
    .option('--method-id <id>', 'the method', intArg('--method-id'))
    .addOption(new Option('--method <method>', 'the method, when you have one of that kind').choices(['sms', 'totp']))
    .option('--label <label>', 'new label, at most 30 characters')
    .option('--set-primary', 'make it the primary method')
    .addHelpText('after', '\nExample:\n  gpuplane tfa update --method-id 2 --label "work phone" --set-primary')
    .action(
      action(async (ctx, o: { methodId?: number; method?: 'sms' | 'totp'; label?: string; setPrimary?: boolean }) => {
        if (o.label === undefined && !o.setPrimary) throw new UsageError('nothing to change: give --label or --set-primary');
        const r = await ctx.client.tfa.update({ tfa_method_id: o.methodId, tfa_method: o.method, label: o.label, is_primary: o.setPrimary || undefined });
        ctx.out.print(r, () => r.msg);
      }),
    );

  withFactor(tfa.command('regen-codes'))
    .description('replace your backup codes with 10 new ones (verify with a code or a backup code)')
    .addHelpText('after', '\nExample:\n  gpuplane tfa regen-codes --method totp --code 123456')
    .action(
      action(async (ctx, o: FactorOpts) => {
        const r = await ctx.client.tfa.regenBackupCodes(factor(o));
        ctx.out.print(r, () => `${r.msg}\n${codes(r.backup_codes)}`);
      }),
    );

  withFactor(tfa.command('delete'))
    .description('remove a 2FA method (removing the last one turns 2FA off)')
    .option('--id-to-delete <id>', 'the method to remove (default: the one verifying)', intArg('--id-to-delete'))
    .addHelpText('after', '\nExample:\n  gpuplane tfa delete --method totp --code 123456 --id-to-delete 3')
    .action(
      action(async (ctx, o: FactorOpts & { idToDelete?: number }) => {
        const r = await ctx.client.tfa.remove({ ...factor(o), target_id: o.idToDelete });
        ctx.out.print(r, () => `${r.msg}${r.remaining_methods !== undefined ? ` (${r.remaining_methods} left)` : ''}`);
      }),
    );
}
