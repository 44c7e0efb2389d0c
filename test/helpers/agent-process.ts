/**
 * A real `gpuplane agent` process for the end-to-end tests (Docker runtime, declared hardware, ports on 127.0.0.1),
 * and the waits they need: a deadline on a step, and an instance reaching a state (on the instance event stream).
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type Docker from 'dockerode';
import { buildBusyboxImage } from './docker.js';
import { openDatabase } from '../../src/database.js';
import { call } from './spawn.js';

const ROOT = join(import.meta.dirname, '..', '..');
const BIN = join(ROOT, 'bin', 'gpuplane.mjs');

export interface AgentProcess {
  child: ChildProcess;
  output(): string;
  exited: Promise<number | null>;
  /** Resolves with the first JSON log line whose msg is `msg`. */
  logged(msg: string): Promise<Record<string, any>>;
}

export interface AgentOptions {
  url: string;
  stateDir: string;
  hardwareFile: string;
  ports: { start: number; end: number };
  /** The host's API key (first start); '' once registered. */
  apiKey: string;
  /** More flags (`--pids-limit 64`). */
  extra?: string[];
  /**
   * Passes `--allow-unlimited-disk`: the test hosts' Docker (overlay2 on ext4) has no disk quota, and an agent there
   * refuses to start without it. @default true
   */
  allowUnlimitedDisk?: boolean;
}

export function startAgent(o: AgentOptions): AgentProcess {
  const child = spawn(process.execPath, [
    BIN, 'agent', '--url', o.url, '--state-dir', o.stateDir, '--hardware', o.hardwareFile,
    '--publish-ip', '127.0.0.1', '--port-range', `${o.ports.start}-${o.ports.end}`, '--resync-interval', '2', '--log-level', 'info',
    ...(o.allowUnlimitedDisk === false ? [] : ['--allow-unlimited-disk']),
    ...(o.extra ?? []),
  ], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, GPUPLANE_API_KEY: o.apiKey } });
  let out = '';
  const waiters: { msg: string; resolve: (l: Record<string, any>) => void }[] = [];
  const scan = () => {
    for (const line of out.split('\n')) {
      if (!line.startsWith('{')) continue;
      let j: Record<string, any>;
      try {
        j = JSON.parse(line);
      } catch {
        continue;
      }
      for (const w of [...waiters]) if (j.msg === w.msg) waiters.splice(waiters.indexOf(w), 1) && w.resolve(j);
    }
  };
  child.stdout!.on('data', (d) => {
    out += String(d);
    scan();
  });
  child.stderr!.on('data', (d) => (out += String(d)));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    child, output: () => out, exited,
    logged: (msg) => new Promise((resolve) => {
      waiters.push({ msg, resolve });
      scan();
    }),
  };
}

/** A step's deadline: fails with what was awaited and `context()` (the processes' recent output), instead of hanging. */
export async function within<T>(what: string, p: Promise<T>, context: () => string, ms = 45_000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not within ${ms / 1000} s\n${context()}`)), ms);
  });
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Resolves once instance `id` is `status`: subscribes to the instance event stream first, then reads the instance,
 * so no change between the two is missed.
 */
export async function untilStatus(base: string, key: string, id: number, status: string | null): Promise<Record<string, any>> {
  const ac = new AbortController();
  const res = await fetch(`${base}/api/v0/instances/events/`, { headers: { authorization: `Bearer ${key}` }, signal: ac.signal });
  assert.equal(res.status, 200);
  const reader = res.body!.getReader();
  let buf = '';
  const read = async () => {
    const { value, done } = await reader.read();
    if (done) throw new Error('event stream ended');
    buf += Buffer.from(value).toString();
  };
  try {
    while (!buf.includes(': listening')) await read();
    const now = await call(base, 'GET', `/api/v0/instances/${id}/`, key);
    if (now.body.instances?.actual_status === status) return now.body.instances;
    for (;;) {
      let i: number;
      while ((i = buf.indexOf('\n\n')) >= 0) {
        const frame = buf.slice(0, i);
        buf = buf.slice(i + 2);
        const data = /^data: (.*)$/m.exec(frame)?.[1];
        if (!data) continue;
        const e = JSON.parse(data);
        if (e.id === id && e.actual_status === status) return (await call(base, 'GET', `/api/v0/instances/${id}/`, key)).body.instances;
      }
      await read();
    }
  } finally {
    ac.abort();
  }
}

/**
 * What an end-to-end run with a real agent needs before its server starts: Docker answering, the busybox image, the
 * agent's declared hardware in `dir/hardware.json`, and a SQLite database at `dbFile` whose machine and instance ids
 * start at a random point at or above `idBase` (containers are named by them, and other runs may share the daemon).
 */
export async function prepareAgentRun(docker: Docker, dir: string, dbFile: string, idBase: number): Promise<void> {
  await docker.ping();
  await buildBusyboxImage(docker, dir);
  writeFileSync(join(dir, 'hardware.json'), JSON.stringify({
    gpu_name: 'RTX 4090', num_gpus: 2, gpu_ram: 24564, driver_version: '550.54.14', cuda_max_good: 12.4, public_ipaddr: '127.0.0.1',
  }));
  const store = await openDatabase(`sqlite:${dbFile}`);
  await store.close();
  const db = new Database(dbFile);
  const base = idBase + randomInt(100_000_000);
  db.prepare("INSERT INTO sqlite_sequence (name, seq) VALUES ('fleet_machines', ?), ('instances', ?)").run(base, base + 500_000);
  db.close();
}
