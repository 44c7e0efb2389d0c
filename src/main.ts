import { createServer } from 'node:net';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { pino, type Logger } from 'pino';
import { chooseLogFormat, createLogger, logListening } from './platform/logging.js';
import type { FastifyInstance } from 'fastify';
import { buildApp, type Built } from './app.js';
import type { Config } from './config.js';
import { RealClock, VirtualClock, type Clock } from './platform/clock.js';
import { SecretBox } from './platform/crypto.js';
import { openStore, type Store } from './platform/db/connect.js';
import { cryptoRandom, type Random } from './platform/random.js';
import { EMU_OWNER_CREDIT } from './users/users-service.js';

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

/** Where generated files live: beside the SQLite file, or `./data`. */
function dataDir(config: Config): string {
  const m = /^sqlite:(.+)$/.exec(config.databaseUrl);
  return m && m[1] !== ':memory:' ? dirname(m[1]) : './data';
}

/** In emulator mode a missing GPUPLANE_SECRET_KEY is generated once into the data folder and reused. */
function resolveSecretKey(config: Config, random: Random): string {
  if (config.secretKey) return config.secretKey;
  const file = join(dataDir(config), 'secret.key');
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  mkdirSync(dirname(file), { recursive: true });
  const key = random.bytes(32).toString('hex');
  writeFileSync(file, `${key}\n`, { mode: 0o600 });
  return key;
}

export interface StartOptions {
  log?: Logger;
  random?: Random;
  /** Prints the generated owner key (default: to stdout). */
  announce?: (line: string) => void;
  pgSchema?: string;
}

/**
 * A free TCP port on `host`, for `--port 0`: picked before the app is built so absolute URLs name the real port. It
 * stays held until `release`, just before the app listens on it, so that another process (or an outgoing connection)
 * cannot take it while the app is being built.
 */
function reservePort(host: string): Promise<{ port: number; release(): Promise<void> }> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, host, () => {
      const address = probe.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      let released: Promise<void> | undefined;
      resolve({ port, release: () => (released ??= new Promise<void>((done) => probe.close(() => done()))) });
    });
  });
}

/** Opens the store, builds the app, creates the owner on an empty database, listens, and starts background work. */
export async function startServer(config: Config, options: StartOptions = {}): Promise<Server> {
  let reserved: Awaited<ReturnType<typeof reservePort>> | undefined;
  if (config.port === 0) {
    const defaultUrl = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:0`;
    reserved = await reservePort(config.host);
    const port = reserved.port;
    config = { ...config, port, publicUrl: config.publicUrl === defaultUrl ? defaultUrl.replace(/:0$/, `:${port}`) : config.publicUrl };
  }
  try {
    return await startOn(config, options, reserved);
  } finally {
    await reserved?.release();
  }
}

async function startOn(config: Config, options: StartOptions, reserved: { release(): Promise<void> } | undefined): Promise<Server> {
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
  const store = await openStore(config.databaseUrl, { pgSchema: options.pgSchema, sqliteSync: config.sqliteSync });
  const clock: Clock = config.clock === 'virtual' ? new VirtualClock(config.clockStart ?? Date.now() / 1000) : new RealClock();
  const secretBox = new SecretBox(resolveSecretKey(config, random), random);
  const built = await buildApp({ config, store, clock, random, log, secretBox });
  await built.scheduler.restoreVirtualNow();

  const owner = await built.services.users.ensureOwner(config.bootstrapApiKey, config.mode === 'emulator' ? EMU_OWNER_CREDIT : 0);
  if (owner.generatedKey) {
    // Printed once, straight to the terminal, never through the logger.
    (options.announce ?? ((line) => process.stdout.write(`${line}\n`)))(
      `gpuplane: created the owner account (${'owner@gpuplane.local'}); its API key, shown only this once:\n\n    ${owner.generatedKey}\n`,
    );
  }
  await built.services.onStart?.();

  await reserved?.release();
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
  const url = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;
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
      await built.scheduler.stop();
      await built.app.close();
      await store.close();
      clearInterval(flushTimer);
      destination?.flushSync();
      process.off('exit', flushOnExit);
    },
  };
}
