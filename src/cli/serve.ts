import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { pino, type Logger } from 'pino';
import { ConfigError, loadConfig, parseServeFlags, SETTINGS, type Config } from '../config.js';
import { startServer, StartError, type Server } from '../main.js';
import { SeedFileError } from '../emulator/emu-seed/seed-service.js';
import { chooseLogFormat, createLogger } from '../platform/logging.js';

export function serveHelp(): string {
  const rows = Object.values(SETTINGS).map(
    (s) => `  --${s.flag.padEnd(20)} ${s.env.padEnd(28)} ${s.help}${'default' in s && s.default ? ` (default ${s.default})` : ''}`,
  );
  return [
    'Usage: gpuplane serve [--flag value ...]',
    '',
    'Starts the gpuplane server. Every flag mirrors an environment variable; a flag wins over its variable.',
    '',
    ...rows,
    `  --${'emulator'.padEnd(20)} ${''.padEnd(28)} for test suites and CI: emulator mode on a free port (unless --port or GPUPLANE_PORT),`,
    `  ${''.padEnd(22)} ${''.padEnd(28)} an in-memory database (unless a database URL is given), logs on stderr, and one line on`,
    `  ${''.padEnd(22)} ${''.padEnd(28)} stdout once ready (seed file and init scripts done): GPUPLANE_URL=http://127.0.0.1:PORT`,
    '',
    'Examples:',
    '  gpuplane serve --port 9000 --clock virtual --database-url sqlite::memory:',
    '  gpuplane serve --emulator --emu-seed-file seed.json',
  ].join('\n');
}

/**
 * How far V8 lets the old generation grow past what the last full collection left live before it runs the next one,
 * percent. Left to itself V8 lets it grow to a multiple of that, and under load the server fills it with short-lived
 * request objects that outlived two young collections: 32 connections of offer searches took the old generation from
 * 75 to 260 MB used between full collections, and resident memory with ~100,000 offers swung between 280 and 560 MB,
 * so what the `offers` bench read depended on when it looked (250–414 MB). At 40% it read 258–262 MB, at 25% 254–255
 * MB, searching as fast as without within the noise (issue 16: at most 300 MB; docs/PERFORMANCE.md).
 * Set here, for the server process only: the tests build their apps in their own processes with V8's defaults.
 */
export const HEAP_GROWING_PERCENT = 40;

/**
 * One full garbage collection once the start-up work is done, before listening. Loading the fleet (~100,000 offers:
 * rows, JSON, the index's columns) leaves garbage that V8 would keep, and size the heap by, for as long as requests
 * keep it busy: the offers bench's server grew from 380 to 600 MB under load without this, and from its working size
 * to about 260 MB with it (issue 16: resident memory with ~100,000 offers; docs/PERFORMANCE.md). V8 offers no other
 * way to ask for a collection than `--expose-gc`. Here, in the server process only, as the heap flag above: an app
 * built by a test has nothing to gain from it.
 */
function collectStartupGarbage(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}

/** The secret key of `serve --emulator` on its default in-memory database: not a secret, the data is a test's. */
export const EMULATOR_MEMORY_SECRET_KEY = 'gpuplane-emulator-in-memory-database-not-a-secret';

/**
 * `--emulator` (issue 34 item 6), the one line a CI job starts the emulator with: emulator mode, a free port and an
 * in-memory database unless the flags or the environment name them. A boolean, unlike every setting's flag, so it is
 * taken out here before the settings' flags are read.
 */
export function emulatorFlags(argv: string[], env: NodeJS.ProcessEnv): { emulator: boolean; flags: ReturnType<typeof parseServeFlags> } {
  const emulator = argv.includes('--emulator');
  const flags = parseServeFlags(argv.filter((a) => a !== '--emulator'));
  if (!emulator) return { emulator, flags };
  if (flags.mode !== undefined && flags.mode !== 'emulator') throw new ConfigError(`--emulator runs emulator mode; it cannot be combined with --mode ${flags.mode}`);
  flags.mode = 'emulator';
  if (flags.port === undefined && !env[SETTINGS.port.env]) flags.port = '0';
  if (flags.databaseUrl === undefined && !env[SETTINGS.databaseUrl.env]) {
    flags.databaseUrl = 'sqlite::memory:';
    // Otherwise a key would be generated into ./data/secret.key, a file left in the CI job's checkout for a database
    // that dies with the process. A fixed one (emulator mode, test data only) keeps a state saved by one such run
    // readable by the next (gpuplane emu save / restore).
    if (flags.secretKey === undefined && !env[SETTINGS.secretKey.env]) flags.secretKey = EMULATOR_MEMORY_SECRET_KEY;
  }
  return { emulator, flags };
}

/** With --emulator the log goes to stderr: stdout carries the URL line alone, and a test that stops reading it never blocks the server. */
function stderrLogger(config: Config): Promise<Logger> {
  return createLogger({
    level: config.logLevel,
    format: chooseLogFormat(config.logFormat, process.stderr.isTTY),
    destination: pino.destination({ dest: 2, sync: true }),
    colorize: process.stderr.isTTY && !process.env.NO_COLOR,
  });
}

export async function serve(argv: string[]): Promise<void> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(`${serveHelp()}\n`);
    return;
  }
  let config;
  let emulator = false;
  try {
    const parsed = emulatorFlags(argv, process.env);
    emulator = parsed.emulator;
    config = loadConfig(process.env, parsed.flags);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`gpuplane: configuration error: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  // The handlers are in place before the start begins: a signal that arrives while starting stops the server as soon
  // as it has started (the default action would kill it mid-start, or right after its listening line).
  let stopping = false;
  let started: Promise<Server> | undefined;
  const deadlineS = config.shutdownTimeout;
  const stop = async (signal: string) => {
    if (stopping) {
      // A second signal while shutting down: the operator insists.
      process.stderr.write(`gpuplane: ${signal} again: exiting now\n`);
      process.exit(1);
    }
    stopping = true;
    const server = await started!.catch(() => undefined);
    if (!server) return; // the start failed and reports it itself
    server.app.log.info({ signal, deadline_s: deadlineS }, 'shutting down');
    // In-flight requests get until the deadline; then their connections are cut and the exit says it was not clean.
    setTimeout(() => {
      server.app.log.warn({ deadline_s: deadlineS }, 'shutdown deadline passed: closing open connections');
      server.app.server.closeAllConnections();
      process.exit(1);
    }, deadlineS * 1000).unref();
    await server.close();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
  setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
  const log = emulator ? await stderrLogger(config) : undefined;
  // With --emulator stdout carries the URL line alone: a generated owner key is shown on stderr, with the log.
  const announce = emulator ? (line: string) => process.stderr.write(`${line}\n`) : undefined;
  started = startServer(config, { beforeListen: collectStartupGarbage, log, announce });
  let server: Server;
  try {
    server = await started;
  } catch (err) {
    if (err instanceof StartError) {
      process.stderr.write(`gpuplane: ${err.message}\n`);
      process.exit(1);
    }
    if (err instanceof SeedFileError) {
      process.stderr.write(`gpuplane: configuration error: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  if (emulator) {
    // Once the seed file and the init scripts are done (/readyz 200): the line a CI step waits for and parses.
    await server.services.ops.whenReady();
    const port = new URL(server.url).port;
    const host = config.host === '0.0.0.0' ? '127.0.0.1' : config.host === '::' ? '[::1]' : new URL(server.url).hostname;
    process.stdout.write(`GPUPLANE_URL=http://${host}:${port}\n`);
  }
}
