/**
 * Helpers of the CLI and SDK end-to-end tests: a real gpuplane server listening on a free port (virtual clock, SQLite
 * in memory; started by the server's own start-up code, in the test's process) and the CLI, run in the test's process
 * (`runCli(argv, io)` with collected output) or, for the few tests about the process itself, spawned as one
 * (`node bin/gpuplane.mjs …`), each with its own config directory.
 */
import { after, before } from 'node:test';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Readable } from 'node:stream';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { runCli as runCliMain } from '../src/cli/program.js';
import { loadConfig, parseServeFlags } from '../src/config.js';
import { startServer as startGpuplane } from '../src/main.js';
import { createClient } from '../src/sdk/client.js';

export const ROOT = resolve(import.meta.dirname, '..');
export const BIN = join(ROOT, 'bin', 'gpuplane.mjs');
export const OWNER_KEY = 'gpk_cli_test_owner_key_0123456789abcdef';
/** Where the server's virtual clock starts (2027-01-15T08:00:00Z), as in the other tests. */
export const T0 = 1_800_000_000;
/** How many times waitWhileAdvancing moves the clock at most before it lets the command time out. */
const MAX_ADVANCES = 20;

export interface ServerProcess {
  url: string;
  port: number;
  close(): Promise<void>;
}

/** The test server: a virtual clock at T0, SQLite in memory, the owner's key, a small fleet. */
export const TEST_SERVER_FLAGS = [
  '--clock', 'virtual', '--clock-start', String(T0), '--database-url', 'sqlite::memory:', '--bootstrap-api-key', OWNER_KEY,
  '--secret-key', 'cli-test-secret-key-0123456789', '--sim-machines', '20',
];

/**
 * Starts the server as `gpuplane serve --port 0 FLAGS` does (the same start-up code, src/main.ts), in this process,
 * with silent logs: the CLI and SDK reach it over HTTP like any server. (test/server-lifecycle.test.ts and the other
 * tests of the process itself start real ones.)
 */
export async function startServer(extra: string[] = [], base: string[] = TEST_SERVER_FLAGS): Promise<ServerProcess> {
  const config = loadConfig({}, parseServeFlags(['--port', '0', ...base, ...extra]));
  const server = await startGpuplane(config, { log: pino({ level: 'silent' }), announce: () => undefined });
  return { url: server.url, port: Number(new URL(server.url).port), close: () => server.close() };
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** A fresh, empty config directory (the CLI's XDG_CONFIG_HOME). */
export function tempConfigHome(): { dir: string; cleanup(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'gpuplane-cli-'));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * The CLI's environment: `env` added to a clean one (no GPUPLANE_* from the caller, no COLUMNS, so tables are not
 * fitted to a width unless a test asks); an `undefined` value removes a variable.
 */
function cliEnv(env: Record<string, string | undefined>): NodeJS.ProcessEnv {
  const base: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('GPUPLANE_') && k !== 'COLUMNS') base[k] = v;
  const merged = { ...base, ...env };
  for (const [k, v] of Object.entries(merged)) if (v === undefined) delete merged[k];
  return merged;
}

/**
 * Runs the CLI in this process, as `gpuplane ARGS` would run (same environment rules as `runCliProcess`): standard
 * output and error are collected, `input` is its standard input (default: none, not a terminal).
 */
export async function runCli(args: string[], env: Record<string, string | undefined> = {}, onStderr?: (text: string) => void, input?: string): Promise<CliResult> {
  let stdout = '';
  let stderr = '';
  const stdin = Object.assign(Readable.from(input === undefined ? [] : [input]), { isTTY: false });
  const code = await runCliMain(args, {
    stdout: { write: (s: string) => (stdout += s) },
    stderr: {
      write: (s: string) => {
        stderr += s;
        onStderr?.(stderr);
      },
    },
    stdin,
    env: cliEnv(env),
  });
  return { code, stdout, stderr };
}

