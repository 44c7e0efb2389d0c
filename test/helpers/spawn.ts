/**
 * Real gpuplane processes for the tests that need them (many processes on one database, SIGKILL durability):
 * `node bin/gpuplane.mjs serve`, exactly as `npm start` runs it, on a free port it reports in its start-up log line.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import pg from 'pg';
import { requirePostgres, uniqueSchema } from './harness.js';

const BIN = join(import.meta.dirname, '..', '..', 'bin', 'gpuplane.mjs');
/** How long a process may take to start before the test gives up (a loaded CI machine is slow). */
const START_TIMEOUT_MS = 60_000;

export interface Served {
  child: ChildProcess;
  url: string;
  /** Everything the process wrote so far (stdout and stderr). */
  output(): string;
  /** SIGTERM, then waits for the exit. */
  stop(): Promise<void>;
  /** Sends a signal (e.g. SIGKILL) and waits for the exit. */
  kill(signal: NodeJS.Signals): Promise<void>;
}

/**
 * Starts `gpuplane serve` with these GPUPLANE_* variables on port 0 (or `port`) and resolves once it listens. Its SSH
 * gateway is off unless `env` turns it on: on by default, it would listen on ports 10000-65535 of live instances, where
 * other test files' agents publish theirs.
 */
export async function serve(env: Record<string, string>, options: { cwd?: string; port?: number } = {}): Promise<Served> {
  const child = spawn(process.execPath, [BIN, 'serve', '--port', String(options.port ?? 0)], {
    cwd: options.cwd,
    env: { ...process.env, GPUPLANE_LOG_LEVEL: 'info', GPUPLANE_GATEWAY: 'false', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`gpuplane did not start within ${START_TIMEOUT_MS} ms:\n${out}`)), START_TIMEOUT_MS);
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      // The start-up line: {…,"port":N,…,"msg":"gpuplane listening on http://…"}
      const m = /"port":(\d+)[^\n]*"msg":"gpuplane listening on /.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`gpuplane exited (${code ?? signal}) before listening:\n${out}`));
    });
  });
  const kill = async (signal: NodeJS.Signals) => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    await exited;
  };
  return { child, url: `http://127.0.0.1:${port}`, output: () => out, stop: () => kill('SIGTERM'), kill };
}

/** A fresh PostgreSQL schema and a database URL that selects it through `?options=-c search_path=…`. */
export async function freshPgDatabase(): Promise<{ url: string; schema: string; drop(): Promise<void> }> {
  const pgUrl = requirePostgres();
  const schema = uniqueSchema();
  const run = async (sql: string) => {
    const client = new pg.Client({ connectionString: pgUrl });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  };
  await run(`CREATE SCHEMA "${schema}"`);
  const options = encodeURIComponent(`-c search_path=${schema}`);
  const url = `${pgUrl}${pgUrl.includes('?') ? '&' : '?'}options=${options}`;
  return { url, schema, drop: () => run(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`) };
}

/** A JSON request to a served process. */
export async function call(base: string, method: string, path: string, key: string | null, body?: unknown) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    body: body !== undefined ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = text;
  }
  return { status: res.status, body: json };
}
