/**
 * wrk, a native HTTP load generator (Debian package `wrk`), driven from the benchmarks. A load generator written in
 * JavaScript takes a core of its own on a small machine and caps the rate it can measure; wrk with one thread does
 * not. Counts and latency percentiles come out of wrk's Lua `done()` hook as one JSON line, so nothing is parsed
 * from its human-readable summary.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface WrkResult {
  /** Completed requests (any status). */
  requests: number;
  /** Completed requests per second over the measured duration. */
  rps: number;
  p50Ms: number;
  p99Ms: number;
  /** Socket errors: connect, read, write and timeouts (a reply slower than `timeoutS`). */
  errors: number;
  /** Replies whose status is not 2xx. */
  non2xx: number;
  /** Extra detail: the measured duration, mean and maximum latency, timeouts alone. */
  durationS: number;
  meanMs: number;
  maxMs: number;
  timeouts: number;
}

export interface WrkOptions {
  url: string;
  connections: number;
  /** wrk threads (default 1: one client core, the server gets the other). */
  threads?: number;
  /** Whole seconds (wrk takes no fractions); a fraction is rounded up. */
  durationS: number;
  /**
   * Lua source, written to a temp file (e.g. `wrk.method = "POST"` or a `request()` function). It must not define
   * `setup`, `response` or `done`: this module defines them to count replies and print the result. A script that
   * reads replies defines `on_response(status, headers, body)` instead (bench/mixed.ts learns instance ids).
   */
  script?: string;
  headers?: Record<string, string>;
  /** Shorthands for a script setting `wrk.method` / `wrk.body`. */
  method?: string;
  body?: string;
  /** Seconds after which a request counts as a timeout error (wrk's default is 2). */
  timeoutS?: number;
}

const MARKER = 'GPUPLANE_WRK_RESULT ';

/** Lua appended to every script: per-thread non-2xx counting, and the result as one JSON line from `done()`. */
const HOOKS = `
local gpuplane_threads = {}
function setup(thread)
  table.insert(gpuplane_threads, thread)
end
non2xx = 0
function response(status, headers, body)
  if status < 200 or status > 299 then non2xx = non2xx + 1 end
  if on_response then on_response(status, headers, body) end
end
function done(summary, latency, requests)
  local n = 0
  for _, t in ipairs(gpuplane_threads) do n = n + (t:get("non2xx") or 0) end
  local e = summary.errors
  io.write(string.format('${MARKER}{"requests":%d,"durationUs":%d,"p50Us":%.1f,"p99Us":%.1f,"meanUs":%.1f,"maxUs":%.1f,' ..
    '"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d,"non2xx":%d}\\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99), latency.mean, latency.max,
    e.connect, e.read, e.write, e.status, e.timeout, n))
end
`;

const luaString = (s: string) => `"${s.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n').replace(/\r/g, '\\r')}"`;

function wrkPresent(): boolean {
  const r = spawnSync('wrk', ['--version'], { encoding: 'utf8' });
  return !r.error;
}

/** Makes sure `wrk` is on the PATH: installs the Debian package when it is missing and this runs as root. */
export function ensureWrk(): void {
  if (wrkPresent()) return;
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  if (!isRoot) {
    throw new Error('bench: wrk (a native HTTP load generator) is not installed; install it with `sudo apt-get install -y wrk`');
  }
  process.stderr.write('bench: wrk is missing; installing it with apt-get install -y wrk\n');
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  let r = spawnSync('apt-get', ['install', '-y', 'wrk'], { stdio: 'inherit', env });
  if (r.error || r.status !== 0) {
    // A fresh machine has no package lists yet.
    spawnSync('apt-get', ['update'], { stdio: 'inherit', env });
    r = spawnSync('apt-get', ['install', '-y', 'wrk'], { stdio: 'inherit', env });
  }
  if (r.error || r.status !== 0 || !wrkPresent()) {
    throw new Error(`bench: could not install wrk with apt-get (${r.error?.message ?? `exit ${r.status}`}); install the Debian package \`wrk\` by hand`);
  }
}

/** Runs wrk once and returns its counts and latency; throws when wrk fails or prints no result. */
export async function runWrk(o: WrkOptions): Promise<WrkResult> {
  const threads = o.threads ?? 1;
  const connections = Math.max(o.connections, threads);
  const durationS = Math.max(1, Math.ceil(o.durationS));
  const dir = mkdtempSync(join(tmpdir(), 'gpuplane-wrk-'));
  try {
    const scriptFile = join(dir, 'bench.lua');
    const prelude = [
      o.method !== undefined ? `wrk.method = ${luaString(o.method)}` : '',
      o.body !== undefined ? `wrk.body = ${luaString(o.body)}` : '',
    ].join('\n');
    writeFileSync(scriptFile, `${prelude}\n${o.script ?? ''}\n${HOOKS}`);
    const args = ['-t', String(threads), '-c', String(connections), '-d', `${durationS}s`, '--timeout', `${Math.max(1, Math.ceil(o.timeoutS ?? 2))}s`, '-s', scriptFile];
    for (const [name, value] of Object.entries(o.headers ?? {})) args.push('-H', `${name}: ${value}`);
    args.push(o.url);
    const { code, stdout, stderr } = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
      const child = spawn('wrk', args, { stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      let err = '';
      child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
      child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
      child.on('error', reject);
      child.on('close', (c) => resolve({ code: c, stdout: out, stderr: err }));
    });
    const line = stdout.split('\n').find((l) => l.startsWith(MARKER));
    if (code !== 0 || !line) throw new Error(`wrk ${args.join(' ')} exited ${code}:\n${stdout}${stderr}`);
    const r = JSON.parse(line.slice(MARKER.length)) as Record<string, number>;
    const measuredS = r.durationUs / 1e6;
    return {
      requests: r.requests,
      rps: measuredS > 0 ? r.requests / measuredS : 0,
      p50Ms: r.p50Us / 1000,
      p99Ms: r.p99Us / 1000,
      errors: r.connect + r.read + r.write + r.timeout,
      non2xx: r.non2xx,
      durationS: measuredS,
      meanMs: r.meanUs / 1000,
      maxMs: r.maxUs / 1000,
      timeouts: r.timeout,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Linux clock ticks per second (USER_HZ), the unit of the times in /proc/<pid>/stat. */
const CLOCK_TICKS = 100;

/** User + system CPU seconds a process has used so far (utime + stime from /proc/<pid>/stat); NaN without /proc. */
export function processCpuSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name may hold spaces and parentheses: fields are counted after its last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // After "pid (comm) ": state is field 3 (index 0 here); utime and stime are fields 14 and 15.
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
  } catch {
    return Number.NaN;
  }
}
