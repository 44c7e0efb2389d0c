// Meters started together (billing `startMeters`, what a simulated host's pass uses for every instance that reached
// running) write what starting them one by one writes: the same meters, contracts, running totals, deposits, credit and
// deposit checks, and later the same charges and balances. Two mirrored sets of users and contracts, one started one
// by one and one together at the same second, with every case mixed in: contracts opened as a rent opens them (the
// common case), a restart, a prepaid contract, a contract not opened yet, several users, one of them nearly out of
// credit, and meters that cannot go together (another kind, a contract twice).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect, type TestApp } from './helpers/harness.js';
import type { ItemKind, MeterStart } from '../src/billing/billing-contract.js';

let seq = 0;
const inTx = <T>(app: TestApp, fn: (tx: any) => Promise<T>) => app.store.db.transaction().execute(fn);

/** One set: users `a` (credit $100) and `b` (1 cent), and its contracts named by role. */
async function world(app: TestApp) {
  const a = (await app.createUser({ credit: 100 })).user.id as number;
  const b = (await app.createUser({ credit: 0.01 })).user.id as number;
  const base = 900_000 + 10 * seq++;
  const roles = ['fresh1', 'fresh2', 'restart', 'prepaid', 'freshB', 'newB'] as const;
  const source = Object.fromEntries(roles.map((r, i) => [r, `instance-${base + i}`])) as Record<(typeof roles)[number], string>;
  const owner = { fresh1: a, fresh2: a, restart: a, prepaid: a, freshB: b, newB: b };
  const users = { a, b };
  return { users, source, owner, roles };
}
type World = Awaited<ReturnType<typeof world>>;

const meter = (w: World, role: keyof World['source'], kind: ItemKind, rate: number, at: number, metadata?: Record<string, unknown>): MeterStart => ({
  contract: w.source[role], type: 'instance', kind, userId: w.owner[role], teamId: null, rateMicroPerHour: rate, at,
  description: `${kind} of ${role}`, ...(metadata ? { metadata } : {}),
});

/** Everything billing keeps of the set, by role (no row ids, which differ between the sets). */
async function snapshot(app: TestApp, w: World) {
  const db = app.store.db;
  const byRole = new Map(Object.entries(w.source).map(([role, src]) => [src, role]));
  const contracts = await db.selectFrom('billing_contracts').selectAll().where('source', 'in', Object.values(w.source)).orderBy('source').execute();
  const idToRole = new Map(contracts.map((c) => [c.id, byRole.get(c.source)!]));
  const userRole = new Map(Object.entries(w.users).map(([role, id]) => [id, role]));
  const ids = contracts.map((c) => c.id);
  const meters = await db.selectFrom('billing_meters').selectAll().where('contract_id', 'in', ids).execute();
  const deposits = await db.selectFrom('billing_deposits').selectAll().where('contract_id', 'in', ids).execute();
  const charges = await db.selectFrom('billing_charges').selectAll().where('contract_id', 'in', ids).execute();
  const userIds = Object.values(w.users);
  const rates = await db.selectFrom('billing_rates').selectAll().where('user_id', 'in', userIds).execute();
  const jobs = await db.selectFrom('jobs').select(['kind', 'due_at', 'ref']).where('ref', 'is not', null).execute();
  const refRole = (ref: string) => {
    const [what, id] = ref.split(':');
    return what === 'credit' ? `credit:${userRole.get(Number(id))}` : what === 'deposit' ? `deposit:${idToRole.get(Number(id))}` : undefined;
  };
  const sorted = <T>(xs: T[]) => xs.map((x) => JSON.stringify(x)).sort();
  return {
    contracts: sorted(contracts.map((c) => ({
      role: byRole.get(c.source), type: c.type, user: userRole.get(c.user_id), description: c.description, metadata: JSON.parse(c.metadata),
      start_at: Number(c.start_at), end_at: Number(c.end_at), live: Number(c.live),
    }))),
    meters: sorted(meters.map((m) => ({
      role: idToRole.get(m.contract_id), kind: m.kind, user: userRole.get(m.user_id), rate: Number(m.rate_micro_per_hour), seg_start: Number(m.seg_start),
      settled_until: Number(m.settled_until), charged: Number(m.seg_charged_micro), running: Number(m.running), funded: Number(m.funded),
      list: m.list_rate_micro_per_hour === null ? null : Number(m.list_rate_micro_per_hour),
    }))),
    deposits: sorted(deposits.map((d) => ({ role: idToRole.get(d.contract_id), remaining: Number(d.remaining_micro), closed: d.closed_at }))),
    charges: sorted(charges.map((c) => ({ role: idToRole.get(c.contract_id), kind: c.kind, day: Number(c.day), amount: Number(c.amount_micro), start: Number(c.start_at), end: Number(c.end_at) }))),
    rates: sorted(rates.map((r) => ({ user: userRole.get(r.user_id), rate: Number(r.rate_micro_per_hour), accrued: Number(r.accrued), ref_at: Number(r.ref_at), charged: Number(r.charged_micro) }))),
    jobs: sorted(jobs.flatMap((j) => (refRole(j.ref!) ? [{ kind: j.kind, due_at: Number(j.due_at), ref: refRole(j.ref!) }] : []))),
    balances: { a: await app.services.billing.balance(w.users.a), b: await app.services.billing.balance(w.users.b) },
  };
}

