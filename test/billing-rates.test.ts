// Each user's running totals (billing_rates), which the credit checks of every rent read instead of every running
// meter: after any mix of starts, rate changes, stops, single and bulk settlements, day boundaries and a credit run-out,
// they equal the sums over the user's running meters exactly, and the balance they give is a lower bound of the exact
// balance, below it by less than one micro-dollar per running meter.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect, type TestApp } from './helpers/harness.js';
import { SECONDS_PER_DAY } from '../src/billing/billing-accrual.js';
import { SETTLE_PERIOD_S } from '../src/billing/billing-service.js';
import type { ItemKind, MeterStart } from '../src/billing/billing-contract.js';
import { fillBillingRates } from '../src/migrations/0017-billing-rates.js';

let seq = 0;
const contract = () => `instance-${800_000 + seq++}`;

function meter(userId: number, source: string, kind: ItemKind, rate: number, at: number): MeterStart {
  return { contract: source, type: 'instance', kind, userId, teamId: null, rateMicroPerHour: rate, at, description: `test ${source}` };
}

/** The totals recomputed from the meters, with `accrued` taken at the stored row's `ref_at`. */
async function fromMeters(app: TestApp, userId: number, refAt: number) {
  const meters = await app.store.db.selectFrom('billing_meters').selectAll().where('user_id', '=', userId).where('running', '=', 1).execute();
  let rate = 0;
  let accrued = 0;
  let charged = 0;
  for (const m of meters) {
    rate += Number(m.rate_micro_per_hour);
    accrued += Number(m.rate_micro_per_hour) * (refAt - Number(m.seg_start));
    charged += Number(m.seg_charged_micro);
  }
  return { rate, accrued, charged, running: meters.length };
}

async function assertTotals(app: TestApp, userId: number, when: string) {
  const billing = app.services.billing;
  const row = await billing.store.ratesOf(userId);
  assert.ok(row, `${when}: a totals row`);
  const stored = { rate: Number(row.rate_micro_per_hour), accrued: Number(row.accrued), charged: Number(row.charged_micro) };
  const expected = await fromMeters(app, userId, Number(row.ref_at));
  assert.deepEqual(stored, { rate: expected.rate, accrued: expected.accrued, charged: expected.charged }, when);
  const now = Math.floor(app.clock.now());
  const quick = await billing.store.quickLedgerOf(userId, now);
  const exact = await billing.balance(userId);
  assert.ok(quick, when);
  assert.equal(quick.rate, expected.rate, `${when}: burn rate`);
  assert.ok(quick.low <= exact, `${when}: bound ${quick.low} above the exact balance ${exact}`);
  assert.ok(exact - quick.low <= expected.running, `${when}: bound ${quick.low} more than ${expected.running} below ${exact}`);
}

const inTx = <T>(app: TestApp, fn: (tx: any) => Promise<T>) => app.store.db.transaction().execute(fn);

forEachDialect('billing running totals', (app) => {
  test('agree with the meters through starts, rate changes, stops and settlements across a day boundary', async () => {
    const { user } = await app().createUser({ credit: 10_000 });
    const billing = app().services.billing;
    const a = contract();
    const b = contract();
    const c = contract();
    const now = () => app().clock.now();
    await app().advance(0.7);
    await inTx(app(), async (t) => {
      await billing.startMeter(t, meter(user.id, a, 'gpu', 1_234_567, now()));
      await billing.startMeter(t, meter(user.id, a, 'disk', 13_699, now()));
      await billing.startMeter(t, meter(user.id, b, 'gpu', 7_777_777, now()));
    });
    await assertTotals(app(), user.id, 'after three starts');
    await app().advance(SETTLE_PERIOD_S + 17.3);
    await assertTotals(app(), user.id, 'after a bulk settlement');
    // A running meter given a new rate: settled, then a new segment.
    await inTx(app(), (t) => billing.startMeter(t, meter(user.id, a, 'gpu', 2_000_003, now())));
    await assertTotals(app(), user.id, 'after a rate change');
    await app().advance(333);
    await inTx(app(), (t) => billing.stopMeter(t, { contract: a, kind: 'gpu', at: now() }));
    await assertTotals(app(), user.id, 'after a stop');
    await app().advance(99);
    await inTx(app(), async (t) => {
      await billing.startMeter(t, meter(user.id, a, 'gpu', 1_111_111, now()));
      await billing.startMeter(t, meter(user.id, c, 'gpu', 555_555, now()));
    });
    await assertTotals(app(), user.id, 'after a restart and a new contract');
    // Past midnight: meters lagging behind the day's start are settled one by one, the rest in bulk.
    await app().advance(SECONDS_PER_DAY + 3 * SETTLE_PERIOD_S + 41);
    await assertTotals(app(), user.id, 'after a day boundary');
    await inTx(app(), (t) => billing.stopContract(t, { contract: b, at: now() }));
    await inTx(app(), (t) => billing.addUsage(t, { ...meter(user.id, c, 'gpu', 0, now()), amountMicro: 123_456 }));
    await assertTotals(app(), user.id, 'after a contract stop and a one-off charge');
    // What the migration computes for a database that already has running meters.
    await app().store.db.deleteFrom('billing_rates').execute();
    await fillBillingRates(app().store.db);
    await assertTotals(app(), user.id, 'computed by the migration');
    await inTx(app(), async (t) => {
      await billing.stopContract(t, { contract: a, at: now() });
      await billing.stopContract(t, { contract: c, at: now() });
    });
    const row = await billing.store.ratesOf(user.id);
    assert.deepEqual(
      { rate: Number(row?.rate_micro_per_hour), accrued: Number(row?.accrued), charged: Number(row?.charged_micro) },
      { rate: 0, accrued: 0, charged: 0 },
      'nothing running: all zero',
    );
  });

  test('renting with a bound at or below zero falls back to the exact balance; a user out of credit still gets 402', async () => {
    // 1 dollar, then a meter that burns it in 100 s: the bound and the exact balance cross zero within the same second.
    const { user } = await app().createUser({ credit: 1 });
    const billing = app().services.billing;
    const src = contract();
    await inTx(app(), (t) => billing.startMeter(t, meter(user.id, src, 'gpu', 36_000_000, app().clock.now())));
    await assertTotals(app(), user.id, 'burning');
    await app().advance(50);
    await billing.assertCredit(user.id);
    await assertTotals(app(), user.id, 'half spent');
    await app().advance(60);
    await assert.rejects(billing.assertCredit(user.id), { code: 'insufficient_credit' });
  });
});
