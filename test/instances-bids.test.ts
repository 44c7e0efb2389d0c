// Bids (interruptible instances): outbid by a higher bid or an on-demand rental, resume when the GPUs are free,
// change bid (spec: "A bid instance can be stopped when another bidder outbids it"; contract §6).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect } from './helpers/harness.js';
import { addMachine, BOOT_MAX_S, offerFor, rent, rentOk, statusOf } from './instances-fixtures.js';

forEachDialect('instances: bids', (app) => {
  const put = (id: number, body: unknown) => app().request('PUT', `/api/v0/instances/${id}/`, { body });
  const bid = (id: number, price: number) => app().request('PUT', `/api/v0/instances/bid_price/${id}/`, { body: { price } });

  test('an on-demand rental outbids a bid: stopped, intended running, status_msg says outbid; it resumes when freed', async () => {
    const m = await addMachine(app(), { num_gpus: 1, min_bid: 0.2 });
    const low = await rentOk(app(), offerFor(m, 1), { price: 0.25 });
    await app().advance(BOOT_MAX_S);
    assert.equal((await statusOf(app(), low.id)).actual_status, 'running');
    const od = await rentOk(app(), offerFor(m, 1));
    let inst = await statusOf(app(), low.id);
    assert.equal(inst.actual_status, 'stopped');
    assert.equal(inst.intended_status, 'running');
    assert.match(inst.status_msg, /outbid/);
    assert.equal(inst.ssh_host, null);
    await app().advance(BOOT_MAX_S);
    assert.equal((await statusOf(app(), od.id)).actual_status, 'running');
    assert.equal((await statusOf(app(), low.id)).actual_status, 'stopped', 'stays stopped while the GPUs are taken');
    await put(od.id, { state: 'stopped' });
    inst = await statusOf(app(), low.id);
    assert.equal(inst.actual_status, null, 'resumes (boots again) when the GPUs are free');
    await app().advance(BOOT_MAX_S);
    inst = await statusOf(app(), low.id);
    assert.equal(inst.actual_status, 'running');
    assert.equal(inst.status_msg, null);
  });

  test('a higher bid outbids a lower one; an equal or lower bid on a held offer is refused', async () => {
    const m = await addMachine(app(), { num_gpus: 1, min_bid: 0.2 });
    const a = await rentOk(app(), offerFor(m, 1), { price: 0.3 });
    const same = await rent(app(), offerFor(m, 1), { price: 0.3 });
    assert.ok([400, 410].includes(same.status), same.raw);
    assert.equal((await statusOf(app(), a.id)).intended_status, 'running');
    assert.notEqual((await statusOf(app(), a.id)).actual_status, 'stopped');
    const b = await rentOk(app(), offerFor(m, 1), { price: 0.5 });
    const ia = await statusOf(app(), a.id);
    assert.equal(ia.actual_status, 'stopped');
    assert.match(ia.status_msg, /outbid/);
    assert.equal((await statusOf(app(), b.id)).intended_status, 'running');
    // Destroying the winner frees the GPUs: the outbid one comes back.
    await app().request('DELETE', `/api/v0/instances/${b.id}/`);
    await app().advance(BOOT_MAX_S);
    assert.equal((await statusOf(app(), a.id)).actual_status, 'running');
  });

  test('an on-demand instance is never outbid', async () => {
    const m = await addMachine(app(), { num_gpus: 1 });
    const od = await rentOk(app(), offerFor(m, 1));
    const res = await rent(app(), offerFor(m, 1), { price: 100 });
    assert.equal(res.status, 410, res.raw);
    assert.equal((await statusOf(app(), od.id)).intended_status, 'running');
  });

  test('change bid: raising an outbid instance\'s bid above the winner takes the GPUs back', async () => {
    const m = await addMachine(app(), { num_gpus: 1, min_bid: 0.2 });
    const a = await rentOk(app(), offerFor(m, 1), { price: 0.3 });
    const b = await rentOk(app(), offerFor(m, 1), { price: 0.4 });
    assert.equal((await statusOf(app(), a.id)).actual_status, 'stopped');
    const res = await bid(a.id, 0.6);
    assert.equal(res.status, 200, res.raw);
    const ia = await statusOf(app(), a.id);
    assert.equal(ia.bid_price, 0.6);
    assert.equal(ia.actual_status, null, 'booting again');
    const ib = await statusOf(app(), b.id);
    assert.equal(ib.actual_status, 'stopped');
    assert.match(ib.status_msg, /outbid/);
  });

  test('change bid: below min_bid is 400; on an on-demand instance 400; someone else\'s 404', async () => {
    const m = await addMachine(app(), { num_gpus: 2, min_bid: 0.2 });
    const a = await rentOk(app(), offerFor(m, 1), { price: 0.3 });
    assert.equal((await bid(a.id, 0.1)).status, 400);
    const od = await rentOk(app(), offerFor(m, 1));
    assert.equal((await bid(od.id, 1)).status, 400);
    const { api_key } = await app().createUser();
    const other = await app().request('PUT', `/api/v0/instances/bid_price/${a.id}/`, { key: api_key, body: { price: 1 } });
    assert.equal(other.status, 404);
  });
});
