/**
 * `gpuplane admin ...`: commands an operator runs on the server's machine, against its database directly (not
 * through the API): for when the API cannot help, such as a lost owner key or the owner's first password.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { ConfigError, loadConfig, SETTINGS } from '../config.js';
import { keysStore } from '../keys/keys-store.js';
import { keysServiceFactory } from '../keys/keys-service.js';
import { redactDatabaseUrl, StartError } from '../main.js';
import { RealClock } from '../platform/clock.js';
import { openDatabase } from '../database.js';
import { readCache } from '../platform/db/read-cache.js';
import { cryptoRandom } from '../platform/random.js';
import { usersStore } from '../users/users-store.js';
import { usersServiceFactory } from '../users/users-service.js';
import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH } from '../login/login-constants.js';
import { resolvePassword, type PasswordIO } from './password.js';

const DEFAULT_KEY_NAME = 'admin create-key';

export function adminHelp(): string {
  return [
    'Usage: gpuplane admin create-key [--database-url URL] [--name NAME]',
    '       gpuplane admin set-password [--database-url URL] [--email EMAIL] [--password-stdin]',
    '',
    'Run on the server\'s machine, against its database (not through the API).',
    '',
    'create-key     makes a new full-access API key for the owner account (or the oldest admin) and prints it once:',
    '               for when the owner key is lost.',
    'set-password   sets the password of the owner account (made without one), or of the account EMAIL, so that it',
    '               can log in to the web console; asked for on the terminal without echo, or read from standard input.',
    '',
    `  --database-url URL   the server's database (env ${SETTINGS.databaseUrl.env}, default ${SETTINGS.databaseUrl.default})`,
    `  --name NAME          the key's name (default "${DEFAULT_KEY_NAME}")`,
    '  --email EMAIL        set-password: the account (default: the owner)',
    '  --password-stdin     set-password: read the password from standard input',
  ].join('\n');
}

/** The process's streams; tests give their own. */
export interface AdminIO {
  stdin: PasswordIO['input'];
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown };
}
const processIO = (): AdminIO => ({ stdin: process.stdin, stdout: process.stdout, stderr: process.stderr });

const SUBCOMMANDS = ['create-key', 'set-password'];

/** Exit codes: 0 done, 1 no such account or the database cannot be opened, 2 a usage error. */
export async function admin(argv: string[], env: NodeJS.ProcessEnv = process.env, io: AdminIO = processIO()): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub === undefined || sub === '--help' || sub === '-h' || rest.includes('--help') || rest.includes('-h')) {
    io.stdout.write(`${adminHelp()}\n`);
    return sub === undefined ? 2 : 0;
  }
  if (!SUBCOMMANDS.includes(sub)) {
    io.stderr.write(`gpuplane admin: unknown command ${JSON.stringify(sub)}\n${adminHelp()}\n`);
    return 2;
  }
  let values: { 'database-url'?: string; name?: string; email?: string; 'password-stdin'?: boolean };
  let databaseUrl: string;
  let password = '';
  try {
    const options: ParseArgsConfig['options'] = sub === 'create-key'
      ? { 'database-url': { type: 'string' }, name: { type: 'string' } }
      : { 'database-url': { type: 'string' }, email: { type: 'string' }, 'password-stdin': { type: 'boolean' } };
    values = parseArgs({ args: rest, options, strict: true }).values as typeof values;
    // Only the database setting matters here; the rest of the server's settings are not read.
    databaseUrl = loadConfig({ [SETTINGS.databaseUrl.env]: values['database-url'] ?? env[SETTINGS.databaseUrl.env] }).databaseUrl;
    if (sub === 'set-password') {
      password = await resolvePassword({ passwordStdin: values['password-stdin'] }, { input: io.stdin, output: io.stderr });
      // The API's rule for a password (sign-up, reset), checked here since this path skips the API.
      if ([...password].length < PASSWORD_MIN_LENGTH || password.length > PASSWORD_MAX_LENGTH) throw new Error(`the password must have ${PASSWORD_MIN_LENGTH} to ${PASSWORD_MAX_LENGTH} characters`);
    }
  } catch (err) {
    io.stderr.write(`gpuplane admin: ${err instanceof ConfigError ? `configuration error: ${err.message}` : (err as Error).message}\n`);
    return 2;
  }
  let store;
  try {
    store = await openDatabase(databaseUrl);
  } catch (err) {
    const e = new StartError(`cannot open the database ${redactDatabaseUrl(databaseUrl)} (${SETTINGS.databaseUrl.env}): ${(err as Error).message}`);
    io.stderr.write(`gpuplane: ${e.message}\n`);
    return 1;
  }
  try {
    const clock = new RealClock();
    const keys = keysStore(store.db, store.dialect, readCache(store));
    const keysService = keysServiceFactory({ keys, clock, random: cryptoRandom });
    const users = usersServiceFactory({ db: store.db, users: usersStore(store.db), keysService, clock, random: cryptoRandom });
    if (sub === 'set-password') {
      const user = await users.setPassword(values.email, password);
      if (!user) {
        io.stderr.write(`gpuplane admin: ${redactDatabaseUrl(databaseUrl)} has no ${values.email === undefined ? 'admin account (start the server once: it creates the owner)' : `account ${values.email}`}\n`);
        return 1;
      }
      io.stdout.write(`the password of ${user.email} is set: log in to the web console with that address and it\n`);
      return 0;
    }
    const made = await users.createAdminKey(values.name ?? DEFAULT_KEY_NAME);
    if (!made) {
      io.stderr.write(`gpuplane admin: ${redactDatabaseUrl(databaseUrl)} has no admin account (start the server once: it creates the owner)\n`);
      return 1;
    }
    // Printed once, straight to the terminal, never through a logger.
    io.stdout.write(`a new API key for ${made.user.email} (admin), shown only this once:\n\n    ${made.secret}\n\n`);
    return 0;
  } finally {
    await store.close();
  }
}
