// Issue 34 item 1, end to end: `gpuplane serve` in emulator mode with GPUPLANE_EMU_CONTAINERS=docker, a renter renting
// simulated machines, and what runs is real Docker containers under the real agent code (in the server's process):
// - the simulated pull time holds the container back; onstart runs; the stand-in nvidia-smi reports the machine's GPU
//   model, memory, driver and count, with CUDA_VISIBLE_DEVICES as the container would have it; no GPU device request;
// - request_logs is the container's real log; execute runs in the container; a `-p` port answers on 127.0.0.1;
// - fault exited stops the container (exit code 1) and the instance shows exited; recover runs it again;
// - SSH through the gateway with the real OpenSSH client into an image with its own sshd, and `vastai copy`'s rsync;
// - destroy removes the container, and the server's close removes what is left (an in-memory database).
// Docker and OpenSSH must be there: where they are not, this test fails.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { BUSYBOX_IMAGE, buildBusyboxImage } from './helpers/docker.js';
import { call, freshPgDatabase, serve, type Served } from './helpers/spawn.js';
import { DIALECTS } from './helpers/harness.js';
import { untilStatus, within as withinDeadline } from './helpers/agent-process.js';
import { sshdImage } from './helpers/sshd-image.js';
import { makeKeyPair, ok, run, ssh, untilSshWorks, type KeyPair } from './helpers/openssh.js';

const OWNER = 'gpk_e2e_emu_containers_owner_key_0123';
const GATEWAY_PORTS = { first: 53300, last: 53599 };
const docker = new Docker();
const dir = mkdtempSync(join(tmpdir(), 'gpuplane-emu-containers-'));
let server: Served | undefined;
let renterKey = '';
let key: KeyPair;
let sshd: Promise<string>;
/** Owner labels of the agents the server started: what the cleanup removes. */
const owners = new Set<string>();

const context = () => `--- server\n${server?.output().slice(-6000)}`;
const within = <T>(what: string, p: Promise<T>, ms = 90_000) => withinDeadline(what, p, context, ms);
const api = (method: string, path: string, k: string | null, body?: unknown) => call(server!.url, method, path, k, body);
const containersOf = async (machineId: number) => {
  const list = await docker.listContainers({ all: true, filters: { label: [`gpuplane.machine_id=${machineId}`] } });
  // Only this server's (other test files' agents may number a machine alike).
  const ours = list.filter((c) => c.Labels['gpuplane.owner'] && (owners.has(c.Labels['gpuplane.owner']) || c.Labels['gpuplane.instance_id']));
  for (const c of ours) owners.add(c.Labels['gpuplane.owner']);
  return ours;
};
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until<T>(what: string, f: () => Promise<T | undefined>, ms = 60_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`${what}: not within ${ms} ms\n${context()}`);
    await pause(250);
  }
}

/** The offers of machines not rented yet, one per machine, the most GPUs first. */
async function freeOffers(): Promise<Record<string, any>[]> {
  const r = await api('GET', '/api/v0/bundles/?q=' + encodeURIComponent(JSON.stringify({ rentable: { eq: true } })), renterKey);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  const byMachine = new Map<number, Record<string, any>>();
  for (const o of r.body.offers as Record<string, any>[]) if ((byMachine.get(o.machine_id)?.num_gpus ?? 0) < o.num_gpus) byMachine.set(o.machine_id, o);
  return [...byMachine.values()].sort((a, b) => b.num_gpus - a.num_gpus);
}

/** Runs `command` as the clients do: the PUT, then GETs of result_url until it answers 200. */
async function execute(id: number, command: string): Promise<string> {
  const r = await api('PUT', `/api/v0/instances/command/${id}/`, renterKey, { command });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  for (let i = 0; i < 6; i++) {
    const res = await fetch(r.body.result_url);
    if (res.status === 200) return (await res.text()).split(r.body.writeable_path || '\u0000').join('');
    assert.equal(res.status, 404);
  }
  throw new Error(`no output for ${command}`);
}

