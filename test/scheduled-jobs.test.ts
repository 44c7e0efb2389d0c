// Scheduled jobs (docs/spec/client-compat-more.md §d): a stored request replayed as its user at each occurrence of
// its timetable, on the service clock, exactly once per occurrence (also with two processes on one PostgreSQL
// database), until its end; the 422-then-update flow of the clients; removed with its instance; bad input is a 400.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, dropSchema, forEachDialect, uniqueSchema, type TestApp } from './helpers/harness.js';
import { addMachine, offerFor, rentOk, statusOf } from './instances-fixtures.js';
import { refOf } from '../src/scheduled-jobs/scheduled-jobs-service.js';

const HOUR = 3600;
const JOBS = '/api/v0/commands/schedule_job/';
const micro = (dollars: number) => Math.round(dollars * 1e6);

/** The next whole hour strictly after the app's clock. */
const nextHour = (app: TestApp) => (Math.floor(app.clock.now() / HOUR) + 1) * HOUR;
const credit = async (app: TestApp, key: string) => micro((await app.request('GET', '/api/v0/users/current', { key })).body.credit);
const pendingOf = async (app: TestApp, jobId: number) =>
  (await app.store.db.selectFrom('jobs').select('due_at').where('ref', '=', refOf(jobId)).execute()).map((r) => Number(r.due_at));

/** A job that sends $1 from its user to `to` every hour from `start` to `end`. */
const transferJob = (to: number, start: number, end: number, amount = 1) => ({
  start_time: start,
  end_time: end,
  api_endpoint: '/api/v0/commands/transfer_credit/',
  request_method: 'PUT',
  request_body: { sender: 'me', recipient: String(to), amount },
  day_of_the_week: null,
  hour_of_the_day: null,
  frequency: 'HOURLY',
  instance_id: null,
});

