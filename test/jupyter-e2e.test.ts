// Jupyter runtypes end to end (issue 32 "Done when"), with real processes (`gpuplane serve`, `gpuplane agent` with
// Docker and its tunnel) and an image holding a stand-in `jupyter` (busybox plus a shell script) that records its
// arguments, JUPYTER_TOKEN and working directory, then serves HTTP on 8080 (busybox httpd):
// - jupyter_direct: Jupyter gets exactly `jupyter notebook --ip=0.0.0.0 --port=8080 --no-browser --allow-root
//   --notebook-dir=<dir>` in <dir> with the instance's token (over a renter's JUPYTER_TOKEN), for a directory with
//   spaces, quotes, $(...) and backticks that runs nothing; jupyter_url's host port answers on 127.0.0.1; onstart ran;
//   SSH works at the instance's direct SSH address;
// - jupyter_proxy with use_jupyter_lab: `jupyter lab` in /root; jupyter_url through the server's port URL (the port
//   proxy, src/ports/) with the Jupyter token gets the stand-in's page, and nothing without it;
// - busybox without `jupyter`: status_msg says so (GET /api/v0/instances/{id}/, what `vastai show instance` prints),
//   the container log says so, and onstart still ran.
// Docker and the OpenSSH client must be there: where they are not, this test fails.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { BUSYBOX_IMAGE } from './helpers/docker.js';
import { call, serve, type Served } from './helpers/spawn.js';
import { prepareAgentRun, startAgent, untilStatus, within as withinDeadline, type AgentProcess } from './helpers/agent-process.js';
import { freePort, makeKeyPair, run, untilSshWorks, type KeyPair } from './helpers/openssh.js';
import { JUPYTER_MISSING_LOG } from '../src/agent/container-spec.js';
import { JUPYTER_MISSING_MSG } from '../src/agent-server/agent-server-observed.js';

const PORTS = { start: 47700, end: 47799 };
const OWNER = 'gpk_e2e_jupyter_owner_key_0123456789';
const PAGE = 'stand-in jupyter page\n';
const ARGV_TAIL = ['--ip=0.0.0.0', '--port=8080', '--no-browser', '--allow-root'];

/** The stand-in: what Jupyter would be given goes to /jupyter-record, then an HTTP server on 8080 in its place. */
const STAND_IN = [
  '#!/bin/sh',
  '{',
  '  for a in "$@"; do printf \'arg=%s\\n\' "$a"; done',
  '  printf \'token=%s\\n\' "$JUPYTER_TOKEN"',
  '  printf \'pwd=%s\\n\' "$(pwd)"',
  '} > /jupyter-record.tmp && mv /jupyter-record.tmp /jupyter-record',
  'exec httpd -f -p 8080 -h /www',
].join('\n');

const docker = new Docker();
const dir = mkdtempSync(join(tmpdir(), 'gpuplane-jupyter-e2e-'));
const dbFile = join(dir, 'gpuplane.db');
let server: Served | undefined;
let serverPort = 0;
let agent: AgentProcess | undefined;
let machineId = 0;
let image = '';
let renterKey = '';
let key: KeyPair;
const knownHosts = join(dir, 'known_hosts');

const context = () => `--- agent\n${agent?.output().slice(-4000)}\n--- server\n${server?.output().slice(-4000)}`;
const within = <T>(what: string, p: Promise<T>, ms = 60_000) => withinDeadline(what, p, context, ms);
const api = (method: string, path: string, k: string | null, body?: unknown) => call(server!.url, method, path, k, body);

/** Builds the stand-in image on the tests' busybox image, once per content (tagged by its hash). */
async function standInImage(): Promise<string> {
  const ctx = join(dir, 'jupyter-image');
  mkdirSync(join(ctx, 'www'), { recursive: true });
  writeFileSync(join(ctx, 'jupyter'), STAND_IN);
  chmodSync(join(ctx, 'jupyter'), 0o755);
  writeFileSync(join(ctx, 'www', 'index.html'), PAGE);
  const base = await docker.getImage(BUSYBOX_IMAGE).inspect();
  const tag = `gpuplane-test-jupyter:${createHash('sha256').update(base.Id).update(STAND_IN).update(PAGE).digest('hex').slice(0, 24)}`;
  if (await docker.getImage(tag).inspect().catch(() => undefined)) return tag;
  writeFileSync(join(ctx, 'Dockerfile'), `FROM ${BUSYBOX_IMAGE}\nCOPY jupyter /bin/jupyter\nCOPY www /www\n`);
  const stream = await docker.buildImage({ context: ctx, src: ['Dockerfile', 'jupyter', 'www'] }, { t: tag });
  const out = await new Promise<{ error?: string }[]>((resolve, reject) =>
    docker.modem.followProgress(stream, (err: Error | null, o: { error?: string }[]) => (err ? reject(err) : resolve(o))),
  );
  const failed = out.find((o) => o.error);
  if (failed) throw new Error(`building ${tag} failed: ${failed.error}`);
  return tag;
}

