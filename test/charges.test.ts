// GET /api/v0/charges/ (spec: Show charges; client-compat: Charges): entries, filters, stable pagination, tree format.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect, type TestApp } from './helpers/harness.js';
import { cumulativeMicro, dayOf, SECONDS_PER_DAY } from '../src/billing/billing-accrual.js';
import type { ContractType, ItemKind } from '../src/billing/billing-contract.js';

let seq = 0;
const micro = (dollars: number) => Math.round(dollars * 1e6);

async function start(app: TestApp, userId: number, source: string, type: ContractType, meters: Array<[ItemKind, number]>, metadata = {}) {
  await app.store.db.transaction().execute(async (tx) => {
    for (const [kind, rate] of meters) {
      await app.services.billing.startMeter(tx, {
        contract: source,
        type,
        kind,
        userId,
        teamId: null,
        rateMicroPerHour: rate,
        at: app.clock.now(),
        description: `${type} ${source}`,
        metadata,
      });
    }
  });
}

function charges(app: TestApp, key: string, filters: unknown, query: Record<string, string> = {}) {
  return app.request('GET', '/api/v0/charges/', { key, query: { select_filters: JSON.stringify(filters), ...query } });
}

const sumItems = (e: any): number => e.items.reduce((s: number, i: any) => s + micro(i.amount), 0);