forEachDialect('scheduled jobs', (app) => {
  test('an HOURLY job replays its request once per occurrence, as its user, at the due time, until end_time', async () => {
    const a = await app().createUser({ credit: 100 });
    const b = await app().createUser({ credit: 0 });
    const h0 = nextHour(app());
    const made = await app().request('POST', JOBS, { key: a.api_key, body: transferJob(b.user.id, h0, h0 + 4 * HOUR) });
    assert.equal(made.status, 200, made.raw);
    const id = made.body.scheduled_job_id;
    assert.equal(made.body.scheduled_job.next_run_at, h0);
    assert.deepEqual(await pendingOf(app(), id), [h0]);

    await app().advance(h0 - 1 - app().clock.now());
    assert.equal(await credit(app(), b.api_key), 0, 'nothing before the first occurrence');
    await app().advance(1);
    assert.equal(await credit(app(), b.api_key), micro(1), 'the first occurrence ran when due');
    await app().advance(10 * HOUR);
    assert.equal(await credit(app(), b.api_key), micro(5), 'five occurrences from start to end, both included');
    assert.equal(await credit(app(), a.api_key), micro(95));

    const [job] = (await app().request('GET', JOBS, { key: a.api_key })).body;
    assert.equal(job.id, id);
    assert.equal(job.run_count, 5);
    assert.equal(job.last_run_at, h0 + 4 * HOUR);
    assert.equal(job.last_run_status, 200);
    assert.match(job.last_run_msg, /^Sent \$1 to/);
    assert.equal(job.next_run_at, null, 'none left after end_time');
    assert.deepEqual(await pendingOf(app(), id), []);

    // Each transfer happened at its occurrence's time, through a key made for it (not the user's own key).
    const inv = await app().request('GET', '/api/v0/users/me/invoices', { key: b.api_key, query: { owner: 'me', sdate: '0', edate: String(app().clock.now()) } });
    const paid = inv.body.invoices.filter((x: any) => x.type === 'payment');
    assert.deepEqual(paid.map((p: any) => p.timestamp), [0, 1, 2, 3, 4].map((k) => h0 + k * HOUR));
    const logs = (await app().request('GET', '/api/v0/audit_logs/', { key: a.api_key })).body.filter((e: any) => e.action === 'credit.transferred');
    assert.equal(logs.length, 5);
    const own = (await app().request('GET', '/api/v0/auth/apikeys/', { key: a.api_key })).body.apikeys.map((k: any) => k.id);
    assert.ok(logs.every((e: any) => !own.includes(e.api_key_id)), 'sent with keys made for the runs');
    const runKeys = await app().store.db.selectFrom('api_keys').select(['revoked_at']).where('kind', '=', 'job').where('user_id', '=', a.user.id).execute();
    assert.equal(runKeys.length, 5);
    assert.ok(runKeys.every((k) => k.revoked_at !== null), 'each run key is revoked after its request');
  });

  test('the clients\' flow: a repeated create is 422 with scheduled_job_id; PUT updates it; DELETE removes it', async () => {
    const m = await addMachine(app(), { num_gpus: 1, min_bid: 0.2 });
    const inst = await rentOk(app(), offerFor(m, 1), { price: 0.3 });
    const h0 = nextHour(app());
    // What `vastai change bid ID --price 0.4 --schedule DAILY --day '*' --hour H` sends.
    const body = {
      start_time: h0 - HOUR / 2, end_time: h0 + 7 * 24 * HOUR, api_endpoint: `/api/v0/instances/bid_price/${inst.id}/`, request_method: 'PUT',
      request_body: { client_id: 'me', price: 0.4, instance_id: inst.id }, day_of_the_week: null, hour_of_the_day: new Date(h0 * 1000).getUTCHours(),
      frequency: 'DAILY', instance_id: inst.id,
    };
    const made = await app().request('POST', JOBS, { body });
    assert.equal(made.status, 200, made.raw);
    const id = made.body.scheduled_job_id;
    const again = await app().request('POST', JOBS, { body: { ...body, request_body: { ...body.request_body, price: 0.5 } } });
    assert.equal(again.status, 422, again.raw);
    assert.equal(again.body.success, false);
    assert.equal(again.body.error, 'scheduled_job_exists');
    assert.equal(again.body.scheduled_job_id, id);

    // On `y` the client PUTs the same full body to the named job.
    const updated = await app().request('PUT', `${JOBS}${id}/`, { body: { ...body, request_body: { ...body.request_body, price: 0.5 }, frequency: 'HOURLY', hour_of_the_day: null } });
    assert.equal(updated.status, 200, updated.raw);
    assert.equal(updated.body.scheduled_job.frequency, 'HOURLY');
    assert.deepEqual(await pendingOf(app(), id), [h0], 'one pending occurrence, re-timed');

    const listed = (await app().request('GET', JOBS)).body.find((j: any) => j.id === id);
    assert.deepEqual(
      { instance_id: listed.instance_id, api_endpoint: listed.api_endpoint, frequency: listed.frequency, day: listed.day_of_the_week, hour: listed.hour_of_the_day, min: listed.min_of_the_hour },
      { instance_id: inst.id, api_endpoint: `/api/v0/instances/bid_price/${inst.id}/`, frequency: 'HOURLY', day: null, hour: null, min: 0 },
    );
    assert.equal(listed.start_time, body.start_time);
    assert.equal(listed.end_time, body.end_time);

    await app().advance(h0 - app().clock.now());
    assert.equal((await statusOf(app(), inst.id)).bid_price, 0.5, 'the updated request ran at the occurrence');
    const ran = (await app().request('GET', JOBS)).body.find((j: any) => j.id === id);
    assert.equal(ran.run_count, 1);
    assert.equal(ran.last_run_status, 200);

    const del = await app().request('DELETE', `${JOBS}${id}/`, { body: {} });
    assert.equal(del.status, 200, del.raw);
    assert.equal(del.body.success, true);
    assert.equal((await app().request('GET', JOBS)).body.some((j: any) => j.id === id), false);
    assert.deepEqual(await pendingOf(app(), id), []);
    assert.equal((await app().request('DELETE', `${JOBS}${id}/`, { body: {} })).status, 404);
    assert.equal((await app().request('PUT', `${JOBS}${id}/`, { body: { request_body: {} } })).status, 404);
    await app().request('DELETE', `/api/v0/instances/${inst.id}/`);
  });

  test('destroying the instance removes its jobs and their pending occurrences', async () => {
    const m = await addMachine(app(), { num_gpus: 1, min_bid: 0.2 });
    const inst = await rentOk(app(), offerFor(m, 1), { price: 0.3 });
    const h0 = nextHour(app());
    const body = {
      start_time: h0, end_time: h0 + 48 * HOUR, api_endpoint: `/api/v0/instances/bid_price/${inst.id}/`, request_method: 'PUT',
      request_body: { client_id: 'me', price: 0.4, instance_id: inst.id }, day_of_the_week: null, hour_of_the_day: null, frequency: 'HOURLY', instance_id: inst.id,
    };
    const id = (await app().request('POST', JOBS, { body })).body.scheduled_job_id;
    const other = (await app().request('POST', JOBS, { body: { ...body, request_method: 'POST', api_endpoint: '/api/v0/commands/rclone/', instance_id: String(inst.id) } })).body.scheduled_job_id;
    assert.ok(id && other);
    assert.equal((await app().request('DELETE', `/api/v0/instances/${inst.id}/`)).status, 200);
    const left = (await app().request('GET', JOBS)).body.filter((j: any) => j.id === id || j.id === other);
    assert.deepEqual(left, []);
    assert.deepEqual([...(await pendingOf(app(), id)), ...(await pendingOf(app(), other))], []);
    const late = await app().request('POST', JOBS, { body });
    assert.equal(late.status, 404, 'no job for a destroyed instance');
  });

  test('bad input is a 400 naming the problem; another user\'s instance is a 404', async () => {
    const now = app().clock.now();
    const good = transferJob(1, now, now + 24 * HOUR);
    const bad: Array<[string, Record<string, unknown>]> = [
      ['no frequency', { ...good, frequency: undefined }],
      ['MONTHLY', { ...good, frequency: 'MONTHLY' }],
      ['HOURLY with an hour', { ...good, hour_of_the_day: 3 }],
      ['DAILY without an hour', { ...good, frequency: 'DAILY' }],
      ['DAILY with a day', { ...good, frequency: 'DAILY', hour_of_the_day: 3, day_of_the_week: 2 }],
      ['WEEKLY without a day', { ...good, frequency: 'WEEKLY', hour_of_the_day: 3 }],
      ['day 7', { ...good, frequency: 'WEEKLY', hour_of_the_day: 3, day_of_the_week: 7 }],
      ['hour 24', { ...good, frequency: 'DAILY', hour_of_the_day: 24 }],
      ['start after end', { ...good, start_time: now + 10, end_time: now }],
      ['start equals end', { ...good, start_time: now + HOUR, end_time: now + HOUR }],
      ['over before now', { ...good, start_time: now - 3 * HOUR, end_time: now - HOUR }],
      ['no occurrence in the window', { ...good, start_time: nextHour(app()) + 60, end_time: nextHour(app()) + 120 }],
      ['a string time', { ...good, start_time: 'tomorrow' }],
      ['not an API path', { ...good, api_endpoint: '/_emu/clock/advance' }],
      ['a query string', { ...good, api_endpoint: '/api/v0/commands/transfer_credit/?x=1' }],
      ['dot-dot', { ...good, api_endpoint: '/api/v0/../_emu/reset' }],
      ['the job routes', { ...good, api_endpoint: '/api/v0/commands/schedule_job/' }],
      ['GET', { ...good, request_method: 'GET' }],
      ['a list body', { ...good, request_body: [1, 2] }],
      ['an unknown field', { ...good, extra: 1 }],
      ['a bad instance id', { ...good, instance_id: 'abc' }],
    ];
    for (const [what, body] of bad) {
      const res = await app().request('POST', JOBS, { body });
      assert.equal(res.status, 400, `${what}: ${res.raw}`);
      assert.equal(res.body.error, 'bad_request', what);
      assert.equal(typeof res.body.msg, 'string', what);
    }
    const m = await addMachine(app(), { num_gpus: 1 });
    const stranger = await app().createUser();
    const theirs = await rentOk(app(), offerFor(m, 1), {}, stranger.api_key);
    const res = await app().request('POST', JOBS, { body: { ...good, instance_id: theirs.id } });
    assert.equal(res.status, 404, res.raw);
    assert.equal(res.body.error, 'not_found');
    const update = await app().request('PUT', `${JOBS}1/`, { body: { frequency: 'YEARLY' } });
    assert.equal(update.status, 400);
    assert.equal((await app().request('PUT', `${JOBS}0/`, { body: {} })).status, 400);
  });
});

