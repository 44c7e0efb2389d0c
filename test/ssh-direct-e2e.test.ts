// End to end with real processes (`gpuplane serve`, `gpuplane agent` with Docker) and the real OpenSSH client: an
// `ssh_direct` instance of an image with its own sshd (test/helpers/sshd-image.ts: Debian with openssh-server,
// python3, rsync) is reached on its published 22/tcp, the `ssh_host:ssh_port` the API answers, with `ssh`, `scp`,
// `sftp`, `rsync` and `ssh -L` as a renter runs them (issue 31: "what works and must keep working"). This is the
// baseline the proxied tests (ssh-gateway-e2e) and bench/ssh-gateway compare with. It also checks what the agent's
// entrypoint must do for such an image (container-spec.ts keepAliveScript): the account's key in authorized_keys,
// host keys made in the container (the image has none), sshd running; and the spec's environment rule: onstart sees
// CONTAINER_API_KEY and the rest, and an SSH session sees them once onstart wrote them to /etc/environment (README's
// one line). Docker and the OpenSSH client must be there: where they are not, this test fails.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { call, serve, type Served } from './helpers/spawn.js';
import { prepareAgentRun, startAgent, untilStatus, within as withinDeadline, type AgentProcess } from './helpers/agent-process.js';
import { sshdImage } from './helpers/sshd-image.js';
import { forward, freePort, makeKeyPair, ok, rsync, scp, sftp, ssh, untilSshWorks, type KeyPair, type SshTarget } from './helpers/openssh.js';

const PORTS = { start: 48600, end: 48799 };
const OWNER = 'gpk_e2e_ssh_direct_owner_key_012345';

const docker = new Docker();
const dir = mkdtempSync(join(tmpdir(), 'gpuplane-ssh-direct-e2e-'));
const dbFile = join(dir, 'gpuplane.db');
let server: Served | undefined;
let agent: AgentProcess | undefined;
let machineId = 0;
let image = '';

const within = <T>(what: string, p: Promise<T>, ms = 60_000) =>
  withinDeadline(what, p, () => `--- agent\n${agent?.output().slice(-3000)}\n--- server\n${server?.output().slice(-3000)}`, ms);
const api = (method: string, path: string, key: string | null, body?: unknown) => call(server!.url, method, path, key, body);
const ours = () => docker.listContainers({ all: true, filters: { label: [`gpuplane.machine_id=${machineId}`] } });

before(async () => {
  // The image (about 2 minutes the first time on a daemon) is made while the server starts.
  const made = sshdImage();
  await prepareAgentRun(docker, dir, dbFile, 300_000_000);
  server = await serve({
    GPUPLANE_DATABASE_URL: `sqlite:${dbFile}`, GPUPLANE_BOOTSTRAP_API_KEY: OWNER, GPUPLANE_SECRET_KEY: 'e2e-secret-key-0123456789',
    GPUPLANE_SIM_MACHINES: '1', GPUPLANE_AGENT_OFFLINE_AFTER: '30',
    // Direct SSH only: no gateway listeners in this process (the proxied path is ssh-gateway-e2e's).
    GPUPLANE_GATEWAY: 'false',
  });
  image = await made;
});

