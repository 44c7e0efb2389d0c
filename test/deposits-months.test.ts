// A discounted deposit runs out after its months (docs/spec/client-compat-more.md §c `prepay instance`): 38 days of
// service time on the virtual clock, every billing settle run between, on both databases. Its own file: on
// PostgreSQL this one test takes most of a minute.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect } from './helpers/harness.js';
import { addMachine, offerFor, rentOk, statusOf, untilRunning } from './instances-fixtures.js';
import { cumulativeMicro } from '../src/billing/billing-accrual.js';
import { balance, instanceCharges, prepay } from './deposits-fixtures.js';

forEachDialect('prepaid instances over months', (app) => {
  test('a discounted deposit runs out after its months and the list rates return', async () => {
    const { api_key: key } = await app().createUser({ credit: 10 });
    // $0.001/GPU/hour, no disk: a month at list rates is $0.73.
    const m = await addMachine(app(), { num_gpus: 1, price_gpu: 0.001, price_disk: 0 });
    const { id } = await rentOk(app(), offerFor(m, 1), { disk: 10 }, key);
    const run = await untilRunning(app(), id, key);
    await app().advance(1);
    const paidAt = Math.floor(app().clock.now());
    const res = await prepay(app(), id, 0.73, key);
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.discount_rate, 0.2);
    // 800 micro-dollars an hour: 730,000 last until the first second at which floor(800 × s / 3600) reaches them.
    const spentAt = paidAt + Math.ceil((730_000 * 3600) / 800);
    await app().advance(spentAt - app().clock.now() + 3600);
    const now = Math.floor(app().clock.now());
    const charged = cumulativeMicro(1000, paidAt - run) + cumulativeMicro(800, spentAt - paidAt) + cumulativeMicro(1000, now - spentAt);
    assert.deepEqual(await instanceCharges(app(), key, id), { gpu: charged, disk: 0 });
    assert.equal(await balance(app(), key), 10e6 - cumulativeMicro(1000, paidAt - run) - 730_000 - cumulativeMicro(1000, now - spentAt));
    assert.equal((await statusOf(app(), id, key)).actual_status, 'running');
  });

});
