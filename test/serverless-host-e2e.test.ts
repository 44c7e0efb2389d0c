// Serverless on a real host, end to end (issue 33 item 5), with real processes (`gpuplane serve`, `gpuplane agent`
// with Docker) and the client's own serverless code, unmodified (vast-cli's vastai/serverless, test/fixtures/
// vast-cli-serverless): an endpoint and a workergroup whose template runs the client's worker in front of a tiny model;
// the autoscaler rents the worker on the agent's machine; its container has the variables the worker reads (the
// autoscaler's REPORT_ADDR, MASTER_TOKEN and WORKER_PORT, the agent's CONTAINER_ID, PUBLIC_IPADDR and
// VAST_TCP_PORT_3000); the worker fetches /pubkey/ and reports to /worker_status/ until it is ready; the client's
// serverless SDK (in a container of the same image, on the host's network) finds the endpoint, routes with
// POST /route/ and gets the model's answer through the worker, which checked the route's signature. Then what is
// refused: a forged signature (by the worker), a report with another worker's token (by the server).
//
// The server listens on the host's own address, not 127.0.0.1: the worker in its container reaches the server there,
// as a real worker reaches a real server's public URL. The agent keeps its host firewall rule (containers reach no
// service of the host: any agent on this machine installs it, for every instance bridge), and here the server is such
// a service (a real host's server is another machine): the test opens the server's one port to the instance bridges
// with a rule of its own above the agent's, once the agent has put its rule in, and removes it at the end. Docker,
// iptables (root) and debootstrap must be there: where they are not, this test fails.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { call, serve, type Served } from './helpers/spawn.js';
import { prepareAgentRun, startAgent, within as withinDeadline, type AgentProcess } from './helpers/agent-process.js';
import { freePort } from './helpers/openssh.js';
import { serverlessWorkerImage } from './helpers/serverless-image.js';

const PORTS = { start: 48900, end: 48949 };
const OWNER = 'gpk_e2e_serverless_host_owner_key_0123';
const ENDPOINT = 'host-e2e';

const docker = new Docker();
const dir = mkdtempSync(join(tmpdir(), 'gpuplane-serverless-e2e-'));
const dbFile = join(dir, 'gpuplane.db');
let server: Served | undefined;
let agent: AgentProcess | undefined;
let base = '';
let machineId = 0;
let image = '';
let renterKey = '';
let workerId = 0;
let workerUrl = '';
/** This file's hole in the host firewall (iptables' arguments after the verb), once made. */
let hole: string[] | undefined;

const context = () => `--- agent\n${agent?.output().slice(-4000)}\n--- server\n${server?.output().slice(-4000)}\n--- worker\n${workerLogs}`;
let workerLogs = '';
const within = <T>(what: string, p: Promise<T>, ms = 60_000) => withinDeadline(what, p, context, ms);
const api = (method: string, path: string, k: string | null, body?: unknown) => call(base, method, path, k, body);
const ours = () => docker.listContainers({ all: true, filters: { label: [`gpuplane.machine_id=${machineId}`] } });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `get()` until it gives a value (not undefined). */
async function until<T>(get: () => Promise<T | undefined>, everyMs = 1000): Promise<T> {
  for (;;) {
    const v = await get();
    if (v !== undefined) return v;
    await sleep(everyMs);
  }
}

/** Runs the image's SDK client (client.py) on the host's network; its last line of output is the SDK's result. */
async function sdkRequest(apiKey: string): Promise<Record<string, any>> {
  const c = await docker.createContainer({
    Image: image, Entrypoint: ['python3', '-u', '/opt/worker/client.py'],
    Env: [`GPUPLANE_URL=${base}`, `VAST_API_KEY=${apiKey}`, `ENDPOINT_NAME=${ENDPOINT}`, 'PYTHONPATH=/opt/vast-cli:/opt/pyshim'],
    Labels: { 'gpuplane.test': 'serverless-host-e2e' },
    // A TTY: the log comes back as written, not in Docker's multiplexed frames.
    Tty: true,
    HostConfig: { NetworkMode: 'host' },
  });
  try {
    await c.start();
    const { StatusCode } = await c.wait();
    // Docker's client library hands back a log that is one JSON document already parsed.
    const raw: unknown = await c.logs({ stdout: true, stderr: true });
    if (!Buffer.isBuffer(raw) && typeof raw !== 'string') {
      assert.equal(StatusCode, 0, `the SDK client failed: ${JSON.stringify(raw)}`);
      return raw as Record<string, any>;
    }
    const out = raw.toString();
    assert.equal(StatusCode, 0, `the SDK client failed:\n${out}`);
    return JSON.parse(out.trim().split(/\r?\n/).pop()!);
  } finally {
    await c.remove({ force: true });
  }
}

