// Lifecycle: stop/start/destroy, label, bulk state, compute vs disk billing, logs, SSH keys (spec: States and
// transitions, Stop/Destroy instance; contract §3 and §6).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect } from './helpers/harness.js';
import { addMachine, BOOT_MAX_S, offerFor, rent, rentOk, show, statusOf } from './instances-fixtures.js';

forEachDialect('instances: lifecycle', (app) => {
  const put = (id: number, body: unknown, key?: string) => app().request('PUT', `/api/v0/instances/${id}/`, { body, key });
  const balance = (userId: number) => app().services.billing.balance(userId);

  test('stop: stopped/stopped, no SSH or ports, GPUs free; start again boots it (null, then running: its container starts again)', async () => {
    const m = await addMachine(app(), { num_gpus: 1 });
    const { id } = await rentOk(app(), offerFor(m, 1), { runtype: 'ssh_direct' });
    await app().advance(BOOT_MAX_S);
    assert.equal((await statusOf(app(), id)).actual_status, 'running');
    const stop = await put(id, { state: 'stopped' });
    assert.equal(stop.status, 200, stop.raw);
    assert.equal(stop.body.success, true);
    let inst = await statusOf(app(), id);
    assert.equal(inst.actual_status, 'stopped');
    assert.equal(inst.intended_status, 'stopped');
    assert.equal(inst.ssh_host, null);
    assert.deepEqual(inst.ports, {});
    assert.equal(inst.disk_space, 8, 'the disk is kept');
    const start = await put(id, { state: 'running' });
    assert.equal(start.status, 200, start.raw);
    inst = await statusOf(app(), id);
    assert.equal(inst.actual_status, null);
    assert.equal(inst.intended_status, 'running');
    await app().advance(BOOT_MAX_S);
    inst = await statusOf(app(), id);
    assert.equal(inst.actual_status, 'running');
    assert.deepEqual(Object.keys(inst.ports), ['22/tcp']);
  });

  test('start fails with 409 when its GPUs went to someone else meanwhile; it stays stopped', async () => {
    const m = await addMachine(app(), { num_gpus: 1 });
    const { id } = await rentOk(app(), offerFor(m, 1));
    await put(id, { state: 'stopped' });
    await rentOk(app(), offerFor(m, 1));
    const start = await put(id, { state: 'running' });
    assert.equal(start.status, 409, start.raw);
    assert.equal(start.body.success, false);
    assert.equal(typeof start.body.msg, 'string');
    assert.equal((await statusOf(app(), id)).actual_status, 'stopped');
  });

  test('billing: compute charged only while running, disk from creation until destroy', async () => {
    const m = await addMachine(app(), { num_gpus: 1, price_gpu: 0.5, price_disk: 0.73 });
    const { user, api_key } = await app().createUser({ credit: 100 });
    const { id } = await rentOk(app(), offerFor(m, 1), { disk: 100 }, api_key);
    // disk: 0.73 $/GB/month × 100 GB / 730 h = 0.1 $/h; compute 0.5 $/h
    await app().advance(BOOT_MAX_S);
    const b0 = await balance(user.id);
    await app().advance(3600);
    const b1 = await balance(user.id);
    assert.ok(Math.abs(b0 - b1 - 600_000) < 2_000, `running hour costs 0.6 $, got ${(b0 - b1) / 1e6}`);
    await put(id, { state: 'stopped' }, api_key);
    const b2 = await balance(user.id);
    await app().advance(3600);
    const b3 = await balance(user.id);
    assert.ok(Math.abs(b2 - b3 - 100_000) < 2_000, `stopped hour costs the disk only (0.1 $), got ${(b2 - b3) / 1e6}`);
    const del = await app().request('DELETE', `/api/v0/instances/${id}/`, { key: api_key });
    assert.equal(del.status, 200);
    const b4 = await balance(user.id);
    await app().advance(3600);
    assert.equal(await balance(user.id), b4, 'nothing after destroy');
  });

  test('destroy frees the GPUs, hides the instance (null), revokes its instance key', async () => {
    const m = await addMachine(app(), { num_gpus: 1 });
    const { id, instanceKey } = await rentOk(app(), offerFor(m, 1));
    const del = await app().request('DELETE', `/api/v0/instances/${id}/`);
    assert.equal(del.status, 200, del.raw);
    assert.equal(del.body.success, true);
    // A destroyed instance reads as vast.py's "no longer exists" (200, instances null; issue 29 item 2).
    const shown = await show(app(), id);
    assert.equal(shown.status, 200, shown.raw);
    assert.equal(shown.body.instances, null);
    const list = await app().request('GET', '/api/v0/instances/');
    assert.ok(!list.body.instances.some((i: any) => i.id === id));
    assert.equal((await rent(app(), offerFor(m, 1))).status, 200, 'GPUs free again');
    const again = await app().request('DELETE', `/api/v0/instances/${id}/`);
    assert.equal(again.status, 404);
    assert.equal(again.body.error, 'no_such_instance');
    const withKey = await put(id, { state: 'stopped' }, instanceKey);
    assert.equal(withKey.status, 401, 'the instance key died with it');
  });

  test('label: PUT {label} sets it, null clears it; a body with neither state nor label is 400', async () => {
    const m = await addMachine(app());
    const { id } = await rentOk(app(), offerFor(m, 1));
    assert.equal((await put(id, { label: 'exp-7' })).status, 200);
    assert.equal((await statusOf(app(), id)).label, 'exp-7');
    assert.equal((await put(id, { label: null })).status, 200);
    assert.equal((await statusOf(app(), id)).label, null);
    assert.equal((await put(id, {})).status, 400);
    assert.equal((await put(id, { state: 'paused' })).status, 400);
  });

  test('bulk: PUT /api/v0/instances/ {state, ids} stops and starts several; unknown ids are reported', async () => {
    const m = await addMachine(app(), { num_gpus: 2 });
    const a = await rentOk(app(), offerFor(m, 1));
    const b = await rentOk(app(), offerFor(m, 1));
    const stop = await app().request('PUT', '/api/v0/instances/', { body: { state: 'stopped', ids: [a.id, b.id] } });
    assert.equal(stop.status, 200, stop.raw);
    assert.equal(stop.body.success, true);
    assert.equal((await statusOf(app(), a.id)).actual_status, 'stopped');
    assert.equal((await statusOf(app(), b.id)).actual_status, 'stopped');
    const start = await app().request('PUT', '/api/v0/instances/', { body: { state: 'running', ids: [a.id, 999999] } });
    assert.equal(start.body.success, false);
    assert.deepEqual(start.body.ids, [a.id]);
    assert.equal(start.body.failed[0].id, 999999);
    assert.equal(start.body.failed[0].error, 'not_found');
    assert.equal((await statusOf(app(), a.id)).intended_status, 'running');
    assert.equal((await statusOf(app(), b.id)).actual_status, 'stopped');
  });

  test('created with target_state stopped, then started', async () => {
    const m = await addMachine(app(), { num_gpus: 1 });
    const { id } = await rentOk(app(), offerFor(m, 1), { target_state: 'stopped' });
    assert.equal((await statusOf(app(), id)).actual_status, 'stopped');
    assert.equal((await put(id, { state: 'running' })).status, 200);
    await app().advance(BOOT_MAX_S);
    assert.equal((await statusOf(app(), id)).actual_status, 'running');
  });

  test('request_logs: an absolute result_url that serves the boot log as text (tail honoured)', async () => {
    const m = await addMachine(app());
    const { id } = await rentOk(app(), offerFor(m, 1), { image: 'ubuntu:22.04', onstart: 'echo hi' });
    await app().advance(BOOT_MAX_S);
    const res = await app().request('PUT', `/api/v0/instances/request_logs/${id}/`, { body: { tail: 2 } });
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.success, true);
    assert.ok(res.body.result_url.startsWith(`${app().config.publicUrl}/`), res.body.result_url);
    const path = res.body.result_url.slice(app().config.publicUrl.length);
    const log = await app().request('GET', path, { key: null });
    assert.equal(log.status, 200, log.raw);
    assert.match(String(log.headers['content-type']), /^text\/plain/);
    const lines = log.raw.trim().split('\n');
    assert.equal(lines.length, 2);
    assert.match(lines[0], /running/);
    const full = await app().request('PUT', `/api/v0/instances/request_logs/${id}/`, { body: {} });
    const all = await app().request('GET', full.body.result_url.slice(app().config.publicUrl.length), { key: null });
    assert.match(all.raw, /image ubuntu:22\.04/);
    assert.match(all.raw, /loading/);
    const bad = await app().request('GET', '/api/v0/instances/logs/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA/', { key: null });
    assert.equal(bad.status, 404);
  });

  test('the boot log says each step as the host reported it, in order, and claims nothing it did not do (issue 29 item 9)', async () => {
    const m = await addMachine(app());
    const { id } = await rentOk(app(), offerFor(m, 1), { image: 'ubuntu:22.04', onstart: 'echo hi' });
    await app().advance(BOOT_MAX_S);
    const full = await app().request('PUT', `/api/v0/instances/request_logs/${id}/`, { body: {} });
    const log = (await app().request('GET', full.body.result_url.slice(app().config.publicUrl.length), { key: null })).raw;
    const steps = log.trim().split('\n').map((l: string) => l.replace(/^\S+ /, ''));
    assert.equal(steps[0], `instance ${id} created on machine ${m.machine_id} (1 GPU), image ubuntu:22.04`);
    // The instance key never reaches the host (only its hash is kept), so the log must not say it was injected.
    assert.doesNotMatch(log, /CONTAINER_API_KEY|injected/);
    // Never "downloaded" while the host still reports the pull.
    assert.doesNotMatch(log, /downloaded/);
    const pulling = steps.indexOf('loading: pulling the image');
    const starting = steps.indexOf('loading: starting the container');
    const running = steps.findIndex((l: string) => l.startsWith('running: container started'));
    assert.ok(pulling > 0 && pulling < running, log);
    assert.ok(starting === -1 || (starting > pulling && starting < running), log);
    assert.equal(steps.at(-1), 'onstart: running its script (1 line)');
  });

  test('SSH keys: attach to an instance, list, detach; a malformed key is 400, a missing one 404', async () => {
    const m = await addMachine(app());
    const { id } = await rentOk(app(), offerFor(m, 1));
    const key = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl me@laptop';
    const att = await app().request('POST', `/api/v0/instances/${id}/ssh/`, { body: { ssh_key: key } });
    assert.equal(att.status, 200, att.raw);
    assert.equal(att.body.success, true);
    const list = await app().request('GET', `/api/v0/instances/${id}/ssh/`);
    assert.deepEqual(list.body.ssh_keys.map((k: any) => k.ssh_key), [key]);
    assert.equal((await app().request('POST', `/api/v0/instances/${id}/ssh/`, { body: { ssh_key: 'not a key' } })).status, 400);
    const det = await app().request('DELETE', `/api/v0/instances/${id}/ssh/${att.body.key_id}/`);
    assert.equal(det.status, 200, det.raw);
    assert.equal((await app().request('GET', `/api/v0/instances/${id}/ssh/`)).body.ssh_keys.length, 0);
    assert.equal((await app().request('DELETE', `/api/v0/instances/${id}/ssh/${att.body.key_id}/`)).status, 404);
  });
});