/** Runs the CLI as a process (`node bin/gpuplane.mjs ARGS`), for the tests of the process itself. */
export function runCliProcess(args: string[], env: Record<string, string | undefined> = {}, onStderr?: (text: string) => void, input?: string): Promise<CliResult> {
  return new Promise((done, reject) => {
    const proc = spawn(process.execPath, [BIN, ...args], { cwd: ROOT, env: cliEnv(env), stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'] });
    if (input !== undefined) proc.stdin!.end(input);
    let stdout = '';
    let stderr = '';
    proc.stdout!.on('data', (d) => (stdout += String(d)));
    proc.stderr!.on('data', (d) => {
      stderr += String(d);
      onStderr?.(stderr);
    });
    proc.on('error', reject);
    proc.on('close', (code) => done({ code, stdout, stderr }));
  });
}

/**
 * One server per test file: registers before/after hooks and returns `cli(args, env)` (the owner's key and a private
 * config directory unless overridden; an `undefined` value removes a variable) and the server's URL.
 */
export function useServer(extraFlags: string[] = []): {
  cli: (args: string[], env?: Record<string, string | undefined>, onStderr?: (text: string) => void, input?: string) => Promise<CliResult>;
  url: () => string;
  home: () => string;
} {
  let srv: ServerProcess | undefined;
  let home: ReturnType<typeof tempConfigHome> | undefined;
  before(async () => {
    srv = await startServer(extraFlags);
    home = tempConfigHome();
  });
  after(async () => {
    await srv?.close();
    home?.cleanup();
  });
  return {
    cli: (args, env = {}, onStderr, input) => runCli(args, { GPUPLANE_URL: srv!.url, GPUPLANE_API_KEY: OWNER_KEY, XDG_CONFIG_HOME: home!.dir, ...env }, onStderr, input),
    url: () => srv!.url,
    home: () => home!.dir,
  };
}

/**
 * Instance steps shared by the CLI instance tests: a fresh single-GPU offer on a machine with direct ports (the
 * instances use a direct SSH runtype), an instance made through the SDK, and a waiting command run while the virtual
 * clock is moved forward until it ends (the instance boots only when the clock moves).
 */
export function instanceSteps(server: ReturnType<typeof useServer>) {
  const sdk = () => createClient({ url: server.url(), apiKey: OWNER_KEY });

  async function offer(): Promise<number> {
    const { offers } = await sdk().offers.search({
      num_gpus: { eq: 1 }, rentable: { eq: true }, rented: { eq: false }, direct_port_count: { gte: 16 },
      order: [['dph_total', 'asc']], limit: 1,
    });
    assert.ok(offers.length, 'the simulated fleet has a free single-GPU offer');
    return offers[0].id;
  }

  async function instance(extra: Record<string, unknown> = {}): Promise<number> {
    const r = await sdk().instances.create(await offer(), { image: 'alpine', runtype: 'ssh_direc ssh_proxy', ...extra });
    return r.new_contract;
  }

  /**
   * Runs a waiting command; once its status line shows (it is subscribed to the server's events), moves the clock
   * `advance` seconds at a time until the instance is running or has failed, then returns the command's result.
   */
  async function waitWhileAdvancing(args: string[], advance = 60) {
    let watching!: (id: number) => void;
    const subscribed = new Promise<number>((resolve) => (watching = resolve));
    const waiting = server.cli(args, {}, (err) => {
      const line = /^instance (\d+): \S+ \(\d+s\)$/m.exec(err);
      if (line) watching(Number(line[1]));
    });
    const id = await Promise.race([subscribed, waiting.then(() => undefined)]);
    for (let step = 0; id !== undefined && step < MAX_ADVANCES; step++) {
      await sdk().emulator.advance(advance);
      const { actual_status } = await sdk().instances.show(id);
      if (actual_status === 'running' || ['exited', 'unknown', 'offline'].includes(String(actual_status))) break;
    }
    return waiting;
  }

  return { sdk, offer, instance, waitWhileAdvancing };
}
