// End to end through the SSH gateway (issue 31 "Done when"), with real processes (`gpuplane serve` with its gateway on
// 127.0.0.1, `gpuplane agent` with Docker and its tunnel) and the real OpenSSH client, as a renter runs it from the
// `ssh_host:ssh_port` the API answers for `ssh_proxy` instances:
// - an image with its own sshd (test/helpers/sshd-image.ts): ssh, scp, sftp, rsync, ssh -L and -R reach the container's
//   sshd end to end (the host key the client sees is the container's own: the gateway does not terminate SSH); each
//   connection is in the renter's audit log;
// - busybox (no sshd, no scp, no rsync): the agent's own SSH server gives a PTY shell of the asked size, exec with exit
//   status, sftp, scp and ssh -L to a container port;
// - a Jupyter runtype's SSH is on ssh_port + 1 (the vastai client's ssh-url adds 1);
// - a key attached after creation gets in, and is refused once detached (the image's authorized_keys and the agent's
//   own server alike);
// - a team's instance lets in a member's own account key;
// - `vastai copy` both ways: the PUT /api/v0/commands/rsync/ reply, then the very rsync command the client runs
//   (user vastai_kaalia, module = the instance id), into busybox, which has no rsync;
// - the container's environment: onstart sees CONTAINER_API_KEY and the rest; an SSH session does not, unless onstart
//   wrote them to /etc/environment (spec);
// - an instance on a simulated machine is refused with a message that says so (and the refusal is audited);
// - the agent stopped (SIGTERM: exits 0), and killed, and started again: new connections get in (same host keys), the
//   instance's files are all there;
// - a destroyed instance's open sessions end.
// Docker and the OpenSSH client must be there: where they are not, this test fails.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { BUSYBOX_IMAGE, logShows } from './helpers/docker.js';
import { call, serve, type Served } from './helpers/spawn.js';
import { prepareAgentRun, startAgent, untilStatus, within as withinDeadline, type AgentProcess } from './helpers/agent-process.js';
import { sshdImage } from './helpers/sshd-image.js';
import {
  forward, freePort, holdSession, makeKeyPair, ok, rsync, run, scp, sftp, ssh, sshOptions, untilSshRefused, untilSshWorks,
  type KeyPair, type SshTarget,
} from './helpers/openssh.js';

const PORTS = { start: 48800, end: 48899 };
/** The gateway's range in this file (300 slots of 3 ports), apart from other files'. */
const GATEWAY_PORTS = { first: 52000, last: 52899 };
const OWNER = 'gpk_e2e_ssh_gateway_owner_key_01234';

const docker = new Docker();
const dir = mkdtempSync(join(tmpdir(), 'gpuplane-ssh-gateway-e2e-'));
const dbFile = join(dir, 'gpuplane.db');
let server: Served | undefined;
let agent: AgentProcess | undefined;
let machineId = 0;
let image = '';
let renterKey = '';
let hostKey = '';
let key: KeyPair;
let other: KeyPair;
const knownHosts = join(dir, 'known_hosts');
/** The instances the tests below share: one of the sshd image, one of busybox. */
const inst: Record<'sshd' | 'busybox', { id: number; t: SshTarget; apiKey: string }> = {} as never;

const context = () => `--- agent\n${agent?.output().slice(-4000)}\n--- server\n${server?.output().slice(-4000)}`;
const within = <T>(what: string, p: Promise<T>, ms = 60_000) => withinDeadline(what, p, context, ms);
const api = (method: string, path: string, k: string | null, body?: unknown) => call(server!.url, method, path, k, body);
const ours = () => docker.listContainers({ all: true, filters: { label: [`gpuplane.machine_id=${machineId}`] } });
const sha256 = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');

