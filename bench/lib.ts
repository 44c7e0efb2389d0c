/**
 * What every benchmark module (`bench/<name>.bench.ts`) uses: start a real gpuplane process, start the bare-Fastify
 * baseline, put load on a route, compare the two measured in the same run.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureWrk, processCpuSeconds, runWrk } from './wrk.js';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
export const BIN = join(ROOT, 'bin', 'gpuplane.mjs');
export const BENCH_KEY = 'gpk_bench_owner_key_0123456789abcdef';

/** One measured figure; `target` is the goal it is judged against. */
export interface Figure {
  name: string;
  value: number;
  unit: string;
  target?: { op: '>=' | '<='; value: number };
}

export interface BenchContext {
  /** Seconds of load per measurement (`--duration`, default 3). */
  durationS: number;
  /** Concurrent connections of the load generator (`--connections`, default 32; wrk with one thread). */
  connections: number;
  /** Alternating baseline/target rounds; medians are reported (`--rounds`, default 3). */
  rounds: number;
  /** A temporary folder, removed after the run. */
  tmpDir: string;
  log(line: string): void;
}

export interface Bench {
  name: string;
  description: string;
  run(ctx: BenchContext): Promise<Figure[]>;
}

export const defineBench = (bench: Bench): Bench => bench;

export interface Proc {
  child: ChildProcess;
  url: string;
  stop(): Promise<void>;
}

