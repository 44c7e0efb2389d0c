// Prepaid instances (docs/spec/client-compat-more.md §c: `prepay instance`, `show deposit`): credit moves into the instance's
// deposit, its charges draw from it first at the policy's discount (deposits-policy.ts), the credit pays again once it
// is spent, destroying the instance refunds the rest; every amount to the micro-dollar, on both databases.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect } from './helpers/harness.js';
import { balance, deposit, disc, instanceCharges, micro, prepay } from './deposits-fixtures.js';
import { addMachine, offerFor, rentOk, statusOf, untilRunning } from './instances-fixtures.js';
import { cumulativeMicro } from '../src/billing/billing-accrual.js';
import { HOURS_PER_MONTH } from '../src/platform/money.js';
import { exhaustionSecond } from '../src/billing/billing-deposits.js';

forEachDialect('prepaid instances', (app) => {
  test('a prepay moves credit into the deposit; its charges draw from it at the discount; destroy refunds the rest', async () => {
    const { api_key: key } = await app().createUser({ credit: 1000 });
    const m = await addMachine(app(), { num_gpus: 1, price_gpu: 0.5, price_disk: 0.1 });
    const created = Math.floor(app().clock.now());
    const { id } = await rentOk(app(), offerFor(m, 1), { disk: 10 }, key);
    const run = await untilRunning(app(), id, key);
    await app().advance(100);
    const paidAt = Math.floor(app().clock.now());
    const gpuRate = 500_000;
    const diskRate = Math.round((100_000 * 10) / HOURS_PER_MONTH); // 1370
    const list = gpuRate + diskRate;
    // $400 is more than a month at the list rates ($366.0001): 20 %, under the machine's default cap of 40 %.
    assert.ok(400e6 >= list * HOURS_PER_MONTH && 400e6 < 3 * list * HOURS_PER_MONTH);
    const res = await prepay(app(), id, 400, key);
    assert.equal(res.status, 200, res.raw);
    const months = 400e6 / (disc(list, 200_000) * HOURS_PER_MONTH);
    assert.deepEqual(
      { ...res.body, msg: typeof res.body.msg },
      { success: true, timescale: Math.round(months * 1e6) / 1e6, discount_rate: 0.2, deposit: 400, msg: 'string' },
    );
    const before = { gpu: cumulativeMicro(gpuRate, paidAt - run), disk: cumulativeMicro(diskRate, paidAt - created) };
    assert.equal(await balance(app(), key), 1000e6 - before.gpu - before.disk - 400e6);

    await app().advance(1000);
    // The deposit pays, at 80 % of each rate: the credit does not move.
    const drawn = cumulativeMicro(disc(gpuRate, 200_000), 1000) + cumulativeMicro(disc(diskRate, 200_000), 1000);
    assert.equal(await balance(app(), key), 1000e6 - before.gpu - before.disk - 400e6);
    const shown = await deposit(app(), id, key);
    assert.equal(shown.status, 200, shown.raw);
    assert.deepEqual(shown.body, {
      success: true, instance_id: id, deposit: (400e6 - drawn) / 1e6, prepaid: 400, used: drawn / 1e6, refunded: 0, discount_rate: 0.2,
      timescale: Math.round(((400e6 - drawn) / (disc(list, 200_000) * HOURS_PER_MONTH)) * 1e6) / 1e6,
      dph_list: list / 1e6, dph_discounted: disc(list, 200_000) / 1e6,
    });
    assert.deepEqual(await instanceCharges(app(), key, id), {
      gpu: before.gpu + cumulativeMicro(disc(gpuRate, 200_000), 1000),
      disk: before.disk + cumulativeMicro(disc(diskRate, 200_000), 1000),
    });

    // Stopped, its disk still draws from the deposit; destroyed, the rest goes back to the credit.
    assert.equal((await app().request('PUT', `/api/v0/instances/${id}/`, { key, body: { state: 'stopped' } })).status, 200);
    await app().advance(500);
    const drawn2 = drawn + cumulativeMicro(disc(diskRate, 200_000), 1500) - cumulativeMicro(disc(diskRate, 200_000), 1000);
    assert.equal((await deposit(app(), id, key)).body.deposit, (400e6 - drawn2) / 1e6);
    assert.equal((await app().request('DELETE', `/api/v0/instances/${id}/`, { key })).status, 200);
    assert.equal(await balance(app(), key), 1000e6 - before.gpu - before.disk - drawn2);
    await app().advance(3600);
    assert.equal(await balance(app(), key), 1000e6 - before.gpu - before.disk - drawn2);

    const inv = await app().request('GET', '/api/v0/users/me/invoices', { key, query: { owner: 'me', sdate: '0', edate: String(app().clock.now()), inc_charges: 'false' } });
    assert.equal(inv.status, 200, inv.raw);
    // After the credit the account was made with: the prepay and the refund.
    assert.deepEqual(inv.body.invoices.slice(1).map((r: any) => micro(r.amount)), [-400e6, 400e6 - drawn2]);
    const audit = await app().request('GET', '/api/v0/audit_logs/', { key });
    assert.ok(audit.body.some((e: any) => e.api_route === 'PUT /api/v0/instances/prepay/:id/'), JSON.stringify(audit.body));
  });

  test('a spent deposit hands the meters back to the credit at list rates, at the exact second', async () => {
    const { api_key: key } = await app().createUser({ credit: 50 });
    // $3.60/hour with no disk price: a micro-dollar a millisecond, 1000 a second.
    const m = await addMachine(app(), { num_gpus: 1, price_gpu: 3.6, price_disk: 0 });
    const { id } = await rentOk(app(), offerFor(m, 1), { disk: 10 }, key);
    const run = await untilRunning(app(), id, key);
    await app().advance(10);
    const paidAt = Math.floor(app().clock.now());
    // Under a month: no discount. $0.1 pays 100 seconds.
    const res = await prepay(app(), id, 0.1, key);
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.discount_rate, 0);
    await app().advance(250.5);
    const now = Math.floor(app().clock.now());
    const gpu = cumulativeMicro(3_600_000, now - run);
    assert.deepEqual(await instanceCharges(app(), key, id), { gpu, disk: 0 });
    // Before the prepay and after the deposit ran out, the credit paid; the deposit paid the 100 seconds between.
    assert.equal(await balance(app(), key), 50e6 - cumulativeMicro(3_600_000, paidAt - run) - 100_000 - cumulativeMicro(3_600_000, now - paidAt - 100));
    const shown = (await deposit(app(), id, key)).body;
    assert.deepEqual([shown.deposit, shown.used, shown.discount_rate], [0, 0.1, 0]);
    // Nothing is left to refund.
    const credit = await balance(app(), key);
    assert.equal((await app().request('DELETE', `/api/v0/instances/${id}/`, { key })).status, 200);
    assert.equal(await balance(app(), key), credit);
  });

  test('two prepays at once never overdraw: the balance covers one, the other is 402', async () => {
    const { api_key: key } = await app().createUser({ credit: 10 });
    const m = await addMachine(app(), { num_gpus: 2, price_gpu: 0.5, price_disk: 0 });
    const a = await rentOk(app(), offerFor(m, 1), { disk: 10 }, key);
    const b = await rentOk(app(), offerFor(await addMachine(app(), { num_gpus: 1, price_gpu: 0.5, price_disk: 0 }), 1), { disk: 10 }, key);
    const replies = await Promise.all([prepay(app(), a.id, 6, key), prepay(app(), b.id, 6, key), prepay(app(), a.id, 6, key)]);
    assert.deepEqual(replies.map((r) => r.status).sort(), [200, 402, 402], replies.map((r) => r.raw).join('\n'));
    for (const r of replies.filter((x) => x.status === 402)) assert.equal(r.body.error, 'insufficient_credit');
    const left = await balance(app(), key);
    assert.ok(left >= 0 && left <= 4e6, String(left));
    const deposits = [(await deposit(app(), a.id, key)).body.prepaid, (await deposit(app(), b.id, key)).body.prepaid];
    assert.deepEqual(deposits.sort(), [0, 6]);
  });

  test('credit running out stops what the credit pays; an instance its deposit pays keeps running until it is spent', async () => {
    const { api_key: key } = await app().createUser({ credit: 1 });
    const m = await addMachine(app(), { num_gpus: 2, price_gpu: 3.6, price_disk: 0 });
    const covered = await rentOk(app(), offerFor(m, 1), { disk: 10 }, key);
    const other = await rentOk(app(), offerFor(m, 1), { disk: 10 }, key);
    await untilRunning(app(), covered.id, key);
    await untilRunning(app(), other.id, key);
    // Nearly all the credit into the deposit (0.6 = 600 seconds of `covered`); `other` burns the rest.
    assert.equal((await prepay(app(), covered.id, 0.6, key)).status, 200);
    await app().advance(400);
    assert.equal((await statusOf(app(), other.id, key)).actual_status, 'stopped');
    assert.equal((await statusOf(app(), covered.id, key)).actual_status, 'running');
    // Stopped and started again with no credit: the deposit lets it start.
    assert.ok((await balance(app(), key)) <= 0);
    assert.equal((await app().request('PUT', `/api/v0/instances/${covered.id}/`, { key, body: { state: 'stopped' } })).status, 200);
    assert.equal((await app().request('PUT', `/api/v0/instances/${covered.id}/`, { key, body: { state: 'running' } })).status, 200);
    assert.equal((await app().request('PUT', `/api/v0/instances/${other.id}/`, { key, body: { state: 'running' } })).body.error, 'insufficient_credit');
    await untilRunning(app(), covered.id, key);
    // Once the deposit is spent, the credit (none left) pays: compute stops.
    await app().advance(700);
    const inst = await statusOf(app(), covered.id, key);
    assert.equal(inst.actual_status, 'stopped');
    // A running container is told why and when (issue 33: the notice before a stop).
    assert.match(inst.status_msg, /^stopped: credit exhausted; stopping at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ: SIGTERM now, SIGKILL after 30 s$/);
    assert.equal((await deposit(app(), covered.id, key)).body.deposit, 0);
  });

  test('refused: bad amounts (400), someone else\'s instance (404), a bid instance (400), a destroyed one (404), an instance key (403)', async () => {
    const { api_key: key } = await app().createUser({ credit: 100 });
    const { api_key: otherKey } = await app().createUser({ credit: 100 });
    const m = await addMachine(app(), { num_gpus: 2 });
    const { id, instanceKey } = await rentOk(app(), offerFor(m, 1), {}, key);
    for (const amount of [0, -1, 'abc', null, 1e7, 1e-9]) {
      const r = await prepay(app(), id, amount, key);
      assert.equal(r.status, 400, `${amount}: ${r.raw}`);
      assert.equal(r.body.error, 'bad_request');
      assert.match(r.body.msg, /amount/);
    }
    const missing = await app().request('PUT', `/api/v0/instances/prepay/${id}/`, { key, body: {} });
    assert.equal(missing.status, 400);
    assert.equal((await prepay(app(), id, 1000, key)).status, 402);
    for (const r of [await prepay(app(), id, 1, otherKey), await deposit(app(), id, otherKey), await prepay(app(), 999_999, 1, key)]) {
      assert.equal(r.status, 404, r.raw);
      assert.equal(r.body.error, 'not_found');
    }
    const byInstanceKey = await prepay(app(), id, 1, instanceKey);
    assert.equal(byInstanceKey.status, 403);
    assert.equal(byInstanceKey.body.error, 'permission_denied');
    const bid = await rentOk(app(), offerFor(m, 1), { price: 0.3 }, key);
    const refused = await prepay(app(), bid.id, 1, key);
    assert.equal(refused.status, 400);
    assert.match(refused.body.msg, /interruptible/);
    assert.equal((await app().request('DELETE', `/api/v0/instances/${id}/`, { key })).status, 200);
    assert.equal((await prepay(app(), id, 1, key)).status, 404);
    assert.equal(await balance(app(), key) > 99e6, true);
  });

  test('without a prepay the deposit is empty; a top-up re-rates the whole deposit, capped by the machine\'s credit_discount_max', async () => {
    const { api_key: key } = await app().createUser({ credit: 5000 });
    const m = await addMachine(app(), { num_gpus: 1, price_gpu: 1, price_disk: 0 });
    // The owner (an admin) lists it with a 25 % cap.
    const listed = await app().request('PUT', '/api/v0/machines/create_asks/', {
      body: { machine: m.machine_id, price_gpu: 1, price_disk: null, price_inetu: null, price_inetd: null, price_min_bid: null, min_chunk: 1, end_date: null, credit_discount_max: 0.25, duration: null, vol_size: null, vol_price: null },
    });
    assert.equal(listed.status, 200, listed.raw);
    const { id } = await rentOk(app(), offerFor(m, 1), { disk: 10 }, key);
    const empty = (await deposit(app(), id, key)).body;
    assert.deepEqual([empty.deposit, empty.prepaid, empty.discount_rate, empty.timescale, empty.dph_list], [0, 0, 0, 0, 1]);
    // $1/hour: a month is $730. $730 → 20 %; topped up to $2190 (3 months) → 30 %, capped at 25 %.
    assert.equal((await prepay(app(), id, 730, key)).body.discount_rate, 0.2);
    const top = await prepay(app(), id, 1460, key);
    assert.equal(top.status, 200, top.raw);
    assert.equal(top.body.discount_rate, 0.25);
    assert.equal(top.body.deposit, 2190);
    assert.equal(top.body.timescale, Math.round((2190e6 / (750_000 * HOURS_PER_MONTH)) * 1e6) / 1e6);
  });
});

