// Instance extras on simulated hosts (docs/spec/client-compat-more.md §c): reboot, recycle and update boot the
// instance again in place keeping its GPUs (reboot restarts its container: null, running; recycle and update make a
// new one from a pulled image: null, loading, running), with compute billing paused meanwhile; execute
// runs ls/rm/du in the simulated container with a one-time, unauthenticated result_url; snapshots need a real host;
// cloud copy says what is missing (copy itself: test/copy-*.test.ts). Someone else's instance is 404, as everywhere in instances.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect, type TestApp } from './helpers/harness.js';
import { addMachine, offerFor, rent, rentOk, statusOf, untilRunning } from './instances-fixtures.js';
import { cumulativeMicro } from '../src/billing/billing-accrual.js';
import { HOURS_PER_MONTH } from '../src/instances/instances-lifecycle.js';
import { SIMULATED_DIRS } from '../src/emulator/simulated-hosts/simhost-execute.js';

const micro = (dollars: number) => Math.round(dollars * 1e6);

async function row(app: TestApp, id: number) {
  return app.store.db.selectFrom('instances').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
}

/** The instance's states since `afterEvent` (the id of an event), in order. */
async function statesSince(app: TestApp, id: number, afterEvent: number): Promise<(string | null)[]> {
  const rows = await app.store.db.selectFrom('instance_events').select(['actual_status']).where('instance_id', '=', id)
    .where('id', '>', afterEvent).orderBy('id').execute();
  return rows.map((r) => r.actual_status);
}

async function lastEvent(app: TestApp): Promise<number> {
  const r = await app.store.db.selectFrom('instance_events').select((eb) => eb.fn.max('id').as('m')).executeTakeFirst();
  return Number(r?.m ?? 0);
}