async function logsOf(id: number, text: string): Promise<string> {
  return until(`log of ${id} shows ${text}`, async () => {
    const r = await api('PUT', `/api/v0/instances/request_logs/${id}/`, renterKey, { tail: '200' });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const res = await fetch(r.body.result_url);
    const body = res.status === 200 ? await res.text() : '';
    return body.includes(text) ? body : undefined;
  });
}

for (const dialect of DIALECTS) describe(`real containers [${dialect}]`, () => {
  let pg: Awaited<ReturnType<typeof freshPgDatabase>> | undefined;
  before(async () => {
    await docker.ping();
    sshd = sshdImage();
    sshd.catch(() => undefined);
    await buildBusyboxImage(docker, dir);
    pg = dialect === 'postgres' ? await freshPgDatabase() : undefined;
    server = await serve({
      GPUPLANE_DATABASE_URL: pg?.url ?? 'sqlite::memory:', GPUPLANE_BOOTSTRAP_API_KEY: OWNER, GPUPLANE_SECRET_KEY: 'e2e-secret-key-0123456789',
      GPUPLANE_MODE: 'emulator', GPUPLANE_EMU_CONTAINERS: 'docker', GPUPLANE_SIM_MACHINES: '6', GPUPLANE_SIM_BOOT_SECONDS: '4',
      GPUPLANE_GATEWAY: 'true', GPUPLANE_GATEWAY_BIND: '127.0.0.1', GPUPLANE_GATEWAY_HOST: '127.0.0.1',
      GPUPLANE_GATEWAY_PORTS: `${GATEWAY_PORTS.first}-${GATEWAY_PORTS.last}`, GPUPLANE_GATEWAY_FAILED_LOGINS: '1000',
    });
    const renter = await api('POST', '/_emu/users', OWNER, { email: 'emu-containers-renter@example.com', credit: 1000 });
    assert.equal(renter.status, 200, JSON.stringify(renter.body));
    renterKey = renter.body.api_key;
    key = await makeKeyPair(dir, `renter-${dialect}`);
    assert.equal((await api('POST', '/api/v0/ssh/', renterKey, { ssh_key: key.publicKey })).status, 200);
  });

  after(async () => {
    await server?.stop();
    await pg?.drop();
    // The server removes its containers as it closes (in-memory database); whatever a failure left is removed here.
    for (const owner of owners) {
      for (const c of await docker.listContainers({ all: true, filters: { label: [`gpuplane.owner=${owner}`] } })) {
        await docker.getContainer(c.Id).remove({ force: true, v: true }).catch(() => undefined);
      }
      for (const n of await docker.listNetworks({ filters: { label: [`gpuplane.owner=${owner}`] } })) await docker.getNetwork(n.Id).remove().catch(() => undefined);
    }
  });

  test('a simulated machine runs the instance as a real container: pull time, onstart, nvidia-smi, logs, execute, -p port, faults, destroy', { timeout: 300_000 }, async () => {
    // One with direct ports, for the -p mapping.
    const offer = (await freeOffers()).find((o) => o.direct_port_count > o.num_gpus)!;
    assert.ok(offer, 'an offer with direct ports');
    const machineId: number = offer.machine_id;
    const onstart = [
      'echo "onstart-ran cvd=$CUDA_VISIBLE_DEVICES nvd=$NVIDIA_VISIBLE_DEVICES"',
      'nvidia-smi -L',
      'nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader',
      'nvidia-smi --query-gpu=count --format=csv,noheader,nounits | head -n 1 | sed "s/^/gpu-count=/"',
      'mkdir -p /www && echo hello-from-the-port > /www/index.html && httpd -p 8080 -h /www',
    ].join('\n');
    const rented = await api('PUT', `/api/v0/asks/${offer.id}/`, renterKey, {
      image: BUSYBOX_IMAGE, runtype: 'ssh', disk: 1, onstart, env: { '-p 8080:8080': '1', GREETING: 'hi' },
    });
    assert.equal(rented.status, 200, JSON.stringify(rented.body));
    const id: number = rented.body.new_contract;

    // The simulated pull (4 s, GPUPLANE_SIM_BOOT_SECONDS) holds the container back.
    await pause(1500);
    assert.deepEqual(await containersOf(machineId), [], 'no container while the image is being pulled');
    const view = await within(`instance ${id} running`, untilStatus(server!.url, renterKey, id, 'running'));
    assert.equal(view.public_ipaddr, '127.0.0.1');

    const [c] = await containersOf(machineId);
    assert.ok(c, 'a real container');
    assert.equal(c.Labels['gpuplane.instance_id'], String(id));
    const inspected = await docker.getContainer(c.Id).inspect();
    const n: number = offer.num_gpus;
    assert.ok(inspected.Config.Env.includes(`CUDA_VISIBLE_DEVICES=${Array.from({ length: n }, (_, i) => i).join(',')}`), inspected.Config.Env.join(' '));
    assert.ok(!(inspected.HostConfig.DeviceRequests ?? []).length, 'no GPU device request: there is no GPU here');

    // onstart ran; the stand-in nvidia-smi told the machine's GPUs (request_logs is the container's real log).
    const log = await logsOf(id, 'gpu-count=');
    assert.match(log, /onstart-ran cvd=[0-9,]+ nvd=[0-9,]+/);
    const listed = log.split('\n').filter((l) => /^GPU \d+: /.test(l));
    assert.equal(listed.length, n, log);
    for (const l of listed) assert.match(l, new RegExp(`^GPU \\d+: NVIDIA ${offer.gpu_name} \\(UUID: GPU-[0-9a-f-]+\\)$`));
    assert.match(log, new RegExp(`NVIDIA ${offer.gpu_name}, ${Math.round(offer.gpu_ram)} MiB, ${offer.driver_version.replace(/\./g, '\\.')}`));
    assert.match(log, new RegExp(`gpu-count=${n}\\n`));

    // execute runs in the container.
    assert.match(await within('execute', execute(id, 'ls /usr/local/bin')), /^nvidia-smi$/m);

    // The -p port answers on loopback, at the host port the instance shows.
    const binding = view.ports['8080/tcp']?.[0];
    assert.ok(binding, JSON.stringify(view.ports));
    assert.equal(binding.HostIp, '127.0.0.1');
    const page = await until('the port answers', async () => {
      const r = await fetch(`http://127.0.0.1:${binding.HostPort}/`).catch(() => undefined);
      return r?.status === 200 ? r.text() : undefined;
    });
    assert.equal(page, 'hello-from-the-port\n');

    // Fault exited: the container stops and the instance shows exited; recover runs it again.
    assert.equal((await api('POST', '/_emu/faults', OWNER, { fault: 'exited', instance_id: id })).status, 200);
    const exited = await within('exited', untilStatus(server!.url, renterKey, id, 'exited'));
    assert.equal((await docker.getContainer(c.Id).inspect()).State.Running, false);
    assert.ok(exited);
    assert.equal((await api('POST', '/_emu/faults', OWNER, { fault: 'recover', instance_id: id })).status, 200);
    await within('running again', untilStatus(server!.url, renterKey, id, 'running'));
    assert.equal((await docker.getContainer(c.Id).inspect()).State.Running, true);

    // Destroy removes the container.
    assert.equal((await api('DELETE', `/api/v0/instances/${id}/`, renterKey)).status, 200);
    await until('container removed', async () => ((await containersOf(machineId)).length === 0 ? true : undefined));
  });

  test('SSH through the gateway into a real container of a simulated machine (real ssh), nvidia-smi inside, vastai copy both ways', { timeout: 600_000 }, async () => {
    const image = await within('the sshd image', sshd, 480_000);
    const [offer] = await freeOffers();
    const rented = await api('PUT', `/api/v0/asks/${offer.id}/`, renterKey, { image, runtype: 'ssh_proxy', disk: 2, onstart: 'touch /root/onstart-done' });
    assert.equal(rented.status, 200, JSON.stringify(rented.body));
    const id: number = rented.body.new_contract;
    const view = await within(`instance ${id} running`, untilStatus(server!.url, renterKey, id, 'running'), 120_000);
    assert.equal(view.ssh_host, '127.0.0.1');
    const t = { host: view.ssh_host as string, port: view.ssh_port as number, key, knownHosts: join(dir, `known_hosts-${dialect}`) };
    await untilSshWorks(t, 'test -f /root/onstart-done', 90_000, context);
    const out = await untilSshWorks(t, 'nvidia-smi --query-gpu=name --format=csv,noheader', 30_000, context);
    assert.equal(out.stdout.trim().split('\n').length, offer.num_gpus, out.stdout);
    assert.match(out.stdout, new RegExp(`^NVIDIA ${offer.gpu_name}$`, 'm'));

    // `vastai copy` both ways: the rsync command the client runs, through the gateway.
    const up = join(dir, `up-${dialect}`);
    mkdirSync(up, { recursive: true });
    writeFileSync(join(up, 'a.txt'), `copied up ${dialect}\n`);
    const shell = (port: number) => `ssh -i ${key.file} -p ${port} -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -F /dev/null`;
    const put = await api('PUT', '/api/v0/commands/rsync/', renterKey, { client_id: 'me', src_id: null, dst_id: String(id), src_path: `${up}/`, dst_path: '/root/in/' });
    assert.equal(put.status, 200, JSON.stringify(put.body));
    await ok(run('sh', ['-c', `rsync -arz -e '${shell(put.body.dst_port)}' ${up}/ vastai_kaalia@${put.body.dst_addr}::${id}//root/in/`], { timeoutMs: 120_000 }), 'rsync up');
    assert.equal((await ok(ssh(t, 'cat /root/in/a.txt'), 'read')), `copied up ${dialect}\n`);
    const get = await api('PUT', '/api/v0/commands/rsync/', renterKey, { client_id: 'me', src_id: String(id), dst_id: null, src_path: '/root/in/', dst_path: `${up}-back` });
    assert.equal(get.status, 200, JSON.stringify(get.body));
    await ok(run('sh', ['-c', `rsync -arz -e '${shell(get.body.src_port)}' vastai_kaalia@${get.body.src_addr}::${id}//root/in/ ${up}-back/`], { timeoutMs: 120_000 }), 'rsync down');
    assert.equal(readFileSync(join(`${up}-back`, 'a.txt'), 'utf8'), `copied up ${dialect}\n`);

    assert.equal((await api('DELETE', `/api/v0/instances/${id}/`, renterKey)).status, 200);
    await until('container removed', async () => ((await containersOf(offer.machine_id)).length === 0 ? true : undefined));
  });

  test('/_emu/reset takes the real containers with it; a rent after it runs in a new one', { timeout: 300_000 }, async () => {
    const [offer] = await freeOffers();
    const rented = await api('PUT', `/api/v0/asks/${offer.id}/`, renterKey, { image: BUSYBOX_IMAGE, runtype: 'ssh', disk: 1 });
    assert.equal(rented.status, 200, JSON.stringify(rented.body));
    await within('running', untilStatus(server!.url, renterKey, rented.body.new_contract, 'running'));
    const [before] = await containersOf(offer.machine_id);
    assert.ok(before);
    const reset = await api('POST', '/_emu/reset', OWNER, {});
    assert.equal(reset.status, 200, JSON.stringify(reset.body));
    await until('containers removed by the reset', async () => ((await containersOf(offer.machine_id)).length === 0 ? true : undefined));
    const renter = await api('POST', '/_emu/users', OWNER, { email: 'emu-containers-after-reset@example.com', credit: 1000 });
    renterKey = renter.body.api_key;
    const [again] = await freeOffers();
    const second = await api('PUT', `/api/v0/asks/${again.id}/`, renterKey, { image: BUSYBOX_IMAGE, runtype: 'ssh', disk: 1 });
    assert.equal(second.status, 200, JSON.stringify(second.body));
    await within('running after the reset', untilStatus(server!.url, renterKey, second.body.new_contract, 'running'));
    const [c] = await containersOf(again.machine_id);
    assert.ok(c && c.Id !== before.Id);
    assert.equal(c.Labels['gpuplane.instance_id'], String(second.body.new_contract));
  });
});

after(() => rmSync(dir, { recursive: true, force: true }));
