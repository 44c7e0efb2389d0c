// Instance extras on real hosts, through the agent protocol (docs/AGENT-PROTOCOL.md): reboot makes a new `boot`,
// recycle and update a new `generation` (recycle with `repull`), and reports about an older generation change
// nothing; execute and take snapshot are listed in the machine's desired state until its agent answers, and only
// that machine's agent can answer them; result_url serves the agent's output once; the registry login is forgotten
// once the snapshot is answered.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect } from './helpers/harness.js';
import { desired, hostWithMachine, observed, report, type Host } from './agent-server-fixtures.js';
import { rentOk, statusOf } from './instances-fixtures.js';

forEachDialect('instance extras on real hosts', (app) => {
  /** A host's machine with one instance reported running on it. */
  async function runningOnHost(body: Record<string, unknown> = {}): Promise<{ host: Host; renterKey: string; id: number; d: any }> {
    const host = await hostWithMachine(app());
    const renter = await app().createUser({ credit: 100 });
    const { id } = await rentOk(app(), host.machineId * 100 + 1, { image: 'busybox', ...body }, renter.api_key);
    const d = await desired(app(), host);
    await report(app(), host, [observed(id, d.instances[0].boot)], d.version);
    assert.equal((await statusOf(app(), id, renter.api_key)).actual_status, 'running');
    return { host, renterKey: renter.api_key, id, d };
  }
  const path = (url: string) => `${new URL(url).pathname}${new URL(url).search}`;

  test('reboot: a new boot in the desired state; the instance is provisioning until the agent reports that boot running', async () => {
    const { host, renterKey, id, d } = await runningOnHost();
    const boot = d.instances[0].boot;
    assert.equal((await app().request('PUT', `/api/v0/instances/reboot/${id}/`, { key: renterKey, body: {} })).status, 200);
    const d2 = await desired(app(), host);
    assert.equal(d2.instances[0].boot, boot + 1);
    assert.equal(d2.instances[0].generation, 1);
    assert.equal(d2.instances[0].repull, undefined);
    assert.deepEqual(d2.instances[0].gpu_indices, d.instances[0].gpu_indices);
    assert.equal((await statusOf(app(), id, renterKey)).actual_status, null);
    // The old boot's report is stale; simulated timers do not move it either.
    await report(app(), host, [observed(id, boot)], d2.version);
    await app().advance(25);
    assert.equal((await statusOf(app(), id, renterKey)).actual_status, null);
    await report(app(), host, [observed(id, boot + 1)], d2.version);
    assert.equal((await statusOf(app(), id, renterKey)).actual_status, 'running');
  });

  test('recycle and update: a new generation (recycle: repull); reports of the old container change nothing; the new env reaches the agent', async () => {
    const { host, renterKey, id, d } = await runningOnHost({ env: { A: '1' } });
    assert.equal(d.instances[0].generation, 1);
    assert.equal((await app().request('PUT', `/api/v0/instances/recycle/${id}/`, { key: renterKey, body: {} })).status, 200);
    const d2 = await desired(app(), host);
    assert.equal(d2.instances[0].generation, 2);
    assert.equal(d2.instances[0].repull, true);
    // The old container, still running while the new image is pulled: stale.
    await report(app(), host, [observed(id, d.instances[0].boot, { generation: 1 })], d2.version);
    assert.equal((await statusOf(app(), id, renterKey)).actual_status, null);
    await report(app(), host, [observed(id, d2.instances[0].boot, { generation: 2, state: 'pulling', ports: {} })], d2.version);
    assert.equal((await statusOf(app(), id, renterKey)).actual_status, 'loading');
    await report(app(), host, [observed(id, d2.instances[0].boot, { generation: 2 })], d2.version);
    assert.equal((await statusOf(app(), id, renterKey)).actual_status, 'running');

    const up = await app().request('PUT', `/api/v0/instances/update_template/${id}/`, { key: renterKey, body: { id, env: { GREETING: 'hi-update' } } });
    assert.equal(up.status, 200, up.raw);
    const d3 = await desired(app(), host);
    assert.equal(d3.instances[0].generation, 3);
    assert.equal(d3.instances[0].repull, undefined, 'an update uses the image the host has');
    // The new env, and the instance key the container had before (CONTAINER_API_KEY: the same instance).
    assert.match(d.instances[0].env.CONTAINER_API_KEY, /^gpi_/);
    assert.deepEqual(d3.instances[0].env, { GREETING: 'hi-update', CONTAINER_API_KEY: d.instances[0].env.CONTAINER_API_KEY });
    assert.equal(d3.instances[0].boot, d2.instances[0].boot + 1);
    await report(app(), host, [observed(id, d3.instances[0].boot, { generation: 3 })], d3.version);
    assert.equal((await statusOf(app(), id, renterKey)).actual_status, 'running');
  });

  test('update of a stopped instance: a new generation, still stopped; a held long-poll wakes for it', async () => {
    const { host, renterKey, id } = await runningOnHost();
    await app().request('PUT', `/api/v0/instances/${id}/`, { key: renterKey, body: { state: 'stopped' } });
    const d = await desired(app(), host);
    assert.equal(d.instances[0].state, 'stopped');
    const held = desired(app(), host, { after: String(d.version), wait: '30' });
    await new Promise((r) => setImmediate(r));
    const up = await app().request('PUT', `/api/v0/instances/update_template/${id}/`, { key: renterKey, body: { image: 'busybox:1.36' } });
    assert.equal(up.status, 200, up.raw);
    const got = await held;
    assert.notEqual(got.version, d.version);
    assert.equal(got.instances[0].generation, 2);
    assert.equal(got.instances[0].image, 'busybox:1.36');
    assert.equal(got.instances[0].state, 'stopped');
    assert.equal((await statusOf(app(), id, renterKey)).actual_status, 'stopped');
  });

  test("execute on a real host: the agent gets argv, its answer is served once at result_url; another machine's agent cannot answer", async () => {
    const { host, renterKey, id } = await runningOnHost();
    const ex = await app().request('PUT', `/api/v0/instances/command/${id}/`, { key: renterKey, body: { command: "ls -l '/work space'" } });
    assert.equal(ex.status, 200, ex.raw);
    const d = await desired(app(), host);
    assert.equal(d.commands.length, 1);
    const req = d.commands[0];
    assert.equal(req.instance_id, id);
    assert.deepEqual(req.argv, ['ls', '-l', '/work space']);
    assert.match(req.request_id, /^cmd_[0-9a-f]{32}$/);
    const other = await hostWithMachine(app());
    const stolen = await app().request('PUT', `/api/v0/agent/commands/${req.request_id}/`, { key: other.machineKey, body: { output: 'x', exit_code: 0 } });
    assert.equal(stolen.status, 404);
    const fetching = app().request('GET', path(ex.body.result_url), { key: null });
    const ans = await app().request('PUT', `/api/v0/agent/commands/${req.request_id}/`, { key: host.machineKey, body: { output: 'total 0\n', exit_code: 0 } });
    assert.equal(ans.status, 200, ans.raw);
    const out = await fetching;
    assert.equal(out.status, 200, out.raw);
    assert.equal(out.raw, 'total 0\n');
    assert.equal((await app().request('GET', path(ex.body.result_url), { key: null })).status, 404, 'served once');
    const d2 = await desired(app(), host);
    assert.deepEqual(d2.commands, []);
    assert.notEqual(d2.version, d.version);
    // A command that could not run: the output says why.
    const ex2 = await app().request('PUT', `/api/v0/instances/command/${id}/`, { key: renterKey, body: { command: 'du -sh /x' } });
    const req2 = (await desired(app(), host)).commands[0];
    await app().request('PUT', `/api/v0/agent/commands/${req2.request_id}/`, { key: host.machineKey, body: { output: 'du: /x: No such file\n', exit_code: 1 } });
    assert.equal((await app().request('GET', path(ex2.body.result_url), { key: null })).raw, 'du: /x: No such file\n');
    const ex3 = await app().request('PUT', `/api/v0/instances/command/${id}/`, { key: renterKey, body: { command: 'ls' } });
    const req3 = (await desired(app(), host)).commands[0];
    await app().request('PUT', `/api/v0/agent/commands/${req3.request_id}/`, { key: host.machineKey, body: { output: '', exit_code: null, error: 'exec failed: container is not running' } });
    assert.equal((await app().request('GET', path(ex3.body.result_url), { key: null })).raw, 'exec failed: container is not running\n');
    const bad = await app().request('PUT', `/api/v0/agent/commands/${req3.request_id}/`, { key: host.machineKey, body: { output: 1 } });
    assert.equal(bad.status, 400);
    // Never answered (the host is away): no longer listed after its time, and result_url says why.
    const ex4 = await app().request('PUT', `/api/v0/instances/command/${id}/`, { key: renterKey, body: { command: 'ls' } });
    await app().advance(121);
    assert.deepEqual((await desired(app(), host)).commands, []);
    const late = await app().request('GET', path(ex4.body.result_url), { key: null });
    assert.equal(late.status, 404);
    assert.match(late.body.msg, /did not answer within 120 s/);
  });

  test('take snapshot on a real host: listed for its agent with the login; a failed push is reported back; the login is then forgotten', async () => {
    const { host, renterKey, id } = await runningOnHost();
    const body = { id: String(id), container_registry: 'registry.example.com:5000', personal_repo: 'me/snap', docker_login_user: 'me', docker_login_pass: 'sekret-token', pause: 'false' };
    const res = await app().request('POST', `/api/v0/instances/take_snapshot/${id}/`, { key: renterKey, body });
    assert.equal(res.status, 200, res.raw);
    assert.equal(res.body.success, true);
    assert.match(res.body.msg, /registry\.example\.com:5000\/me\/snap:latest/);
    const d = await desired(app(), host);
    assert.equal(d.snapshots.length, 1);
    const s = d.snapshots[0];
    assert.deepEqual({ ...s, request_id: undefined }, {
      request_id: undefined, instance_id: id, image: 'registry.example.com:5000/me/snap:latest', pause: false,
      docker_login: { username: 'me', password: 'sekret-token', server: 'registry.example.com:5000' },
    });
    const stored = await app().store.db.selectFrom('instance_snapshots').selectAll().where('instance_id', '=', id).executeTakeFirstOrThrow();
    assert.ok(stored.login_sealed && !stored.login_sealed.includes('sekret-token'), 'sealed at rest');
    let list = await app().request('GET', `/api/v0/instances/snapshots/${id}/`, { key: renterKey });
    assert.equal(list.body.snapshots[0].status, 'pending');
    const ans = await app().request('PUT', `/api/v0/agent/snapshots/${s.request_id}/`, {
      key: host.machineKey, body: { error: 'push of registry.example.com:5000/me/snap:latest failed: dial tcp: connection refused' },
    });
    assert.equal(ans.status, 200, ans.raw);
    list = await app().request('GET', `/api/v0/instances/snapshots/${id}/`, { key: renterKey });
    assert.equal(list.status, 200);
    const [one] = list.body.snapshots;
    assert.equal(one.status, 'failed');
    assert.match(one.error, /connection refused/);
    assert.equal(typeof one.finished_at, 'number');
    assert.deepEqual((await desired(app(), host)).snapshots, []);
    const after = await app().store.db.selectFrom('instance_snapshots').selectAll().where('instance_id', '=', id).executeTakeFirstOrThrow();
    assert.equal(after.login_sealed, null);
    // A second one, pushed.
    await app().request('POST', `/api/v0/instances/take_snapshot/${id}/`, { key: renterKey, body: { ...body, docker_login_user: null, docker_login_pass: null, personal_repo: 'me/snap:v2' } });
    const s2 = (await desired(app(), host)).snapshots[0];
    assert.equal(s2.docker_login, null);
    assert.equal(s2.pause, false);
    await app().request('PUT', `/api/v0/agent/snapshots/${s2.request_id}/`, { key: host.machineKey, body: {} });
    list = await app().request('GET', `/api/v0/instances/snapshots/${id}/`, { key: renterKey });
    assert.deepEqual(list.body.snapshots.map((x: any) => [x.image, x.status]), [
      ['registry.example.com:5000/me/snap:latest', 'failed'], ['registry.example.com:5000/me/snap:v2', 'pushed'],
    ]);
  });

  test('a snapshot the host never reports on is failed after its time limit; a stopped instance cannot be snapshotted (409)', async () => {
    const { host, renterKey, id } = await runningOnHost();
    await app().request('POST', `/api/v0/instances/take_snapshot/${id}/`, { key: renterKey, body: { personal_repo: 'me/snap' } });
    assert.equal((await desired(app(), host)).snapshots.length, 1);
    await app().advance(6 * 3600 + 1);
    const list = await app().request('GET', `/api/v0/instances/snapshots/${id}/`, { key: renterKey });
    assert.equal(list.body.snapshots[0].status, 'failed');
    assert.match(list.body.snapshots[0].error, /did not report/);
    assert.deepEqual((await desired(app(), host)).snapshots, []);
    await app().request('PUT', `/api/v0/instances/${id}/`, { key: renterKey, body: { state: 'stopped' } });
    const stopped = await app().request('POST', `/api/v0/instances/take_snapshot/${id}/`, { key: renterKey, body: { personal_repo: 'me/snap' } });
    assert.equal(stopped.status, 409, stopped.raw);
  });
});