/** Waits until the process's log file holds a JSON line whose `msg` starts with `marker`; returns that line. */
async function waitForLine(file: string, child: ChildProcess, marker: string, timeoutMs = 30_000): Promise<any> {
  const started = Date.now();
  for (;;) {
    for (const line of readFileSync(file, 'utf8').split('\n')) {
      if (!line.startsWith('{')) continue;
      try {
        const parsed = JSON.parse(line);
        if (typeof parsed.msg === 'string' && parsed.msg.startsWith(marker)) return parsed;
      } catch {
        /* a line being written */
      }
    }
    if (child.exitCode !== null) throw new Error(`process exited (${child.exitCode}):\n${readFileSync(file, 'utf8')}`);
    if (Date.now() - started > timeoutMs) throw new Error(`no "${marker}" within ${timeoutMs} ms:\n${readFileSync(file, 'utf8')}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

function stopper(child: ChildProcess): () => Promise<void> {
  return async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(timer);
  };
}

/** Starts `node script args` with its output in a file (a pipe left undrained would stall it). */
function launch(script: string, args: string[], env: Record<string, string>, logFile: string): ChildProcess {
  const fd = openSync(logFile, 'w');
  // GPUPLANE_BENCH_NODE_ARGS: flags for the measured processes, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof" to profile.
  const nodeArgs = (process.env.GPUPLANE_BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const child = spawn(process.execPath, [...nodeArgs, script, ...args], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', fd, fd] });
  closeSync(fd);
  return child;
}

export interface GpuplaneOptions {
  /** Environment overrides (GPUPLANE_*). The default is a fresh SQLite file in `dir`. */
  env?: Record<string, string>;
  /** Data folder; a new one under the run's temp folder by default. */
  dir?: string;
  /** Wait for the background start-up work to end before returning (default true; the start-up figure never does). */
  settle?: boolean;
}

/**
 * Starts `node bin/gpuplane.mjs serve`, exactly as `npm start` does, and waits for its first answered request.
 * `startupMs` runs from the spawn to that answer.
 */
export async function startGpuplane(
  ctx: BenchContext,
  options: GpuplaneOptions = {},
): Promise<Proc & { startupMs: number; startupCpuMs: number; key: string }> {
  const dir = options.dir ?? mkdtempSync(join(ctx.tmpDir, 'gp-'));
  const env = {
    GPUPLANE_DATABASE_URL: `sqlite:${join(dir, 'gpuplane.db')}`,
    GPUPLANE_PORT: '0',
    GPUPLANE_BOOTSTRAP_API_KEY: BENCH_KEY,
    GPUPLANE_LOG_LEVEL: 'info',
    ...options.env,
  };
  const logFile = join(dir, `gpuplane-${Date.now()}.log`);
  const t0 = performance.now();
  const child = launch(BIN, ['serve'], env, logFile);
  const stop = stopper(child);
  try {
    const { port } = await waitForLine(logFile, child, 'gpuplane listening');
    const url = `http://127.0.0.1:${port}`;
    const res = await fetch(`${url}/api/v0/users/current`, { headers: { authorization: `Bearer ${env.GPUPLANE_BOOTSTRAP_API_KEY}` } });
    if (res.status !== 200) throw new Error(`first request answered ${res.status}: ${await res.text()}`);
    await res.arrayBuffer();
    const startupMs = performance.now() - t0;
    const startupCpuMs = cpuMs(child.pid);
    // Route schemas compile in the background after listening; measure load only once that work is done.
    if (options.settle !== false) await waitForLine(logFile, child, 'route schemas compiled');
    return { child, url, stop, key: env.GPUPLANE_BOOTSTRAP_API_KEY, startupMs, startupCpuMs };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** Starts the bare-Fastify baseline answering `method path` with `reply`. */
export async function startBaseline(ctx: BenchContext, route: { method: string; path: string; reply: unknown }): Promise<Proc> {
  const logFile = join(mkdtempSync(join(ctx.tmpDir, 'base-')), 'baseline.log');
  const child = launch(join(ROOT, 'bench', 'baseline-server.mjs'), [], { GPUPLANE_BASELINE: JSON.stringify(route) }, logFile);
  const stop = stopper(child);
  try {
    const { port } = await waitForLine(logFile, child, 'baseline listening');
    return { child, url: `http://127.0.0.1:${port}`, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

export interface Target {
  method: string;
  path: string;
  headers?: Record<string, string>;
  body?: unknown;
}

export interface Load {
  rps: number;
  p50Ms: number;
  p99Ms: number;
  /** CPU time the server process spent per request (Linux; NaN elsewhere): less swayed by other load than the rate. */
  cpuMsPerRequest: number;
}

/** User + system CPU milliseconds a process has used so far, from /proc (NaN where there is no /proc). */
export function cpuMs(pid: number | undefined): number {
  return pid === undefined ? Number.NaN : processCpuSeconds(pid) * 1000;
}

/**
 * Puts `durationS` seconds of load on one route with wrk (one thread, `connections` connections: a native client,
 * so the rate measured is the server's, not a JavaScript client's); any non-2xx reply or socket error makes the
 * measurement fail.
 */
export async function load(server: Proc | string, target: Target, durationS: number, connections: number): Promise<Load> {
  ensureWrk();
  const pid = typeof server === 'string' ? undefined : server.child.pid;
  const baseUrl = typeof server === 'string' ? server : server.url;
  const cpuBefore = cpuMs(pid);
  const result = await runWrk({
    url: `${baseUrl}${target.path}`,
    method: target.method,
    headers: { ...(target.body !== undefined ? { 'content-type': 'application/json' } : {}), ...target.headers },
    body: target.body !== undefined ? JSON.stringify(target.body) : undefined,
    connections,
    threads: 1,
    durationS,
    // A reply slower than this is an error: far beyond any target, but not cut short on a busy machine.
    timeoutS: 10,
  });
  if (result.non2xx || result.errors || result.requests === 0) {
    throw new Error(`${target.method} ${target.path}: ${result.non2xx} non-2xx, ${result.errors} errors (${result.timeouts} timeouts) of ${result.requests} requests`);
  }
  const cpu = cpuMs(pid) - cpuBefore;
  const round3 = (ms: number) => Math.round(ms * 1000) / 1000;
  return { rps: result.rps, p50Ms: round3(result.p50Ms), p99Ms: round3(result.p99Ms), cpuMsPerRequest: cpu / result.requests };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const us = (ms: number) => Math.round(ms * 1000);

/**
 * Measures `target` on a running gpuplane against the bare-Fastify baseline serving the same JSON, in alternating
 * rounds after a short warm-up of each. Figures: both rates, the ratio (judged against `minRatio` when the issue sets
 * one), gpuplane's latency.
 */
export async function compareWithBaseline(
  ctx: BenchContext,
  gpuplane: Proc,
  target: Target,
  minRatio?: number,
  /** Absolute targets of gpuplane's own rate and p99 latency, when the issue sets them. */
  goals: { minRps?: number; maxP99Ms?: number } = {},
): Promise<Figure[]> {
  const first = await fetch(`${gpuplane.url}${target.path}`, {
    method: target.method,
    headers: { ...(target.body !== undefined ? { 'content-type': 'application/json' } : {}), ...target.headers },
    body: target.body !== undefined ? JSON.stringify(target.body) : undefined,
  });
  if (!first.ok) throw new Error(`${target.method} ${target.path} answered ${first.status}: ${await first.text()}`);
  const baseline = await startBaseline(ctx, { method: target.method, path: target.path.split('?')[0], reply: await first.json() });
  try {
    const warmS = Math.min(1, ctx.durationS);
    await load(baseline, target, warmS, ctx.connections);
    await load(gpuplane, target, warmS, ctx.connections);
    const base: Load[] = [];
    const ours: Load[] = [];
    for (let round = 0; round < ctx.rounds; round++) {
      base.push(await load(baseline, target, ctx.durationS, ctx.connections));
      ours.push(await load(gpuplane, target, ctx.durationS, ctx.connections));
      ctx.log(
        `  round ${round + 1}: baseline ${Math.round(base[round].rps)} req/s (${us(base[round].cpuMsPerRequest)} µs CPU/req), ` +
          `gpuplane ${Math.round(ours[round].rps)} req/s (${us(ours[round].cpuMsPerRequest)} µs CPU/req)`,
      );
    }
    const rps = median(ours.map((l) => l.rps));
    const baseRps = median(base.map((l) => l.rps));
    // Each round's two measurements ran back to back, under the same outside load: the ratio is taken per round.
    const ratio = median(ours.map((l, i) => l.rps / base[i].rps));
    const label = `${target.method} ${target.path}`;
    return [
      { name: `${label}: gpuplane`, value: Math.round(rps), unit: 'req/s', ...(goals.minRps === undefined ? {} : { target: { op: '>=' as const, value: goals.minRps } }) },
      { name: `${label}: bare Fastify baseline`, value: Math.round(baseRps), unit: 'req/s' },
      {
        name: `${label}: ratio to baseline`,
        value: Math.round(ratio * 100) / 100,
        unit: '×',
        ...(minRatio === undefined ? {} : { target: { op: '>=' as const, value: minRatio } }),
      },
      { name: `${label}: gpuplane latency p50 / p99`, value: median(ours.map((l) => l.p50Ms)), unit: `ms / ${median(ours.map((l) => l.p99Ms))} ms` },
      ...(goals.maxP99Ms === undefined
        ? []
        : [{ name: `${label}: gpuplane latency p99, ${ctx.connections} connections`, value: median(ours.map((l) => l.p99Ms)), unit: 'ms', target: { op: '<=' as const, value: goals.maxP99Ms } }]),
      { name: `${label}: server CPU per request, gpuplane`, value: us(median(ours.map((l) => l.cpuMsPerRequest))), unit: 'µs' },
      { name: `${label}: server CPU per request, baseline`, value: us(median(base.map((l) => l.cpuMsPerRequest))), unit: 'µs' },
    ];
  } finally {
    await baseline.stop();
  }
}

export { median };

/** A temporary folder for one run. */
export function makeTmpDir(): { dir: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'gpuplane-bench-'));
  // GPUPLANE_BENCH_KEEP=1 keeps it (the measured servers' logs) for a look afterwards.
  return { dir, remove: () => (process.env.GPUPLANE_BENCH_KEEP ? process.stderr.write(`bench: kept ${dir}\n`) : rmSync(dir, { recursive: true, force: true })) };
}
