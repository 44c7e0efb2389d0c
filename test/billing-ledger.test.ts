// The per-second ledger (issue 4 §1): accrual matches a hand computation to the micro-dollar across stop, start,
// destroy, day boundaries and the bulk settlement; credit falls as charges accrue; zero balance runs the hooks.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect, type TestApp } from './helpers/harness.js';
import { cumulativeMicro, SECONDS_PER_DAY } from '../src/billing/billing-accrual.js';
import { SETTLE_PERIOD_S } from '../src/billing/billing-service.js';
import type { ItemKind, MeterStart } from '../src/billing/billing-contract.js';

let seq = 0;
const contract = () => `instance-${900_000 + seq++}`;

function meter(userId: number, source: string, kind: ItemKind, rate: number, at: number): MeterStart {
  return { contract: source, type: 'instance', kind, userId, teamId: null, rateMicroPerHour: rate, at, description: `test ${source}` };
}

async function tx<T>(app: TestApp, fn: (tx: any) => Promise<T>): Promise<T> {
  return app.store.db.transaction().execute(fn);
}

async function items(app: TestApp, source: string): Promise<Record<string, number>> {
  const rows = await app.store.db
    .selectFrom('billing_charges')
    .innerJoin('billing_contracts', 'billing_contracts.id', 'billing_charges.contract_id')
    .select(['billing_charges.kind', 'billing_charges.amount_micro'])
    .where('billing_contracts.source', '=', source)
    .execute();
  const out: Record<string, number> = {};
  for (const r of rows) out[r.kind] = (out[r.kind] ?? 0) + Number(r.amount_micro);
  return out;
}

async function creditMicro(app: TestApp, userId: number): Promise<number> {
  const row = await app.store.db.selectFrom('users').select('credit_micro').where('id', '=', userId).executeTakeFirstOrThrow();
  return Number(row.credit_micro);
}

