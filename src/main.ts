import { createServer } from 'node:net';
import { pino, type Logger } from 'pino';
import { chooseLogFormat, createLogger, logListening } from './platform/logging.js';
import type { FastifyInstance } from 'fastify';
import { buildApp, type Built } from './app.js';
import type { Config } from './config.js';
import { RealClock, VirtualClock, type Clock } from './platform/clock.js';
import { SecretBox } from './platform/crypto.js';
import type { Store } from './platform/db/connect.js';
import { openDatabase as openGpuplaneDatabase } from './database.js';
import { cryptoRandom, type Random } from './platform/random.js';
import { resolveSecretKey } from './platform/secret-key.js';
import { EMU_OWNER_CREDIT, OWNER_EMAIL } from './users/users-service.js';
import { consoleBuilt } from './webconsole/console-files.js';

/** Log bytes collected before a write: one write per twenty-odd request lines (about 150 bytes each). */
const LOG_BUFFER_BYTES = 4096;
/** The longest a logged line waits in that buffer on a quiet server. */
const LOG_FLUSH_MS = 200;

export interface Server extends Built {
  app: FastifyInstance;
  store: Store;
  clock: Clock;
  url: string;
  close(): Promise<void>;
}

export interface StartOptions {
  log?: Logger;
  random?: Random;
  /** Prints the generated owner key (default: to stdout). */
  announce?: (line: string) => void;
  /** Runs once the start-up work (seeding, the offer index) is done, before the server listens. */
  beforeListen?: () => void;
  pgSchema?: string;
}

/**
 * Thrown when the server cannot start for a reason outside the code: the port is taken, the database cannot be
 * opened. Its message is one line for the operator, naming the setting and the cause (and never a password).
 */
export class StartError extends Error {}

