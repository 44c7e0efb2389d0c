// The emulator's host events on the virtual clock (issue 34 item 3, POST/GET/DELETE /_emu/events): an outbid wave, a
// host offline for a while, a slow pull, a lost GPU; at their time and not before, on the machines given or drawn by
// the seed (the same seed draws the same machines), listed and cleared; bad input is 400 naming the field.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, forEachDialect, type TestApp } from './helpers/harness.js';
import { addMachine, BOOT_MAX_S, offerFor, rent, rentOk, statusOf } from './instances-fixtures.js';
import { HEARTBEAT_INTERVAL_S, HEARTBEAT_TIMEOUT_S } from '../src/emulator/simulated-hosts/simhost-heartbeat.js';
import { drawMachines } from '../src/emulator/emu-events/events-service.js';

forEachDialect('emulator: host events', (app, dialect) => {
  const post = (body: Record<string, unknown>, key?: string) => app().request('POST', '/_emu/events', { body, key });
  const postOk = async (body: Record<string, unknown>) => {
    const res = await post(body);
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.success, true);
    return res.body.event;
  };
  const eventOf = async (id: number) => ((await app().request('GET', '/_emu/events')).body.events as any[]).find((e) => e.id === id);

  test('an outbid wave at +60 s outbids exactly the bid instances on its machines, when the clock passes it', async () => {
    const m1 = await addMachine(app(), { num_gpus: 2, min_bid: 0.2 });
    const m2 = await addMachine(app(), { num_gpus: 1, min_bid: 0.2 });
    const m3 = await addMachine(app(), { num_gpus: 1, min_bid: 0.2 });
    const bid1 = await rentOk(app(), offerFor(m1, 1), { price: 0.3 });
    const od1 = await rentOk(app(), offerFor(m1, 1));
    const bid2 = await rentOk(app(), offerFor(m2, 1), { price: 0.3 });
    const bid3 = await rentOk(app(), offerFor(m3, 1), { price: 0.3 });
    await app().advance(BOOT_MAX_S);
    const ev = await postOk({ kind: 'outbid_wave', after: 60, machine_ids: [m2.machine_id, m1.machine_id] });
    assert.equal(ev.kind, 'outbid_wave');
    assert.equal(ev.state, 'pending');
    assert.equal(ev.at, app().clock.now() + 60);
    assert.deepEqual(ev.machine_ids, [m1.machine_id, m2.machine_id].sort((a, b) => a - b));
    await app().advance(59);
    for (const { id } of [bid1, od1, bid2, bid3]) assert.equal((await statusOf(app(), id)).actual_status, 'running', `instance ${id} before the wave`);
    assert.equal((await eventOf(ev.id)).state, 'pending');
    await app().advance(2);
    for (const { id } of [bid1, bid2]) {
      const inst = await statusOf(app(), id);
      assert.equal(inst.actual_status, 'stopped', `bid ${id} outbid`);
      assert.equal(inst.intended_status, 'running');
      assert.match(inst.status_msg, /outbid/);
    }
    assert.equal((await statusOf(app(), od1.id)).actual_status, 'running', 'an on-demand instance is never outbid');
    assert.equal((await statusOf(app(), bid3.id)).actual_status, 'running', 'a machine not chosen is untouched');
    const done = await eventOf(ev.id);
    assert.equal(done.state, 'done', 'a wave without a duration is over once it struck');
    assert.deepEqual(done.instance_ids, [bid1.id, bid2.id].sort((a, b) => a - b));
    assert.equal(done.started_at, ev.at);
  });

  test('an outbid wave with a duration: the outbid instances resume when it ends', async () => {
    const m = await addMachine(app(), { num_gpus: 1, min_bid: 0.2 });
    const b = await rentOk(app(), offerFor(m, 1), { price: 0.3 });
    await app().advance(BOOT_MAX_S);
    const ev = await postOk({ kind: 'outbid_wave', machine_ids: [m.machine_id], duration: 600 });
    assert.equal(ev.state, 'active', 'at now: it struck before the reply');
    assert.deepEqual(ev.instance_ids, [b.id]);
    assert.equal((await statusOf(app(), b.id)).actual_status, 'stopped');
    await app().advance(599);
    assert.equal((await statusOf(app(), b.id)).actual_status, 'stopped', 'still outbid while the wave lasts');
    await app().advance(1 + BOOT_MAX_S);
    assert.equal((await statusOf(app(), b.id)).actual_status, 'running');
    assert.equal((await eventOf(ev.id)).state, 'done');
  });

  test('host_offline for 5 min: unknown at the heartbeat timeout, then running again once it ends', async () => {
    const m = await addMachine(app(), { num_gpus: 1 });
    const { id } = await rentOk(app(), offerFor(m, 1));
    await app().advance(BOOT_MAX_S);
    const ev = await postOk({ kind: 'host_offline', after: 10, duration: 300, machine_ids: [m.machine_id] });
    assert.equal(ev.fault, 'no_heartbeat');
    assert.equal(ev.ends_at, ev.at + 300);
    await app().advance(10);
    assert.equal((await eventOf(ev.id)).state, 'active');
    assert.equal((await statusOf(app(), id)).actual_status, 'running', 'not noticed before the heartbeat timeout');
    await app().advance(HEARTBEAT_TIMEOUT_S + HEARTBEAT_INTERVAL_S);
    assert.equal((await statusOf(app(), id)).actual_status, 'unknown');
    await app().advance(300 - HEARTBEAT_TIMEOUT_S - HEARTBEAT_INTERVAL_S);
    assert.equal((await eventOf(ev.id)).state, 'done');
    await app().advance(BOOT_MAX_S);
    assert.equal((await statusOf(app(), id)).actual_status, 'running');
  });

  test('host_offline with fault offline: offline at once; clearing it early brings the host back', async () => {
    const m = await addMachine(app(), { num_gpus: 1 });
    const { id } = await rentOk(app(), offerFor(m, 1));
    await app().advance(BOOT_MAX_S);
    const ev = await postOk({ kind: 'host_offline', fault: 'offline', machine_ids: [m.machine_id] });
    assert.equal(ev.state, 'active');
    assert.equal(ev.ends_at, null, 'no duration: until cleared');
    assert.equal((await statusOf(app(), id)).actual_status, 'offline');
    assert.equal((await rent(app(), offerFor(m, 1))).status, 410, 'an offline host takes no renters');
    await app().advance(3600);
    assert.equal((await statusOf(app(), id)).actual_status, 'offline');
    const res = await app().request('DELETE', `/_emu/events/${ev.id}`);
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.event.state, 'done');
    assert.equal(await eventOf(ev.id), undefined, 'cleared: gone from the list');
    await app().advance(BOOT_MAX_S);
    assert.equal((await statusOf(app(), id)).actual_status, 'running');
  });

  test('two overlapping outages of one host: it comes back when the later one ends', async () => {
    const m = await addMachine(app(), { num_gpus: 1 });
    const { id } = await rentOk(app(), offerFor(m, 1));
    await app().advance(BOOT_MAX_S);
    await postOk({ kind: 'host_offline', fault: 'offline', duration: 100, machine_ids: [m.machine_id] });
    await postOk({ kind: 'host_offline', fault: 'offline', after: 50, duration: 100, machine_ids: [m.machine_id] });
    await app().advance(100 + BOOT_MAX_S);
    assert.equal((await statusOf(app(), id)).actual_status, 'offline', 'the second outage still holds it');
    await app().advance(50);
    await app().advance(BOOT_MAX_S);
    assert.equal((await statusOf(app(), id)).actual_status, 'running');
  });

  test('gpu_lost: the machine is not offered and the renter of that GPU sees the fault while it is lost', async () => {
    const m = await addMachine(app(), { num_gpus: 3 });
    const a = await rentOk(app(), offerFor(m, 1));
    const b = await rentOk(app(), offerFor(m, 1));
    await app().advance(BOOT_MAX_S);
    const gpusOf = async (id: number) =>
      JSON.parse((await app().store.db.selectFrom('instances').select('gpu_indexes').where('id', '=', id).executeTakeFirstOrThrow()).gpu_indexes) as number[];
    const [onLost, other] = (await gpusOf(a.id))[0] < (await gpusOf(b.id))[0] ? [b, a] : [a, b];
    const lostGpu = (await gpusOf(onLost.id))[0];
    const ev = await postOk({ kind: 'gpu_lost', after: 30, duration: 120, gpu_index: lostGpu, machine_ids: [m.machine_id] });
    assert.equal(ev.gpu_index, lostGpu);
    assert.equal((await statusOf(app(), onLost.id)).status_msg, null, 'not before its time');
    await app().advance(30);
    const refused = await rent(app(), offerFor(m, 1));
    assert.equal(refused.status, 410, refused.raw);
    assert.match(refused.body.msg, /GPU fault/);
    assert.equal((await statusOf(app(), onLost.id)).status_msg, 'GPU fault on the host: Xid 79: GPU has fallen off the bus');
    assert.equal((await statusOf(app(), other.id)).status_msg, null, 'the other GPU\'s renter sees nothing');
    await app().advance(120);
    assert.equal((await eventOf(ev.id)).state, 'done');
    assert.equal((await statusOf(app(), onLost.id)).status_msg, null, 'the GPU is back');
    assert.equal((await rent(app(), offerFor(m, 1))).status, 200);
  });

  test('slow_pull: a pull that starts during it takes pull_seconds; after it, the seeded boot time', async () => {
    const m = await addMachine(app(), { num_gpus: 2 });
    const ev = await postOk({ kind: 'slow_pull', pull_seconds: 600, duration: 1800, machine_ids: [m.machine_id] });
    assert.equal(ev.pull_seconds, 600);
    const slow = await rentOk(app(), offerFor(m, 1), { image: 'slow/image:1' });
    await app().advance(BOOT_MAX_S);
    assert.equal((await statusOf(app(), slow.id)).actual_status, 'loading', 'still pulling');
    await app().advance(600);
    assert.equal((await statusOf(app(), slow.id)).actual_status, 'running');
    await app().advance(1800);
    assert.equal((await eventOf(ev.id)).state, 'done');
    const fast = await rentOk(app(), offerFor(m, 1), { image: 'fast/image:1' });
    await app().advance(BOOT_MAX_S);
    assert.equal((await statusOf(app(), fast.id)).actual_status, 'running');
  });

  test('a cancelled pending event never happens; DELETE /_emu/events clears every one', async () => {
    const m = await addMachine(app(), { num_gpus: 1, min_bid: 0.2 });
    const b = await rentOk(app(), offerFor(m, 1), { price: 0.3 });
    await app().advance(BOOT_MAX_S);
    const ev = await postOk({ kind: 'outbid_wave', after: 100, machine_ids: [m.machine_id] });
    const res = await app().request('DELETE', `/_emu/events/${ev.id}`);
    assert.equal(res.status, 200, res.raw);
    await app().advance(200);
    assert.equal((await statusOf(app(), b.id)).actual_status, 'running', 'cancelled: no wave');
    await postOk({ kind: 'gpu_lost', machine_ids: [m.machine_id] });
    await postOk({ kind: 'host_offline', after: 50, machine_ids: [m.machine_id] });
    const all = await app().request('DELETE', '/_emu/events');
    assert.equal(all.status, 200, all.raw);
    assert.ok(all.body.events.length >= 2);
    assert.deepEqual((await app().request('GET', '/_emu/events')).body.events, []);
    await app().advance(100);
    assert.equal((await statusOf(app(), b.id)).actual_status, 'running', 'the GPU back, the pending offline cancelled');
    assert.equal((await app().request('DELETE', `/_emu/events/${ev.id}`)).status, 404);
  });

  test('machines drawn by the seed: the same seed draws the same machines; fraction and machines count', async () => {
    const a = await postOk({ kind: 'gpu_lost', after: 10_000, machines: 3, seed: 42 });
    const b = await postOk({ kind: 'gpu_lost', after: 10_000, machines: 3, seed: 42 });
    assert.equal(a.machine_ids.length, 3);
    assert.deepEqual(a.machine_ids, b.machine_ids);
    assert.equal(a.seed, 42);
    const c = await postOk({ kind: 'host_offline', after: 10_000, fraction: 1 });
    const fleet = c.machine_ids.length;
    assert.ok(fleet >= 20, `fraction 1 takes the whole fleet (${fleet})`);
    const d = await postOk({ kind: 'host_offline', after: 10_000, fraction: 0.5, seed: 7 });
    assert.equal(d.machine_ids.length, Math.round(fleet / 2));
    assert.deepEqual(d.machine_ids, drawMachines(c.machine_ids, Math.round(fleet / 2), 7));
    const e = await postOk({ kind: 'outbid_wave', after: 10_000 });
    assert.equal(e.machine_ids.length, 1, 'default: one machine');
    assert.equal(typeof e.seed, 'number');
    await app().request('DELETE', '/_emu/events');
  });

  test('a fresh emulator with the same seed draws the same machines for the same events', async () => {
    const draw = async (t: TestApp) => {
      const res = await t.request('POST', '/_emu/events', { body: { kind: 'host_offline', after: 60, machines: 4 } });
      assert.equal(res.status, 200, res.raw);
      return res.body.event.machine_ids as number[];
    };
    const one = await createTestApp(dialect);
    const two = await createTestApp(dialect);
    try {
      assert.deepEqual(await draw(one), await draw(two));
    } finally {
      await one.close();
      await two.close();
    }
  });

  test('bad input is 400 naming the field; unknown ids 404; a non-admin 403', async () => {
    const m = await addMachine(app(), { num_gpus: 1 });
    const bad = async (body: Record<string, unknown>, field: RegExp) => {
      const res = await post(body);
      assert.equal(res.status, 400, `${JSON.stringify(body)}: ${res.raw}`);
      assert.equal(res.body.success, false);
      assert.match(res.body.msg, field, res.raw);
    };
    await bad({ kind: 'meteor' }, /kind/);
    await bad({ kind: 'outbid_wave', at: app().clock.now() + 5, after: 5 }, /after/);
    await bad({ kind: 'outbid_wave', at: app().clock.now() - 5 }, /body\.at/);
    await bad({ kind: 'outbid_wave', after: -1 }, /after/);
    await bad({ kind: 'outbid_wave', fraction: 1.5 }, /fraction/);
    await bad({ kind: 'outbid_wave', machine_ids: [m.machine_id], machines: 2 }, /machines/);
    await bad({ kind: 'outbid_wave', pull_seconds: 10 }, /pull_seconds/);
    await bad({ kind: 'host_offline', gpu_index: 0 }, /gpu_index/);
    await bad({ kind: 'slow_pull', fault: 'offline' }, /fault/);
    await bad({ kind: 'gpu_lost', machine_ids: [m.machine_id], gpu_index: 3 }, /gpu_index/);
    await bad({ kind: 'host_offline', duration: 0 }, /duration/);
    await bad({ kind: 'host_offline', colour: 'red' }, /colour/);
    await bad({ kind: 'host_offline', machine_ids: [m.machine_id, m.machine_id] }, /machine_ids/);
    const missing = await post({ kind: 'host_offline', machine_ids: [987654] });
    assert.equal(missing.status, 404, missing.raw);
    assert.match(missing.body.msg, /machine 987654/);
    assert.equal((await app().request('DELETE', '/_emu/events/987654')).status, 404);
    assert.equal((await app().request('DELETE', '/_emu/events/abc')).status, 400);
    const { api_key } = await app().createUser();
    assert.equal((await post({ kind: 'outbid_wave' }, api_key)).status, 403);
    assert.equal((await app().request('GET', '/_emu/events', { key: api_key })).status, 403);
  });
});
