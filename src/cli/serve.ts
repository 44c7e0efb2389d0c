import { ConfigError, loadConfig, parseServeFlags, SETTINGS } from '../config.js';
import { startServer } from '../main.js';

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
  const server = await startServer(config);
  const stop = async (signal: string) => {
    server.app.log.info({ signal }, 'shutting down');
    await server.close();
    process.exit(0);
  };
  process.once('SIGINT', () => void stop('SIGINT'));
  process.once('SIGTERM', () => void stop('SIGTERM'));
}
