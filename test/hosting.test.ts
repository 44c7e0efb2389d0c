// The host side of the API as the vastai client calls it (client-compat-more.md §a): show machines, listing
// (create_asks), unlist, min bid, default jobs, maintenance windows, cleanup, delete, reports, defrag, self-test search.
// A machine is offered only while it is listed, online and not in maintenance; unlisting leaves running rentals alone.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect } from './helpers/harness.js';
import { BOOT_MAX_S, offerFor, rent, rentOk, statusOf } from './instances-fixtures.js';
import { DEFJOB_CHECK_S } from '../src/hosting/hosting-defjob.js';
import { hostMachine, listBody, newHost, selfTestSearch } from './hosting-fixtures.js';
import { HOURS_PER_MONTH } from '../src/platform/money.js';

forEachDialect('hosting', (app) => {
  test('show machines / show machine: the host\'s own machines with the client\'s machine fields', async () => {
    const host = await newHost(app());
    const m1 = await hostMachine(app(), host.id, { gpu_name: 'RTX 4090', num_gpus: 4, price_gpu: 0.4, min_bid: 0.25, price_inetu: 0.002, price_inetd: 0.001, geolocation: 'Oslo, NO' });
    const m2 = await hostMachine(app(), host.id, { listed: false });
    const res = await app().request('GET', '/api/v0/machines?owner=me', { key: host.key });
    assert.equal(res.status, 200, res.raw);
    assert.deepEqual(res.body.machines.map((r: any) => r.id), [m1.machine_id, m2.machine_id]);
    const r = res.body.machines[0];
    assert.equal(r.num_gpus, 4);
    assert.equal(r.gpu_name, 'RTX 4090');
    assert.equal(typeof r.hostname, 'string');
    assert.match(r.driver_version, /^\d+\.\d+/);
    assert.equal(typeof r.reliability2, 'number');
    assert.equal(r.verification, 'unverified', 'a new host is not verified');
    assert.equal(r.geolocation, 'Oslo, NO');
    assert.equal(r.num_reports, 0);
    assert.equal(r.listed_gpu_cost, 0.4);
    assert.equal(r.min_bid_price, 0.25);
    assert.equal(r.credit_discount_max, 0.4);
    assert.equal(r.listed_inet_up_cost, 0.002);
    assert.equal(r.listed_inet_down_cost, 0.001);
    assert.equal(r.gpu_occupancy, 'x x x x');
    assert.equal(r.listed, true);
    assert.equal(r.rentable, true);
    assert.equal(res.body.machines[1].listed, false);
    assert.equal(res.body.machines[1].rentable, false);

    const one = await app().request('GET', `/api/v0/machines/${m1.machine_id}?owner=me`, { key: host.key });
    assert.equal(one.status, 200, one.raw);
    assert.ok(Array.isArray(one.body));
    assert.equal(one.body.length, 1);
    assert.equal(one.body[0].id, m1.machine_id);
    const none = await app().request('GET', '/api/v0/machines/999999?owner=me', { key: host.key });
    assert.equal(none.status, 404);
    assert.deepEqual(Object.keys(none.body).sort(), ['error', 'msg', 'success']);
    assert.equal(none.body.error, 'not_found');
    const bad = await app().request('GET', '/api/v0/machines?owner=someone', { key: host.key });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error, 'bad_request');
  });

  test('a machine not listed is not offered; create_asks lists it with its prices; unlist stops new rentals only', async () => {
    const host = await newHost(app());
    const renter = await newHost(app(), 50);
    const m = await hostMachine(app(), host.id, { listed: false, num_gpus: 2 });
    assert.deepEqual(await selfTestSearch(app(), m.machine_id, renter.key), []);
    const gone = await rent(app(), offerFor(m, 1), {}, renter.key);
    assert.equal(gone.status, 410);
    assert.equal(gone.body.error, 'offer_unavailable');

    const now = app().clock.now();
    const listed = await app().request('PUT', '/api/v0/machines/create_asks/', {
      key: host.key,
      body: listBody(m.machine_id, { price_gpu: 0.8, price_disk: 0.2, price_inetu: 0.01, price_inetd: 0.02, price_min_bid: 0.3, end_date: now + 10 * 86_400, credit_discount_max: 0.25 }),
    });
    assert.equal(listed.status, 200, listed.raw);
    assert.equal(listed.body.success, true);
    assert.equal(listed.body.extended, 0);
    const offers = await selfTestSearch(app(), m.machine_id, renter.key);
    assert.deepEqual(offers.map((o) => o.num_gpus).sort(), [1, 2]);
    const two = offers.find((o) => o.num_gpus === 2);
    assert.equal(two.dph_base, 1.6);
    assert.equal(two.storage_cost, 0.2);
    assert.equal(two.inet_up_cost, 0.01);
    assert.equal(two.inet_down_cost, 0.02);
    assert.equal(two.end_date, now + 10 * 86_400);
    const [row] = (await app().request('GET', `/api/v0/machines/${m.machine_id}`, { key: host.key })).body;
    assert.equal(row.min_bid_price, 0.3);
    assert.equal(row.credit_discount_max, 0.25);
    assert.equal(row.listed, true);

    const { id } = await rentOk(app(), offerFor(m, 1), {}, renter.key);
    const unlisted = await app().request('DELETE', `/api/v0/machines/${m.machine_id}/asks/`, { key: host.key, body: {} });
    assert.equal(unlisted.status, 200, unlisted.raw);
    assert.equal(unlisted.body.success, true);
    assert.equal((await rent(app(), offerFor(m, 1), {}, renter.key)).status, 410);
    assert.deepEqual(await selfTestSearch(app(), m.machine_id, renter.key), []);
    // The self-test's second try (`rentable: "any"`) still finds the machine's free GPU.
    assert.deepEqual((await selfTestSearch(app(), m.machine_id, renter.key, 'any')).map((o) => o.num_gpus), [1]);
    await app().advance(60);
    const inst = await statusOf(app(), id, renter.key);
    assert.notEqual(inst.actual_status, 'offline');
    assert.equal(inst.intended_status, 'running');
    const [after] = (await app().request('GET', `/api/v0/machines/${m.machine_id}`, { key: host.key })).body;
    assert.equal(after.current_rentals_running, 1);
    assert.equal(after.gpu_occupancy, 'D x');
    // A stopped rental starts again on its unlisted machine: it is not a new rental.
    assert.equal((await app().request('PUT', `/api/v0/instances/${id}/`, { key: renter.key, body: { state: 'stopped' } })).status, 200);
    assert.equal((await app().request('GET', `/api/v0/machines/${m.machine_id}`, { key: host.key })).body[0].gpu_occupancy, 'x x');
    const restarted = await app().request('PUT', `/api/v0/instances/${id}/`, { key: renter.key, body: { state: 'running' } });
    assert.equal(restarted.status, 200, restarted.raw);
    assert.equal((await statusOf(app(), id, renter.key)).intended_status, 'running');
    assert.equal((await app().request('GET', `/api/v0/machines/${m.machine_id}`, { key: host.key })).body[0].gpu_occupancy, 'D x');
  });

  test('create_asks: min_chunk, duration, and what is refused', async () => {
    const host = await newHost(app());
    const m = await hostMachine(app(), host.id, { listed: false, num_gpus: 8 });
    const put = (over: Record<string, unknown>) => app().request('PUT', '/api/v0/machines/create_asks/', { key: host.key, body: listBody(m.machine_id, over) });
    const ok = await put({ min_chunk: 2, duration: '2 weeks' });
    assert.equal(ok.status, 200, ok.raw);
    const now = app().clock.now();
    assert.equal(ok.body.end_date, now + 14 * 86_400);
    const offers = await selfTestSearch(app(), m.machine_id, host.key);
    assert.deepEqual(offers.map((o) => o.num_gpus).sort((a, b) => a - b), [2, 4, 8]);
    assert.equal(offers[0].duration, 14 * 86_400);
    assert.equal((await put({ duration: '3 months' })).body.end_date, now + 3 * HOURS_PER_MONTH * 3600);
    assert.equal((await put({ duration: '86400' })).body.end_date, now + 86_400);

    for (const [over, field] of [
      [{ duration: 'soon' }, 'duration'],
      [{ duration: '1 week', end_date: now + 86_400 }, 'duration'],
      [{ end_date: now - 1 }, 'end_date'],
      [{ min_chunk: 16 }, 'min_chunk'],
      [{ price_gpu: 0.1, price_min_bid: 0.2 }, 'price_min_bid'],
      [{ credit_discount_max: 1.5 }, 'credit_discount_max'],
      [{ price_gpu: -1 }, 'price_gpu'],
      [{ user_id: 1 }, 'user_id'],
    ] as const) {
      const res = await put(over);
      assert.equal(res.status, 400, `${JSON.stringify(over)}: ${res.raw}`);
      assert.equal(res.body.error, 'bad_request');
      assert.ok(res.body.msg.includes(field), `${field} named: ${res.body.msg}`);
    }
    const missing = await app().request('PUT', '/api/v0/machines/create_asks/', { key: host.key, body: listBody(999_999) });
    assert.equal(missing.status, 404);
  });

  test('a duration listing rolls its end date forward daily; a fixed end date stops it', async () => {
    const host = await newHost(app());
    const m = await hostMachine(app(), host.id, { listed: false, num_gpus: 1 });
    const put = (over: Record<string, unknown>) => app().request('PUT', '/api/v0/machines/create_asks/', { key: host.key, body: listBody(m.machine_id, over) });
    const t0 = app().clock.now();
    assert.equal((await put({ duration: '2 days' })).status, 200);
    const endOf = async () => (await app().request('GET', `/api/v0/machines/${m.machine_id}`, { key: host.key })).body[0].end_date;
    assert.equal(await endOf(), t0 + 2 * 86_400);
    await app().advance(86_400);
    assert.equal(await endOf(), t0 + 3 * 86_400, 'a day later: still two days ahead');
    await app().advance(5 * 86_400);
    assert.equal(await endOf(), t0 + 8 * 86_400);
    assert.equal((await selfTestSearch(app(), m.machine_id, host.key)).length, 1, 'offered past its first end date');
    const fixed = app().clock.now() + 86_400 / 2;
    assert.equal((await put({ end_date: fixed })).status, 200);
    await app().advance(86_400);
    assert.equal(await endOf(), fixed, 'a fixed end date does not roll');
    assert.deepEqual(await selfTestSearch(app(), m.machine_id, host.key), [], 'its listing ended');
  });

  test('set min-bid: the interruptible floor; a bid below it is refused', async () => {
    const host = await newHost(app());
    const renter = await newHost(app(), 50);
    const m = await hostMachine(app(), host.id, { num_gpus: 1, price_gpu: 1, min_bid: 0.2 });
    const res = await app().request('PUT', `/api/v0/machines/${m.machine_id}/minbid/`, { key: host.key, body: { client_id: 'me', price: 0.6 } });
    assert.equal(res.status, 200, res.raw);
    const [row] = (await app().request('GET', `/api/v0/machines/${m.machine_id}`, { key: host.key })).body;
    assert.equal(row.min_bid_price, 0.6);
    const low = await rent(app(), offerFor(m, 1), { price: 0.5 }, renter.key);
    assert.equal(low.status, 400, low.raw);
    assert.equal((await rent(app(), offerFor(m, 1), { price: 0.6 }, renter.key)).status, 200);
    const nul = await app().request('PUT', `/api/v0/machines/${m.machine_id}/minbid/`, { key: host.key, body: { client_id: 'me', price: null } });
    assert.equal(nul.status, 400);
    assert.match(nul.body.msg, /price/);
    const above = await app().request('PUT', `/api/v0/machines/${m.machine_id}/minbid/`, { key: host.key, body: { client_id: 'me', price: 2 } });
    assert.equal(above.status, 400);
  });

  test('maintenance windows: shown to the host and its renters, no new rentals during one, cancel removes all', async () => {
    const host = await newHost(app());
    const renter = await newHost(app(), 50);
    const m = await hostMachine(app(), host.id, { num_gpus: 2 });
    const start = app().clock.now() + 3600;
    const res = await app().request('PUT', `/api/v0/machines/${m.machine_id}/dnotify/`, {
      key: host.key,
      body: { client_id: 'me', sdate: start, duration: 2, maintenance_category: 'power' },
    });
    assert.equal(res.status, 200, res.raw);
    const second = await app().request('PUT', `/api/v0/machines/${m.machine_id}/dnotify/`, { key: host.key, body: { client_id: 'me', sdate: start + 86_400, duration: 1.5, maintenance_category: null } });
    assert.equal(second.status, 200, second.raw);
    const expected = [
      { machine_id: m.machine_id, start_time: start, end_time: start + 7200, duration_hours: 2, maintenance_category: 'power' },
      { machine_id: m.machine_id, start_time: start + 86_400, end_time: start + 86_400 + 5400, duration_hours: 1.5, maintenance_category: 'not provided' },
    ];
    const shown = await app().request('GET', `/api/v0/machines/maintenances?owner=me&machine_ids=${encodeURIComponent(`[${m.machine_id}]`)}`, { key: host.key });
    assert.equal(shown.status, 200, shown.raw);
    assert.deepEqual(shown.body, expected);
    assert.deepEqual((await app().request('GET', '/api/v0/machines/maintenances?owner=me', { key: host.key })).body, expected);
    // As the client encodes a list: JSON with a space after each comma, the space as `+`.
    const plus = await app().request('GET', `/api/v0/machines/maintenances?owner=me&machine_ids=%5B${m.machine_id}%2C+${m.machine_id}%5D`, { key: host.key });
    assert.equal(plus.status, 200, plus.raw);
    assert.deepEqual(plus.body, expected);

    // A renter sees the windows of the machine it rents on; before the window the machine is offered.
    assert.equal((await app().request('GET', `/api/v0/machines/maintenances?machine_ids=[${m.machine_id}]`, { key: renter.key })).status, 404);
    const { id } = await rentOk(app(), offerFor(m, 1), {}, renter.key);
    const seen = await app().request('GET', `/api/v0/machines/maintenances?owner=me&machine_ids=${encodeURIComponent(`[${m.machine_id}]`)}`, { key: renter.key });
    assert.equal(seen.status, 200, seen.raw);
    assert.deepEqual(seen.body, expected);
    // ... and in its instance's status message.
    const iso = (t: number) => new Date(t * 1000).toISOString().replace('.000Z', 'Z');
    const statusMsg = async () => (await app().request('GET', `/api/v0/instances/${id}/`, { key: renter.key })).body.instances.status_msg as string | null;
    assert.match((await statusMsg()) ?? '', new RegExp(`host maintenance scheduled at ${iso(start)} for 2 hours \\(power\\)$`));

    await app().advance(3600);
    assert.deepEqual(await selfTestSearch(app(), m.machine_id, renter.key), [], 'no offer during the window');
    assert.equal((await rent(app(), offerFor(m, 1), {}, renter.key)).status, 410);
    assert.equal((await app().request('GET', `/api/v0/machines/${m.machine_id}`, { key: host.key })).body[0].rentable, false);
    assert.match((await statusMsg()) ?? '', new RegExp(`host maintenance under way since ${iso(start)} for 2 hours \\(power\\)$`));
    await app().advance(7200);
    assert.match((await statusMsg()) ?? '', new RegExp(`host maintenance scheduled at ${iso(start + 86_400)} for 1.5 hours \\(not provided\\)$`));
    assert.equal((await selfTestSearch(app(), m.machine_id, renter.key)).length, 1, 'offered again after it');
    assert.deepEqual((await app().request('GET', '/api/v0/machines/maintenances', { key: host.key })).body, [expected[1]], 'past windows are not shown');

    const cancel = await app().request('PUT', `/api/v0/machines/${m.machine_id}/cancel_maint/`, { key: host.key, body: { client_id: 'me', machine_id: m.machine_id } });
    assert.equal(cancel.status, 200, cancel.raw);
    assert.deepEqual((await app().request('GET', '/api/v0/machines/maintenances', { key: host.key })).body, []);
    assert.doesNotMatch((await statusMsg()) ?? '', /maintenance/);

    const past = await app().request('PUT', `/api/v0/machines/${m.machine_id}/dnotify/`, { key: host.key, body: { client_id: 'me', sdate: app().clock.now() - 7200, duration: 1 } });
    assert.equal(past.status, 400);
    const badIds = await app().request('GET', '/api/v0/machines/maintenances?machine_ids=[1,', { key: host.key });
    assert.equal(badIds.status, 400);
    assert.match(badIds.body.msg, /machine_ids/);
  });

  test('a default job runs as the host\'s bid instance on idle GPUs, gives way to a renter, comes back when they leave, and ends with remove', async () => {
    const host = await newHost(app(), 20);
    const renter = await newHost(app(), 50);
    const m = await hostMachine(app(), host.id, { num_gpus: 2, price_gpu: 0.5, min_bid: 0.2 });
    const set = await app().request('PUT', '/api/v0/machines/create_bids/', {
      key: host.key,
      body: { machine: m.machine_id, price_gpu: 0.3, price_inetu: null, price_inetd: null, image: 'me/idle:latest', args: ['--threads', '2'] },
    });
    assert.equal(set.status, 200, set.raw);
    const id = Number(/running as instance (\d+)/.exec(set.body.msg)?.[1]);
    assert.ok(id > 0, set.body.msg);
    const job = await statusOf(app(), id, host.key);
    assert.equal(job.machine_id, m.machine_id);
    assert.equal(job.num_gpus, 2);
    assert.equal(job.is_bid, true);
    assert.equal(job.label, 'default job');
    assert.equal(job.image_uuid, 'me/idle:latest');
    // The bid is the default job's price per GPU, for the whole machine: $0.6/hour.
    assert.equal(job.dph_total > 0.59 && job.dph_total < 0.7, true, String(job.dph_total));
    await app().advance(BOOT_MAX_S);
    assert.equal((await statusOf(app(), id, host.key)).actual_status, 'running');

    // A renter's bid under the default job's does not displace it; an on-demand rental does.
    const low = await rent(app(), offerFor(m, 1), { price: 0.25 }, renter.key);
    assert.notEqual(low.status, 200, low.raw);
    const rented = await rentOk(app(), offerFor(m, 1), {}, renter.key);
    const displaced = await statusOf(app(), id, host.key);
    assert.equal(displaced.actual_status, 'stopped');
    assert.equal(displaced.intended_status, 'running');
    assert.match(displaced.status_msg, /outbid/);

    // The renter leaves: the default job takes its GPUs back by itself.
    assert.equal((await app().request('DELETE', `/api/v0/instances/${rented.id}/`, { key: renter.key, body: {} })).status, 200);
    await app().advance(BOOT_MAX_S);
    assert.equal((await statusOf(app(), id, host.key)).actual_status, 'running');

    // The host's own job does not keep the machine from being deleted by "clients"; remove ends it.
    const removed = await app().request('DELETE', `/api/v0/machines/${m.machine_id}/defjob/`, { key: host.key, body: {} });
    assert.equal(removed.status, 200, removed.raw);
    const row = await app().store.db.selectFrom('instances').select('destroyed_at').where('id', '=', id).executeTakeFirstOrThrow();
    assert.notEqual(row.destroyed_at, null);
  });

  test('a default job that cannot be placed says why and starts once it can (checked every minute)', async () => {
    const host = await newHost(app(), 20);
    const m = await hostMachine(app(), host.id, { listed: false, num_gpus: 1, price_gpu: 0.5, min_bid: 0.2 });
    const set = await app().request('PUT', '/api/v0/machines/create_bids/', {
      key: host.key, body: { machine: m.machine_id, price_gpu: 0.3, price_inetu: null, price_inetd: null, image: 'me/idle:latest', args: null },
    });
    assert.equal(set.status, 200, set.raw);
    assert.match(set.body.msg, /not running: .*tried again every minute/);
    const listed = await app().request('PUT', '/api/v0/machines/create_asks/', { key: host.key, body: listBody(m.machine_id, { price_gpu: 0.5 }) });
    assert.equal(listed.status, 200, listed.raw);
    await app().advance(DEFJOB_CHECK_S);
    const rows = await app().store.db.selectFrom('instances').select(['id', 'label', 'user_id']).where('machine_id', '=', m.machine_id).where('destroyed_at', 'is', null).execute();
    assert.deepEqual(rows.map((r) => [r.label, r.user_id]), [['default job', host.id]]);
    // Deleting the machine takes its default job with it.
    const deleted = await app().request('POST', `/api/v0/machines/${m.machine_id}/force_delete/`, { key: host.key, body: {} });
    assert.equal(deleted.status, 200, deleted.raw);
    const after = await app().store.db.selectFrom('instances').select('destroyed_at').where('id', '=', rows[0].id).executeTakeFirstOrThrow();
    assert.notEqual(after.destroyed_at, null);
  });

  test('default jobs, cleanup, reports, defrag', async () => {
    const host = await newHost(app());
    const m = await hostMachine(app(), host.id);
    const set = await app().request('PUT', '/api/v0/machines/create_bids/', {
      key: host.key,
      body: { machine: m.machine_id, price_gpu: 0.1, price_inetu: null, price_inetd: null, image: 'vastai/test:latest', args: ['--flag', 'x'] },
    });
    assert.equal(set.status, 200, set.raw);
    assert.equal(set.body.success, true);
    assert.equal((await app().request('GET', `/api/v0/machines/${m.machine_id}`, { key: host.key })).body[0].has_defjob, true);
    // Setting it again replaces it, also when two requests race.
    const again = await Promise.all(['a', 'b'].map((tag) => app().request('PUT', '/api/v0/machines/create_bids/', {
      key: host.key, body: { machine: m.machine_id, price_gpu: 0.2, price_inetu: 0.01, price_inetd: 0.01, image: `vastai/test:${tag}`, args: null },
    })));
    assert.deepEqual(again.map((r) => r.status), [200, 200], again.map((r) => r.raw).join(' '));
    const removed = await app().request('DELETE', `/api/v0/machines/${m.machine_id}/defjob/`, { key: host.key, body: {} });
    assert.equal(removed.status, 200, removed.raw);
    assert.equal((await app().request('GET', `/api/v0/machines/${m.machine_id}`, { key: host.key })).body[0].has_defjob, false);
    assert.equal((await app().request('DELETE', `/api/v0/machines/${m.machine_id}/defjob/`, { key: host.key, body: {} })).status, 404);
    const noImage = await app().request('PUT', '/api/v0/machines/create_bids/', { key: host.key, body: { machine: m.machine_id, price_gpu: 0.1, price_inetu: null, price_inetd: null, args: null } });
    assert.equal(noImage.status, 400);

    const cleanup = await app().request('PUT', `/api/v0/machines/${m.machine_id}/cleanup/`, { key: host.key, body: {} });
    assert.equal(cleanup.status, 200, cleanup.raw);
    assert.equal(cleanup.body.success, true);
    assert.equal(cleanup.body.deleted, 0);
    // The client sends a JSON body with this GET.
    const reports = await app().request('GET', `/api/v0/machines/${m.machine_id}/reports/`, { key: host.key, body: { machine_id: m.machine_id } });
    assert.equal(reports.status, 200, reports.raw);
    assert.deepEqual(reports.body, []);
    const defrag = await app().request('PUT', '/api/v0/machines/defrag_offers/', { key: host.key, body: { machine_ids: [m.machine_id] } });
    assert.equal(defrag.status, 200, defrag.raw);
    assert.deepEqual(defrag.body.machine_ids, [m.machine_id]);
    assert.equal(defrag.body.success, true);
  });

  test('delete machine: refused while a client has an instance on it; then gone from lists and search', async () => {
    const host = await newHost(app());
    const renter = await newHost(app(), 50);
    const m = await hostMachine(app(), host.id);
    const { id } = await rentOk(app(), offerFor(m, 1), {}, renter.key);
    const refused = await app().request('POST', `/api/v0/machines/${m.machine_id}/force_delete/`, { key: host.key, body: {} });
    assert.equal(refused.status, 409, refused.raw);
    assert.equal(refused.body.error, 'conflict');
    assert.equal((await app().request('DELETE', `/api/v0/instances/${id}/`, { key: renter.key })).status, 200);
    const deleted = await app().request('POST', `/api/v0/machines/${m.machine_id}/force_delete/`, { key: host.key, body: {} });
    assert.equal(deleted.status, 200, deleted.raw);
    assert.equal(deleted.body.success, true);
    assert.deepEqual((await app().request('GET', '/api/v0/machines?owner=me', { key: host.key })).body.machines, []);
    assert.equal((await app().request('GET', `/api/v0/machines/${m.machine_id}`, { key: host.key })).status, 404);
    assert.deepEqual(await selfTestSearch(app(), m.machine_id, renter.key, 'any'), []);
    assert.equal((await rent(app(), offerFor(m, 1), {}, renter.key)).status, 410);
  });

  test('the simulated fleet stays listed and rentable', async () => {
    const res = await app().request('POST', '/api/v0/bundles/', { body: { rentable: { eq: true }, limit: 1000 } });
    assert.equal(res.status, 200);
    assert.ok(res.body.offers.length > 0);
    const all = await app().request('GET', '/api/v0/machines?owner=all');
    assert.equal(all.status, 200, all.raw);
    assert.ok(all.body.machines.filter((r: any) => r.listed).length >= 20);
  });
});