forEachDialect('instance extras (simulated hosts)', (app) => {
  const put = (path: string, body: unknown, key?: string | null) => app().request('PUT', path, { body, key });
  const fetchPath = (url: string) => url.slice(app().config.publicUrl.length);

  async function running(opts: Record<string, unknown> = {}, machine: Record<string, unknown> = { num_gpus: 1 }) {
    const { user, api_key } = await app().createUser({ credit: 100 });
    const m = await addMachine(app(), machine);
    const { id } = await rentOk(app(), offerFor(m, 1), opts, api_key);
    const since = await untilRunning(app(), id, api_key);
    return { user, key: api_key, m, id, since };
  }

  test('reboot: running → null → running again (the container restarts), on the same GPUs; nobody else can rent them meanwhile', async () => {
    const { key, m, id } = await running();
    const gpus = (await row(app(), id)).gpu_indexes;
    const before = await lastEvent(app());
    const res = await put(`/api/v0/instances/reboot/${id}/`, {}, key);
    assert.equal(res.status, 200, res.raw);
    assert.deepEqual(res.body, { success: true, msg: `rebooting instance ${id}` });
    const booting = await statusOf(app(), id, key);
    assert.equal(booting.actual_status, null);
    assert.equal(booting.intended_status, 'running');
    assert.match(booting.status_msg, /rebooting/);
    assert.equal((await row(app(), id)).gpu_indexes, gpus, 'the GPUs stay the instance\'s');
    assert.equal((await rent(app(), offerFor(m, 1))).status, 410, 'its GPUs are not for rent while it reboots');
    await untilRunning(app(), id, key);
    // Its image is on the machine: the simulated agent restarts the container, with no pull (no loading).
    assert.deepEqual(await statesSince(app(), id, before), [null, 'running']);
    assert.equal((await row(app(), id)).gpu_indexes, gpus);
    assert.equal((await statusOf(app(), id, key)).status_msg, null);
  });

  test('reboot: compute billing pauses from the reboot until running again; disk keeps accruing; to the micro-dollar', async () => {
    const { user, api_key } = await app().createUser({ credit: 100 });
    const m = await addMachine(app(), { num_gpus: 2, price_gpu: 0.5, price_disk: 0.1 });
    const created = Math.floor(app().clock.now());
    const { id } = await rentOk(app(), offerFor(m, 2), { disk: 10 }, api_key);
    const run1 = await untilRunning(app(), id, api_key);
    await app().advance(1000.5);
    const rebooted = Math.floor(app().clock.now());
    assert.equal((await put(`/api/v0/instances/reboot/${id}/`, {}, api_key)).status, 200);
    const run2 = await untilRunning(app(), id, api_key);
    assert.ok(run2 > rebooted, 'the boot takes time');
    await app().advance(600);
    const destroyed = Math.floor(app().clock.now());
    assert.equal((await app().request('DELETE', `/api/v0/instances/${id}/`, { key: api_key })).status, 200);
    const gpuRate = 2 * 500_000;
    const gpu = cumulativeMicro(gpuRate, rebooted - run1) + cumulativeMicro(gpuRate, destroyed - run2);
    const disk = cumulativeMicro(Math.round((100_000 * 10) / HOURS_PER_MONTH), destroyed - created);
    const day = { gte: 0, lte: Math.floor(app().clock.now()) + 86_400 };
    const charges = await app().request('GET', '/api/v0/charges/', { key: api_key, query: { select_filters: JSON.stringify({ day }) } });
    const entry = charges.body.results[0];
    assert.deepEqual(Object.fromEntries(entry.items.map((i: any) => [i.type, micro(i.amount)])), { gpu, disk });
    assert.equal(await app().services.billing.balance(user.id), 100_000_000 - gpu - disk);
  });

  test('reboot of an exited instance boots it again; of a stopped or offline one is 409', async () => {
    const { key, id } = await running();
    assert.equal((await app().request('POST', '/_emu/faults', { body: { fault: 'exited', instance_id: id } })).status, 200);
    assert.equal((await put(`/api/v0/instances/reboot/${id}/`, {}, key)).status, 200);
    await untilRunning(app(), id, key);

    assert.equal((await put(`/api/v0/instances/${id}/`, { state: 'stopped' }, key)).status, 200);
    const stopped = await put(`/api/v0/instances/reboot/${id}/`, {}, key);
    assert.equal(stopped.status, 409, stopped.raw);
    assert.deepEqual(Object.keys(stopped.body).sort(), ['error', 'msg', 'success']);
    assert.equal(stopped.body.error, 'conflict');
    assert.match(stopped.body.msg, /stopped.*start it/);
    assert.equal((await statusOf(app(), id, key)).actual_status, 'stopped');

    assert.equal((await put(`/api/v0/instances/${id}/`, { state: 'running' }, key)).status, 200);
    await untilRunning(app(), id, key);
    assert.equal((await app().request('POST', '/_emu/faults', { body: { fault: 'offline', instance_id: id } })).status, 200);
    const offline = await put(`/api/v0/instances/reboot/${id}/`, {}, key);
    assert.equal(offline.status, 409);
    assert.match(offline.body.msg, /offline: its host is unreachable/);

  });

  test("someone else's instance is 404 for every extra; bad ids are 400; an instance key or a read-only key is 403", async () => {
    const { id, key } = await running();
    const other = await app().createUser({ credit: 10 });
    const calls: [string, string, unknown][] = [
      ['PUT', `/api/v0/instances/reboot/${id}/`, {}],
      ['PUT', `/api/v0/instances/recycle/${id}/`, {}],
      ['PUT', `/api/v0/instances/update_template/${id}/`, { id, image: 'ubuntu:22.04' }],
      ['PUT', `/api/v0/instances/command/${id}/`, { command: 'ls' }],
      ['POST', `/api/v0/instances/take_snapshot/${id}/`, { id: String(id), personal_repo: 'me/snap', pause: 'true' }],
      ['GET', `/api/v0/instances/snapshots/${id}/`, undefined],
    ];
    for (const [method, path, body] of calls) {
      const res = await app().request(method, path, { key: other.api_key, body });
      assert.equal(res.status, 404, `${method} ${path}: ${res.raw}`);
      assert.equal(res.body.error, 'not_found');
      const missing = await app().request(method, path.replace(`/${id}/`, '/99999999/'), { key, body: body && { ...(body as object), id: undefined } });
      assert.equal(missing.status, 404, `${method} ${path} of a missing instance: ${missing.raw}`);
      const bad = await app().request(method, path.replace(`/${id}/`, '/abc/'), { key, body });
      assert.equal(bad.status, 400, `${method} ${path} with id abc: ${bad.raw}`);
      assert.equal(bad.body.error, 'bad_request');
    }
    const ro = await app().request('POST', '/api/v0/auth/apikeys/', { key, body: { name: 'ro', permissions: { api: { instance_read: {} } } } });
    assert.equal(ro.status, 200, ro.raw);
    assert.equal((await put(`/api/v0/instances/reboot/${id}/`, {}, ro.body.key)).status, 403);
    const m = await addMachine(app(), { num_gpus: 1 });
    const mine = await rentOk(app(), offerFor(m, 1), {}, key);
    const byInstanceKey = await put(`/api/v0/instances/reboot/${mine.id}/`, {}, mine.instanceKey);
    assert.equal(byInstanceKey.status, 403, byInstanceKey.raw);
  });

  test('recycle: a running instance boots again with a new generation whose image is pulled afresh; a stopped one stays stopped', async () => {
    const { key, id } = await running();
    const gpus = (await row(app(), id)).gpu_indexes;
    const res = await put(`/api/v0/instances/recycle/${id}/`, {}, key);
    assert.equal(res.status, 200, res.raw);
    assert.deepEqual(res.body, { success: true, msg: `recycling instance ${id}` });
    let r = await row(app(), id);
    assert.equal(r.generation, 2);
    assert.equal(r.repull, 1);
    assert.equal(r.actual_status, null);
    assert.equal(r.gpu_indexes, gpus);
    await untilRunning(app(), id, key);

    assert.equal((await put(`/api/v0/instances/${id}/`, { state: 'stopped' }, key)).status, 200);
    const again = await put(`/api/v0/instances/recycle/${id}/`, {}, key);
    assert.equal(again.status, 200, again.raw);
    assert.match(again.body.msg, /stays stopped/);
    r = await row(app(), id);
    assert.equal(r.generation, 3);
    assert.equal(r.actual_status, 'stopped');
  });

  test('update: a new image and env make a new generation and boot it again; the reply carries the updated instance', async () => {
    const { key, id } = await running({ image: 'ubuntu:22.04', env: { A: '1' } });
    const res = await put(`/api/v0/instances/update_template/${id}/`, { id, image: 'pytorch/pytorch:2.3.0', env: { B: '2', '-p 8081:8081': '1' }, onstart: 'echo new' }, key);
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.success, true);
    assert.equal(res.body.updated_instance.id, id);
    assert.equal(res.body.updated_instance.image_uuid, 'pytorch/pytorch:2.3.0');
    assert.deepEqual(res.body.updated_instance.extra_env, [['B', '2']]);
    assert.equal(res.body.updated_instance.onstart, 'echo new');
    assert.equal(res.body.updated_instance.actual_status, null);
    const r = await row(app(), id);
    assert.equal(r.generation, 2);
    assert.equal(r.repull, 0);
    assert.equal(r.port_maps, '["8081/tcp"]');
    await untilRunning(app(), id, key);
    const inst = await statusOf(app(), id, key);
    assert.equal(inst.image_uuid, 'pytorch/pytorch:2.3.0');
    assert.ok(inst.ports['8081/tcp'], JSON.stringify(inst.ports));
  });

  test('update from a template (by id or hash_id) takes its image, env and runtype; a stopped instance stays stopped', async () => {
    const { key, id } = await running({ image: 'ubuntu:22.04' });
    const t = await app().request('POST', '/api/v0/template/', {
      key, body: { name: 'upd', image: 'vllm/vllm-openai', tag: 'v0.5', env: '-e MODEL=x -p 8000:8000', runtype: 'args', args_str: 'serve x', docker_login_repo: '', docker_login_user: '', docker_login_pass: '' },
    });
    assert.equal(t.status, 200, t.raw);
    assert.equal((await put(`/api/v0/instances/${id}/`, { state: 'stopped' }, key)).status, 200);
    const byId = await put(`/api/v0/instances/update_template/${id}/`, { id, template_id: t.body.template.id }, key);
    assert.equal(byId.status, 200, byId.raw);
    assert.match(byId.body.msg, /applies when it starts/);
    const u = byId.body.updated_instance;
    assert.equal(u.image_uuid, 'vllm/vllm-openai:v0.5');
    assert.equal(u.image_runtype, 'args');
    assert.deepEqual(u.image_args, ['serve x']);
    assert.deepEqual(u.extra_env, [['MODEL', 'x']]);
    assert.equal(u.template_id, t.body.template.id);
    assert.equal(u.template_hash_id, t.body.template.hash_id);
    assert.equal(u.actual_status, 'stopped');
    const byHash = await put(`/api/v0/instances/update_template/${id}/`, { template_hash_id: t.body.template.hash_id, args: 'serve y' }, key);
    assert.equal(byHash.status, 200, byHash.raw);
    assert.deepEqual(byHash.body.updated_instance.image_args, ['serve y']);
    assert.equal((await row(app(), id)).generation, 3);
  });

  test('update refuses what it cannot do with a 400 naming it, and an unknown template with 404', async () => {
    const { key, id } = await running({ image: 'ubuntu:22.04', runtype: 'ssh_proxy' });
    const cases: [unknown, RegExp][] = [
      [{ id }, /at least one of/],
      [{ template_id: 1, template_hash_id: 'x' }, /not both/],
      [{ id: id + 1, image: 'ubuntu' }, /not the instance in the path/],
      [{ args: 'serve' }, /takes no arguments/],
      [{ env: 'A=1' }, /body\.env must be an object/],
      [{ env: { '1A': 'x' } }, /invalid variable name/],
      [{ image: 'Not An Image!' }, /body\.image/],
      [{ image: 'ubuntu', bogus: 1 }, /bogus/],
      [{ env: Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`-p ${9000 + i}:${9000 + i}`, '1'])) }, /port/],
    ];
    for (const [body, msg] of cases) {
      const res = await put(`/api/v0/instances/update_template/${id}/`, body, key);
      assert.equal(res.status, 400, `${JSON.stringify(body).slice(0, 80)}: ${res.raw}`);
      assert.equal(res.body.error, 'bad_request');
      assert.match(res.body.msg, msg);
    }
    assert.equal((await put(`/api/v0/instances/update_template/${id}/`, { template_id: 99999999 }, key)).status, 404);
    assert.equal((await put(`/api/v0/instances/update_template/${id}/`, { template_hash_id: 'nope' }, key)).status, 404);
    const r = await row(app(), id);
    assert.equal(r.generation, 1, 'nothing changed');
    assert.equal(r.image, 'ubuntu:22.04');
  });

  test('execute: ls of the simulated container at an unauthenticated result_url that answers once', async () => {
    const { key, id } = await running();
    const res = await put(`/api/v0/instances/command/${id}/`, { command: 'ls' }, key);
    assert.equal(res.status, 200, res.raw);
    assert.deepEqual(Object.keys(res.body).sort(), ['msg', 'result_url', 'success', 'writeable_path']);
    assert.equal(res.body.writeable_path, '');
    assert.ok(res.body.result_url.startsWith(`${app().config.publicUrl}/api/v0/instances/command_output/`), res.body.result_url);
    const token = /command_output\/\?token=([A-Za-z0-9_-]+)$/.exec(res.body.result_url)![1];
    assert.ok(token.length >= 43, 'a 256-bit token');
    const out = await app().request('GET', fetchPath(res.body.result_url), { key: null });
    assert.equal(out.status, 200, out.raw);
    assert.match(String(out.headers['content-type']), /^text\/plain/);
    assert.equal(out.raw, `${SIMULATED_DIRS.join('\n')}\n`);
    const again = await app().request('GET', fetchPath(res.body.result_url), { key: null });
    assert.equal(again.status, 404, 'served once');
    assert.deepEqual(Object.keys(again.body).sort(), ['error', 'msg', 'success']);
    const other = await put(`/api/v0/instances/command/${id}/`, { command: 'ls' }, key);
    assert.notEqual(other.body.result_url, res.body.result_url);
    const guessed = await app().request('GET', `/api/v0/instances/command_output/?token=${'A'.repeat(43)}`, { key: null });
    assert.equal(guessed.status, 404);
    const hashes = await app().store.db.selectFrom('instance_commands').select(['token_hash', 'output']).where('instance_id', '=', id).execute();
    assert.ok(hashes.every((h) => !h.token_hash.includes(token)), 'only the hash is stored');
    assert.equal(hashes.find((h) => h.output === null && h.token_hash)?.output, null, 'the fetched output is dropped');
  });

  test('execute: du and rm as busybox prints them; the result URL expires', async () => {
    const { key, id } = await running();
    const run = async (command: string) => {
      const res = await put(`/api/v0/instances/command/${id}/`, { command }, key);
      assert.equal(res.status, 200, res.raw);
      return (await app().request('GET', fetchPath(res.body.result_url), { key: null })).raw;
    };
    assert.equal(await run('du -s -h /workspace'), '4.0K\t/workspace\n');
    assert.equal(await run("ls -l 'workspace'"), 'total 0\n');
    assert.equal(await run('rm /nope.txt'), "rm: can't remove '/nope.txt': No such file or directory\n");
    assert.match(await run('rm -r /workspace'), /simulated container is read-only/);
    assert.equal(await run('ls /missing'), 'ls: /missing: No such file or directory\n');
    const late = await put(`/api/v0/instances/command/${id}/`, { command: 'ls' }, key);
    await app().advance(601);
    assert.equal((await app().request('GET', fetchPath(late.body.result_url), { key: null })).status, 404);
  });

  test('execute refuses anything but a single ls, rm or du (400), and a container that is not running (409)', async () => {
    const { key, id } = await running();
    const refused: [string, RegExp][] = [
      ['cat /etc/passwd', /"cat" is not allowed/],
      ['ls; rm -rf /', /";" is shell syntax/],
      ['ls | sh', /"\|" is shell syntax/],
      ['ls $(id)', /"\$" is shell syntax/],
      ['du > /x', /">" is shell syntax/],
      ['ls *', /"\*" is shell syntax/],
      ['rm', /rm needs a path/],
      ['rm -rf --no-preserve-root /', /--no-preserve-root is not allowed/],
      ["ls 'unclosed", /unclosed/],
      ['   ', /empty/],
      ['ls\n/', /one line/],
    ];
    for (const [command, msg] of refused) {
      const res = await put(`/api/v0/instances/command/${id}/`, { command }, key);
      assert.equal(res.status, 400, `${command}: ${res.raw}`);
      assert.equal(res.body.error, 'bad_request');
      assert.match(res.body.msg, msg, command);
    }
    assert.equal((await put(`/api/v0/instances/command/${id}/`, {}, key)).status, 400);
    assert.equal((await put(`/api/v0/instances/command/${id}/`, { command: 'ls', extra: 1 }, key)).status, 400);
    assert.equal((await app().request('GET', '/api/v0/instances/command_output/?token=short', { key: null })).status, 400);
    assert.equal((await app().request('GET', '/api/v0/instances/command_output/', { key: null })).status, 400);
    assert.equal((await put(`/api/v0/instances/${id}/`, { state: 'stopped' }, key)).status, 200);
    const stopped = await put(`/api/v0/instances/command/${id}/`, { command: 'ls' }, key);
    assert.equal(stopped.status, 409);
    assert.match(stopped.body.msg, /must be running/);
  });

  test('take snapshot on a simulated host: 503 saying it needs a real host; bad bodies are 400 first', async () => {
    const { key, id } = await running();
    const body = { id: String(id), container_registry: 'docker.io', personal_repo: 'me/snap', docker_login_user: 'me', docker_login_pass: 'tok', pause: 'true' };
    const res = await app().request('POST', `/api/v0/instances/take_snapshot/${id}/`, { key, body });
    assert.equal(res.status, 503, res.raw);
    assert.deepEqual(Object.keys(res.body).sort(), ['error', 'msg', 'success']);
    assert.equal(res.body.error, 'service_unavailable');
    assert.match(res.body.msg, /needs a real host.*simulated machine/);
    const bad: [Record<string, unknown>, RegExp][] = [
      [{ personal_repo: null }, /personal_repo is required/],
      [{ personal_repo: 'Me/Snap' }, /lowercase/],
      [{ pause: 'maybe' }, /pause/],
      [{ docker_login_pass: null }, /both docker_login_user and docker_login_pass/],
      [{ container_registry: 'not a host' }, /container_registry/],
      [{ id: '999' }, /not the instance in the path/],
      [{ bogus: 1 }, /bogus/],
    ];
    for (const [over, msg] of bad) {
      const r = await app().request('POST', `/api/v0/instances/take_snapshot/${id}/`, { key, body: { ...body, ...over } });
      assert.equal(r.status, 400, `${JSON.stringify(over)}: ${r.raw}`);
      assert.match(r.body.msg, msg);
    }
    const list = await app().request('GET', `/api/v0/instances/snapshots/${id}/`, { key });
    assert.equal(list.status, 200, list.raw);
    assert.deepEqual(list.body, { success: true, snapshots: [] });
  });

  test('cloud copy answers 503 saying what the hosts would need, in the error shape the clients print', async () => {
    const { key, id } = await running();
    const calls: [string, string, unknown, RegExp][] = [
      ['POST', '/api/v0/commands/rclone/', { src: '/workspace', dst: '/b', instance_id: String(id), selected: '3', transfer: 'Instance to Cloud', flags: [] }, /rclone on the hosts and stored cloud credentials/],
      ['DELETE', '/api/v0/commands/rclone/', { client_id: 'me', dst_id: String(id) }, /rclone/],
    ];
    for (const [method, path, body, msg] of calls) {
      const res = await app().request(method, path, { key, body });
      assert.equal(res.status, 503, `${method} ${path}: ${res.raw}`);
      assert.deepEqual(Object.keys(res.body).sort(), ['error', 'msg', 'success']);
      assert.equal(res.body.success, false);
      assert.equal(res.body.error, 'service_unavailable');
      assert.match(res.body.msg, msg);
      assert.equal((await app().request(method, path, { key: null, body })).status, 401);
    }
  });

  test('reboots racing each other and a rent of the same machine: one instance on the GPU, one compute meter', async () => {
    const { key, m, id, user } = await running({}, { num_gpus: 1, price_gpu: 0.5, price_disk: 0 });
    const results = await Promise.all([
      put(`/api/v0/instances/reboot/${id}/`, {}, key),
      put(`/api/v0/instances/reboot/${id}/`, {}, key),
      put(`/api/v0/instances/recycle/${id}/`, {}, key),
      rent(app(), offerFor(m, 1)),
    ]);
    assert.deepEqual(results.map((r) => r.status), [200, 200, 200, 410]);
    const since = await untilRunning(app(), id, key);
    const b0 = await app().services.billing.balance(user.id);
    await app().advance(3600);
    const b1 = await app().services.billing.balance(user.id);
    assert.ok(since > 0);
    assert.equal(b0 - b1, 500_000, 'one compute meter, at 0.5 $/h');
    assert.equal(JSON.parse((await row(app(), id)).gpu_indexes).length, 1);
  });
});