/** A database URL without its password, for messages. */
export function redactDatabaseUrl(url: string): string {
  if (!/^postgres(ql)?:\/\//.test(url)) return url;
  try {
    const u = new URL(url);
    if (u.password) u.password = '';
    u.searchParams.delete('password'); // libpq's other way to give it
    return u.toString().replace(/:@/, '@');
  } catch {
    return url.replace(/\/\/[^@/]*@/, '//').replace(/([?&])password=[^&]*&?/, '$1');
  }
}

/**
 * Binds `host:port` (port 0: a free one) before anything else happens, so that a taken port fails the start before
 * the owner is created or its key printed. It stays held until `release`, just before the app listens on it, so that
 * another process cannot take it while the app is being built.
 */
function reservePort(host: string, port: number): Promise<{ port: number; release(): Promise<void> }> {
  return new Promise((resolve, reject) => {
    // A client that connects meanwhile (an agent retrying while the server restarts) is reset at once: close() waits
    // for open connections, and a held one would keep the start-up from ever reaching listen.
    const probe = createServer((socket) => socket.destroy());
    probe.once('error', (err: NodeJS.ErrnoException) => {
      const why = err.code === 'EADDRINUSE' ? 'the address is already in use' : err.code === 'EACCES' ? 'permission denied' : err.message;
      reject(new StartError(`cannot listen on ${host}:${port} (GPUPLANE_HOST, GPUPLANE_PORT): ${why}`));
    });
    probe.listen(port, host, () => {
      const address = probe.address();
      const bound = typeof address === 'object' && address ? address.port : port;
      let released: Promise<void> | undefined;
      resolve({ port: bound, release: () => (released ??= new Promise<void>((done) => probe.close(() => done()))) });
    });
  });
}

/** Opens the database, or a StartError that names it (without its password), the setting, and the cause. */
async function openDatabase(config: Config, options: StartOptions): Promise<Store> {
  try {
    return await openGpuplaneDatabase(config.databaseUrl, { pgSchema: options.pgSchema, sqliteSync: config.sqliteSync, pgPoolSize: config.pgPoolSize });
  } catch (err) {
    const cause = err instanceof AggregateError && err.errors.length ? (err.errors[0] as Error).message : (err as Error).message;
    throw new StartError(`cannot open the database ${redactDatabaseUrl(config.databaseUrl)} (GPUPLANE_DATABASE_URL): ${cause}`);
  }
}

/**
 * What the first start prints: the owner's key, and where a person goes next (issue 29 item 12: the key alone left a
 * new user without the console's address or a way into it). The console signs in with an e-mail and a password, not
 * with a key, and the owner is made without a password: the line names the command that sets one, on this machine.
 */
export function ownerAnnouncement(key: string, config: Pick<Config, 'publicUrl' | 'consoleDir'>): string {
  const lines = [`gpuplane: created the owner account (${OWNER_EMAIL}); its API key, shown only this once:`, '', `    ${key}`, ''];
  lines.push('Command line: `npx gpuplane set api-key KEY`, with the key above, saves it for every later command.');
  if (consoleBuilt(config.consoleDir)) {
    lines.push(
      `Web console: ${config.publicUrl.replace(/\/+$/, '')}/ (it signs in with an e-mail and a password). The owner has no`,
      'password yet: on this machine, `npx gpuplane admin set-password` sets one (it opens the server\'s',
      `database, GPUPLANE_DATABASE_URL); then sign in there as ${OWNER_EMAIL}.`,
    );
  }
  return `${lines.join('\n')}\n`;
}

/** Opens the store, builds the app, binds the port, creates the owner on an empty database, and starts background work. */
export async function startServer(config: Config, options: StartOptions = {}): Promise<Server> {
  const reserved = await reservePort(config.host, config.port);
  if (config.port === 0) {
    const defaultUrl = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:0`;
    // The port URLs' default (`*.localhost` on the public URL's port) follows the port chosen, as the public URL does.
    config = {
      ...config,
      port: reserved.port,
      publicUrl: config.publicUrl === defaultUrl ? defaultUrl.replace(/:0$/, `:${reserved.port}`) : config.publicUrl,
      portUrls: config.portUrls.replace(/^(https?:\/\/\*\.localhost):0$/, `$1:${reserved.port}`),
    };
  }
  try {
    return await startOn(config, options, reserved);
  } finally {
    await reserved.release();
  }
}

async function startOn(config: Config, options: StartOptions, reserved: { release(): Promise<void> }): Promise<Server> {
  // Buffered writes: lines collect up to LOG_BUFFER_BYTES before a write (under load, a write per line cost more than
  // formatting the line), and wait at most LOG_FLUSH_MS on a quiet server. The write itself is synchronous (pino's
  // default): handing each to libuv's thread pool cost about three times the CPU per line. The start-up lines are
  // flushed at once (tools wait for them), and everything on close and on exit.
  const destination = options.log ? undefined : pino.destination({ dest: 1, sync: true, minLength: LOG_BUFFER_BYTES });
  const flushLog = () => destination?.flush();
  const flushTimer = destination ? setInterval(flushLog, LOG_FLUSH_MS).unref() : undefined;
  // Whatever ends the process (an uncaught error included), the lines it logged are written first.
  const flushOnExit = () => {
    try {
      destination?.flushSync();
    } catch {
      /* the process is exiting: nowhere left to report it */
    }
  };
  if (destination) process.once('exit', flushOnExit);
  // Readable lines on a terminal, JSON lines otherwise (GPUPLANE_LOG_FORMAT forces either).
  const format = chooseLogFormat(config.logFormat, process.stdout.isTTY);
  const log = options.log ?? (await createLogger({ level: config.logLevel, format, destination: destination!, colorize: process.stdout.isTTY && !process.env.NO_COLOR }));
  const random = options.random ?? cryptoRandom;
  const store = await openDatabase(config, options);
  const clock: Clock = config.clock === 'virtual' ? new VirtualClock(config.clockStart ?? Date.now() / 1000) : new RealClock();
  const secret = await resolveSecretKey(config.secretKey, config.databaseUrl, store, random);
  if (secret.generatedIn === 'database') {
    log.warn(
      'GPUPLANE_SECRET_KEY is not set: secrets at rest are encrypted with a key generated into this PostgreSQL database, '
        + 'shared by every process that uses it; set GPUPLANE_SECRET_KEY (the same value on every process) to keep the key out of the database',
    );
  }
  const secretBox = new SecretBox(secret.key, random);
  const built = await buildApp({ config, store, clock, random, log, secretBox });
  await built.scheduler.restoreVirtualNow();

  const owner = await built.services.users.ensureOwner(config.bootstrapApiKey, config.mode === 'emulator' ? EMU_OWNER_CREDIT : 0);
  if (owner.generatedKey) {
    // Printed once, straight to the terminal, never through the logger.
    (options.announce ?? ((line) => process.stdout.write(`${line}\n`)))(ownerAnnouncement(owner.generatedKey, config));
  }
  if (!owner.created && config.bootstrapApiKey !== undefined && !(await built.services.auth.resolve(config.bootstrapApiKey))) {
    // The variable only acts on an empty database; said aloud, because its key would otherwise just get 401.
    log.warn('GPUPLANE_BOOTSTRAP_API_KEY is set but ignored: the database already has users, and it is not one of their live keys '
      + '(it only creates the owner on an empty database; a new admin key: gpuplane admin create-key)');
  }
  await built.services.onStart?.();
  await built.services.emuLifecycle.beforeListen();
  options.beforeListen?.();

  await reserved.release();
  await built.app.listen({ host: config.host, port: config.port });
  const address = built.app.server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  built.scheduler.start();
  // Route schemas compile on first use, so listening comes sooner; the rest compile now, between requests.
  const compileStart = performance.now();
  built
    .compileSchemas()
    .then(() => log.info({ ms: Math.round(performance.now() - compileStart) }, 'route schemas compiled'))
    .catch((err) => log.error({ err }, 'a route schema does not compile'))
    .finally(flushLog);
  if (config.gateway) {
    // Issue 31 (gateway): SSH to the live instances, each on its ports of GPUPLANE_GATEWAY_PORTS (src/gateway/).
    await built.services.gateway.start();
    const { first, last } = config.gatewayPorts;
    log.info({ bind: config.gatewayBind, first, last, listening: built.services.gateway.listening().size }, `ssh gateway listening on ${config.gatewayBind} ports ${first}-${last} for the live instances`);
  }
  const url = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;
  // A server bound to every address is reached by its own parts (the emulator's in-process agents) on loopback.
  const selfHost = config.host === '0.0.0.0' ? '127.0.0.1' : config.host === '::' ? '[::1]' : config.host.includes(':') ? `[${config.host}]` : config.host;
  await built.services.emuLifecycle.afterListen({ url: `http://${selfHost}:${port}` });
  logListening(log, { url, port, mode: config.mode, clock: config.clock, db: config.databaseUrl.split(':')[0] });
  flushLog();

  let closed = false;
  return {
    ...built,
    store,
    clock,
    url,
    async close() {
      if (closed) return;
      closed = true;
      await built.services.emuLifecycle.close();
      await built.services.gateway.close();
      // Event streams and waits end now; they would otherwise hold the server open until their clients leave.
      built.services.instances.hub.close();
      await built.scheduler.stop();
      await built.app.close();
      await store.close();
      clearInterval(flushTimer);
      destination?.flushSync();
      process.off('exit', flushOnExit);
    },
  };
}
