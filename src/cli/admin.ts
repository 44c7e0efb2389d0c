/**
 * `gpuplane admin ...`: commands an operator runs on the server's machine, against its database directly (not
 * through the API): for when the API cannot help, such as a lost owner key.
 */
import { parseArgs } from 'node:util';
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

const DEFAULT_KEY_NAME = 'admin create-key';

export function adminHelp(): string {
  return [
    'Usage: gpuplane admin create-key [--database-url URL] [--name NAME]',
    '',
    'Run on the server\'s machine, against its database (not through the API). Makes a new full-access API key for the',
    'owner account (or the oldest admin) and prints it once: for when the owner key is lost.',
    '',
    `  --database-url URL   the server's database (env ${SETTINGS.databaseUrl.env}, default ${SETTINGS.databaseUrl.default})`,
    `  --name NAME          the key's name (default "${DEFAULT_KEY_NAME}")`,
  ].join('\n');
}

/** Exit codes: 0 the key was printed, 1 no admin or the database cannot be opened, 2 a usage error. */
export async function admin(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub === undefined || sub === '--help' || sub === '-h' || rest.includes('--help') || rest.includes('-h')) {
    process.stdout.write(`${adminHelp()}\n`);
    return sub === undefined ? 2 : 0;
  }
  if (sub !== 'create-key') {
    process.stderr.write(`gpuplane admin: unknown command ${JSON.stringify(sub)}\n${adminHelp()}\n`);
    return 2;
  }
  let values: { 'database-url'?: string; name?: string };
  let databaseUrl: string;
  try {
    values = parseArgs({ args: rest, options: { 'database-url': { type: 'string' }, name: { type: 'string' } }, strict: true }).values;
    // Only the database setting matters here; the rest of the server's settings are not read.
    databaseUrl = loadConfig({ [SETTINGS.databaseUrl.env]: values['database-url'] ?? env[SETTINGS.databaseUrl.env] }).databaseUrl;
  } catch (err) {
    process.stderr.write(`gpuplane admin: ${err instanceof ConfigError ? `configuration error: ${err.message}` : (err as Error).message}\n`);
    return 2;
  }
  let store;
  try {
    store = await openDatabase(databaseUrl);
  } catch (err) {
    const e = new StartError(`cannot open the database ${redactDatabaseUrl(databaseUrl)} (${SETTINGS.databaseUrl.env}): ${(err as Error).message}`);
    process.stderr.write(`gpuplane: ${e.message}\n`);
    return 1;
  }
  try {
    const clock = new RealClock();
    const keys = keysStore(store.db, store.dialect, readCache(store));
    const keysService = keysServiceFactory({ keys, clock, random: cryptoRandom });
    const users = usersServiceFactory({ db: store.db, users: usersStore(store.db), keysService, clock, random: cryptoRandom });
    const made = await users.createAdminKey(values.name ?? DEFAULT_KEY_NAME);
    if (!made) {
      process.stderr.write(`gpuplane admin: ${redactDatabaseUrl(databaseUrl)} has no admin account (start the server once: it creates the owner)\n`);
      return 1;
    }
    // Printed once, straight to the terminal, never through a logger.
    process.stdout.write(`a new API key for ${made.user.email} (admin), shown only this once:\n\n    ${made.secret}\n\n`);
    return 0;
  } finally {
    await store.close();
  }
}
