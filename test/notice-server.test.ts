// The server's side of the notice before a stop and of pull progress (issue 33 items 3 and 4), on a real host's
// machine driven through the agent protocol (registration, desired state, status reports), on both databases:
// - a running instance's stop, by its renter or by an outbid, says why and when in status_msg and in its event stream,
//   with the operator's grace (GPUPLANE_STOP_GRACE_SECONDS, 12 here); the desired state hands the agent the same
//   words (stop_reason) and the grace (stop_grace_s);
// - an agent's pull progress becomes `pulling image: 1.2 GB of 4.8 GB (25%)` in status_msg and in the event stream, a
//   report without it the plain words, and a malformed one a 400.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect } from './helpers/harness.js';
import { desired, hostWithMachine, observed, report, type Host } from './agent-server-fixtures.js';
import { rentOk, statusOf } from './instances-fixtures.js';
import type { TestApp } from './helpers/harness.js';

const GRACE = 12;
const NOTICE = (why: string) => new RegExp(`^${why}; stopping at \\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ: SIGTERM now, SIGKILL after ${GRACE} s$`);

/** The instance's events, oldest first, as the renter's stream gives them. */
async function eventsOf(app: TestApp, id: number, key: string): Promise<{ actual_status: string | null; status_msg: string | null }[]> {
  const res = await app.request('GET', '/api/v0/instances/events/?since=0&timeout=0.5', { key });
  assert.equal(res.status, 200, res.raw);
  return res.raw.split('\n\n').flatMap((block) => {
    const data = /^data: (.*)$/m.exec(block);
    return data ? [JSON.parse(data[1])] : [];
  }).filter((e) => e.id === id);
}

/** Rents on the host's machine and reports the instance's container running. */
async function running(app: TestApp, host: Host, key: string, body: Record<string, unknown> = {}) {
  const rented = await rentOk(app, host.machineId * 100 + 1, { image: 'busybox', ...body }, key);
  const d = await desired(app, host);
  const boot = d.instances.find((i: { instance_id: number }) => i.instance_id === rented.id).boot;
  await report(app, host, [observed(rented.id, boot)], d.version);
  assert.equal((await statusOf(app, rented.id, key)).actual_status, 'running');
  return rented;
}

