// End to end: instances rented through the API are charged per second, GPU while running and disk until destroyed,
// to the micro-dollar; charges show them; credit exhaustion stops compute; no credit is 402 (issue 4 §1-2).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect, type TestApp } from './helpers/harness.js';
import { addMachine, offerFor, rent, rentOk, statusOf, untilRunning } from './instances-fixtures.js';
import { cumulativeMicro } from '../src/billing/billing-accrual.js';
import { HOURS_PER_MONTH } from '../src/instances/instances-lifecycle.js';

const micro = (dollars: number) => Math.round(dollars * 1e6);

async function charges(app: TestApp, key: string) {
  const day = { gte: 0, lte: Math.floor(app.clock.now()) + 86_400 };
  const res = await app.request('GET', '/api/v0/charges/', { key, query: { select_filters: JSON.stringify({ day }) } });
  assert.equal(res.status, 200, res.raw);
  return res.body;
}

forEachDialect('billing of instances', (app) => {
  test('stop, start, destroy: GPU while running, disk until destroyed, to the micro-dollar', async () => {
    const { api_key } = await app().createUser({ credit: 100 });
    const m = await addMachine(app(), { num_gpus: 2, price_gpu: 0.5, price_disk: 0.1 });
    const created = Math.floor(app().clock.now());
    const { id } = await rentOk(app(), offerFor(m, 2), { disk: 10 }, api_key);
    const run1 = await untilRunning(app(), id, api_key);
    await app().advance(1000.5);
    const stop1 = Math.floor(app().clock.now());
    assert.equal((await app().request('PUT', `/api/v0/instances/${id}/`, { key: api_key, body: { state: 'stopped' } })).status, 200);
    await app().advance(700);
    assert.equal((await app().request('PUT', `/api/v0/instances/${id}/`, { key: api_key, body: { state: 'running' } })).status, 200);
    const run2 = await untilRunning(app(), id, api_key);
    await app().advance(1234);
    const destroyed = Math.floor(app().clock.now());
    assert.equal((await app().request('DELETE', `/api/v0/instances/${id}/`, { key: api_key })).status, 200);
    await app().advance(5000);

    const gpuRate = 2 * 500_000;
    const diskRate = Math.round((100_000 * 10) / HOURS_PER_MONTH);
    const gpu = cumulativeMicro(gpuRate, stop1 - run1) + cumulativeMicro(gpuRate, destroyed - run2);
    const disk = cumulativeMicro(diskRate, destroyed - created);
    const body = await charges(app(), api_key);
    assert.equal(body.total, 1);
    const entry = body.results[0];
    assert.equal(entry.source, `instance-${id}`);
    assert.equal(entry.type, 'instance');
    assert.equal(entry.start, created);
    assert.equal(entry.end, destroyed);
    const byKind = Object.fromEntries(entry.items.map((i: any) => [i.type, micro(i.amount)]));
    assert.deepEqual(byKind, { gpu, disk });
    assert.equal(micro(entry.amount), gpu + disk);
    const me = await app().request('GET', '/api/v0/users/current', { key: api_key });
    assert.equal(micro(me.body.credit), 100_000_000 - gpu - disk);
  });

  test('credit running out stops compute at that second; disk keeps accruing; renting without credit is 402', async () => {
    const { user, api_key } = await app().createUser({ credit: 0.01 });
    const m = await addMachine(app(), { num_gpus: 1, price_gpu: 3.6, price_disk: 0 });
    const { id } = await rentOk(app(), offerFor(m, 1), { disk: 10 }, api_key);
    const running = await untilRunning(app(), id, api_key);
    // $0.01 at $3.60/hour: 10 seconds of compute.
    await app().advance(60);
    const inst = await statusOf(app(), id, api_key);
    assert.equal(inst.actual_status, 'stopped');
    const body = await charges(app(), api_key);
    const gpuItem = body.results[0].items.find((i: any) => i.type === 'gpu');
    assert.equal(micro(gpuItem.amount), 10_000);
    assert.equal(gpuItem.end, running + 10);
    const again = await rent(app(), offerFor(await addMachine(app()), 1), {}, api_key);
    assert.equal(again.status, 402);
    assert.equal(again.body.error, 'insufficient_credit');
    const topUp = await app().request('POST', '/_emu/credit', { body: { user_id: user.id, amount: 10 } });
    assert.equal(topUp.status, 200);
    assert.equal((await app().request('PUT', `/api/v0/instances/${id}/`, { key: api_key, body: { state: 'running' } })).status, 200);
  });
});
