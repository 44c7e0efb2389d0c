/**
 * The service's logger: JSON lines for machines, or one readable line per event for a person at a terminal.
 * Both carry the same content (a URL is redacted before it is logged, no header is ever logged); the readable form
 * only lays it out differently.
 */
import { pino, type DestinationStream, type Logger } from 'pino';
import type { Config } from '../config.js';

export type LogFormat = 'json' | 'pretty';

/** `auto` is pretty on a terminal and JSON anywhere else (a file, a pipe, a log collector). */
export function chooseLogFormat(setting: Config['logFormat'], stdoutIsTTY: boolean | undefined): LogFormat {
  if (setting === 'auto') return stdoutIsTTY ? 'pretty' : 'json';
  return setting;
}

/** The start of the start-up line, `gpuplane listening on http://127.0.0.1:8080 (emulator mode, real clock, sqlite)`. */
const LISTENING = 'gpuplane listening on ';

export interface ListeningInfo {
  url: string;
  port: number;
  mode: Config['mode'];
  clock: Config['clock'];
  db: string;
}

/** Logs the start-up line: a sentence in either format, and its parts as fields for tools reading the JSON. */
export function logListening(log: Logger, info: ListeningInfo): void {
  log.info(info, `${LISTENING}${info.url} (${info.mode} mode, ${info.clock} clock, ${info.db})`);
}

export interface LoggerOptions {
  level: Config['logLevel'];
  format: LogFormat;
  destination: DestinationStream;
  /** Colours in pretty lines (a terminal). @default false */
  colorize?: boolean;
}

/**
 * pino over `destination`. Pretty lines are formatted in this thread, synchronously, by pino-pretty's formatter (not
 * a worker transport, whose lines could be lost on a crash); pino-pretty is loaded only when pretty is chosen.
 */
export async function createLogger(options: LoggerOptions): Promise<Logger> {
  const settings = { level: options.level, base: { pid: process.pid } };
  if (options.format === 'json') return pino(settings, options.destination);
  const { prettyFactory } = await import('pino-pretty');
  const pretty = prettyFactory({
    colorize: options.colorize ?? false,
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: 'pid,hostname',
    singleLine: true,
  });
  const out = options.destination;
  return pino(settings, { write: (line: string) => out.write(pretty(readable(JSON.parse(line)))) });
}

/** A request line says `GET /api/v0/users/current 200 0.4 ms user 3`; the start-up line is its sentence alone. */
function readable(entry: Record<string, unknown>): Record<string, unknown> {
  const { level, time, msg } = entry;
  if (msg === 'request') {
    const { method, url, status, ms, user } = entry;
    return { level, time, msg: `${method} ${url} ${status} ${ms} ms${user === undefined ? '' : ` user ${user}`}` };
  }
  if (typeof msg === 'string' && msg.startsWith(LISTENING)) return { level, time, msg };
  return entry;
}
