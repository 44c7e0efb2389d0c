// Threats: a scheduled job as a way around API key scoping (a job made with a limited key doing more than that key
// may, or outliving the revocation of the key that made it), as a store of usable credentials (a secret kept in the
// job, or a run key that still works after its run), and as a window into another user's jobs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect, type TestApp } from './helpers/harness.js';

const HOUR = 3600;
const JOBS = '/api/v0/commands/schedule_job/';
const micro = (dollars: number) => Math.round(dollars * 1e6);
const nextHour = (app: TestApp) => (Math.floor(app.clock.now() / HOUR) + 1) * HOUR;
const credit = async (app: TestApp, key: string) => micro((await app.request('GET', '/api/v0/users/current', { key })).body.credit);
const transferJob = (to: number, start: number, end: number, amount = 1) => ({
  start_time: start, end_time: end, api_endpoint: '/api/v0/commands/transfer_credit/', request_method: 'PUT',
  request_body: { sender: 'me', recipient: String(to), amount }, day_of_the_week: null, hour_of_the_day: null, frequency: 'HOURLY', instance_id: null,
});

forEachDialect('scheduled jobs: security', (app) => {
  test('a job acts with the rights of the key that made it, and sends nothing while that key is revoked', async () => {
    const a = await app().createUser({ credit: 100 });
    const b = await app().createUser({ credit: 0 });
    const limited = await app().request('POST', '/api/v0/auth/apikeys/', { key: a.api_key, body: { name: 'instances only', permissions: { api: { instance_read: {}, instance_write: {} } } } });
    assert.equal(limited.status, 200, limited.raw);
    const h0 = nextHour(app());
    const weak = await app().request('POST', JOBS, { key: limited.body.key, body: transferJob(b.user.id, h0, h0 + HOUR / 2) });
    assert.equal(weak.status, 200, weak.raw);
    const full = await app().request('POST', '/api/v0/auth/apikeys/', { key: a.api_key, body: { name: 'doomed' } });
    const envVarJob = { ...transferJob(b.user.id, h0, h0 + HOUR / 2), api_endpoint: '/api/v0/secrets/', request_method: 'POST', request_body: { key: 'FROM_JOB', value: '1' } };
    const revoked = await app().request('POST', JOBS, { key: full.body.key, body: envVarJob });
    assert.equal(revoked.status, 200, revoked.raw);
    assert.equal((await app().request('DELETE', `/api/v0/auth/apikeys/${full.body.id}/`, { key: a.api_key })).status, 200);

    await app().advance(h0 - app().clock.now());
    assert.equal(await credit(app(), b.api_key), 0, 'no credit moved');
    assert.deepEqual((await app().request('GET', '/api/v0/secrets/', { key: a.api_key })).body.secrets, {}, 'no variable made');
    const jobs = (await app().request('GET', JOBS, { key: a.api_key })).body;
    const w = jobs.find((j: any) => j.id === weak.body.scheduled_job_id);
    assert.equal(w.run_count, 1);
    assert.equal(w.last_run_status, 403);
    assert.match(w.last_run_msg, /billing_write/);
    const r = jobs.find((j: any) => j.id === revoked.body.scheduled_job_id);
    assert.equal(r.run_count, 1);
    assert.equal(r.last_run_status, null);
    assert.match(r.last_run_msg, /revoked/);

    // Another user's job is not theirs to see, change or delete.
    const c = await app().createUser();
    assert.deepEqual((await app().request('GET', JOBS, { key: c.api_key })).body, []);
    assert.equal((await app().request('DELETE', `${JOBS}${w.id}/`, { key: c.api_key, body: {} })).status, 404);
    assert.equal((await app().request('PUT', `${JOBS}${w.id}/`, { key: c.api_key, body: { request_body: {} } })).status, 404);
  });

  test('no usable secret is kept: the job holds no key, and each run key is refused once its run is over', async () => {
    const a = await app().createUser({ credit: 10 });
    const b = await app().createUser({ credit: 0 });
    const h0 = nextHour(app());
    const made = await app().request('POST', JOBS, { key: a.api_key, body: transferJob(b.user.id, h0, h0 + HOUR) });
    assert.equal(made.status, 200, made.raw);
    await app().advance(h0 + HOUR - app().clock.now());
    assert.equal(await credit(app(), b.api_key), micro(2));
    const row = await app().store.db.selectFrom('scheduled_jobs').selectAll().where('id', '=', made.body.scheduled_job_id).executeTakeFirstOrThrow();
    assert.doesNotMatch(JSON.stringify(row), /gp[kjsi]_/, 'no key secret in the job');
    const runKeys = await app().store.db.selectFrom('api_keys').selectAll().where('kind', '=', 'job').where('user_id', '=', a.user.id).execute();
    assert.equal(runKeys.length, 2);
    assert.ok(runKeys.every((k) => k.revoked_at !== null && k.team_id === null && k.permissions === null));
    // The run keys never appear among the user's API keys, to be listed or reused.
    const listed = (await app().request('GET', '/api/v0/auth/apikeys/', { key: a.api_key })).body.apikeys.map((k: any) => k.id);
    assert.ok(runKeys.every((k) => !listed.includes(k.id)));
  });
});
