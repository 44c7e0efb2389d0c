// The exact balance (one query: stored credit minus the accrual of running meters not yet settled) and a contract's
// count of running meters, as the hot paths now compute them: checked against the hand computation.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect, type TestApp } from './helpers/harness.js';
import { cumulativeMicro } from '../src/billing/billing-accrual.js';
import { SETTLE_PERIOD_S } from '../src/billing/billing-service.js';
import type { ItemKind, MeterStart } from '../src/billing/billing-contract.js';
import { toMicro } from '../src/platform/money.js';

let seq = 0;
const contract = () => `instance-${950_000 + seq++}`;

function meter(userId: number, source: string, kind: ItemKind, rate: number, at: number): MeterStart {
  return { contract: source, type: 'instance', kind, userId, teamId: null, rateMicroPerHour: rate, at, description: `test ${source}` };
}

async function tx<T>(app: TestApp, fn: (tx: any) => Promise<T>): Promise<T> {
  return app.store.db.transaction().execute(fn);
}

async function liveOf(app: TestApp, source: string): Promise<number> {
  const row = await app.store.db.selectFrom('billing_contracts').select('live').where('source', '=', source).executeTakeFirstOrThrow();
  return Number(row.live);
}

async function balanceMicro(app: TestApp, key: string): Promise<number> {
  const me = await app.request('GET', '/api/v0/users/current', { key });
  assert.equal(me.status, 200);
  assert.equal(me.body.balance, me.body.credit);
  return toMicro(me.body.credit);
}

forEachDialect('billing balance', (app) => {
  test('users/current: credit minus the unsettled accrual of running meters, per meter, across a settlement', async () => {
    const { user, api_key } = await app().createUser({ credit: 100 });
    const other = await app().createUser({ credit: 100 });
    const a = contract();
    const b = contract();
    const t0 = Math.floor(app().clock.now());
    await tx(app(), async (t) => {
      await app().services.billing.startMeter(t, meter(user.id, a, 'gpu', 1_234_567, t0));
      await app().services.billing.startMeter(t, meter(user.id, a, 'disk', 7_777, t0));
      // Another user's meter costs this user nothing.
      await app().services.billing.startMeter(t, meter(other.user.id, contract(), 'gpu', 9_000_000, t0));
    });
    await app().advance(37);
    const t1 = Math.floor(app().clock.now());
    await tx(app(), (t) => app().services.billing.startMeter(t, meter(user.id, b, 'gpu', 333_333, t1)));
    assert.equal(
      await balanceMicro(app(), api_key),
      100_000_000 - cumulativeMicro(1_234_567, t1 - t0) - cumulativeMicro(7_777, t1 - t0),
    );
    // Past a bulk settlement: part of the accrual is now in the stored credit, the rest still pending.
    await app().advance(SETTLE_PERIOD_S + 91);
    const t2 = Math.floor(app().clock.now());
    const expected =
      100_000_000 - cumulativeMicro(1_234_567, t2 - t0) - cumulativeMicro(7_777, t2 - t0) - cumulativeMicro(333_333, t2 - t1);
    assert.equal(await balanceMicro(app(), api_key), expected);
    assert.equal(await app().services.billing.balance(user.id), expected);
    // A stopped meter stops accruing: its charges are settled into the credit.
    await tx(app(), (t) => app().services.billing.stopMeter(t, { contract: a, kind: 'gpu', at: t2 }));
    await app().advance(50);
    const t3 = Math.floor(app().clock.now());
    assert.equal(
      await balanceMicro(app(), api_key),
      100_000_000 - cumulativeMicro(1_234_567, t2 - t0) - cumulativeMicro(7_777, t3 - t0) - cumulativeMicro(333_333, t3 - t1),
    );
  });

  test('users/current with no meter running, or only free ones: the stored credit, as the ledger gives it', async () => {
    const { user, api_key } = await app().createUser({ credit: 100 });
    const source = contract();
    const t0 = Math.floor(app().clock.now());
    // A free meter (rate 0) runs but accrues nothing: the running rate read with the key is 0.
    await tx(app(), (t) => app().services.billing.startMeter(t, meter(user.id, source, 'disk', 0, t0)));
    await app().advance(120);
    assert.equal(await balanceMicro(app(), api_key), 100_000_000);
    assert.equal(await app().services.billing.balance(user.id), 100_000_000);
    // A paid meter that ran and stopped: its charge is in the stored credit, and nothing is pending.
    await tx(app(), (t) => app().services.billing.startMeter(t, meter(user.id, source, 'gpu', 3_600_000, Math.floor(app().clock.now()))));
    await app().advance(10);
    const stoppedAt = Math.floor(app().clock.now());
    assert.equal(await balanceMicro(app(), api_key), 100_000_000 - cumulativeMicro(3_600_000, 10));
    await tx(app(), (t) => app().services.billing.stopMeter(t, { contract: source, kind: 'gpu', at: stoppedAt }));
    await app().advance(500);
    assert.equal(await balanceMicro(app(), api_key), 100_000_000 - cumulativeMicro(3_600_000, 10));
    assert.equal(await app().services.billing.balance(user.id), 100_000_000 - cumulativeMicro(3_600_000, 10));
  });

  test('balance of an unknown user is 404 not_found', async () => {
    await assert.rejects(app().services.billing.balance(99_999_999), (e: any) => e.code === 'not_found');
  });

  test("a contract's live count follows its running meters, whatever other contracts run", async () => {
    const { user } = await app().createUser({ credit: 100 });
    const src = contract();
    const neighbour = contract();
    const at = Math.floor(app().clock.now());
    await tx(app(), async (t) => {
      await app().services.billing.startMeter(t, meter(user.id, neighbour, 'gpu', 1_000_000, at));
      await app().services.billing.startMeter(t, meter(user.id, src, 'gpu', 1_000_000, at));
      await app().services.billing.startMeter(t, meter(user.id, src, 'disk', 1_000, at));
    });
    assert.equal(await liveOf(app(), src), 2);
    await app().advance(10);
    await tx(app(), (t) => app().services.billing.stopMeter(t, { contract: src, kind: 'gpu', at: app().clock.now() }));
    assert.equal(await liveOf(app(), src), 1);
    await tx(app(), (t) => app().services.billing.stopContract(t, { contract: src, at: app().clock.now() }));
    assert.equal(await liveOf(app(), src), 0);
    assert.equal(await liveOf(app(), neighbour), 1);
  });
});
