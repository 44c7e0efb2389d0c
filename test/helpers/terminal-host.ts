/**
 * A real server with a real host behind it, for the terminal's end-to-end tests (test/terminal-e2e.test.ts and the
 * console's console/e2e/terminal.spec.ts): `gpuplane serve` (SQLite in a file, the real clock, the emulator's control
 * API for making users), `gpuplane agent` with Docker and its tunnel, a host that lists its machine, and a renter
 * (with a password, for the console) whose busybox instance is running on it. Docker must be there: without it the
 * start fails, nothing skips.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { prepareAgentRun, startAgent, untilStatus, within, type AgentProcess } from './agent-process.js';
import { BUSYBOX_IMAGE } from './docker.js';

const BIN = join(import.meta.dirname, '..', '..', 'bin', 'gpuplane.mjs');
const START_TIMEOUT_MS = 60_000;

export interface TerminalHost {
  url: string;
  ownerKey: string;
  renter: { email: string; password: string; key: string };
  /** The renter's running busybox instance. */
  instanceId: number;
  machineId: number;
  /** Everything both processes wrote lately (for failure messages). */
  output(): string;
  /** A JSON request (`key`: Bearer; the owner's by default). */
  api(method: string, path: string, body?: unknown, key?: string): Promise<{ status: number; body: any }>;
  /** Rents another busybox instance for the renter and waits until it runs. */
  rentRunning(): Promise<number>;
  stop(): Promise<void>;
}

export interface TerminalHostOptions {
  /** The agent's published port range (apart from other files'). */
  ports: { start: number; end: number };
  /** Machine and instance ids start at a random point at or above this (containers are named by them). */
  idBase: number;
  /** Extra GPUPLANE_* variables for the server. */
  env?: Record<string, string>;
}

export async function startTerminalHost(o: TerminalHostOptions): Promise<TerminalHost> {
  const docker = new Docker();
  const dir = mkdtempSync(join(tmpdir(), 'gpuplane-terminal-e2e-'));
  const dbFile = join(dir, 'gpuplane.db');
  const ownerKey = 'gpk_e2e_terminal_owner_key_0123456789';
  await prepareAgentRun(docker, dir, dbFile, o.idBase);
  let out = '';
  const child: ChildProcess = spawn(process.execPath, [BIN, 'serve', '--port', '0'], {
    cwd: dir,
    env: {
      ...process.env, GPUPLANE_LOG_LEVEL: 'info', GPUPLANE_GATEWAY: 'false',
      GPUPLANE_DATABASE_URL: `sqlite:${dbFile}`, GPUPLANE_BOOTSTRAP_API_KEY: ownerKey, GPUPLANE_SECRET_KEY: 'e2e-secret-key-0123456789',
      GPUPLANE_SIM_MACHINES: '1', GPUPLANE_AGENT_OFFLINE_AFTER: '30', ...o.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`gpuplane did not start:\n${out}`)), START_TIMEOUT_MS);
    child.stdout!.on('data', (d: Buffer) => {
      out = (out + d.toString()).slice(-200_000);
      const m = /"port":(\d+)[^\n]*"msg":"gpuplane listening on /.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
    child.stderr!.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-200_000)));
    child.once('exit', (code) => reject(new Error(`gpuplane exited (${code}) before listening:\n${out}`)));
  });
  const url = `http://127.0.0.1:${port}`;
  let agent: AgentProcess | undefined;
  let machineId = 0;
  const output = () => `--- agent\n${agent?.output().slice(-4000) ?? ''}\n--- server\n${out.slice(-4000)}`;
  const api = async (method: string, path: string, body?: unknown, key = ownerKey) => {
    const res = await fetch(url + path, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      // not JSON
    }
    return { status: res.status, body: parsed as any };
  };
  const must = async (what: string, p: Promise<{ status: number; body: any }>) => {
    const r = await p;
    if (r.status !== 200) throw new Error(`${what}: ${r.status} ${JSON.stringify(r.body)}\n${output()}`);
    return r.body;
  };
  const stop = async () => {
    if (agent && agent.child.exitCode === null) {
      agent.child.kill('SIGKILL');
      await agent.exited;
    }
    if (machineId) {
      const label = [`gpuplane.machine_id=${machineId}`];
      for (const c of await docker.listContainers({ all: true, filters: { label } })) await docker.getContainer(c.Id).remove({ force: true, v: true }).catch(() => undefined);
      for (const n of await docker.listNetworks({ filters: { label } })) await docker.getNetwork(n.Id).remove().catch(() => undefined);
    }
    if (child.exitCode === null) {
      child.kill('SIGTERM');
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const stamp = `${process.pid}-${Date.now()}`;
    const host = await must('host user', api('POST', '/_emu/users', { email: `terminal-host-${stamp}@example.com` }));
    const renter = { email: `terminal-renter-${stamp}@example.com`, password: 'correct horse battery staple', key: '' };
    renter.key = (await must('renter user', api('POST', '/_emu/users', { email: renter.email, password: renter.password, credit: 100 }))).api_key;
    agent = startAgent({ url, stateDir: join(dir, 'state'), hardwareFile: join(dir, 'hardware.json'), ports: o.ports, apiKey: host.api_key });
    machineId = (await within('registration', agent.logged('machine registered'), output)).machine_id;
    await must('listing', api('PUT', '/api/v0/machines/create_asks/', { machine: machineId, price_gpu: 0.3, price_disk: 0.1, end_date: null }, host.api_key));
    const rentRunning = async () => {
      const rented = await must('rent', api('PUT', `/api/v0/asks/${machineId * 100 + 1}/`, { image: BUSYBOX_IMAGE, runtype: 'ssh_proxy', disk: 1 }, renter.key));
      const id: number = rented.new_contract;
      await within(`instance ${id} running`, untilStatus(url, renter.key, id, 'running'), output, 120_000);
      return id;
    };
    const instanceId = await rentRunning();
    return { url, ownerKey, renter, instanceId, machineId, output, api, rentRunning, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