forEachDialect('billing: meters started together', (app) => {
  test('startMeters writes what startMeter one by one writes, then and after an hour of charges and a credit run-out', async () => {
    const billing = app().services.billing;
    const now = () => app().clock.now();
    const one = await world(app());
    const all = await world(app());
    // As rents open them: a contract with its disk meter; one whose compute ran and stopped; one prepaid.
    for (const w of [one, all]) {
      await inTx(app(), async (t) => {
        for (const role of ['fresh1', 'fresh2', 'restart', 'prepaid', 'freshB'] as const) await billing.startMeter(t, meter(w, role, 'disk', 1_370, now()));
        await billing.startMeter(t, meter(w, 'restart', 'gpu', 500_000, now()));
      });
    }
    await app().advance(100.4);
    for (const w of [one, all]) {
      await inTx(app(), async (t) => {
        await billing.stopMeter(t, { contract: w.source.restart, kind: 'gpu', at: now() });
        await billing.prepay(t, { contract: w.source.prepaid, userId: w.users.a, amountMicro: 5_000_000, at: now(), description: 'prepay', discountFor: () => 200_000 });
      });
    }
    await app().advance(50.3);
    const starts = (w: World) => [
      meter(w, 'fresh1', 'gpu', 3_600_000, now(), { label: 'one', template_id: null }),
      meter(w, 'fresh2', 'gpu', 1_234_567, now(), { label: null, template_id: 7 }),
      meter(w, 'restart', 'gpu', 700_001, now(), { label: 'again' }),
      meter(w, 'prepaid', 'gpu', 2_000_000, now(), { label: 'paid' }),
      meter(w, 'freshB', 'gpu', 3_600_000, now()),
      meter(w, 'newB', 'gpu', 360_000, now(), { label: 'new' }),
    ];
    await inTx(app(), async (t) => {
      for (const m of starts(one)) await billing.startMeter(t, m);
    });
    await inTx(app(), (t) => billing.startMeters(t, starts(all)));
    assert.deepEqual(await snapshot(app(), all), await snapshot(app(), one), 'as started');
    const fresh1 = await app().store.db.selectFrom('billing_meters as m').innerJoin('billing_contracts as c', 'c.id', 'm.contract_id')
      .select(['m.running', 'c.live']).where('c.source', '=', all.source.fresh1).where('m.kind', '=', 'gpu').executeTakeFirstOrThrow();
    assert.deepEqual([Number(fresh1.running), Number(fresh1.live)], [1, 2], 'the compute meter runs beside the disk meter');

    // Meters that cannot share the statements (another kind; one contract twice) go one by one, to the same end.
    const mixed = (w: World) => [meter(w, 'fresh1', 'disk', 2_740, now()), meter(w, 'fresh2', 'gpu', 1_000_000, now()), meter(w, 'fresh2', 'gpu', 1_500_000, now())];
    await app().advance(9.9);
    await inTx(app(), async (t) => {
      for (const m of mixed(one)) await billing.startMeter(t, m);
    });
    await inTx(app(), (t) => billing.startMeters(t, mixed(all)));
    assert.deepEqual(await snapshot(app(), all), await snapshot(app(), one), 'after a second start of mixed meters');

    // An hour on: settlements, the deposit spent, user b's credit run out (a cent at about $4 an hour lasts seconds).
    await app().advance(3600);
    assert.deepEqual(await snapshot(app(), all), await snapshot(app(), one), 'an hour later');
    assert.ok((await snapshot(app(), all)).balances.b <= 0, 'b ran out of credit');
  });
});