before(async () => {
  const made = serverlessWorkerImage(docker);
  await prepareAgentRun(docker, dir, dbFile, 600_000_000);
  // The address containers reach the server at: the host's own (first non-loopback IPv4 address).
  const gateway = Object.values(networkInterfaces()).flat().find((a) => a && a.family === 'IPv4' && !a.internal)?.address;
  assert.match(gateway ?? '', /^\d+\.\d+\.\d+\.\d+$/, 'this host has an IPv4 address besides loopback');
  const port = await freePort();
  base = `http://${gateway}:${port}`;
  server = await serve({
    GPUPLANE_DATABASE_URL: `sqlite:${dbFile}`, GPUPLANE_BOOTSTRAP_API_KEY: OWNER, GPUPLANE_SECRET_KEY: 'e2e-secret-key-0123456789',
    GPUPLANE_SIM_MACHINES: '1', GPUPLANE_AGENT_OFFLINE_AFTER: '30', GPUPLANE_HOST: gateway!, GPUPLANE_PUBLIC_URL: base,
  }, { port });
  image = await within('the worker image', made, 1_500_000);
  const host = await api('POST', '/_emu/users', OWNER, { email: 'serverless-host@example.com' });
  const renter = await api('POST', '/_emu/users', OWNER, { email: 'serverless-renter@example.com' });
  renterKey = renter.body.api_key;
  agent = startAgent({
    url: base, stateDir: join(dir, 'state'), hardwareFile: join(dir, 'hardware.json'), ports: PORTS, apiKey: host.body.api_key,
  });
  machineId = (await within('registration', agent.logged('machine registered'))).machine_id;
  // The agent put its rule in before registering: this one goes above it.
  const rule = ['INPUT', '-i', 'gpb+', '-d', gateway!, '-p', 'tcp', '--dport', String(port), '-m', 'comment', '--comment', `gpuplane test: serverless-host-e2e ${process.pid}`, '-j', 'ACCEPT'];
  const added = spawnSync('iptables', ['-w', '-I', ...rule.slice(0, 1), '1', ...rule.slice(1)], { encoding: 'utf8' });
  assert.equal(added.status, 0, `iptables -I: ${added.stderr ?? added.error}`);
  hole = rule;
  const listed = await api('PUT', '/api/v0/machines/create_asks/', host.body.api_key, { machine: machineId, price_gpu: 0.3, price_disk: 0.1, end_date: null });
  assert.equal(listed.status, 200, JSON.stringify(listed.body));
});