// Two processes on one PostgreSQL database, both running due work at once: each occurrence runs once.
// PostgreSQL alone: without GPUPLANE_TEST_POSTGRES_URL, createTestApp throws and the tests fail naming it.
for (const dialect of ['postgres'] as const) {
  describe('scheduled jobs: two processes on one PostgreSQL database', () => {
    const schema = uniqueSchema();
    let a: TestApp;
    let b: TestApp;
    before(async () => {
      a = await createTestApp(dialect, { pgSchema: schema });
      b = await createTestApp(dialect, { pgSchema: schema });
    });
    after(async () => {
      await a?.close();
      await b?.close();
      await dropSchema(schema);
    });

    test('every occurrence of three hourly jobs runs exactly once, with both schedulers racing', async () => {
      const payee = await a.createUser({ credit: 0 });
      const payers = [await a.createUser({ credit: 100 }), await a.createUser({ credit: 100 }), await a.createUser({ credit: 100 })];
      const h0 = nextHour(a);
      const RUNS = 12;
      for (const p of payers) {
        const made = await b.request('POST', JOBS, { key: p.api_key, body: transferJob(payee.user.id, h0, h0 + (RUNS - 1) * HOUR) });
        assert.equal(made.status, 200, made.raw);
      }
      const until = h0 + RUNS * HOUR;
      const dueLeft = async () => Number((await a.store.db.selectFrom('jobs').select((eb) => eb.fn.countAll<number>().as('n')).where('due_at', '<=', until).executeTakeFirstOrThrow()).n);
      // Each process keeps running due work until none is left, as their pollers would.
      const drain = async (t: TestApp) => {
        let ran = 0;
        while ((await dueLeft()) > 0) ran += await t.scheduler.runDue(until);
        return ran;
      };
      const [ranA, ranB] = await Promise.all([drain(a), drain(b)]);
      assert.ok(ranA + ranB >= 3 * RUNS, `${ranA} + ${ranB} jobs ran`);
      assert.equal(await credit(a, payee.api_key), micro(3 * RUNS), 'one dollar from each payer per occurrence');
      for (const p of payers) {
        assert.equal(await credit(a, p.api_key), micro(100 - RUNS), `payer ${p.user.id} paid once per occurrence`);
        const jobs = (await a.request('GET', JOBS, { key: p.api_key })).body;
        assert.deepEqual(jobs.map((j: any) => [j.run_count, j.last_run_status, j.next_run_at]), [[RUNS, 200, null]]);
      }
    });
  });
}
