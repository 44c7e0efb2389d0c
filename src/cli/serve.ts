import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { ConfigError, loadConfig, parseServeFlags, SETTINGS } from '../config.js';
import { startServer, StartError, type Server } from '../main.js';

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
    '',
    'Example:',
    '  gpuplane serve --port 9000 --clock virtual --database-url sqlite::memory:',
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

export async function serve(argv: string[]): Promise<void> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(`${serveHelp()}\n`);
    return;
  }
  let config;
  try {
    config = loadConfig(process.env, parseServeFlags(argv));
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
  started = startServer(config, { beforeListen: collectStartupGarbage });
  try {
    await started;
  } catch (err) {
    if (err instanceof StartError) {
      process.stderr.write(`gpuplane: ${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
}
