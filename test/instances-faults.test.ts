// Emulator faults on instances and machines (contract §2 POST /_emu/faults) and heartbeat loss: unknown, then offline.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect } from './helpers/harness.js';
import { HEARTBEAT_OFFLINE_AFTER_S } from '../src/instances/instances-lifecycle.js';
import { addMachine, BOOT_MAX_S, offerFor, rentOk, statusOf } from './instances-fixtures.js';

forEachDialect('instances: faults', (app) => {
  const fault = (body: Record<string, unknown>, key?: string) => app().request('POST', '/_emu/faults', { body, key });

  test('exited: the container stops (no ports), start boots it again; recover also brings it back', async () => {
    const m = await addMachine(app());
    const { id } = await rentOk(app(), offerFor(m, 1), { runtype: 'ssh_direct' });
    await app().advance(BOOT_MAX_S);
    const res = await fault({ fault: 'exited', instance_id: id });
    assert.equal(res.status, 200, res.raw);
    let inst = await statusOf(app(), id);
    assert.equal(inst.actual_status, 'exited');
    assert.equal(inst.ssh_host, null);
    assert.deepEqual(inst.ports, {});
    await fault({ fault: 'recover', instance_id: id });
    await app().advance(BOOT_MAX_S);
    inst = await statusOf(app(), id);
    assert.equal(inst.actual_status, 'running');
  });

  test('stall: stays loading however long the clock runs; recover finishes the boot', async () => {
    const m = await addMachine(app());
    const { id } = await rentOk(app(), offerFor(m, 1));
    await app().advance(1.5);
    await fault({ fault: 'stall', instance_id: id });
    await app().advance(3600);
    assert.equal((await statusOf(app(), id)).actual_status, 'loading');
    await fault({ fault: 'recover', instance_id: id });
    await app().advance(BOOT_MAX_S);
    assert.equal((await statusOf(app(), id)).actual_status, 'running');
  });

  test('instance unknown turns offline after the heartbeat timeout; offline is immediate', async () => {
    const m = await addMachine(app(), { num_gpus: 2 });
    const a = await rentOk(app(), offerFor(m, 1));
    const b = await rentOk(app(), offerFor(m, 1));
    await app().advance(BOOT_MAX_S);
    await fault({ fault: 'unknown', instance_id: a.id });
    assert.equal((await statusOf(app(), a.id)).actual_status, 'unknown');
    await app().advance(HEARTBEAT_OFFLINE_AFTER_S - 5);
    assert.equal((await statusOf(app(), a.id)).actual_status, 'unknown');
    await app().advance(10);
    assert.equal((await statusOf(app(), a.id)).actual_status, 'offline');
    await fault({ fault: 'offline', instance_id: b.id });
    assert.equal((await statusOf(app(), b.id)).actual_status, 'offline');
  });

  test('a machine that stops heartbeating: its instances unknown, then offline; recover boots them again', async () => {
    const m = await addMachine(app(), { num_gpus: 2 });
    const a = await rentOk(app(), offerFor(m, 1));
    const b = await rentOk(app(), offerFor(m, 1), { target_state: 'stopped' });
    await app().advance(BOOT_MAX_S);
    const res = await fault({ fault: 'unknown', machine_id: m.machine_id });
    assert.equal(res.status, 200, res.raw);
    assert.equal((await statusOf(app(), a.id)).actual_status, 'unknown');
    assert.equal((await statusOf(app(), b.id)).actual_status, 'stopped', 'a stopped instance stays stopped');
    await app().advance(HEARTBEAT_OFFLINE_AFTER_S + 1);
    assert.equal((await statusOf(app(), a.id)).actual_status, 'offline');
    await fault({ fault: 'recover', machine_id: m.machine_id });
    await app().advance(BOOT_MAX_S);
    assert.equal((await statusOf(app(), a.id)).actual_status, 'running');
  });

  test('an offer on a faulted machine is 410 offer_unavailable, fast with cancel_unavail and without it', async () => {
    const m = await addMachine(app(), { num_gpus: 1 });
    assert.equal((await fault({ fault: 'offline', machine_id: m.machine_id })).status, 200);
    for (const cancel_unavail of [true, null]) {
      const res = await app().request('PUT', `/api/v0/asks/${offerFor(m, 1)}/`, { body: { image: 'ubuntu', cancel_unavail } });
      assert.equal(res.status, 410, res.raw);
      assert.equal(res.body.error, 'offer_unavailable');
    }
    await fault({ fault: 'recover', machine_id: m.machine_id });
    assert.equal((await app().request('PUT', `/api/v0/asks/${offerFor(m, 1)}/`, { body: { image: 'ubuntu', cancel_unavail: true } })).status, 200);
  });

  test('unknown instance or machine is 404; neither or both ids is 400; a non-admin is 403', async () => {
    assert.equal((await fault({ fault: 'exited', instance_id: 987654 })).status, 404);
    assert.equal((await fault({ fault: 'offline', machine_id: 987654 })).status, 404);
    assert.equal((await fault({ fault: 'exited' })).status, 400);
    const m = await addMachine(app());
    const { id } = await rentOk(app(), offerFor(m, 1));
    assert.equal((await fault({ fault: 'exited', instance_id: id, machine_id: m.machine_id })).status, 400);
    const { api_key } = await app().createUser();
    assert.equal((await fault({ fault: 'exited', instance_id: id }, api_key)).status, 403);
  });
});
