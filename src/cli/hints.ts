/**
 * The server's messages name HTTP routes, for every client ("authorize first (POST then PUT /api/v0/tfa/…)"); the
 * CLI names its own command for each instead. Every hint the CLI prints is a command, in backquotes, that works at
 * that point once its UPPERCASE placeholders are filled in (test/cli-hints.test.ts runs them).
 */

/**
 * Route mentions in server (and SDK) messages, and the commands that do the same. test/cli-hints.test.ts checks that
 * every route a message of src/ names is here.
 */
export const ROUTE_COMMANDS: Readonly<Record<string, string>> = {
  'POST then PUT /api/v0/tfa/authorize-new-method/': '`gpuplane tfa authorize`, then `gpuplane tfa authorize-finish --code CODE --secret SECRET`',
  'POST /api/v0/tfa/authorize-new-method/': '`gpuplane tfa authorize`',
  'PUT /api/v0/tfa/regen-backup-codes/': '`gpuplane tfa regen-codes` (see its --help for the code it needs)',
  'POST /api/v0/tfa/totp-setup/': '`gpuplane tfa totp-setup`',
  'POST /api/v0/tfa/sms/resend/': '`gpuplane tfa send-sms --resend --secret SECRET`',
  'POST /api/v0/tfa/sms/': '`gpuplane tfa send-sms --phone-number PHONE`',
  'POST /api/v0/team/': '`gpuplane create team --team_name NAME`',
  'DELETE /api/v0/auth/apikeys/{id}/': '`gpuplane delete api-key ID`',
  'POST /api/v0/users/verify-email/': '`gpuplane verify email --email EMAIL --code CODE`; a new code: `gpuplane verify email --email EMAIL --resend`',
  'POST /api/v0/users/reset-password/': '`gpuplane reset password --email EMAIL`',
  'POST /api/v0/auth/apikeys/ with team_id': '`gpuplane create api-key --team-id TEAM_ID`',
  'POST /api/v0/ssh/': '`gpuplane create ssh-key PUBLIC_KEY_FILE`',
  'POST /_emu/clock/advance': '`gpuplane emu advance SECONDS`',
  'POST /api/v0/instances/{id}/ports/{port}/token/': '`gpuplane create port-token ID PORT`',
};

/** Longest first, so that `POST then PUT /x` is replaced before `PUT /x`. */
const ROUTES = Object.keys(ROUTE_COMMANDS).sort((a, b) => b.length - a.length);

/** The message with each route it names replaced by the CLI command. */
export function inCliWords(msg: string): string {
  let out = msg;
  for (const route of ROUTES) out = out.split(route).join(ROUTE_COMMANDS[route]);
  return out;
}

/** A command as hints print it. */
export const hinted = (text: string) => `\`gpuplane ${text}\``;
