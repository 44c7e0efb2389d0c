/**
 * What every client command shares: where the server is, which key to use, how to print, and how failures end the
 * process (the server's message on stderr and a non-zero exit code).
 */
import { InvalidArgumentError, type Command } from 'commander';
import { createClient, type GpuplaneClient } from '../sdk/client.js';
import { GpuplaneError, InstanceFailedError, WaitTimeoutError } from '../sdk/errors.js';
import { readSavedApiKey } from './config-file.js';
import { hinted, inCliWords } from './hints.js';
import { runOf, type CliIO, type CliRun, type CliStream } from './io.js';
import { makeOut, outputWidth, type Out, type TableOpts } from './output.js';
import type { PasswordIO } from './password.js';

export const DEFAULT_URL = 'http://127.0.0.1:8080';

/** Exit codes, documented in `gpuplane --help`; `interrupted` is the shell's own for a SIGINT (128 + 2). */
export const EXIT = { error: 1, usage: 2, instanceFailed: 3, timeout: 4, interrupted: 130 } as const;

/** A mistake on the command line (bad query, unknown field): reported before anything is sent. */
export class UsageError extends Error {}

/** The run was interrupted (Ctrl-C); the message says what goes on and how to pick it up again. */
export class InterruptedError extends Error {}

export interface Ctx {
  client: GpuplaneClient;
  out: Out;
  raw: boolean;
  url: string;
  /** Where the key came from, for the hint on a 401. */
  keySource: 'flag' | 'env' | 'saved' | 'none';
  /** The run's streams and environment. */
  io: CliIO;
  /** The run: its exit code (`ctx.run.exitCode = …`) and the words after `--args`. */
  run: CliRun;
}

/** Where a password prompt reads and writes: the run's standard input and standard error. */
export const passwordIO = (ctx: Ctx): PasswordIO => ({ input: ctx.io.stdin, output: ctx.io.stderr });

interface GlobalOpts {
  url?: string;
  apiKey?: string;
  raw?: boolean;
  /** `--columns`, on the commands that print a table. */
  columns?: TableOpts['columns'];
}

/**
 * The server's base URL. The API's own prefix is accepted and dropped (`http://host/api/v0/` is the server at
 * `http://host`), since the client adds it to every path: users copy URLs from the docs with the prefix.
 */
export function serverUrl(given: string): string {
  return given.replace(/\/+$/, '').replace(/\/api\/v[01]$/, '');
}

/** `hasColumns`: the command has a `--columns` option (for the note under a table that had to leave columns out). */
export function resolveCtx(g: GlobalOpts, run: CliRun, hasColumns = false): Ctx {
  const { io } = run;
  const { env } = io;
  const url = serverUrl(g.url ?? env.GPUPLANE_URL ?? DEFAULT_URL);
  try {
    const u = new URL(url);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('scheme');
  } catch {
    throw new UsageError(`--url must be an http:// or https:// URL, got ${JSON.stringify(url)}`);
  }
  let apiKey = g.apiKey;
  let keySource: Ctx['keySource'] = 'flag';
  if (!apiKey && env.GPUPLANE_API_KEY) [apiKey, keySource] = [env.GPUPLANE_API_KEY, 'env'];
  if (!apiKey) [apiKey, keySource] = [readSavedApiKey(env), 'saved'];
  if (!apiKey) keySource = 'none';
  const raw = g.raw === true;
  const tables = { width: outputWidth(io.stdout, env), columns: g.columns, choosable: hasColumns };
  const out = makeOut(raw, (s) => void io.stdout.write(s), tables);
  return { client: createClient({ url, apiKey }), out, raw, url, keySource, io, run };
}

export function reportError(err: unknown, raw: boolean, keySource: Ctx['keySource'] | undefined, stderr: CliStream): number {
  const write = (s: string) => stderr.write(`${s}\n`);
  if (err instanceof UsageError) {
    write(`gpuplane: ${err.message}`);
    return EXIT.usage;
  }
  if (err instanceof InterruptedError) {
    write(`gpuplane: ${err.message}`);
    return EXIT.interrupted;
  }
  if (err instanceof GpuplaneError) {
    if (raw) write(JSON.stringify(err.body ?? { success: false, error: err.error, msg: err.msg }));
    else {
      const where = err.status ? `HTTP ${err.status}, ${err.error}` : err.error;
      write(`gpuplane: ${inCliWords(err.msg)} (${where})`);
      if (err.status === 401 && keySource === 'none') {
        write(`hint: no API key given: pass --api-key KEY, set GPUPLANE_API_KEY, or save one with ${hinted('set api-key KEY')}`);
      }
    }
    if (err instanceof InstanceFailedError) return EXIT.instanceFailed;
    if (err instanceof WaitTimeoutError) return EXIT.timeout;
    return EXIT.error;
  }
  write(`gpuplane: ${err instanceof Error ? err.message : String(err)}`);
  return EXIT.error;
}

/**
 * Wraps a command's action: resolves the client from the global options, runs it, and turns any failure into a
 * message and an exit code. Commander passes the positional arguments, then the options, then the command.
 */
export function action<A extends unknown[]>(fn: (ctx: Ctx, ...args: A) => Promise<void> | void) {
  return async (...args: unknown[]): Promise<void> => {
    const cmd = args[args.length - 1] as Command;
    const g = cmd.optsWithGlobals() as GlobalOpts;
    const run = runOf(cmd);
    let ctx: Ctx | undefined;
    try {
      ctx = resolveCtx(g, run, cmd.options.some((o) => o.attributeName() === 'columns'));
      await fn(ctx, ...(args.slice(0, -1) as A));
    } catch (err) {
      run.exitCode = reportError(err, g.raw === true, ctx?.keySource, run.io.stderr);
    }
  };
}

/** Parses a positive integer id argument, or fails (exit 2) before anything is sent. */
export function intArg(name: string) {
  return (value: string): number => {
    if (!/^\d+$/.test(value) || Number(value) < 1 || !Number.isSafeInteger(Number(value))) {
      throw new InvalidArgumentError(`${name} must be a positive integer.`);
    }
    return Number(value);
  };
}

export function numberArg(name: string, min = -Infinity) {
  return (value: string): number => {
    const n = Number(value);
    if (value.trim() === '' || !Number.isFinite(n) || n < min) {
      throw new InvalidArgumentError(`${name} must be a number${min > -Infinity ? ` of at least ${min}` : ''}.`);
    }
    return n;
  };
}
