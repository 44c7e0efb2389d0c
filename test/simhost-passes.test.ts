// A simulated agents' step over several machines is done set-based (src/emulator/simulated-hosts/simhost-agent.ts `passes`): the
// instances of every machine in the step move together (one UPDATE, one event INSERT) and the compute billing of
// all that reached running starts together (billing `startMeters`). Each instance must still get exactly what it got
// one at a time: its own events, its own meter from the second it ran, its user's running totals and credit check,
// and a user out of credit is stopped at the second their credit ends while the others run on.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect, type TestApp } from './helpers/harness.js';
import { addMachine, BOOT_MAX_S, offerFor, rentOk, statusOf } from './instances-fixtures.js';
import { PROVISION_DELAY_S } from '../src/instances/instances-lifecycle.js';
import { cumulativeMicro } from '../src/billing/billing-accrual.js';

const micro = (dollars: number) => Math.round(dollars * 1e6);
const IMAGE = 'simhost/passes:1';
/** $3.60 an hour: a micro-dollar a millisecond, 1,000 a second. */
const GPU_RATE = 3_600_000;

async function events(app: TestApp, id: number) {
  const rows = await app.store.db.selectFrom('instance_events').select(['actual_status', 'status_msg', 'at']).where('instance_id', '=', id).orderBy('id').execute();
  return rows.map((r) => [r.actual_status, r.status_msg, Number(r.at)]);
}

async function gpuMeter(app: TestApp, id: number) {
  return app.store.db.selectFrom('billing_meters as m').innerJoin('billing_contracts as c', 'c.id', 'm.contract_id')
    .select(['m.user_id', 'm.rate_micro_per_hour', 'm.seg_start', 'm.running', 'c.description', 'c.metadata', 'c.live', 'c.end_at'])
    .where('c.source', '=', `instance-${id}`).where('m.kind', '=', 'gpu').executeTakeFirst();
}

forEachDialect('simulated hosts: a step over several machines at once', (app) => {
  test('instances of several users on two machines reach running in one step: each its events, meter and charges; the one out of credit stops at its second', async () => {
    const a = await app().createUser({ credit: 100 });
    const b = await app().createUser({ credit: 100 });
    const c = await app().createUser({ credit: 0.01 });
    const m1 = await addMachine(app(), { num_gpus: 4, price_gpu: 3.6, price_disk: 0 });
    const m2 = await addMachine(app(), { num_gpus: 3, price_gpu: 3.6, price_disk: 0 });
    // The image on both machines first: then the new instances run at the provisioning delay, all in one step.
    for (const m of [m1, m2]) await rentOk(app(), offerFor(m, 1), { image: IMAGE });
    await app().advance(BOOT_MAX_S);
    const t1 = app().clock.now();
    const rented = [
      { user: a, m: m1, label: 'a1' }, { user: a, m: m1, label: 'a2' }, { user: c, m: m1, label: 'c1' },
      { user: b, m: m2, label: 'b1' }, { user: a, m: m2, label: 'a3' },
    ];
    const ids: number[] = [];
    for (const r of rented) ids.push((await rentOk(app(), offerFor(r.m, 1), { image: IMAGE, label: r.label, disk: 10 }, r.user.api_key)).id);
    await app().advance(PROVISION_DELAY_S);
    const ran = t1 + PROVISION_DELAY_S;
    for (const [i, id] of ids.entries()) {
      const s = await statusOf(app(), id, rented[i].user.api_key);
      assert.equal(s.actual_status, 'running', `instance ${rented[i].label}`);
      assert.deepEqual(await events(app(), id), [[null, null, t1], ['running', null, ran]], `events of ${rented[i].label}`);
      const meter = await gpuMeter(app(), id);
      assert.ok(meter, `a compute meter for ${rented[i].label}`);
      assert.deepEqual(
        [meter.user_id, Number(meter.rate_micro_per_hour), Number(meter.seg_start), Number(meter.running), Number(meter.live), Number(meter.end_at)],
        [rented[i].user.user.id, GPU_RATE, ran, 1, 2, ran],
        `meter of ${rented[i].label}`,
      );
      assert.match(meter.description, new RegExp(` x1 instance ${id}$`));
      assert.equal(JSON.parse(meter.metadata).label, rented[i].label);
    }
    // Each user's running totals are their own meters' (the disk is free here).
    for (const [user, n] of [[a, 3], [b, 1], [c, 1]] as const) {
      const rates = await app().services.billing.store.ratesOf(user.user.id);
      assert.equal(Number(rates?.rate_micro_per_hour), n * GPU_RATE, `running rate of ${user.user.email}`);
    }

    // A cent at $3.60 an hour is 10 seconds of compute: user c's instance stops then; the others run on.
    await app().advance(60);
    const cs = await statusOf(app(), ids[2], c.api_key);
    // The running container is told why and when it stops (issue 33: the notice before a stop).
    const notice = `stopped: credit exhausted; stopping at ${new Date(Math.floor(ran + 10) * 1000).toISOString().replace('.000Z', 'Z')}: SIGTERM now, SIGKILL after 30 s`;
    assert.deepEqual([cs.actual_status, cs.status_msg], ['stopped', notice]);
    assert.deepEqual((await events(app(), ids[2])).at(-1), ['stopped', notice, ran + 10]);
    for (const i of [0, 1, 3, 4]) assert.equal((await statusOf(app(), ids[i], rented[i].user.api_key)).actual_status, 'running');
    const now = Math.floor(app().clock.now());
    const credit = async (key: string) => micro((await app().request('GET', '/api/v0/users/current', { key })).body.credit);
    assert.equal(await credit(a.api_key), 100_000_000 - 3 * cumulativeMicro(GPU_RATE, now - ran));
    assert.equal(await credit(b.api_key), 100_000_000 - cumulativeMicro(GPU_RATE, now - ran));
    assert.equal(await credit(c.api_key), 10_000 - cumulativeMicro(GPU_RATE, 10));
  });
});