after(async () => {
  if (agent && agent.child.exitCode === null) {
    agent.child.kill('SIGKILL');
    await agent.exited;
  }
  if (machineId) for (const c of await ours()) await docker.getContainer(c.Id).remove({ force: true, v: true }).catch(() => undefined);
  if (machineId) for (const n of await docker.listNetworks({ filters: { label: [`gpuplane.machine_id=${machineId}`] } })) await docker.getNetwork(n.Id).remove().catch(() => undefined);
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

test('ssh_direct into an image with sshd: ssh, scp, sftp, rsync and ssh -L on the published 22/tcp', { timeout: 420_000 }, async () => {
  const host = await api('POST', '/_emu/users', OWNER, { email: 'ssh-direct-host@example.com' });
  const renter = await api('POST', '/_emu/users', OWNER, { email: 'ssh-direct-renter@example.com' });
  const [hostKey, renterKey]: string[] = [host.body.api_key, renter.body.api_key];
  const key: KeyPair = await makeKeyPair(dir, 'renter');
  const stranger: KeyPair = await makeKeyPair(dir, 'stranger');
  const added = await api('POST', '/api/v0/ssh/', renterKey, { ssh_key: key.publicKey });
  assert.equal(added.status, 200, JSON.stringify(added.body));

  agent = startAgent({ url: server!.url, stateDir: join(dir, 'state'), hardwareFile: join(dir, 'hardware.json'), ports: PORTS, apiKey: hostKey });
  machineId = (await within('registration', agent.logged('machine registered'))).machine_id;
  const listed = await api('PUT', '/api/v0/machines/create_asks/', hostKey, { machine: machineId, price_gpu: 0.3, price_disk: 0.1, end_date: null });
  assert.equal(listed.status, 200, JSON.stringify(listed.body));
  // onstart: the README's line (the container's variables into SSH sessions), a web server for ssh -L, then a marker.
  const rented = await api('PUT', `/api/v0/asks/${machineId * 100 + 1}/`, renterKey, {
    image, runtype: 'ssh_direct', env: { GREETING: 'hi-ssh-direct' },
    onstart: [
      "env | grep -v '^PATH=' >> /etc/environment",
      'mkdir -p /srv/www && echo served-in-the-container > /srv/www/index.html',
      '(python3 -m http.server 8080 --bind 127.0.0.1 --directory /srv/www >/dev/null 2>&1 &)',
      'touch /root/onstart-done',
    ].join('\n'),
  });
  assert.equal(rented.status, 200, JSON.stringify(rented.body));
  const id: number = rented.body.new_contract;
  const inst = await within('instance running', untilStatus(server!.url, renterKey, id, 'running'), 120_000);

  // Direct: ssh_host:ssh_port is the host's address and the host port of the container's 22/tcp.
  assert.equal(inst.ssh_host, '127.0.0.1');
  assert.equal(inst.ssh_port, Number(inst.ports['22/tcp'][0].HostPort));
  assert.ok(inst.ssh_port >= PORTS.start && inst.ssh_port <= PORTS.end, `${inst.ssh_port} in the agent's port range`);
  const t: SshTarget = { host: inst.ssh_host, port: inst.ssh_port, key, knownHosts: join(dir, 'known_hosts') };
  // sshd starts after the instance reports running, onstart after it.
  await untilSshWorks(t, 'test -f /root/onstart-done', 90_000, () => `--- agent\n${agent?.output().slice(-3000)}`);

  // A shell command: root, in this instance's container (Debian, python3), the account's key in authorized_keys, and
  // the host key it showed is the one the container made for itself (the image had none).
  const who = await ok(ssh(t, 'id -un; cat /etc/debian_version | cut -d. -f1; python3 -c "print(6*7)"; cat /root/.ssh/authorized_keys'), 'ssh');
  assert.deepEqual(who.trim().split('\n'), ['root', '12', '42', key.publicKey]);
  const hostKeyLine = (await ok(ssh(t, 'cat /etc/ssh/ssh_host_ed25519_key.pub'), 'host key')).trim().split(' ').slice(0, 2).join(' ');
  const known = readFileSync(t.knownHosts, 'utf8');
  assert.ok(known.includes(hostKeyLine), `known_hosts holds the container's own host key\n${known}`);
  const [container] = await ours();
  assert.equal(container.Image, image);

  // The environment: onstart saw the instance key and the rest; the session sees them through /etc/environment.
  const env = await ok(ssh(t, 'echo "$CONTAINER_API_KEY|$CONTAINER_ID|$PUBLIC_IPADDR|$VAST_TCP_PORT_22|$GREETING"'), 'ssh env');
  assert.equal(env.trim(), `${rented.body.instance_api_key}|${id}|127.0.0.1|${inst.ssh_port}|hi-ssh-direct`);

  // Exit status and stdin pass through.
  assert.equal((await ssh(t, 'exit 7')).code, 7);
  assert.equal(await ok(ssh(t, 'tr a-z A-Z', { input: 'piped through\n' }), 'ssh stdin'), 'PIPED THROUGH\n');

  // scp both ways (OpenSSH 9's scp speaks SFTP), 3 MB of random bytes, the same bytes back.
  const blob = randomBytes(3 * 1024 * 1024);
  writeFileSync(join(dir, 'blob.bin'), blob);
  await ok(scp(t, join(dir, 'blob.bin'), ':/root/blob.bin'), 'scp up');
  const sum = await ok(ssh(t, 'sha256sum /root/blob.bin'), 'sha256sum');
  assert.equal(sum.split(' ')[0], createHash('sha256').update(blob).digest('hex'));
  await ok(scp(t, ':/root/blob.bin', join(dir, 'blob-back.bin')), 'scp down');
  assert.ok(readFileSync(join(dir, 'blob-back.bin')).equals(blob));
  // The legacy scp protocol (-O) too: it runs `scp` in the container.
  await ok(scp(t, join(dir, 'blob.bin'), ':/root/blob-legacy.bin', ['-O']), 'scp -O up');
  assert.equal((await ok(ssh(t, 'cmp /root/blob.bin /root/blob-legacy.bin && echo same'), 'cmp')).trim(), 'same');

  // sftp: mkdir, put, ls, get, rename, rm.
  writeFileSync(join(dir, 'note.txt'), 'by sftp\n');
  const listing = await ok(sftp(t, [
    'mkdir /root/sftp-dir', `put ${join(dir, 'note.txt')} /root/sftp-dir/note.txt`, 'ls /root/sftp-dir',
    `get /root/sftp-dir/note.txt ${join(dir, 'note-back.txt')}`, 'rename /root/sftp-dir/note.txt /root/sftp-dir/moved.txt', 'ls /root/sftp-dir',
  ].join('\n')), 'sftp');
  assert.match(listing, /\/root\/sftp-dir\/note\.txt/);
  assert.match(listing, /\/root\/sftp-dir\/moved\.txt/);
  assert.equal(readFileSync(join(dir, 'note-back.txt'), 'utf8'), 'by sftp\n');

  // rsync over ssh: a tree with a nested file and a symlink up; a second run sends only what changed; and back down.
  const tree = join(dir, 'tree');
  mkdirSync(join(tree, 'sub'), { recursive: true });
  writeFileSync(join(tree, 'a.txt'), 'alpha\n');
  writeFileSync(join(tree, 'sub', 'b.txt'), 'bravo\n');
  symlinkSync('sub/b.txt', join(tree, 'link'));
  await ok(rsync(t, `${tree}/`, ':/root/tree/'), 'rsync up');
  assert.equal(await ok(ssh(t, 'cat /root/tree/a.txt /root/tree/sub/b.txt; readlink /root/tree/link'), 'read tree'), 'alpha\nbravo\nsub/b.txt\n');
  writeFileSync(join(tree, 'a.txt'), 'alpha, changed\n');
  const again = await ok(rsync(t, `${tree}/`, ':/root/tree/', ['--itemize-changes']), 'rsync again');
  assert.deepEqual(again.trim().split('\n').filter((l) => /^[<>]f/.test(l)).map((l) => l.split(' ').pop()), ['a.txt'], again);
  await ok(rsync(t, ':/root/tree/', join(dir, 'tree-back/')), 'rsync down');
  assert.equal(readFileSync(join(dir, 'tree-back', 'a.txt'), 'utf8'), 'alpha, changed\n');
  assert.equal(readFileSync(join(dir, 'tree-back', 'link'), 'utf8'), 'bravo\n');

  // ssh -L to a port only the container listens on (127.0.0.1:8080 inside it).
  const local = await freePort();
  const stop = await within('ssh -L up', forward(t, local, '127.0.0.1', 8080));
  try {
    const res = await fetch(`http://127.0.0.1:${local}/`);
    assert.equal(res.status, 200);
    assert.equal(await res.text(), 'served-in-the-container\n');
  } finally {
    await stop();
  }

  // A key the renter never registered is refused.
  const refused = await ssh({ ...t, key: stranger }, 'true');
  assert.equal(refused.code, 255);
  assert.match(refused.stderr, /Permission denied \(publickey/);

  // The agent stopped (SIGTERM) while the instance runs (its direct 22/tcp held): it exits 0, the container runs on.
  agent.child.kill('SIGTERM');
  assert.equal(await within('the agent exits on SIGTERM', agent.exited, 30_000), 0, agent.output().slice(-3000));
  assert.equal((await docker.getContainer(container.Id).inspect()).State.Running, true);
  assert.equal((await api('DELETE', `/api/v0/instances/${id}/`, renterKey)).status, 200);
  assert.doesNotMatch(agent.output() + server!.output(), new RegExp(key.publicKey.split(' ')[1].slice(0, 40).replace(/[+/]/g, '.')), 'no key in a log');
  assert.doesNotMatch(agent.output() + server!.output(), new RegExp(rented.body.instance_api_key), 'no instance key in a log');
});
