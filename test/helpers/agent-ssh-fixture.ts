/**
 * The agent data plane's tests (test/agent-ssh-*.test.ts): busybox containers made exactly as the agent makes them
 * (buildContainerSpec + the Docker runtime: own network, capabilities dropped, the agent's labels), the data plane
 * over them, and loopback listeners that hand each TCP connection straight to `handle(target, socket, info)`, so the
 * real OpenSSH clients reach the data plane as they would through the tunnel. Docker, ssh, scp, sftp and rsync must
 * be there: a missing one fails the test (the calls reject), nothing skips.
 */
import { randomBytes, randomInt } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { connect as h2connect, createServer as h2createServer, type ClientHttp2Session, type Http2Server } from 'node:http2';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { buildContainerSpec } from '../../src/agent/container-spec.js';
import { createDockerRuntime } from '../../src/agent/docker-runtime.js';
import { createAgentDataPlane, type AgentDataPlane, type DataPlaneInstance } from '../../src/agent/agent-data-plane.js';
import type { AgentLog } from '../../src/agent/agent-log.js';
import type { TunnelStreamEnd, TunnelTarget } from '../../src/protocol/tunnel-targets.js';
import { desiredInstance } from '../agent-fake-server.js';
import { BUSYBOX_IMAGE, buildBusyboxImage } from './docker.js';
import { run, type Ran } from './openssh.js';

// The real clients are run as the end-to-end tests run them.
export { run, type Ran };

export interface Key {
  file: string;
  publicKey: string;
}

/** A recording log: the tests look for keys in it (there must be none). */
export function recordingLog(): AgentLog & { lines: string[] } {
  const lines: string[] = [];
  const rec = (level: string) => (fields: object, msg: string) => lines.push(`${level} ${msg} ${JSON.stringify(fields)}`);
  return { lines, debug: rec('debug'), info: rec('info'), warn: rec('warn'), error: rec('error') };
}

export interface Listener {
  port: number;
  /** Trailers of the streams handled, in the order they ended. */
  ends: TunnelStreamEnd[];
  /** Errors `handle` rejected with (refusals). */
  refusals: Error[];
  close(): Promise<void>;
}

export class Fixture {
  readonly docker = new Docker();
  readonly dir = mkdtempSync(join(tmpdir(), 'gpuplane-agent-ssh-'));
  readonly stateDir = join(this.dir, 'state');
  readonly owner = { machineId: 900_000 + randomInt(1_000_000), owner: randomBytes(8).toString('hex') };
  readonly instances = new Map<number, DataPlaneInstance>();
  readonly log = recordingLog();
  dataPlane!: AgentDataPlane;
  private readonly servers: Server[] = [];
  private readonly sockets = new Set<Socket>();
  private readonly h2clients: ClientHttp2Session[] = [];

  async setup(): Promise<void> {
    // Fails here, with Docker's own message, when no daemon answers.
    await this.docker.ping();
    await buildBusyboxImage(this.docker, this.dir);
    this.startDataPlane();
  }

  startDataPlane(): void {
    this.dataPlane = createAgentDataPlane({
      docker: this.docker,
      owner: this.owner,
      stateDir: this.stateDir,
      instances: () => this.instances,
      log: this.log,
    });
  }