/** The container of instance `id` (its current one). */
async function containerOf(id: number): Promise<string> {
  const list = await docker.listContainers({ all: true, filters: { label: [`gpuplane.machine_id=${machineId}`, `gpuplane.instance_id=${id}`] } });
  assert.equal(list.length, 1, JSON.stringify(list.map((c) => c.Names)));
  return list[0].Id;
}

/** `docker exec` in instance `id`'s container: its stdout, or null when the command failed. */
async function inContainer(id: number, ...argv: string[]): Promise<string | null> {
  const r = await run('docker', ['exec', await containerOf(id), ...argv]);
  return r.code === 0 ? r.stdout : null;
}

/** What the stand-in was given, once it has run. */
async function record(id: number): Promise<string[]> {
  const until = Date.now() + 30_000;
  for (;;) {
    const text = await inContainer(id, 'cat', '/jupyter-record');
    if (text !== null) return text.split('\n').filter(Boolean);
    if (Date.now() > until) throw new Error(`instance ${id}: the stand-in jupyter never ran\n${await run('docker', ['logs', await containerOf(id)]).then((r) => r.stdout + r.stderr)}\n${context()}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function rent(body: Record<string, unknown>): Promise<{ id: number; view: Record<string, any> }> {
  const rented = await api('PUT', `/api/v0/asks/${machineId * 100 + 1}/`, renterKey, body);
  assert.equal(rented.status, 200, JSON.stringify(rented.body));
  const id: number = rented.body.new_contract;
  const view = await within(`instance ${id} running`, untilStatus(server!.url, renterKey, id, 'running'), 120_000);
  return { id, view };
}

/** A GET to the server's own address with a port host's Host header (as a browser would once DNS points it here). */
function hostRequest(port: number, hostHeader: string, path: string): Promise<{ status: number; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, headers: { host: hostHeader } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/** The first 200 from `url` (the app may still be starting), within a deadline. */
async function untilOk(url: string): Promise<Response> {
  const until = Date.now() + 30_000;
  for (;;) {
    const res = await fetch(url).catch(() => undefined);
    if (res?.status === 200) return res;
    if (Date.now() > until) throw new Error(`${url} never answered 200 (last ${res?.status})\n${context()}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

before(async () => {
  await prepareAgentRun(docker, dir, dbFile, 700_000_000);
  writeFileSync(join(dir, 'hardware.json'), JSON.stringify({ ...JSON.parse(readFileSync(join(dir, 'hardware.json'), 'utf8')), num_gpus: 4 }));
  image = await standInImage();
  serverPort = await freePort();
  server = await serve({
    GPUPLANE_DATABASE_URL: `sqlite:${dbFile}`, GPUPLANE_BOOTSTRAP_API_KEY: OWNER, GPUPLANE_SECRET_KEY: 'e2e-secret-key-0123456789',
    GPUPLANE_SIM_MACHINES: '1', GPUPLANE_AGENT_OFFLINE_AFTER: '30',
  }, { port: serverPort });
  const host = await api('POST', '/_emu/users', OWNER, { email: 'jupyter-host@example.com' });
  const renter = await api('POST', '/_emu/users', OWNER, { email: 'jupyter-renter@example.com' });
  renterKey = renter.body.api_key;
  key = await makeKeyPair(dir, 'renter');
  assert.equal((await api('POST', '/api/v0/ssh/', renterKey, { ssh_key: key.publicKey })).status, 200);
  agent = startAgent({ url: server.url, stateDir: join(dir, 'state'), hardwareFile: join(dir, 'hardware.json'), ports: PORTS, apiKey: host.body.api_key });
  machineId = (await within('registration', agent.logged('machine registered'))).machine_id;
  const listed = await api('PUT', '/api/v0/machines/create_asks/', host.body.api_key, { machine: machineId, price_gpu: 0.3, price_disk: 0.1, end_date: null });
  assert.equal(listed.status, 200, JSON.stringify(listed.body));
});

after(async () => {
  if (agent && agent.child.exitCode === null) {
    agent.child.kill('SIGKILL');
    await agent.exited;
  }
  if (machineId) {
    for (const c of await docker.listContainers({ all: true, filters: { label: [`gpuplane.machine_id=${machineId}`] } })) {
      await docker.getContainer(c.Id).remove({ force: true, v: true }).catch(() => undefined);
    }
    for (const n of await docker.listNetworks({ filters: { label: [`gpuplane.machine_id=${machineId}`] } })) await docker.getNetwork(n.Id).remove().catch(() => undefined);
  }
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

test('jupyter_direct: Jupyter gets exactly its arguments, the token and the directory; jupyter_url answers; onstart ran; SSH works', { timeout: 240_000 }, async () => {
  const jdir = `/work space/it's "q" $(touch /pwned1) \`touch /pwned2\`;touch /pwned3`;
  const { id, view } = await rent({
    image, runtype: 'jupyter_direc ssh_direc ssh_proxy', jupyter_dir: jdir, env: { JUPYTER_TOKEN: 'the-renters-own' },
    onstart: 'echo "onstart saw $JUPYTER_TOKEN" > /root/onstart-ran',
  });
  const token: string = view.jupyter_token;
  assert.match(token, /^[A-Za-z0-9_-]{43}$/);
  assert.deepEqual(await record(id), [
    ...['notebook', ...ARGV_TAIL, `--notebook-dir=${jdir}`].map((a) => `arg=${a}`),
    `token=${token}`,
    `pwd=${jdir}`,
  ]);
  for (const n of [1, 2, 3]) assert.equal(await inContainer(id, 'test', '-e', `/pwned${n}`), null, `/pwned${n}: the directory's text ran`);
  // jupyter_url: the host's published 8080 on 127.0.0.1, with the token.
  const hostPort = view.ports['8080/tcp'][0].HostPort;
  assert.equal(view.jupyter_url, `http://127.0.0.1:${hostPort}/?token=${token}`);
  const res = await untilOk(view.jupyter_url);
  assert.equal(await res.text(), PAGE);
  // Onstart ran, and saw the instance's token too.
  const until = Date.now() + 30_000;
  let onstart: string | null = null;
  while ((onstart = await inContainer(id, 'cat', '/root/onstart-ran')) === null && Date.now() < until) await new Promise((r) => setTimeout(r, 200));
  assert.equal(onstart, `onstart saw ${token}\n`);
  // SSH at the instance's direct address (the agent holds its 22).
  assert.equal(view.ssh_host, '127.0.0.1');
  assert.equal(view.ssh_port, Number(view.ports['22/tcp'][0].HostPort));
  const ssh = await untilSshWorks({ host: view.ssh_host, port: view.ssh_port, key, knownHosts }, 'cat /root/onstart-ran', 60_000, context);
  assert.equal(ssh.stdout, `onstart saw ${token}\n`);
  // The image has Jupyter: nothing to say.
  assert.equal((await api('GET', `/api/v0/instances/${id}/`, renterKey)).body.instances.status_msg, null);
});

test('jupyter_proxy with use_jupyter_lab: `jupyter lab` in /root; jupyter_url through the server\'s port URL with the token', { timeout: 240_000 }, async () => {
  const { id, view } = await rent({ image, runtype: 'jupyter_proxy ssh_proxy', use_jupyter_lab: true });
  const token: string = view.jupyter_token;
  assert.deepEqual(await record(id), [
    ...['lab', ...ARGV_TAIL, '--notebook-dir=/root'].map((a) => `arg=${a}`),
    `token=${token}`,
    'pwd=/root',
  ]);
  assert.deepEqual(view.ports, {}, 'proxy: nothing published');
  const hostHeader = `${id}-8080.localhost:${serverPort}`;
  assert.equal(view.port_urls['8080/tcp'], `http://${hostHeader}/`);
  assert.equal(view.jupyter_url, `http://${hostHeader}/?token=${token}`);
  const url = new URL(view.jupyter_url);
  const until = Date.now() + 30_000;
  let got = await hostRequest(serverPort, hostHeader, `${url.pathname}${url.search}`);
  while (got.status !== 200 && Date.now() < until) {
    await new Promise((r) => setTimeout(r, 300));
    got = await hostRequest(serverPort, hostHeader, `${url.pathname}${url.search}`);
  }
  assert.equal(got.status, 200, got.body.toString());
  assert.equal(got.body.toString(), PAGE);
  // Without the token (and no cookie), the proxy does not let anyone in; a wrong token neither.
  assert.equal((await hostRequest(serverPort, hostHeader, '/')).status, 401);
  assert.equal((await hostRequest(serverPort, hostHeader, '/?token=not-the-token')).status, 401);
});

test('an image without jupyter: status_msg says so, the log says so, and onstart still ran', { timeout: 240_000 }, async () => {
  const { id } = await rent({ image: BUSYBOX_IMAGE, runtype: 'jupyter_direct', onstart: 'touch /root/onstart-ran' });
  const until = Date.now() + 60_000;
  let view = (await api('GET', `/api/v0/instances/${id}/`, renterKey)).body.instances;
  while (view.status_msg !== JUPYTER_MISSING_MSG && Date.now() < until) {
    await new Promise((r) => setTimeout(r, 300));
    view = (await api('GET', `/api/v0/instances/${id}/`, renterKey)).body.instances;
  }
  assert.equal(view.status_msg, JUPYTER_MISSING_MSG, context());
  assert.equal(view.actual_status, 'running');
  assert.match(view.status_msg, /^Jupyter is not installed in this image \(no `jupyter` on PATH\); SSH and onstart run$/);
  const log = await run('docker', ['logs', await containerOf(id)]);
  assert.ok((log.stdout + log.stderr).includes(JUPYTER_MISSING_LOG), log.stdout + log.stderr);
  const done = Date.now() + 30_000;
  while ((await inContainer(id, 'test', '-f', '/root/onstart-ran')) === null && Date.now() < done) await new Promise((r) => setTimeout(r, 200));
  assert.notEqual(await inContainer(id, 'test', '-f', '/root/onstart-ran'), null, 'onstart ran');
  // The list (`vastai show instances`) says the same.
  const list = await api('GET', '/api/v0/instances/', renterKey);
  assert.equal(list.body.instances.find((i: { id: number }) => i.id === id).status_msg, JUPYTER_MISSING_MSG);
});