forEachDialect('prepaid team instances', (app) => {
  test('a team instance is prepaid from the credit of the member who pays it; another member gets 403', async () => {
    const owner = await app().createUser({ credit: 100 });
    const made = await app().request('POST', '/api/v0/team/', { key: owner.api_key, body: { team_name: 'prepay-team' } });
    assert.equal(made.status, 200, made.raw);
    const teamKey = async (apiKey: string) =>
      (await app().request('POST', '/api/v0/auth/apikeys/', { key: apiKey, body: { team_id: made.body.id } })).body.key as string;
    const other = await app().createUser({ credit: 100 });
    const inv = await app().request('POST', `/api/v0/team/invite/?email=${encodeURIComponent(other.user.email)}&role=member`, { key: owner.api_key });
    assert.equal(inv.status, 200, inv.raw);
    const code = (await app().request('GET', `/_emu/outbox?to=${encodeURIComponent(other.user.email)}`)).body.messages.at(-1).code;
    assert.equal((await app().request('POST', '/api/v0/team/invitations/accept/', { key: other.api_key, body: { code } })).status, 200);
    const ownerTeam = await teamKey(owner.api_key);
    const otherTeam = await teamKey(other.api_key);
    const { id } = await rentOk(app(), offerFor(await addMachine(app(), { num_gpus: 1 }), 1), {}, ownerTeam);
    const refused = await prepay(app(), id, 1, otherTeam);
    assert.equal(refused.status, 403, refused.raw);
    assert.equal(refused.body.error, 'permission_denied');
    const before = await balance(app(), owner.api_key);
    assert.equal((await prepay(app(), id, 1, ownerTeam)).status, 200);
    assert.equal(await balance(app(), owner.api_key), before - 1e6);
    assert.equal((await deposit(app(), id, otherTeam)).body.prepaid, 1, 'the team sees the deposit');
  });
});

test('exhaustionSecond: the first whole second at which the meters\' floored charges reach the deposit', () => {
  const meter = (rate: number, seg: number, charged = 0, settled = seg) =>
    ({ id: 1, contract_id: 1, kind: 'gpu', user_id: 1, rate_micro_per_hour: rate, seg_start: seg, settled_until: settled, seg_charged_micro: charged, running: 1, funded: 1, list_rate_micro_per_hour: rate });
  // One meter: 1000 micro/h; 10 micro take until floor(1000 t / 3600) ≥ 10, t = 36.
  assert.equal(exhaustionSecond([meter(1000, 0)], 10, 0), 36);
  // Two meters whose floors lose a micro-dollar each: found exactly, by search.
  const ms = [meter(1000, 0), meter(1000, 5)];
  const t = exhaustionSecond(ms, 10, 0)!;
  const sum = (s: number) => Math.floor((1000 * s) / 3600) + Math.floor((1000 * (s - 5)) / 3600);
  assert.ok(sum(t) >= 10 && sum(t - 1) < 10, `t=${t}`);
  assert.equal(exhaustionSecond([], 10, 0), null);
  assert.equal(exhaustionSecond([meter(1000, 0)], 0, 7), 7);
});