after(async () => {
  if (agent && agent.child.exitCode === null) {
    agent.child.kill('SIGKILL');
    await agent.exited;
  }
  if (machineId) for (const c of await ours()) await docker.getContainer(c.Id).remove({ force: true, v: true }).catch(() => undefined);
  if (machineId) for (const n of await docker.listNetworks({ filters: { label: [`gpuplane.machine_id=${machineId}`] } })) await docker.getNetwork(n.Id).remove().catch(() => undefined);
  if (hole) spawnSync('iptables', ['-w', '-D', ...hole]);
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

test('the client\'s own worker runs on the agent\'s machine, reports ready, and answers the SDK\'s request routed by POST /route/', { timeout: 600_000 }, async () => {
  const tpl = await api('POST', '/api/v0/template/', renterKey, {
    name: 'pyworker', image, runtype: 'args', env: '-p 3000:3000', docker_login_repo: '', docker_login_user: '', docker_login_pass: '',
  });
  assert.equal(tpl.status, 200, JSON.stringify(tpl.body));
  const ep = await api('POST', '/api/v0/endptjobs/', renterKey, { endpoint_name: ENDPOINT, min_load: 1, cold_workers: 1, max_workers: 1 });
  assert.equal(ep.status, 200, JSON.stringify(ep.body));
  const endpointId: number = ep.body.result;
  const wg = await api('POST', '/api/v0/workergroups/', renterKey, {
    endpoint_id: endpointId, template_hash: tpl.body.template.hash_id, search_params: `machine_id=${machineId}`,
  });
  assert.equal(wg.status, 200, JSON.stringify(wg.body));

  // The autoscaler rents one worker, on the agent's machine (the simulated one is not in its search).
  const worker = await within('the worker rented', until(async () => {
    const r = await api('POST', '/get_endpoint_workers/', renterKey, { id: endpointId });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return (r.body as Record<string, any>[])[0];
  }), 60_000);
  workerId = worker.id;
  const shown = await within('the worker running', until(async () => {
    const i = (await api('GET', `/api/v0/instances/${workerId}/`, renterKey)).body.instances;
    return i?.actual_status === 'running' ? i : undefined;
  }), 180_000);
  assert.equal(shown.machine_id, machineId);

  // Its container has what the client's worker reads.
  const [container] = (await ours()).filter((c) => c.Labels['gpuplane.instance_id'] === String(workerId));
  assert.ok(container, 'the worker\'s container');
  const env = Object.fromEntries(((await docker.getContainer(container.Id).inspect()).Config.Env ?? []).map((e: string) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)]));
  const hostPort = Number(shown.ports['3000/tcp'][0].HostPort);
  assert.ok(hostPort >= PORTS.start && hostPort <= PORTS.end, `host port ${hostPort} in the agent's range`);
  assert.equal(env.REPORT_ADDR, base);
  assert.match(env.MASTER_TOKEN, /^gpw_[A-Za-z0-9_-]{43}$/);
  assert.equal(env.WORKER_PORT, '3000');
  assert.equal(env.CONTAINER_ID, String(workerId));
  assert.equal(env.PUBLIC_IPADDR, '127.0.0.1');
  assert.equal(env.VAST_TCP_PORT_3000, String(hostPort));
  workerUrl = `http://127.0.0.1:${hostPort}`;

  // The worker loads its model, benchmarks it, fetches /pubkey/ and reports: the server takes it as ready.
  const ready = await within('the worker reported ready', until(async () => {
    workerLogs = (await docker.getContainer(container.Id).logs({ stdout: true, stderr: true, tail: 40 })).toString('utf8');
    const r = await api('POST', '/get_endpoint_workers/', renterKey, { id: endpointId });
    return (r.body as Record<string, any>[]).find((x) => x.id === workerId && x.status === 'idle');
  }), 120_000);
  assert.ok(ready.perf > 0, `the benchmark's throughput is reported: ${JSON.stringify(ready)}`);

  // The client's serverless SDK: endpoint by name, POST /route/, then the worker, which checks the signature.
  const result = await within('the SDK request', sdkRequest(renterKey), 180_000);
  assert.equal(result.ok, true, JSON.stringify(result));
  assert.equal(result.status, 200);
  assert.equal(result.url, workerUrl);
  assert.deepEqual(result.response, { model: 'tiny-upper', upper: 'HELLO FROM THE SDK', input: { text: 'hello from the sdk' } });
});

test('the worker refuses a forged route signature; the server refuses a report without the worker\'s own token', { timeout: 120_000 }, async () => {
  assert.ok(workerId && workerUrl, 'the first test rented the worker');
  const epKey = (await api('GET', '/api/v0/endptjobs/', renterKey)).body.results.find((e: any) => e.endpoint_name === ENDPOINT).api_key;
  const routed = await api('POST', '/route/', epKey, { endpoint: ENDPOINT, cost: 100 });
  assert.equal(routed.status, 200, JSON.stringify(routed.body));
  assert.equal(routed.body.url, workerUrl);
  const send = (auth: Record<string, unknown>) => fetch(`${workerUrl}/generate`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ auth_data: auth, payload: { text: 'direct' } }),
  });
  // The route's reply as it came: the worker serves it.
  const good = await send(routed.body);
  assert.equal(good.status, 200, await good.clone().text());
  assert.equal((await good.json()).upper, 'DIRECT');
  // The same reply for another address (signed for this one), and a signature that is not the router's: refused.
  assert.equal((await send({ ...routed.body, url: 'http://127.0.0.1:1' })).status, 401);
  const forged = Buffer.from(routed.body.signature, 'base64');
  forged[0] ^= 0xff;
  assert.equal((await send({ ...routed.body, signature: forged.toString('base64') })).status, 401);

  // Reports: the worker's id with a token that is not its own, or a worker that is not one.
  const report = { id: workerId, mtoken: 'gpw_not-the-token', version: '1.1.0', loadtime: 1, error_msg: 'forged', url: 'http://10.0.0.1:1' };
  const refused = await api('POST', '/worker_status/', null, report);
  assert.equal(refused.status, 401, JSON.stringify(refused.body));
  assert.deepEqual(refused.body, { success: false, error: 'auth_error', msg: 'unknown worker, or not its MASTER_TOKEN' });
  assert.equal((await api('POST', '/worker_status/', null, { ...report, id: 1 })).status, 401);
  assert.equal((await api('POST', '/delete_requests/', null, { worker_id: workerId, mtoken: 'gpw_x', requests: [] })).status, 401);
  // Nothing of the forged report was taken: the worker is still routed.
  const again = await api('POST', '/route/', epKey, { endpoint: ENDPOINT, cost: 100 });
  assert.equal(again.body.url, workerUrl, JSON.stringify(again.body));
});