forEachDialect('charges API', (app) => {
  test('entries of the spec: per contract, items by kind, amounts to the micro-dollar; type and day filters', async () => {
    const { user, api_key } = await app().createUser({ credit: 1000 });
    const inst = `instance-${700_000 + seq++}`;
    const vol = `volume-${700_000 + seq++}`;
    const t0 = Math.floor(app().clock.now());
    await start(app(), user.id, inst, 'instance', [['gpu', 1_111_111], ['disk', 22_222]], { label: 'trainer' });
    await start(app(), user.id, vol, 'volume', [['volume', 33_333]]);
    await app().advance(3725);
    const day = { gte: t0, lte: t0 + 3725 };
    const res = await charges(app(), api_key, { day });
    assert.equal(res.status, 200);
    assert.equal(res.headers['content-type'], 'application/json');
    assert.equal(res.body.success, true);
    assert.equal(res.body.count, 2);
    assert.equal(res.body.total, 2);
    assert.equal(res.body.next_token, null);
    const [v, i] = res.body.results; // latest first: the volume was opened last
    assert.equal(v.source, vol);
    assert.equal(v.type, 'volume');
    assert.equal(i.source, inst);
    assert.equal(i.type, 'instance');
    assert.deepEqual(i.metadata, { label: 'trainer' });
    assert.deepEqual(i.items.map((x: any) => x.type), ['gpu', 'disk']);
    assert.equal(micro(i.items[0].amount), cumulativeMicro(1_111_111, 3725));
    assert.equal(micro(i.items[1].amount), cumulativeMicro(22_222, 3725));
    assert.equal(micro(i.amount), sumItems(i));
    assert.equal(micro(v.amount), cumulativeMicro(33_333, 3725));
    for (const e of [v, i]) {
      assert.equal(e.start, t0);
      assert.equal(e.end, t0 + 3725);
      for (const item of e.items) {
        assert.equal(item.source, null);
        assert.deepEqual(item.items, []);
        assert.equal(typeof item.description, 'string');
      }
    }

    const onlyVolumes = await charges(app(), api_key, { day, type: { in: ['volume'] } });
    assert.deepEqual(onlyVolumes.body.results.map((e: any) => e.source), [vol]);
    assert.equal(onlyVolumes.body.total, 1);
    const dayBefore = await charges(app(), api_key, { day: { gte: dayOf(t0) - SECONDS_PER_DAY, lte: dayOf(t0) - 1 } });
    assert.deepEqual([dayBefore.body.count, dayBefore.body.total, dayBefore.body.results], [0, 0, []]);

    const other = await app().createUser();
    const foreign = await charges(app(), other.api_key, { day });
    assert.equal(foreign.body.total, 0, "another user's charges are not visible");
  });

  test('missing or malformed day, bad type, bad token, out-of-range limit or format are 400 bad_request', async () => {
    const { api_key } = await app().createUser();
    const day = { gte: 0, lte: 2e9 };
    const cases: Array<Record<string, string>> = [
      {},
      { select_filters: '' },
      { select_filters: '{not json' },
      { select_filters: '[]' },
      { select_filters: JSON.stringify({}) },
      { select_filters: JSON.stringify({ day: { gte: 10 } }) },
      { select_filters: JSON.stringify({ day: { gte: 'x', lte: 10 } }) },
      { select_filters: JSON.stringify({ day: { gte: 20, lte: 10 } }) },
      { select_filters: JSON.stringify({ day, type: { in: ['gpu'] } }) },
      { select_filters: JSON.stringify({ day, type: 'instance' }) },
      { select_filters: JSON.stringify({ day }), limit: '0' },
      { select_filters: JSON.stringify({ day }), limit: '501' },
      { select_filters: JSON.stringify({ day }), limit: 'many' },
      { select_filters: JSON.stringify({ day }), format: 'pie' },
      { select_filters: JSON.stringify({ day }), after_token: 'garbage' },
    ];
    for (const query of cases) {
      const res = await app().request('GET', '/api/v0/charges/', { key: api_key, query });
      assert.equal(res.status, 400, JSON.stringify(query));
      assert.equal(res.body.success, false);
      assert.equal(res.body.error, 'bad_request');
      assert.equal(typeof res.body.msg, 'string');
    }
    const strings = await app().request('GET', '/api/v0/charges', { key: api_key, query: { select_filters: '{"day":{"gte":"0","lte":"2000000000"}}', limit: '500' } });
    assert.equal(strings.status, 200);
    const noKey = await app().request('GET', '/api/v0/charges/', { key: null, query: { select_filters: JSON.stringify({ day }) } });
    assert.equal(noKey.status, 401);
  });

  test('pagination returns each contract once, in a fixed order, even while charges accrue and contracts open', async () => {
    const { user, api_key } = await app().createUser({ credit: 1000 });
    const sources: string[] = [];
    for (let n = 0; n < 45; n++) {
      const s = `instance-${700_000 + seq++}`;
      sources.push(s);
      await start(app(), user.id, s, 'instance', [['disk', 10_000 + n]]);
    }
    const day = { gte: Math.floor(app().clock.now()), lte: Math.floor(app().clock.now()) + 7 * SECONDS_PER_DAY };
    for (const latest of [true, false]) {
      const seen: string[] = [];
      let token: string | null = null;
      let pages = 0;
      do {
        const query: Record<string, string> = { limit: '10', latest_first: String(latest), ...(token ? { after_token: token } : {}) };
        const res = await charges(app(), api_key, { day }, query);
        assert.equal(res.status, 200);
        if (pages === 0) assert.equal(res.body.total, 45 + (latest ? 0 : 3));
        assert.ok(res.body.count <= 10);
        seen.push(...res.body.results.map((e: any) => e.source));
        token = res.body.next_token;
        pages++;
        // Meanwhile: time passes (settlements run) and new contracts open.
        await app().advance(700);
        if (latest && pages <= 3) await start(app(), user.id, `instance-${700_000 + seq++}`, 'instance', [['disk', 5]]);
      } while (token);
      const originals = seen.filter((s) => sources.includes(s));
      assert.equal(new Set(seen).size, seen.length, 'no contract twice');
      assert.equal(originals.length, 45, 'every contract once');
      assert.deepEqual(originals, latest ? [...sources].reverse() : sources);
    }
    // A page past the last key is empty and still counts every contract that matches.
    const matching = (await charges(app(), api_key, { day }, { limit: '10' })).body.total;
    const past = await charges(app(), api_key, { day }, { limit: '10', after_token: Buffer.from('table.desc.1').toString('base64url') });
    assert.equal(past.status, 200, past.raw);
    assert.deepEqual([past.body.count, past.body.results, past.body.next_token, past.body.total], [0, [], null, matching]);
    assert.ok(matching >= 48);
  });

  test('tree format groups serverless workers under endpoint and workergroup wrappers; table shows them as their instances', async () => {
    const { user, api_key } = await app().createUser({ credit: 1000 });
    const billing = app().services.billing;
    const plain = `instance-${700_000 + seq++}`;
    const workers = [0, 1, 2].map(() => `instance-${700_000 + seq++}`);
    const groups = [1, 1, 2];
    const t0 = Math.floor(app().clock.now());
    await start(app(), user.id, plain, 'instance', [['gpu', 100_000]]);
    for (const [n, w] of workers.entries()) {
      await start(app(), user.id, w, 'instance', [['gpu', 200_000 * (n + 1)], ['disk', 1_000]]);
      await app().store.db.transaction().execute((tx) => billing.setServerlessGroup(tx, w, { endpointId: 77, workergroupId: groups[n] }));
    }
    await app().advance(1800);
    const day = { gte: t0, lte: t0 + 1800 };

    // Spec: table rows have type instance or volume; a serverless worker's charges are the rows of its instance.
    for (const format of [{}, { format: 'table' }] as Record<string, string>[]) {
      const table = await charges(app(), api_key, { day }, format);
      assert.equal(table.status, 200, table.raw);
      assert.equal(table.body.count, 4);
      assert.deepEqual(table.body.results.map((e: any) => e.source), [...workers].reverse().concat(plain));
      assert.deepEqual(table.body.results.map((e: any) => e.type), ['instance', 'instance', 'instance', 'instance']);
      assert.deepEqual(table.body.results[0].metadata, { endpoint_id: 77, workergroup_id: 2 });
      assert.deepEqual(table.body.results[0].items.map((i: any) => i.type), ['gpu', 'disk']);
      assert.equal(micro(table.body.results[0].amount), cumulativeMicro(600_000, 1800) + cumulativeMicro(1_000, 1800));
      assert.ok(!table.body.results.some((e: any) => /^(endpoint|workergroup)-/.test(e.source ?? '')), 'no wrappers in table format');
    }
    // The type filter selects contracts: `serverless` picks the workers, shown as their instances.
    const workersOnly = await charges(app(), api_key, { day, type: { in: ['serverless'] } });
    assert.deepEqual(workersOnly.body.results.map((e: any) => [e.source, e.type]), [...workers].reverse().map((w) => [w, 'instance']));
    const instancesOnly = await charges(app(), api_key, { day, type: { in: ['instance'] } });
    assert.deepEqual(instancesOnly.body.results.map((e: any) => e.source), [plain]);

    const tree = await charges(app(), api_key, { day }, { format: 'tree' });
    assert.equal(tree.status, 200);
    assert.equal(tree.body.total, 2);
    assert.equal(tree.body.count, 2);
    const endpoint = tree.body.results.find((e: any) => e.source === 'endpoint-77');
    assert.equal(endpoint.type, 'serverless');
    assert.deepEqual(endpoint.metadata, { endpoint_id: 77 });
    assert.deepEqual(endpoint.items.map((g: any) => [g.source, g.type, g.items.length]).sort(), [
      ['workergroup-1', 'serverless', 2],
      ['workergroup-2', 'serverless', 1],
    ]);
    const workerMicro = [0, 1, 2].map((n) => cumulativeMicro(200_000 * (n + 1), 1800) + cumulativeMicro(1_000, 1800));
    const wg1 = endpoint.items.find((g: any) => g.source === 'workergroup-1');
    assert.equal(micro(wg1.amount), workerMicro[0] + workerMicro[1]);
    assert.equal(micro(endpoint.amount), workerMicro[0] + workerMicro[1] + workerMicro[2]);
    assert.equal(micro(endpoint.amount), endpoint.items.reduce((s: number, g: any) => s + micro(g.amount), 0));
    assert.deepEqual(wg1.items.map((e: any) => e.source).sort(), [workers[0], workers[1]].sort());
    // Inside the wrappers each worker is its instance's entry.
    assert.deepEqual(wg1.items.map((e: any) => e.type), ['instance', 'instance']);
    assert.ok(tree.body.results.some((e: any) => e.source === plain && e.type === 'instance'));

    const onlyServerless = await charges(app(), api_key, { day, type: { in: ['serverless'] } }, { format: 'tree' });
    assert.deepEqual(onlyServerless.body.results.map((e: any) => e.source), ['endpoint-77']);
  });
});