  /** A key pair made by ssh-keygen. */
  async key(name: string): Promise<Key> {
    const file = join(this.dir, name);
    const r = await run('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', `${name}@test`, '-f', file]);
    if (r.code !== 0) throw new Error(`ssh-keygen: ${r.stderr}`);
    return { file, publicKey: readFileSync(`${file}.pub`, 'utf8').trim() };
  }

  /** An SSH instance's container, made and started as the agent would (its entrypoint writes authorized_keys). */
  async startInstance(instanceId: number, keys: string[], runtype: DataPlaneInstance['runtype'] = 'ssh'): Promise<string> {
    const runtime = createDockerRuntime({}, this.docker, { allowUnlimitedDisk: true });
    const d = desiredInstance({ instance_id: instanceId, image: BUSYBOX_IMAGE, ssh_keys: keys, runtype, gpu_indices: [] });
    const spec = buildContainerSpec(d, { machineId: this.owner.machineId, owner: this.owner.owner, cpuCores: 2, ramMb: 1024, gpuDevices: false }, {}, '127.0.0.1');
    const id = await runtime.create(spec);
    await runtime.start(id);
    this.instances.set(instanceId, { sshKeys: keys, runtype });
    return id;
  }

  /** Runs `sh -c script` in the container; its stdout (throws on a non-zero exit). */
  async exec(containerId: string, script: string): Promise<string> {
    const runtime = createDockerRuntime({}, this.docker);
    const r = await runtime.exec(containerId, ['/bin/sh', '-c', script], { maxChars: 1_000_000, timeoutS: 30 });
    if (r.exitCode !== 0) throw new Error(`exec ${script}: exit ${r.exitCode}: ${r.output}`);
    return r.output;
  }

  /** A loopback port whose connections go to `handle(target)`. */
  async listen(target: TunnelTarget): Promise<Listener> {
    const ends: TunnelStreamEnd[] = [];
    const refusals: Error[] = [];
    const server = createServer((socket) => {
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
      socket.on('error', () => undefined);
      const source = `${socket.remoteAddress}:${socket.remotePort}`;
      this.dataPlane.handle(target, socket, { source }).then(
        (end) => ends.push(end),
        (err: Error) => {
          refusals.push(err);
          socket.destroy();
        },
      );
    });
    this.servers.push(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as { port: number }).port;
    return { port, ends, refusals, close: () => new Promise<void>((r) => server.close(() => r())) };
  }

  /**
   * Like `listen`, but each connection crosses an HTTP/2 CONNECT stream first, the way the agent's tunnel carries it:
   * the data plane gets the server side of the stream, which closes only after its trailers (the handler's result)
   * are sent. `ends` holds the trailers as the far side received them.
   */
  async listenHttp2(target: TunnelTarget): Promise<Listener> {
    const ends: TunnelStreamEnd[] = [];
    const refusals: Error[] = [];
    const h2: Http2Server = h2createServer();
    h2.on('stream', (stream, headers) => {
      stream.on('error', () => undefined);
      stream.respond({ ':status': 200 }, { waitForTrailers: true });
      const result = this.dataPlane.handle(target, stream, { source: String(headers['x-gpuplane-source']) });
      stream.on('wantTrailers', () => {
        result.then(
          (t) => stream.sendTrailers(t),
          (err: Error) => stream.sendTrailers({ error: err.message }),
        );
      });
      result.then(
        () => !stream.writableEnded && stream.end(),
        (err: Error) => {
          refusals.push(err);
          stream.close();
        },
      );
    });
    this.servers.push(h2 as unknown as Server);
    await new Promise<void>((r) => h2.listen(0, '127.0.0.1', r));
    const client: ClientHttp2Session = h2connect(`http://127.0.0.1:${(h2.address() as { port: number }).port}`);
    client.on('error', () => undefined);
    this.h2clients.push(client);
    const server = createServer({ allowHalfOpen: true }, (socket) => {
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
      socket.on('error', () => undefined);
      const req = client.request({ ':method': 'CONNECT', ':authority': 'target.1:0', 'x-gpuplane-source': `${socket.remoteAddress}:${socket.remotePort}` });
      req.on('error', () => socket.destroy());
      req.on('trailers', (t) => {
        const end: TunnelStreamEnd = {};
        for (const [k, v] of Object.entries(t)) if (!k.startsWith(':')) end[k] = String(v);
        ends.push(end);
      });
      socket.pipe(req);
      req.pipe(socket);
    });
    this.servers.push(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as { port: number }).port;
    return { port, ends, refusals, close: () => new Promise<void>((r) => server.close(() => r())) };
  }

  /** OpenSSH's options: no user config, this key only, no prompts. */
  sshOptions(key: Key, port: number, knownHosts = join(this.dir, 'known_hosts'), strict = 'accept-new'): string[] {
    return [
      '-F', '/dev/null', '-p', String(port), '-i', key.file, '-o', 'IdentitiesOnly=yes', '-o', 'BatchMode=yes',
      '-o', 'PasswordAuthentication=no', '-o', `StrictHostKeyChecking=${strict}`, '-o', `UserKnownHostsFile=${knownHosts}`,
      '-o', 'ConnectTimeout=20', '-o', 'LogLevel=ERROR',
    ];
  }

  ssh(key: Key, port: number, command: string, opts: { input?: string | Buffer; extra?: string[]; user?: string; knownHosts?: string; strict?: string } = {}): Promise<Ran> {
    return run('ssh', [...this.sshOptions(key, port, opts.knownHosts, opts.strict), ...(opts.extra ?? []), `${opts.user ?? 'root'}@127.0.0.1`, command], { input: opts.input });
  }

  /** The `-e` of rsync over ssh with this key. */
  rsyncShell(key: Key, port: number): string {
    return ['ssh', ...this.sshOptions(key, port)].join(' ');
  }

  async teardown(): Promise<void> {
    this.dataPlane?.close();
    for (const s of this.sockets) s.destroy();
    for (const c of this.h2clients) c.destroy();
    await Promise.all(this.servers.map((s) => new Promise<void>((r) => s.close(() => r()))));
    const label = [`gpuplane.machine_id=${this.owner.machineId}`, `gpuplane.owner=${this.owner.owner}`];
    for (const c of await this.docker.listContainers({ all: true, filters: { label } })) {
      await this.docker.getContainer(c.Id).remove({ force: true, v: true }).catch(() => undefined);
    }
    for (const n of await this.docker.listNetworks({ filters: { label } })) {
      await this.docker.getNetwork(n.Id).remove().catch(() => undefined);
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}
