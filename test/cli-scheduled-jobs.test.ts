// `gpuplane create/show/update/delete scheduled-job(s)` and the SDK's scheduledJobs against a real server (virtual
// clock): a job made from the CLI runs when the clock reaches it; usage errors exit 2 before anything is sent.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createClient } from '../src/sdk/client.js';
import { GpuplaneError } from '../src/sdk/errors.js';
import { OWNER_KEY, T0, useServer } from './cli-helpers.js';

const server = useServer();

test('create, show, update and delete a scheduled job; it runs on the server\'s clock', async () => {
  const owner = createClient({ url: server.url(), apiKey: OWNER_KEY });
  const a = await owner.emulator.createUser({ email: `cli-jobs-a-${process.pid}@example.com`, credit: 20 });
  const b = await owner.emulator.createUser({ email: `cli-jobs-b-${process.pid}@example.com`, credit: 0 });
  const asA = (args: string[]) => server.cli(args, { GPUPLANE_API_KEY: a.api_key });
  const body = JSON.stringify({ sender: 'me', recipient: String(b.user.id), amount: 1 });
  const create = ['create', 'scheduled-job', '--endpoint', '/api/v0/commands/transfer_credit/', '--body', body, '--schedule', 'HOURLY', '--end-date', String(T0 + 3 * 3600)];

  const made = await asA(create);
  assert.equal(made.code, 0, made.stderr);
  const id = Number(/^scheduled job (\d+): HOURLY PUT \/api\/v0\/commands\/transfer_credit\/, next run 2027-01-15 08:00:00 UTC$/m.exec(made.stdout)?.[1]);
  assert.ok(id > 0, made.stdout);

  const again = await asA(create);
  assert.equal(again.code, 1);
  assert.match(again.stderr, new RegExp(`scheduled job ${id} already replays PUT /api/v0/commands/transfer_credit/: change that job instead \\(HTTP 422, scheduled_job_exists\\)`));

  await owner.emulator.advance(3600);
  const shown = await asA(['show', 'scheduled-jobs']);
  assert.equal(shown.code, 0, shown.stderr);
  assert.match(shown.stdout, new RegExp(`^\\s*${id}\\s+-\\s+PUT\\s+/api/v0/commands/transfer_credit/\\s+HOURLY\\s+-\\s+-\\s+2027-01-15 10:00:00\\s+2027-01-15 11:00:00\\s+2\\s+200\\s+Sent \\$1 to ${b.user.id}`, 'm'));
  assert.equal((await createClient({ url: server.url(), apiKey: b.api_key }).account.currentUser()).credit, 2, 'the 08:00 and 09:00 runs');

  const updated = await asA(['update', 'scheduled-job', String(id), '--schedule', 'DAILY', '--hour', '3', '--day', '*', '--end-date', '2027-01-20']);
  assert.equal(updated.code, 0, updated.stderr);
  assert.match(updated.stdout, new RegExp(`^scheduled job ${id}: DAILY PUT /api/v0/commands/transfer_credit/, next run 2027-01-16 03:00:00 UTC$`, 'm'));
  const raw = await asA(['--raw', 'show', 'scheduled-jobs']);
  const [job] = JSON.parse(raw.stdout);
  assert.deepEqual([job.id, job.frequency, job.hour_of_the_day, job.day_of_the_week, job.end_time], [id, 'DAILY', 3, null, Date.UTC(2027, 0, 20) / 1000]);

  const nothing = await asA(['update', 'scheduled-job', String(id)]);
  assert.equal(nothing.code, 2);
  const deleted = await asA(['delete', 'scheduled-job', String(id)]);
  assert.equal(deleted.code, 0, deleted.stderr);
  assert.equal(deleted.stdout.trim(), `scheduled job ${id} deleted`);
  assert.equal((await asA(['show', 'scheduled-jobs'])).stdout.trim(), 'no scheduled jobs');
  assert.equal((await asA(['delete', 'scheduled-job', String(id)])).code, 1);

  for (const args of [
    ['create', 'scheduled-job', '--endpoint', '/api/v0/x/', '--schedule', 'MONTHLY'],
    ['create', 'scheduled-job', '--endpoint', '/api/v0/x/', '--schedule', 'DAILY', '--hour', '24'],
    ['create', 'scheduled-job', '--endpoint', '/api/v0/x/', '--schedule', 'DAILY', '--body', '[1]'],
    ['create', 'scheduled-job', '--schedule', 'DAILY'],
  ]) assert.equal((await asA(args)).code, 2, args.join(' '));
});

test('the SDK: a repeated create is a GpuplaneError 422 whose body names the job', async () => {
  const owner = createClient({ url: server.url(), apiKey: OWNER_KEY });
  const job = {
    api_endpoint: '/api/v0/secrets/', request_method: 'POST' as const, request_body: { key: 'NIGHTLY', value: '1' }, frequency: 'DAILY' as const, hour_of_the_day: 2,
  };
  const made = await owner.scheduledJobs.create(job);
  await assert.rejects(owner.scheduledJobs.create(job), (err: unknown) => {
    assert.ok(err instanceof GpuplaneError);
    assert.equal(err.status, 422);
    assert.equal(err.body?.scheduled_job_id, made.scheduled_job_id);
    return true;
  });
  const changed = await owner.scheduledJobs.update(made.scheduled_job_id, { request_body: { key: 'NIGHTLY', value: '2' } });
  assert.deepEqual(changed.scheduled_job.request_body, { key: 'NIGHTLY', value: '2' });
  assert.ok((await owner.scheduledJobs.list()).some((j) => j.id === made.scheduled_job_id));
  assert.equal((await owner.scheduledJobs.remove(made.scheduled_job_id)).success, true);
});