/** The renter's audit log entries of SSH sessions into instance `id`, once there are `n` (each is written as its connection ends). */
async function sessionsInAudit(id: number, n = 1): Promise<Record<string, any>[]> {
  const until = Date.now() + 20_000;
  for (;;) {
    const log = await api('GET', '/api/v0/audit_logs/', renterKey);
    assert.equal(log.status, 200, JSON.stringify(log.body));
    const mine = (log.body as Record<string, any>[]).filter((e) => e.action === 'instance.ssh_session' && e.args.params.instance_id === id);
    if (mine.length >= n || Date.now() > until) return mine;
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function rent(body: Record<string, unknown>): Promise<{ id: number; t: SshTarget; apiKey: string; view: Record<string, any> }> {
  const rented = await api('PUT', `/api/v0/asks/${machineId * 100 + 1}/`, renterKey, body);
  assert.equal(rented.status, 200, JSON.stringify(rented.body));
  const id: number = rented.body.new_contract;
  const view = await within(`instance ${id} running`, untilStatus(server!.url, renterKey, id, 'running'), 120_000);
  return { id, view, apiKey: rented.body.instance_api_key, t: { host: view.ssh_host, port: view.ssh_port, key, knownHosts } };
}

before(async () => {
  const made = sshdImage();
  await prepareAgentRun(docker, dir, dbFile, 500_000_000);
  // Four GPUs declared (prepareAgentRun's file says two): one for each instance alive at once below.
  writeFileSync(join(dir, 'hardware.json'), JSON.stringify({ ...JSON.parse(readFileSync(join(dir, 'hardware.json'), 'utf8')), num_gpus: 4 }));
  server = await serve({
    GPUPLANE_DATABASE_URL: `sqlite:${dbFile}`, GPUPLANE_BOOTSTRAP_API_KEY: OWNER, GPUPLANE_SECRET_KEY: 'e2e-secret-key-0123456789',
    GPUPLANE_SIM_MACHINES: '1', GPUPLANE_AGENT_OFFLINE_AFTER: '30',
    GPUPLANE_GATEWAY: 'true', GPUPLANE_GATEWAY_BIND: '127.0.0.1', GPUPLANE_GATEWAY_HOST: '127.0.0.1',
    GPUPLANE_GATEWAY_PORTS: `${GATEWAY_PORTS.first}-${GATEWAY_PORTS.last}`,
    // Every connection here comes from 127.0.0.1, refused keys included on purpose: the failed-login block (its own
    // test is gateway-ssh's) must not shut this file's later steps out.
    GPUPLANE_GATEWAY_FAILED_LOGINS: '1000',
  });
  image = await made;
  const host = await api('POST', '/_emu/users', OWNER, { email: 'ssh-gateway-host@example.com' });
  const renter = await api('POST', '/_emu/users', OWNER, { email: 'ssh-gateway-renter@example.com' });
  [hostKey, renterKey] = [host.body.api_key, renter.body.api_key];
  key = await makeKeyPair(dir, 'renter');
  other = await makeKeyPair(dir, 'attached-later');
  assert.equal((await api('POST', '/api/v0/ssh/', renterKey, { ssh_key: key.publicKey })).status, 200);
  agent = startAgent({ url: server.url, stateDir: join(dir, 'state'), hardwareFile: join(dir, 'hardware.json'), ports: PORTS, apiKey: hostKey });
  machineId = (await within('registration', agent.logged('machine registered'))).machine_id;
  const listed = await api('PUT', '/api/v0/machines/create_asks/', hostKey, { machine: machineId, price_gpu: 0.3, price_disk: 0.1, end_date: null });
  assert.equal(listed.status, 200, JSON.stringify(listed.body));
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

test('ssh_proxy into an image with sshd: ssh, scp, sftp, rsync, ssh -L and -R through the gateway, end to end', { timeout: 300_000 }, async () => {
  const r = await rent({
    image, runtype: 'ssh_proxy', env: { GREETING: 'hi-gateway' },
    onstart: [
      "env | grep -v '^PATH=' >> /etc/environment",
      '(python3 -m http.server 8080 --bind 127.0.0.1 --directory /etc >/dev/null 2>&1 &)',
      'touch /root/onstart-done',
    ].join('\n'),
  });
  inst.sshd = r;
  // The gateway's address: its host, and the instance's first port of its slot; nothing published on the host.
  assert.equal(r.view.ssh_host, '127.0.0.1');
  const slots = Math.floor((GATEWAY_PORTS.last - GATEWAY_PORTS.first + 1) / 3);
  assert.equal(r.view.ssh_port, GATEWAY_PORTS.first + 3 * (r.id % slots));
  assert.deepEqual(r.view.ports, {});
  const t = r.t;
  await untilSshWorks(t, 'test -f /root/onstart-done', 90_000, context);

  // The container's sshd answered: the client was shown the container's own host key (end to end, not terminated).
  const who = await ok(ssh(t, 'id -un; python3 -c "print(6*7)"; cat /etc/ssh/ssh_host_ed25519_key.pub'), 'ssh');
  const [user, answer, hostKeyLine] = who.trim().split('\n');
  assert.deepEqual([user, answer], ['root', '42']);
  assert.ok(readFileSync(knownHosts, 'utf8').includes(`[127.0.0.1]:${t.port} ${hostKeyLine.split(' ').slice(0, 2).join(' ')}`), readFileSync(knownHosts, 'utf8'));
  const env = await ok(ssh(t, 'echo "$CONTAINER_API_KEY|$CONTAINER_ID|$GREETING"'), 'env');
  assert.equal(env.trim(), `${r.apiKey}|${r.id}|hi-gateway`, 'onstart wrote them to /etc/environment: the session has them');
  assert.equal((await ssh(t, 'exit 7')).code, 7);
  assert.equal(await ok(ssh(t, 'tr a-z A-Z', { input: 'through the tunnel\n' }), 'stdin'), 'THROUGH THE TUNNEL\n');

  // scp both ways, 8 MB of random bytes.
  const blob = randomBytes(8 * 1024 * 1024);
  writeFileSync(join(dir, 'blob.bin'), blob);
  await ok(scp(t, join(dir, 'blob.bin'), ':/root/blob.bin'), 'scp up');
  assert.equal((await ok(ssh(t, 'sha256sum /root/blob.bin'), 'sum')).split(' ')[0], sha256(blob));
  await ok(scp(t, ':/root/blob.bin', join(dir, 'blob-back.bin')), 'scp down');
  assert.ok(readFileSync(join(dir, 'blob-back.bin')).equals(blob));

  // sftp.
  writeFileSync(join(dir, 'note.txt'), 'by sftp through the gateway\n');
  const listing = await ok(sftp(t, `put ${join(dir, 'note.txt')} /root/note.txt\nls /root\nget /root/note.txt ${join(dir, 'note-back.txt')}`), 'sftp');
  assert.match(listing, /note\.txt/);
  assert.equal(readFileSync(join(dir, 'note-back.txt'), 'utf8'), 'by sftp through the gateway\n');

  // rsync over ssh, both ways.
  mkdirSync(join(dir, 'tree', 'sub'), { recursive: true });
  writeFileSync(join(dir, 'tree', 'sub', 'x.txt'), 'x-ray\n');
  await ok(rsync(t, `${join(dir, 'tree')}/`, ':/root/tree/'), 'rsync up');
  await ok(rsync(t, ':/root/tree/', join(dir, 'tree-back/')), 'rsync down');
  assert.equal(readFileSync(join(dir, 'tree-back', 'sub', 'x.txt'), 'utf8'), 'x-ray\n');

  // ssh -L to a port only the container listens on.
  const local = await freePort();
  const stop = await within('ssh -L up', forward(t, local, '127.0.0.1', 8080));
  try {
    const res = await fetch(`http://127.0.0.1:${local}/debian_version`);
    assert.equal(res.status, 200);
    assert.match(await res.text(), /^12\./);
  } finally {
    await stop();
  }

  // ssh -R: a port of this machine served inside the container (sshd's remote forwarding, untouched by the gateway).
  const web = createServer((_req, res) => res.end('served-from-the-renter\n'));
  await new Promise<void>((resolve) => web.listen(0, '127.0.0.1', resolve));
  try {
    const webPort = (web.address() as { port: number }).port;
    const fetchInside = 'import time,urllib.request\nfor i in range(50):\n  try:\n    print(urllib.request.urlopen("http://127.0.0.1:9090/").read().decode(),end=""); break\n  except Exception: time.sleep(0.2)';
    const reverse = await ok(ssh(t, `python3 -c '${fetchInside}'`, { extra: ['-o', 'ExitOnForwardFailure=yes', '-R', `127.0.0.1:9090:127.0.0.1:${webPort}`] }), 'ssh -R');
    assert.equal(reverse, 'served-from-the-renter\n');
  } finally {
    web.close();
  }

  // A key of no one allowed is refused.
  const refused = await ssh({ ...t, key: other }, 'true');
  assert.equal(refused.code, 255);
  assert.match(refused.stderr, /Permission denied \(publickey/);

  // Each connection is in the renter's audit log: which instance, from where, how long.
  const sessions = await sessionsInAudit(r.id, 5);
  assert.ok(sessions.length >= 5, JSON.stringify(sessions));
  for (const e of sessions) {
    assert.equal(e.ip_address, '127.0.0.1');
    assert.equal(typeof e.args.params.duration_s, 'number');
  }
});

test('jupyter_proxy: SSH on ssh_port + 1, where the vastai client\'s ssh-url logs in', { timeout: 180_000 }, async () => {
  const r = await rent({ image: BUSYBOX_IMAGE, runtype: 'jupyter_proxy' });
  assert.equal(r.view.ssh_host, '127.0.0.1');
  const t: SshTarget = { ...r.t, port: r.view.ssh_port + 1 };
  await untilSshWorks(t, 'true', 60_000, context);
  assert.equal((await ok(ssh(t, 'echo "jupyter $((40+2))"'), 'ssh')).trim(), 'jupyter 42');
  assert.equal((await api('DELETE', `/api/v0/instances/${r.id}/`, renterKey)).status, 200);
});

test("ssh_proxy into busybox (no sshd): the agent's own SSH server gives a PTY shell, exec, sftp, scp and ssh -L", { timeout: 300_000 }, async () => {
  const r = await rent({
    image: BUSYBOX_IMAGE, runtype: 'ssh_proxy', env: { GREETING: 'hi-busybox' },
    onstart: 'mkdir -p /www /workspace && echo served-by-busybox > /www/index.html && touch "/workspace/key-$CONTAINER_API_KEY" && (httpd -p 8080 -h /www &) && echo "onstart says $GREETING"',
  });
  inst.busybox = r;
  const t = r.t;
  const [container] = (await ours()).filter((c) => c.Labels['gpuplane.instance_id'] === String(r.id));
  await within('onstart ran', logShows(docker, container.Id, 'onstart says hi-busybox'));
  await untilSshWorks(t, 'true', 60_000, context);

  // exec: root in this container, exit status and stdin through.
  assert.equal((await ok(ssh(t, 'id -u; ls /workspace'), 'exec')).trim(), `0\nkey-${r.apiKey}`);
  assert.equal((await ssh(t, 'exit 3')).code, 3);
  assert.equal(await ok(ssh(t, 'cat', { input: 'stdin reaches the container\n' }), 'stdin'), 'stdin reaches the container\n');
  // The environment: onstart saw CONTAINER_API_KEY (the file above); an SSH session does not have it (spec).
  assert.equal((await ok(ssh(t, 'echo "[$CONTAINER_API_KEY]"'), 'env')).trim(), '[]');

  // A login shell on a PTY of the client's size (`script` gives ssh a terminal of 31 rows, 101 columns).
  const pty = await ok(run('script', ['-qec', `stty rows 31 cols 101; ssh -tt -p ${t.port} ${sshOptions(t).map((a) => `'${a}'`).join(' ')} root@${t.host} 'stty size; tty'`, '/dev/null'], { timeoutMs: 30_000 }), 'ssh -tt');
  assert.match(pty, /31 101\r?\n/);
  assert.match(pty, /\/dev\/pts\/\d+/);

  // sftp and scp (OpenSSH's scp speaks SFTP): the image has neither.
  const blob = randomBytes(2 * 1024 * 1024);
  writeFileSync(join(dir, 'bb.bin'), blob);
  await ok(scp(t, join(dir, 'bb.bin'), ':/workspace/bb.bin'), 'scp up');
  assert.equal((await ok(ssh(t, 'sha256sum /workspace/bb.bin'), 'sum')).split(' ')[0], sha256(blob));
  await ok(scp(t, ':/workspace/bb.bin', join(dir, 'bb-back.bin')), 'scp down');
  assert.ok(readFileSync(join(dir, 'bb-back.bin')).equals(blob));
  writeFileSync(join(dir, 'note.txt'), 'by sftp through the gateway\n');
  const listing = await ok(sftp(t, 'mkdir /workspace/s\ncd /workspace/s\nput ' + join(dir, 'note.txt') + '\nls -l\nrename note.txt n2.txt\nls'), 'sftp');
  assert.match(listing, /n2\.txt/);
  assert.equal(await ok(ssh(t, 'cat /workspace/s/n2.txt'), 'cat'), 'by sftp through the gateway\n');

  // ssh -L to the container's port 8080.
  const local = await freePort();
  const stop = await within('ssh -L up', forward(t, local, 'localhost', 8080));
  try {
    const res = await fetch(`http://127.0.0.1:${local}/`);
    assert.equal(res.status, 200);
    assert.equal(await res.text(), 'served-by-busybox\n');
  } finally {
    await stop();
  }

  const refused = await ssh({ ...t, key: other }, 'true');
  assert.equal(refused.code, 255);
  assert.match(refused.stderr, /Permission denied \(publickey/);
});

test('a key attached after creation gets in, and is refused once detached (sshd image and busybox)', { timeout: 180_000 }, async () => {
  for (const which of ['sshd', 'busybox'] as const) {
    const { id, t } = inst[which];
    assert.ok(id, `the ${which} instance of the tests above`);
    const later: SshTarget = { ...t, key: other };
    assert.equal((await ssh(later, 'true')).code, 255, 'not attached yet');
    const attached = await api('POST', `/api/v0/instances/${id}/ssh/`, renterKey, { ssh_key: other.publicKey });
    assert.equal(attached.status, 200, JSON.stringify(attached.body));
    // The issue says within 2 seconds; a test asserts no time, so this waits (up to 30 s) for it to happen.
    await untilSshWorks(later, 'true', 30_000, context);
    const detached = await api('DELETE', `/api/v0/instances/${id}/ssh/${attached.body.key_id}/`, renterKey);
    assert.equal(detached.status, 200, JSON.stringify(detached.body));
    const refused = await untilSshRefused(later, 30_000, context);
    assert.match(refused.stderr, /Permission denied \(publickey/);
    // The account's key still works.
    await ok(ssh(t, 'true'), `${which}: the account key after the detach`);
  }
  assert.doesNotMatch(agent!.output() + server!.output(), new RegExp(other.publicKey.split(' ')[1].slice(0, 40).replace(/[+/]/g, '.')), 'no key in a log');
});

test("a team's instance: a member with access gets in with their own account key", { timeout: 180_000 }, async () => {
  // The renter makes a team and invites a member; the instance is rented in the team's context.
  const team = await api('POST', '/api/v0/team/', renterKey, { team_name: 'ssh-e2e' });
  assert.equal(team.status, 200, JSON.stringify(team.body));
  const member = await api('POST', '/_emu/users', OWNER, { email: 'ssh-gateway-member@example.com' });
  const memberKey: string = member.body.api_key;
  assert.equal((await api('POST', `/api/v0/team/invite/?email=${encodeURIComponent('ssh-gateway-member@example.com')}&role=member`, renterKey)).status, 200);
  const code = (await api('GET', `/_emu/outbox?to=${encodeURIComponent('ssh-gateway-member@example.com')}`, OWNER)).body.messages.at(-1).code;
  assert.equal((await api('POST', '/api/v0/team/invitations/accept/', memberKey, { code })).status, 200);
  const ownerTeamKey: string = (await api('POST', '/api/v0/auth/apikeys/', renterKey, { team_id: team.body.id })).body.key;
  const memberTeamKey: string = (await api('POST', '/api/v0/auth/apikeys/', memberKey, { team_id: team.body.id })).body.key;
  const memberSsh = await makeKeyPair(dir, 'member');
  assert.equal((await api('POST', '/api/v0/ssh/', memberKey, { ssh_key: memberSsh.publicKey })).status, 200);

  const rented = await api('PUT', `/api/v0/asks/${machineId * 100 + 1}/`, ownerTeamKey, { image: BUSYBOX_IMAGE, runtype: 'ssh_proxy' });
  assert.equal(rented.status, 200, JSON.stringify(rented.body));
  const id: number = rented.body.new_contract;
  const view = await within('team instance running', untilStatus(server!.url, memberTeamKey, id, 'running'), 120_000);
  const t: SshTarget = { host: view.ssh_host, port: view.ssh_port, key: memberSsh, knownHosts };
  await untilSshWorks(t, 'true', 60_000, context);
  assert.equal((await ok(ssh(t, 'echo member-in'), 'member ssh')).trim(), 'member-in');
  // The renter's own key works too (the team's owner); a key of no one in the team does not.
  await untilSshWorks({ ...t, key }, 'true', 30_000, context);
  assert.equal((await ssh({ ...t, key: other }, 'true')).code, 255);
  assert.equal((await api('DELETE', `/api/v0/instances/${id}/`, ownerTeamKey)).status, 200);
});

test("vastai copy both ways: the client's rsync as user vastai_kaalia, into busybox (no rsync in the image)", { timeout: 180_000 }, async () => {
  const { id } = inst.busybox;
  assert.ok(id, 'the busybox instance of the tests above');
  mkdirSync(join(dir, 'up', 'deep'), { recursive: true });
  writeFileSync(join(dir, 'up', 'a.txt'), 'copied up\n');
  writeFileSync(join(dir, 'up', 'deep', 'b.bin'), randomBytes(300_000));
  // local → instance: what `vastai copy local:DIR ID:/workspace/in/` does.
  const put = await api('PUT', '/api/v0/commands/rsync/', renterKey, { client_id: 'me', src_id: null, dst_id: String(id), src_path: `${join(dir, 'up')}/`, dst_path: '/workspace/in/' });
  assert.equal(put.status, 200, JSON.stringify(put.body));
  assert.equal(put.body.success, true);
  const shell = (port: number) => `ssh -i ${key.file} -p ${port} -o StrictHostKeyChecking=no -o UserKnownHostsFile=${join(dir, 'copy_known_hosts')} -F /dev/null`;
  const up = `rsync -arz -v --progress --rsh=ssh -e '${shell(put.body.dst_port)}' ${join(dir, 'up')}/ vastai_kaalia@${put.body.dst_addr}::${id}//workspace/in/`;
  await ok(run('sh', ['-c', up], { timeoutMs: 120_000 }), up);
  assert.equal(await ok(ssh(inst.busybox.t, 'cat /workspace/in/a.txt; sha256sum /workspace/in/deep/b.bin'), 'read'), `copied up\n${sha256(readFileSync(join(dir, 'up', 'deep', 'b.bin')))}  /workspace/in/deep/b.bin\n`);
  // instance → local: `vastai copy ID:/workspace/in/ local:DIR`.
  const get = await api('PUT', '/api/v0/commands/rsync/', renterKey, { client_id: 'me', src_id: String(id), dst_id: null, src_path: '/workspace/in/', dst_path: join(dir, 'down') });
  assert.equal(get.status, 200, JSON.stringify(get.body));
  mkdirSync(join(dir, 'down'), { recursive: true });
  const down = `rsync -arz -v --progress --rsh=ssh -e '${shell(get.body.src_port)}' vastai_kaalia@${get.body.src_addr}::${id}//workspace/in/ ${join(dir, 'down')}`;
  await ok(run('sh', ['-c', down], { timeoutMs: 120_000 }), down);
  assert.equal(readFileSync(join(dir, 'down', 'a.txt'), 'utf8'), 'copied up\n');
  assert.ok(readFileSync(join(dir, 'down', 'deep', 'b.bin')).equals(readFileSync(join(dir, 'up', 'deep', 'b.bin'))));
  // The module is this instance's alone: a key of no one allowed is refused there too.
  const stranger = `rsync -a -e 'ssh -i ${other.file} -p ${get.body.src_port} -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes -F /dev/null' vastai_kaalia@${get.body.src_addr}::${id}//workspace/in/ ${join(dir, 'nope')}`;
  const refused = await run('sh', ['-c', stranger]);
  assert.notEqual(refused.code, 0);
  assert.match(refused.stderr, /Permission denied/);
});

test('an instance on a simulated machine: the gateway refuses with a message that says so', { timeout: 120_000 }, async () => {
  const offers = (await api('POST', '/api/v0/bundles/', renterKey, { rentable: { eq: true } })).body.offers as { id: number; machine_id: number }[];
  const simulated = offers.find((o) => o.machine_id !== machineId);
  assert.ok(simulated, 'the simulated machine is offered');
  const rented = await api('PUT', `/api/v0/asks/${simulated.id}/`, renterKey, { image: 'pytorch/pytorch', runtype: 'ssh_proxy' });
  assert.equal(rented.status, 200, JSON.stringify(rented.body));
  const id: number = rented.body.new_contract;
  const view = await within('simulated instance running', untilStatus(server!.url, renterKey, id, 'running'), 90_000);
  assert.equal(view.ssh_host, '127.0.0.1');
  const r = await ssh({ host: view.ssh_host, port: view.ssh_port, key, knownHosts, logLevel: 'INFO' }, 'true', { timeoutMs: 30_000 });
  assert.equal(r.code, 255);
  assert.match(r.stderr, /simulated machine/);
  const [entry] = await sessionsInAudit(id);
  assert.ok(entry, 'the refused connection is in the audit log');
  assert.equal(entry.ip_address, '127.0.0.1');
  assert.equal(entry.args.params.outcome, 'refused');
  assert.equal((await api('DELETE', `/api/v0/instances/${id}/`, renterKey)).status, 200);
});

test('the agent stopped, and killed, and started again: new connections get in, with the same host keys, and nothing is lost', { timeout: 180_000 }, async () => {
  const { sshd, busybox } = inst;
  assert.ok(sshd?.id && busybox?.id, 'the instances of the tests above');
  const before = (await ours()).map((c) => c.Id).sort();
  await ok(ssh(busybox.t, 'echo kept > /workspace/before-restart'), 'write');
  const again = () => startAgent({ url: server!.url, stateDir: join(dir, 'state'), hardwareFile: join(dir, 'hardware.json'), ports: PORTS, apiKey: '' });
  // Stopped (SIGTERM) with SSH instances running and sessions just served: it exits 0 and leaves the containers.
  agent!.child.kill('SIGTERM');
  assert.equal(await within('the agent exits on SIGTERM', agent!.exited, 30_000), 0, agent!.output().slice(-3000));
  agent = again();
  await untilSshWorks(busybox.t, 'cat /workspace/before-restart', 60_000, context);
  // Killed outright.
  agent.child.kill('SIGKILL');
  await agent.exited;
  agent = again();
  // known_hosts holds both instances' host keys from before: a changed one would be refused (accept-new).
  await untilSshWorks(busybox.t, 'cat /workspace/before-restart', 60_000, context);
  assert.equal(await ok(ssh(busybox.t, 'cat /workspace/before-restart'), 'read'), 'kept\n');
  await untilSshWorks(sshd.t, 'test -f /root/blob.bin', 60_000, context);
  assert.deepEqual((await ours()).map((c) => c.Id).sort(), before, 'the same containers');
});

test("a destroyed instance's open sessions end", { timeout: 120_000 }, async () => {
  const { id, t } = inst.busybox;
  assert.ok(id, 'the busybox instance of the tests above');
  const held = holdSession(t, 'echo in; sleep 600');
  try {
    await within('the session is up', held.started);
    assert.equal((await api('DELETE', `/api/v0/instances/${id}/`, renterKey)).status, 200);
    const code = await within('the session ends', held.exited, 60_000);
    assert.notEqual(code, 0);
  } finally {
    held.stop();
  }
  const after = await ssh(t, 'true', { timeoutMs: 30_000 });
  assert.equal(after.code, 255, 'no new session either');
});
