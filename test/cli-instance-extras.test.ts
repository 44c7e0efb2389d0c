// The instance extras through the CLI (run in the test's process) against a real server (virtual clock): reboot,
// recycle, update, execute (the output printed, once fetched), take snapshot (refused on a simulated host, with the
// server's reason), show snapshots, and copy / cloud copy (the server's reason, exit 1).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { instanceSteps, useServer } from './cli-helpers.js';
import { SIMULATED_DIRS } from '../src/emulator/simulated-hosts/simhost-execute.js';

const server = useServer();
const cli = (args: string[]) => server.cli(args);
const { sdk, instance } = instanceSteps(server);

async function runningInstance(): Promise<number> {
  const id = await instance();
  for (let i = 0; i < 60 && (await sdk().instances.show(id)).actual_status !== 'running'; i++) await sdk().emulator.advance(1);
  assert.equal((await sdk().instances.show(id)).actual_status, 'running');
  return id;
}

test('reboot and recycle instance print what the server did; the instance boots again', async () => {
  const id = await runningInstance();
  const r = await cli(['reboot', 'instance', String(id)]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, `rebooting instance ${id}\n`);
  assert.equal((await sdk().instances.show(id)).actual_status, null);
  const c = await cli(['recycle', 'instance', String(id), '--raw']);
  assert.equal(c.code, 0, c.stderr);
  assert.deepEqual(JSON.parse(c.stdout), { success: true, msg: `recycling instance ${id}` });
  const missing = await cli(['reboot', 'instance', '99999999']);
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /instance 99999999 not found \(HTTP 404, not_found\)/);
});

test('update instance takes --env as JSON or Docker style, and says what it needs', async () => {
  const id = await runningInstance();
  const json = await cli(['update', 'instance', String(id), '--image', 'ubuntu:24.04', '--env', '{"TZ": "UTC"}']);
  assert.equal(json.code, 0, json.stderr);
  assert.match(json.stdout, /instance \d+ updated/);
  let inst = await sdk().instances.show(id);
  assert.equal(inst.image_uuid, 'ubuntu:24.04');
  assert.deepEqual(inst.extra_env, [['TZ', 'UTC']]);
  const docker = await cli(['update', 'instance', String(id), '--env', '-e A=1 -e B=2', '--raw']);
  assert.equal(docker.code, 0, docker.stderr);
  assert.deepEqual(JSON.parse(docker.stdout).updated_instance.extra_env, [['A', '1'], ['B', '2']]);
  inst = await sdk().instances.show(id);
  assert.equal(inst.image_uuid, 'ubuntu:24.04');
  const none = await cli(['update', 'instance', String(id)]);
  assert.equal(none.code, 2);
  assert.match(none.stderr, /give at least one of --template_id/);
  const bad = await cli(['update', 'instance', String(id), '--env', '{"TZ": 1']);
  assert.equal(bad.code, 2);
});

test('execute prints the output; a refused command is the server\'s 400', async () => {
  const id = await runningInstance();
  const r = await cli(['execute', String(id), 'ls /']);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, `${SIMULATED_DIRS.join('\n')}\n`);
  const raw = await cli(['execute', String(id), 'du -s /workspace', '--raw']);
  assert.deepEqual(JSON.parse(raw.stdout), { id, output: '4\t/workspace\n' });
  const refused = await cli(['execute', String(id), 'cat /etc/shadow']);
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /"cat" is not allowed; execute runs only ls, rm, du \(HTTP 400, bad_request\)/);
});

test('take snapshot on a simulated host fails with the server\'s reason; show snapshots lists none', async () => {
  const id = await runningInstance();
  const r = await cli(['take', 'snapshot', String(id), '--repo', 'me/snap', '--docker_login_user', 'me', '--docker_login_pass', 'tok']);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /needs a real host.*\(HTTP 503, service_unavailable\)/);
  const half = await cli(['take', 'snapshot', String(id), '--repo', 'me/snap', '--docker_login_user', 'me']);
  assert.equal(half.code, 2);
  const list = await cli(['show', 'snapshots', String(id)]);
  assert.equal(list.code, 0, list.stderr);
  assert.equal(list.stdout, `no snapshots of instance ${id}\n`);
});

test('copy with an instance on a simulated machine, and cloud copy, print why they cannot, exit 1', async () => {
  const id = await runningInstance();
  const copy = await cli(['copy', `${id}:/workspace/`, './here']);
  assert.equal(copy.code, 1);
  assert.match(copy.stderr, new RegExp(`instance ${id} is on a simulated machine \\(emulator\\): there is no container to copy to or from.*\\(HTTP 409, conflict\\)`));
  const cloud = await cli(['cloud', 'copy', '--instance', String(id), '--connection', '3', '--src', '/workspace']);
  assert.equal(cloud.code, 1);
  assert.match(cloud.stderr, /rclone on the hosts/);
});