forEachDialect('notice before a stop, and pull progress, through the agent protocol', (app) => {
  test('a renter\'s stop: status_msg and the event say why and when, with the operator\'s grace; the desired state carries them to the agent', async () => {
    const host = await hostWithMachine(app());
    const renter = await app().createUser();
    const { id } = await running(app(), host, renter.api_key);
    const put = await app().request('PUT', `/api/v0/instances/${id}/`, { key: renter.api_key, body: { state: 'stopped' } });
    assert.equal(put.status, 200, put.raw);
    const inst = await statusOf(app(), id, renter.api_key);
    assert.equal(inst.actual_status, 'stopped');
    assert.match(inst.status_msg, NOTICE('stopped by its renter'));
    const when = Date.parse(/stopping at (\S+):/.exec(inst.status_msg)![1]) / 1000;
    assert.equal(when, Math.floor(app().clock.now()), 'the time of the stop');
    assert.equal((await eventsOf(app(), id, renter.api_key)).at(-1)!.status_msg, inst.status_msg);
    const d = (await desired(app(), host)).instances.find((i: { instance_id: number }) => i.instance_id === id);
    assert.equal(d.state, 'stopped');
    assert.equal(d.stop_grace_s, GRACE);
    assert.equal(d.stop_reason, inst.status_msg);
  });

  test('an outbid bid instance: told it was outbid, when, and the grace; intended_status stays running; an instance not running is told nothing of signals', async () => {
    const host = await hostWithMachine(app(), { hw: { num_gpus: 1, gpus: [{ index: 0, name: 'NVIDIA GeForce RTX 4090', uuid: 'GPU-0', gpu_ram: 24564, pci_gen: 4, pcie_width: 16, gpu_max_power: 450, compute_cap: 890 }] } });
    const renter = await app().createUser();
    const low = await running(app(), host, renter.api_key, { price: 0.25 });
    const high = await rentOk(app(), host.machineId * 100 + 1, { image: 'busybox', price: 0.5 }, renter.api_key);
    const inst = await statusOf(app(), low.id, renter.api_key);
    assert.deepEqual([inst.actual_status, inst.intended_status], ['stopped', 'running']);
    assert.match(inst.status_msg, NOTICE('outbid: a higher bid or an on-demand rental took its GPUs; it resumes when they are free again'));
    assert.equal((await eventsOf(app(), low.id, renter.api_key)).at(-1)!.status_msg, inst.status_msg);
    const d = await desired(app(), host);
    const lowD = d.instances.find((i: { instance_id: number }) => i.instance_id === low.id);
    assert.deepEqual([lowD.state, lowD.stop_grace_s, lowD.stop_reason], ['stopped', GRACE, inst.status_msg]);
    // The winner runs: no stop_reason. Outbid in turn before its container ever ran: the plain words, no signals named.
    const highD = d.instances.find((i: { instance_id: number }) => i.instance_id === high.id);
    assert.deepEqual([highD.state, highD.stop_reason], ['running', undefined]);
    await rentOk(app(), host.machineId * 100 + 1, { image: 'busybox', price: 0.9 }, renter.api_key);
    const second = await statusOf(app(), high.id, renter.api_key);
    assert.equal(second.status_msg, 'outbid: a higher bid or an on-demand rental took its GPUs; it resumes when they are free again');
  });

  test('pull progress: status_msg says how far, each report an event; a report without it says the plain words; a malformed one is refused', async () => {
    const host = await hostWithMachine(app());
    const renter = await app().createUser();
    const { id } = await rentOk(app(), host.machineId * 100 + 1, { image: 'busybox' }, renter.api_key);
    const d = await desired(app(), host);
    const boot = d.instances[0].boot;
    const pulling = (pull?: Record<string, unknown>) => observed(id, boot, { state: 'pulling', container_id: null, ports: {}, ...(pull ? { pull: pull as never } : {}) });
    await report(app(), host, [pulling()], d.version);
    assert.equal((await statusOf(app(), id, renter.api_key)).status_msg, 'pulling the image');
    await report(app(), host, [pulling({ phase: 'downloading', done: 1_200_000_000, total: 4_800_000_000 })], d.version);
    assert.equal((await statusOf(app(), id, renter.api_key)).status_msg, 'pulling image: 1.2 GB of 4.8 GB (25%)');
    await report(app(), host, [pulling({ phase: 'extracting', done: 2_400_000_000, total: 4_800_000_000 })], d.version);
    const shown = await statusOf(app(), id, renter.api_key);
    assert.deepEqual([shown.actual_status, shown.status_msg], ['loading', 'pulling image: extracting 2.4 GB of 4.8 GB (50%)']);
    const msgs = (await eventsOf(app(), id, renter.api_key)).map((e) => e.status_msg);
    assert.deepEqual(msgs.slice(-3), ['pulling the image', 'pulling image: 1.2 GB of 4.8 GB (25%)', 'pulling image: extracting 2.4 GB of 4.8 GB (50%)']);
    for (const bad of [{ phase: 'downloading', done: -1, total: 5 }, { phase: 'copying', done: 1, total: 5 }, { phase: 'downloading', done: 1 }]) {
      const res = await app().request('PUT', '/api/v0/agent/status/', { key: host.machineKey, body: { agent_version: '0.0.0-test', desired_version: d.version, observed: [pulling(bad)] } });
      assert.equal(res.status, 400, res.raw);
      assert.deepEqual([res.body.success, res.body.error], [false, 'bad_request']);
    }
    // Running: the progress is gone from status_msg.
    await report(app(), host, [observed(id, boot)], d.version);
    assert.equal((await statusOf(app(), id, renter.api_key)).status_msg, null);
  });
}, { config: { GPUPLANE_STOP_GRACE_SECONDS: String(GRACE) } });
