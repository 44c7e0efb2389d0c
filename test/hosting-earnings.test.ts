// `show earnings` (GET /users/me/machine-earnings): what renters paid for instances and volumes on the host's machines, from the
// billing ledger, less the service fee of the configuration (GPUPLANE_HOST_SERVICE_FEE); days since the epoch.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect, type TestApp } from './helpers/harness.js';
import { offerFor, rentOk, untilRunning } from './instances-fixtures.js';
import { hostMachine, newHost } from './hosting-fixtures.js';
import { cumulativeMicro } from '../src/billing/billing-accrual.js';
import { HOURS_PER_MONTH } from '../src/platform/money.js';
import { OFFER_ID_STRIDE } from '../src/machines/machines-offers-contract.js';

const FEE = 0.25;

const earnings = (app: TestApp, key: string, q: string) => app.request('GET', `/api/v0/users/me/machine-earnings?owner=me&${q}`, { key });

forEachDialect('host earnings', (app) => {
  test('what renters paid for the host\'s machines, per machine and per day, less the service fee', async () => {
    const host = await newHost(app());
    const other = await newHost(app());
    const renter = await newHost(app(), 100);
    const m = await hostMachine(app(), host.id, { num_gpus: 2, price_gpu: 0.5, price_disk: 0.1 });
    const idle = await hostMachine(app(), host.id, { num_gpus: 1 });
    const created = Math.floor(app().clock.now());
    const { id } = await rentOk(app(), offerFor(m, 2), { disk: 10 }, renter.key);
    const ran = await untilRunning(app(), id, renter.key);
    await app().advance(3600);
    const destroyed = Math.floor(app().clock.now());
    assert.equal((await app().request('DELETE', `/api/v0/instances/${id}/`, { key: renter.key })).status, 200);

    const gpu = cumulativeMicro(2 * 500_000, destroyed - ran);
    const disk = cumulativeMicro(Math.round((100_000 * 10) / HOURS_PER_MONTH), destroyed - created);
    const gross = gpu + disk;
    const fee = Math.round(gross * FEE);
    const money = { gpu_earn: gpu / 1e6, sto_earn: disk / 1e6, bw_earn: 0, gross: gross / 1e6, fee: fee / 1e6, earn: (gross - fee) / 1e6 };
    const today = Math.floor(app().clock.now() / 86_400);
    // The client's default: sday == eday, the same instant (float days), which is that one day.
    const day = (app().clock.now() / 86_400).toFixed(1);
    const res = await earnings(app(), host.key, `sday=${day}&eday=${day}&machid=null`);
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.success, true);
    assert.equal(res.body.service_fee, FEE);
    assert.equal(res.body.sday, today);
    assert.equal(res.body.eday, today);
    assert.deepEqual(res.body.summary, money);
    assert.deepEqual(res.body.per_machine, [{ machine_id: m.machine_id, ...money }]);
    assert.deepEqual(res.body.per_day, [{ day: today, ...money }]);

    const one = await earnings(app(), host.key, `sday=${today - 3}.0&eday=${today}.0&machid=${m.machine_id}`);
    assert.deepEqual(one.body.summary, money);
    const idleOnly = await earnings(app(), host.key, `sday=${today}.0&eday=${today}.0&machid=${idle.machine_id}`);
    assert.deepEqual(idleOnly.body.per_machine, []);
    assert.equal(idleOnly.body.summary.gross, 0);
    const before = await earnings(app(), host.key, `sday=${today - 3}.0&eday=${today - 1}.0&machid=null`);
    assert.equal(before.body.summary.gross, 0, 'days before the rental earned nothing');

    // Another host earns nothing from these machines and cannot name one of them.
    assert.equal((await earnings(app(), other.key, `sday=${today}.0&eday=${today}.0&machid=null`)).body.summary.gross, 0);
    const foreign = await earnings(app(), other.key, `sday=${today}.0&eday=${today}.0&machid=${m.machine_id}`);
    assert.equal(foreign.status, 404);
    assert.equal(foreign.body.error, 'not_found');

    for (const q of [`sday=${today}.0&eday=${today - 1}.0`, 'sday=yesterday', 'sday=[1]', 'machid=abc', 'sday=-5']) {
      const bad = await earnings(app(), host.key, q);
      assert.equal(bad.status, 400, `${q}: ${bad.raw}`);
      assert.equal(bad.body.error, 'bad_request');
    }
  });

  test("a renter's volume on the host's machine is storage the host earns", async () => {
    const host = await newHost(app());
    const renter = await newHost(app(), 100);
    const m = await hostMachine(app(), host.id, { num_gpus: 1, price_disk: 0.73 });
    const start = Math.floor(app().clock.now());
    const made = await app().request('PUT', '/api/v0/volumes/', { key: renter.key, body: { id: m.machine_id * OFFER_ID_STRIDE, size: 500 } });
    assert.equal(made.status, 200, made.raw);
    await app().advance(1000);
    const end = Math.floor(app().clock.now());
    assert.equal((await app().request('DELETE', `/api/v0/volumes/?id=${made.body.volume_id}`, { key: renter.key })).status, 200);
    // 0.73 $/GB/month × 500 GB / 730 h = 0.5 $/h.
    const sto = cumulativeMicro(Math.round((730_000 * 500) / HOURS_PER_MONTH), end - start);
    const fee = Math.round(sto * FEE);
    const today = Math.floor(end / 86_400);
    const res = await earnings(app(), host.key, `sday=${today}.0&eday=${today}.0&machid=null`);
    assert.equal(res.status, 200, res.raw);
    const money = { gpu_earn: 0, sto_earn: sto / 1e6, bw_earn: 0, gross: sto / 1e6, fee: fee / 1e6, earn: (sto - fee) / 1e6 };
    assert.deepEqual(res.body.summary, money);
    assert.deepEqual(res.body.per_machine, [{ machine_id: m.machine_id, ...money }]);
  });
}, { config: { GPUPLANE_HOST_SERVICE_FEE: String(FEE) } });