forEachDialect('billing ledger', (app) => {
  test('stop, start with a new rate, destroy: gpu and disk match the hand computation to the micro-dollar', async () => {
    const { user } = await app().createUser({ credit: 100 });
    const billing = app().services.billing;
    const src = contract();
    const base = app().clock.now();
    const gpu1 = 1_234_567;
    const gpu2 = 2_000_001;
    const disk = 55_555;
    // Fractions of a second: a second is charged once it has started on the service clock.
    await app().advance(0.4);
    await tx(app(), async (t) => {
      await billing.startMeter(t, meter(user.id, src, 'disk', disk, app().clock.now()));
      await billing.startMeter(t, meter(user.id, src, 'gpu', gpu1, app().clock.now()));
    });
    await app().advance(1000.3);
    await tx(app(), (t) => billing.stopMeter(t, { contract: src, kind: 'gpu', at: app().clock.now() }));
    await app().advance(1000);
    await tx(app(), (t) => billing.startMeter(t, meter(user.id, src, 'gpu', gpu2, app().clock.now())));
    // Crosses several bulk settlements on the way.
    await app().advance(1500);
    await tx(app(), (t) => billing.stopContract(t, { contract: src, at: app().clock.now() }));
    await app().advance(3 * SETTLE_PERIOD_S);

    const start = Math.floor(base + 0.4);
    const stop1 = Math.floor(base + 1000.7);
    const start2 = Math.floor(base + 2000.7);
    const end = Math.floor(base + 3500.7);
    const expectGpu = Math.floor((gpu1 * (stop1 - start)) / 3600) + Math.floor((gpu2 * (end - start2)) / 3600);
    const expectDisk = Math.floor((disk * (end - start)) / 3600);
    assert.deepEqual(await items(app(), src), { gpu: expectGpu, disk: expectDisk });
    assert.equal(await creditMicro(app(), user.id), 100_000_000 - expectGpu - expectDisk);
    assert.equal(await billing.balance(user.id), 100_000_000 - expectGpu - expectDisk);
  });

  test('bulk settlement and live balance agree; a day boundary splits the rows, not the total', async () => {
    const { user } = await app().createUser({ credit: 1000 });
    const billing = app().services.billing;
    const src = contract();
    const rate = 3_333_333;
    const at = Math.floor(app().clock.now());
    await tx(app(), (t) => billing.startMeter(t, meter(user.id, src, 'gpu', rate, at)));
    // Two days and a bit, settled by the periodic job only.
    const seconds = 2 * SECONDS_PER_DAY + 1234;
    await app().advance(seconds);
    const settled = (await items(app(), src)).gpu;
    const live = 1_000_000_000 - (await billing.balance(user.id));
    assert.equal(live, cumulativeMicro(rate, seconds));
    assert.ok(settled <= live && settled >= cumulativeMicro(rate, seconds - SETTLE_PERIOD_S));
    const days = await app().store.db
      .selectFrom('billing_charges')
      .innerJoin('billing_contracts', 'billing_contracts.id', 'billing_charges.contract_id')
      .select(['day', 'amount_micro', 'billing_charges.start_at', 'billing_charges.end_at'])
      .where('source', '=', src)
      .orderBy('day')
      .execute();
    assert.ok(days.length >= 3, 'one row per UTC day');
    for (const d of days) {
      assert.equal(Number(d.day) % SECONDS_PER_DAY, 0);
      assert.ok(Number(d.start_at) >= Number(d.day) && Number(d.end_at) <= Number(d.day) + SECONDS_PER_DAY);
    }
    await tx(app(), (t) => billing.stopContract(t, { contract: src, at: app().clock.now() }));
    assert.equal((await items(app(), src)).gpu, cumulativeMicro(rate, seconds));
  });

  test('usage charges add exactly; a stopped meter stops charging; stopping twice is a no-op', async () => {
    const { user } = await app().createUser({ credit: 50 });
    const billing = app().services.billing;
    const src = contract();
    const now = app().clock.now();
    await tx(app(), async (t) => {
      await billing.startMeter(t, meter(user.id, src, 'disk', 720_000, now));
      await billing.addUsage(t, { ...meter(user.id, src, 'bandwidth', 0, now), amountMicro: 12_345 });
    });
    await app().advance(100);
    await tx(app(), async (t) => {
      await billing.stopMeter(t, { contract: src, kind: 'disk', at: app().clock.now() });
      await billing.stopMeter(t, { contract: src, kind: 'disk', at: app().clock.now() });
    });
    await app().advance(SETTLE_PERIOD_S * 2);
    assert.deepEqual(await items(app(), src), { disk: 20_000, bandwidth: 12_345 });
    assert.equal(await creditMicro(app(), user.id), 50_000_000 - 20_000 - 12_345);
  });

  test('starting without credit is 402 insufficient_credit; the balance reaching zero runs the hooks at that second', async () => {
    const { user } = await app().createUser({ credit: 1 });
    const billing = app().services.billing;
    await assert.rejects(
      async () => {
        const { user: broke } = await app().createUser({ credit: 0 });
        await billing.assertCredit(broke.id);
      },
      (e: any) => e.code === 'insufficient_credit' && e.status === 402,
    );
    await billing.assertCredit(user.id);
    const fired: Array<{ userId: number; at: number }> = [];
    billing.onCreditExhausted(async (t, e) => {
      if (e.userId !== user.id) return;
      fired.push(e);
      await billing.stopMeter(t, { contract: src, kind: 'gpu', at: e.at });
    });
    const src = contract();
    const start = Math.floor(app().clock.now());
    // $1 at $3.564 + $0.036 per hour lasts exactly 1000 s; then the GPU stops and the disk keeps accruing.
    await tx(app(), async (t) => {
      await billing.startMeter(t, meter(user.id, src, 'gpu', 3_564_000, start));
      await billing.startMeter(t, meter(user.id, src, 'disk', 36_000, start));
    });
    await app().advance(2000);
    assert.equal(fired.length, 1);
    assert.equal(Math.floor(fired[0].at), start + 1000);
    await tx(app(), (t) => billing.stopContract(t, { contract: src, at: app().clock.now() }));
    assert.deepEqual(await items(app(), src), { gpu: 990_000, disk: 20_000 });
    assert.equal(await creditMicro(app(), user.id), 1_000_000 - 990_000 - 20_000);
    await assert.rejects(billing.assertCredit(user.id), (e: any) => e.code === 'insufficient_credit');
  });

  test('POST /_emu/credit adds credit (admin only); unknown user is 404', async () => {
    const { user, api_key } = await app().createUser({ credit: 5 });
    const res = await app().request('POST', '/_emu/credit', { body: { user_id: user.id, amount: 2.5 } });
    assert.equal(res.status, 200);
    assert.equal(res.body.credit, 7.5);
    const me = await app().request('GET', '/api/v0/users/current/', { key: api_key });
    assert.equal(me.body.credit, 7.5);
    const denied = await app().request('POST', '/_emu/credit', { key: api_key, body: { user_id: user.id, amount: 1 } });
    assert.equal(denied.status, 403);
    const missing = await app().request('POST', '/_emu/credit', { body: { user_id: 99_999_999, amount: 1 } });
    assert.equal(missing.status, 404);
    assert.equal(missing.body.error, 'not_found');
    const bad = await app().request('POST', '/_emu/credit', { body: { user_id: user.id } });
    assert.equal(bad.status, 400);
    // The user by account e-mail instead (issue 29 item 10); one of the two, never both or neither.
    const byEmail = await app().request('POST', '/_emu/credit', { body: { email: user.email.toUpperCase(), amount: 1 } });
    assert.equal(byEmail.status, 200, byEmail.raw);
    assert.equal(byEmail.body.credit, 8.5);
    const noSuch = await app().request('POST', '/_emu/credit', { body: { email: 'nobody-at-all@example.com', amount: 1 } });
    assert.equal(noSuch.status, 404);
    for (const body of [{ amount: 1 }, { user_id: user.id, email: user.email, amount: 1 }]) {
      const res = await app().request('POST', '/_emu/credit', { body });
      assert.equal(res.status, 400, res.raw);
      assert.match(res.body.msg, /user_id or email/);
    }
    // Digits are an id, never an address: an e-mail field of digits names nobody.
    assert.equal((await app().request('POST', '/_emu/credit', { body: { email: String(user.id), amount: 1 } })).status, 404);
  });
});

