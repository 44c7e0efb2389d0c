// The server side of the agent protocol (docs/AGENT-PROTOCOL.md) through HTTP: registration, listing, desired state,
// status reports driving instance states, liveness, and logs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect } from './helpers/harness.js';
import { desired, hardware, hostWithMachine, observed, registrationId, report, type Host } from './agent-server-fixtures.js';
import { rentOk, statusOf } from './instances-fixtures.js';
import { agentStore } from '../src/agent-server/agent-server-store.js';
import { sha256Hex } from '../src/platform/crypto.js';

forEachDialect('agent server', (app) => {
  test('registration is idempotent by registration_id: same machine, a new key, the old one revoked', async () => {
    const { api_key } = await app().createUser();
    const body = { registration_id: registrationId(), agent_version: '1.0.0', hardware: hardware() };
    const a = await app().request('POST', '/api/v0/machines/register/', { key: api_key, body });
    assert.equal(a.status, 200, a.raw);
    assert.equal(a.body.success, true);
    assert.match(a.body.machine_key, /^gpm_/);
    const b = await app().request('POST', '/api/v0/machines/register/', { key: api_key, body });
    assert.equal(b.body.machine_id, a.body.machine_id);
    assert.notEqual(b.body.machine_key, a.body.machine_key);
    const old = await app().request('GET', '/api/v0/agent/desired/', { key: a.body.machine_key });
    assert.equal(old.status, 401);
    assert.deepEqual(Object.keys(old.body).sort(), ['error', 'msg', 'success']);
    assert.equal(old.body.error, 'auth_error');
    const fresh = await app().request('GET', '/api/v0/agent/desired/', { key: b.body.machine_key });
    assert.equal(fresh.status, 200);
    assert.deepEqual(fresh.body.instances, []);
    // Another registration id of the same user is another machine.
    const c = await app().request('POST', '/api/v0/machines/register/', { key: api_key, body: { ...body, registration_id: registrationId() } });
    assert.notEqual(c.body.machine_id, a.body.machine_id);
  });

  test('two registrations of one id at once make one machine', async () => {
    const { api_key } = await app().createUser();
    const body = { registration_id: registrationId(), agent_version: '1.0.0', hardware: hardware() };
    const replies = await Promise.all([1, 2, 3].map(() => app().request('POST', '/api/v0/machines/register/', { key: api_key, body })));
    for (const r of replies) assert.equal(r.status, 200, r.raw);
    assert.equal(new Set(replies.map((r) => r.body.machine_id)).size, 1);
    // The last key issued is the one that works; exactly one does.
    const ok = [];
    for (const r of replies) ok.push((await app().request('GET', '/api/v0/agent/desired/', { key: r.body.machine_key })).status);
    assert.deepEqual(ok.filter((s) => s === 200).length, 1);
  });

  test('registration needs machine_write and a valid body', async () => {
    const { api_key } = await app().createUser();
    const body = { registration_id: registrationId(), agent_version: '1.0.0', hardware: hardware() };
    assert.equal((await app().request('POST', '/api/v0/machines/register/', { key: null, body })).status, 401);
    const k = await app().request('POST', '/api/v0/auth/apikeys/', { key: api_key, body: { name: 'ro', permissions: { api: { instance_read: {} } } } });
    assert.equal(k.status, 200, k.raw);
    const denied = await app().request('POST', '/api/v0/machines/register/', { key: k.body.key, body });
    assert.equal(denied.status, 403);
    const bad = await app().request('POST', '/api/v0/machines/register/', { key: api_key, body: { ...body, registration_id: 'short' } });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error, 'bad_request');
    const ports = await app().request('POST', '/api/v0/machines/register/', { key: api_key, body: { ...body, hardware: hardware({ direct_port_start: 50000, direct_port_end: 40000 }) } });
    assert.equal(ports.status, 400);
    assert.match(ports.body.msg, /direct_port_end/);
  });

  test('a registered machine is not for rent until its host lists it; declared hardware is never verified', async () => {
    const host = await hostWithMachine(app(), { list: false });
    const search = async () => (await app().request('POST', '/api/v0/bundles/', { body: { machine_id: { eq: host.machineId }, verified: { eq: false }, rentable: { eq: true } } })).body.offers;
    assert.deepEqual(await search(), []);
    const listed = await app().request('PUT', '/api/v0/machines/create_asks/', { key: host.apiKey, body: { machine: host.machineId, price_gpu: 0.4, end_date: null } });
    assert.equal(listed.status, 200, listed.raw);
    const offers = await search();
    assert.ok(offers.length > 0);
    for (const o of offers) {
      assert.equal(o.verified, false);
      assert.equal(o.machine_id, host.machineId);
      assert.equal(o.gpu_name, 'RTX 4090');
      assert.equal(o.public_ipaddr, '127.0.0.1');
    }
    // Someone else cannot list it.
    const other = await app().createUser();
    const stolen = await app().request('PUT', '/api/v0/machines/create_asks/', { key: other.api_key, body: { machine: host.machineId, price_gpu: 0.01 } });
    assert.equal(stolen.status, 404);
  });

  test('a rented instance is in the desired state; the agent reports drive its states, not boot timers', async () => {
    const host = await hostWithMachine(app());
    const renter = await app().createUser();
    const { id, instanceKey } = await rentOk(app(), host.machineId * 100 + 1, {
      image: 'busybox', runtype: 'ssh_direc ssh_proxy', env: { FOO: 'bar', '-p 8081:8081/udp': '1' }, onstart: 'echo hello', label: 'x',
    }, renter.api_key);
    const d = await desired(app(), host);
    assert.equal(d.instances.length, 1);
    const inst = d.instances[0];
    assert.equal(inst.instance_id, id);
    assert.equal(inst.state, 'running');
    assert.equal(inst.image, 'busybox');
    assert.equal(inst.runtype, 'ssh');
    assert.equal(inst.onstart, 'echo hello');
    assert.deepEqual(inst.env, { FOO: 'bar', CONTAINER_API_KEY: instanceKey });
    assert.deepEqual(inst.ports.sort(), ['22/tcp', '8081/udp']);
    assert.deepEqual(inst.gpu_indices, [0]);
    assert.equal(inst.cpu_share, 0.5);
    assert.equal(inst.docker_login, null);
    assert.equal(typeof inst.boot, 'number');
    // Simulated boot timers do not move it.
    await report(app(), host, [], d.version - 1);
    await app().advance(25);
    assert.equal((await statusOf(app(), id, renter.api_key)).actual_status, null);
    await report(app(), host, [observed(id, inst.boot, { state: 'pulling', ports: {} })], d.version);
    assert.equal((await statusOf(app(), id, renter.api_key)).actual_status, 'loading');
    await report(app(), host, [observed(id, inst.boot)], d.version);
    const running = await statusOf(app(), id, renter.api_key);
    assert.equal(running.actual_status, 'running');
    assert.deepEqual(running.ports, { '22/tcp': [{ HostIp: '127.0.0.1', HostPort: '41007' }] });
    assert.equal(running.ssh_port, 41007);
    assert.equal(running.public_ipaddr, '127.0.0.1');
    // Exited by itself: the exit code is told.
    await report(app(), host, [observed(id, inst.boot, { state: 'exited', exit_code: 3, ports: {} })], d.version);
    const exited = await statusOf(app(), id, renter.api_key);
    assert.equal(exited.actual_status, 'exited');
    assert.match(exited.status_msg, /code 3/);
    // The renter starts it again: a new boot in the desired state; a stale report of the old boot changes nothing.
    const start = await app().request('PUT', `/api/v0/instances/${id}/`, { key: renter.api_key, body: { state: 'running' } });
    assert.equal(start.status, 200, start.raw);
    const d2 = await desired(app(), host);
    assert.equal(d2.instances[0].boot, inst.boot + 1);
    assert.notEqual(d2.version, d.version);
    await report(app(), host, [observed(id, inst.boot, { state: 'exited', exit_code: 3, ports: {} })], d.version);
    assert.equal((await statusOf(app(), id, renter.api_key)).actual_status, null);
    await report(app(), host, [observed(id, d2.instances[0].boot)], d2.version);
    assert.equal((await statusOf(app(), id, renter.api_key)).actual_status, 'running');
    // Stop: desired says stopped; destroy: the instance leaves the desired state.
    await app().request('PUT', `/api/v0/instances/${id}/`, { key: renter.api_key, body: { state: 'stopped' } });
    assert.equal((await desired(app(), host)).instances[0].state, 'stopped');
    const del = await app().request('DELETE', `/api/v0/instances/${id}/`, { key: renter.api_key });
    assert.equal(del.status, 200, del.raw);
    assert.deepEqual((await desired(app(), host)).instances, []);
  });

  test('a held long-poll answers as soon as the desired state changes', async () => {
    const host = await hostWithMachine(app());
    const renter = await app().createUser();
    const d = await desired(app(), host);
    // Unchanged: held for `wait`, then the same version.
    const same = await desired(app(), host, { after: String(d.version), wait: '1' });
    assert.equal(same.version, d.version);
    const held = desired(app(), host, { after: String(d.version), wait: '30' });
    await new Promise((r) => setImmediate(r));
    const { id } = await rentOk(app(), host.machineId * 100 + 1, { image: 'busybox' }, renter.api_key);
    const got = await held;
    assert.notEqual(got.version, d.version);
    assert.deepEqual(got.instances.map((i: any) => i.instance_id), [id]);
  });

  test("a held long-poll answers when a renter adds an SSH key to the account (the key goes into the container)", async () => {
    const host = await hostWithMachine(app());
    const renter = await app().createUser();
    const { id } = await rentOk(app(), host.machineId * 100 + 1, { image: 'busybox' }, renter.api_key);
    const d = await desired(app(), host);
    assert.deepEqual(d.instances[0].ssh_keys, []);
    const held = desired(app(), host, { after: String(d.version), wait: '30' });
    await new Promise((r) => setImmediate(r));
    const key = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl renter@laptop';
    const added = await app().request('POST', '/api/v0/ssh/', { key: renter.api_key, body: { ssh_key: key } });
    assert.equal(added.status, 200, added.raw);
    const t0 = performance.now();
    const got = await held;
    assert.ok(performance.now() - t0 < 5000, 'answered on the change, not at the end of the 30 s hold');
    assert.equal(got.instances[0].instance_id, id);
    assert.deepEqual(got.instances[0].ssh_keys, [key]);
  });

  test('a silent machine goes offline with its instances, and comes back with them running', async () => {
    const host = await hostWithMachine(app());
    const renter = await app().createUser();
    const { id } = await rentOk(app(), host.machineId * 100 + 1, { image: 'busybox' }, renter.api_key);
    const d = await desired(app(), host);
    const r = await report(app(), host, [observed(id, d.instances[0].boot)], d.version);
    assert.equal(r.desired_version, d.version);
    assert.equal(r.heartbeat_interval, 10);
    assert.equal((await statusOf(app(), id, renter.api_key)).actual_status, 'running');
    await app().advance(29);
    assert.equal((await statusOf(app(), id, renter.api_key)).actual_status, 'running');
    await app().advance(2);
    const off = await statusOf(app(), id, renter.api_key);
    assert.equal(off.actual_status, 'offline');
    // Not for rent while offline.
    const search = await app().request('POST', '/api/v0/bundles/', { body: { machine_id: { eq: host.machineId }, verified: { eq: false }, rentable: { eq: true } } });
    assert.deepEqual(search.body.offers, []);
    await report(app(), host, [observed(id, d.instances[0].boot)], d.version);
    const back = await statusOf(app(), id, renter.api_key);
    assert.equal(back.actual_status, 'running');
  });

  test('each silent machine goes offline at its own timeout (one that never reported too); the sweep ends with the last and starts again', async () => {
    const online = async (h: { apiKey: string; machineId: number }) =>
      (await app().request('GET', `/api/v0/machines/${h.machineId}`, { key: h.apiKey })).body[0].online as boolean;
    const sweeps = async () => Number((await app().store.db.selectFrom('jobs').select((eb) => eb.fn.countAll().as('n')).where('kind', '=', 'agent.sweep').executeTakeFirstOrThrow()).n);
    const a = await hostWithMachine(app());
    const b = await hostWithMachine(app());
    await report(app(), a, [], null);
    await app().advance(10);
    await report(app(), b, [], null);
    const silent = await hostWithMachine(app()); // registered at +10, never reports
    assert.equal(await sweeps(), 1, 'one sweep chain for every machine');
    await app().advance(19); // +29
    assert.deepEqual([await online(a), await online(b), await online(silent)], [true, true, true]);
    await app().advance(1); // +30: a reported 30 s ago
    assert.deepEqual([await online(a), await online(b), await online(silent)], [false, true, true]);
    await app().advance(9); // +39
    assert.deepEqual([await online(b), await online(silent)], [true, true]);
    await app().advance(1); // +40: b reported and silent registered 30 s ago
    assert.deepEqual([await online(b), await online(silent)], [false, false]);
    assert.equal(await sweeps(), 0, 'no machine is online: the sweep chain ended');
    await report(app(), a, [], null);
    assert.equal(await online(a), true);
    assert.equal(await sweeps(), 1, 'a report starts it again');
    await app().advance(30);
    assert.equal(await online(a), false);
  });

  test('a per-machine timer left in a database made before the sweep chain (agent.offline) starts the chain', async () => {
    const online = async (h: { apiKey: string; machineId: number }) =>
      (await app().request('GET', `/api/v0/machines/${h.machineId}`, { key: h.apiKey })).body[0].online as boolean;
    const host = await hostWithMachine(app());
    await report(app(), host, [], null);
    // What such a database holds: the machine's timer, and no sweep chain.
    await app().store.db.deleteFrom('jobs').where('kind', '=', 'agent.sweep').execute();
    await app().store.db.deleteFrom('kv').where('key', '=', 'agent.sweep').execute();
    await app().scheduler.schedule('agent.offline', app().clock.now() + 30, { machine_id: host.machineId });
    await app().advance(29);
    assert.equal(await online(host), true);
    await app().advance(1);
    assert.equal(await online(host), false, 'the timer started the sweep, which took the silent machine offline');
  });

  test("a heartbeat's desired_version is the desired state's, idle (one statement) or not; a bad or revoked key is 401", async () => {
    const host = await hostWithMachine(app());
    const idle = await desired(app(), host);
    assert.deepEqual(idle.instances, []);
    const quick = await report(app(), host, [], null);
    assert.equal(quick.desired_version, idle.version);
    const row = await app().store.db.selectFrom('agent_machines').select(['last_report_at', 'agent_version']).where('machine_id', '=', host.machineId).executeTakeFirstOrThrow();
    assert.deepEqual([row.last_report_at, row.agent_version], [app().clock.now(), '0.0.0-test']);
    // Busy: a renter's instance and a log request; the full path answers with that state's version.
    const renter = await app().createUser();
    const { id } = await rentOk(app(), host.machineId * 100 + 1, { image: 'busybox' }, renter.api_key);
    assert.equal((await app().request('PUT', `/api/v0/instances/request_logs/${id}/`, { key: renter.api_key, body: { tail: '10' } })).status, 200);
    const busy = await desired(app(), host);
    assert.equal(busy.log_requests.length, 1);
    assert.equal((await report(app(), host, [], null)).desired_version, busy.version);
    for (const key of [null, 'gpm_not_a_machine_key_000000000000', host.apiKey]) {
      const res = await app().request('PUT', '/api/v0/agent/status/', { key, body: { agent_version: '1', desired_version: null, observed: [] } });
      assert.equal(res.status, 401, `${key}: ${res.raw}`);
      assert.equal(res.body.error, 'auth_error');
    }
  });

  test('heartbeats at once (on PostgreSQL they share statements): each answered for its own machine and recorded; a busy one takes the full path; a revoked key is 401', async () => {
    const hosts: Host[] = [];
    for (let i = 0; i < 12; i++) hosts.push(await hostWithMachine(app(), { list: i === 0 }));
    const renter = await app().createUser();
    const busy = hosts[0];
    await rentOk(app(), busy.machineId * 100 + 1, { image: 'busybox' }, renter.api_key);
    const busyVersion = (await desired(app(), busy)).version;
    const idleVersion = (await desired(app(), hosts[1])).version;
    const revoked = hosts[11];
    assert.equal((await app().request('POST', `/api/v0/machines/${revoked.machineId}/force_delete/`, { key: revoked.apiKey, body: {} })).status, 200);
    await app().advance(5);
    // Every machine twice at once (an agent retrying), all together.
    const replies = await Promise.all([...hosts, ...hosts].map((h) =>
      app().request('PUT', '/api/v0/agent/status/', { key: h.machineKey, body: { agent_version: `v-${h.machineId}`, desired_version: null, observed: [] } })));
    replies.forEach((res, i) => {
      const h = hosts[i % hosts.length];
      if (h === revoked) return assert.equal(res.status, 401, res.raw);
      assert.equal(res.status, 200, res.raw);
      assert.equal(res.body.desired_version, h === busy ? busyVersion : idleVersion);
    });
    const rows = await app().store.db.selectFrom('agent_machines').select(['machine_id', 'last_report_at', 'agent_version'])
      .where('machine_id', 'in', hosts.slice(0, 11).map((h) => h.machineId)).orderBy('machine_id').execute();
    assert.deepEqual(rows.map((r) => [r.machine_id, r.last_report_at, r.agent_version]), hosts.slice(0, 11).map((h) => [h.machineId, app().clock.now(), `v-${h.machineId}`]));
  });

  test('touchManyIfIdle (PostgreSQL): one statement touches the idle machines named and no other; a busy or unknown key is left out', async (t) => {
    if (app().store.dialect !== 'postgres') return t.diagnostic('PostgreSQL only: SQLite heartbeats run one at a time');
    const hosts: Host[] = [];
    for (let i = 0; i < 4; i++) hosts.push(await hostWithMachine(app(), { list: i === 0 }));
    const renter = await app().createUser();
    await rentOk(app(), hosts[0].machineId * 100 + 1, { image: 'busybox' }, renter.api_key);
    const beats = [...hosts.slice(0, 3), hosts[1]].map((h) => ({ keyHash: sha256Hex(h.machineKey), agentVersion: `b-${h.machineId}` }));
    beats.push({ keyHash: sha256Hex('gpm_unknown'), agentVersion: 'x' });
    const touched = await agentStore(app().store.db).touchManyIfIdle(beats, 12345);
    assert.deepEqual([...touched.values()].map((r) => r.machine_id).sort(), [hosts[1].machineId, hosts[2].machineId].sort());
    const rows = await app().store.db.selectFrom('agent_machines').select(['machine_id', 'last_report_at', 'agent_version'])
      .where('machine_id', 'in', hosts.map((h) => h.machineId)).orderBy('machine_id').execute();
    assert.deepEqual(rows.map((r) => [r.last_report_at === 12345, r.agent_version]),
      [[false, '0.0.0-test'], [true, `b-${hosts[1].machineId}`], [true, `b-${hosts[2].machineId}`], [false, '0.0.0-test']]);
  });

  test('more silent machines than one sweep takes go offline together, at their timeout', async () => {
    const hosts: Host[] = [];
    for (let i = 0; i < 55; i++) hosts.push(await hostWithMachine(app(), { list: false }));
    await app().advance(29);
    const online = async () => (await app().request('GET', '/api/v0/machines?owner=all')).body.machines.filter((m: any) => hosts.some((h) => h.machineId === m.id) && m.online).length;
    assert.equal(await online(), 55);
    await app().advance(1);
    assert.equal(await online(), 0);
  });

  test('request_logs on a real host asks its agent, and result_url serves its answer', async () => {
    const host = await hostWithMachine(app());
    const renter = await app().createUser();
    const { id } = await rentOk(app(), host.machineId * 100 + 1, { image: 'busybox' }, renter.api_key);
    const lr = await app().request('PUT', `/api/v0/instances/request_logs/${id}/`, { key: renter.api_key, body: { tail: '50', filter: 'hello' } });
    assert.equal(lr.status, 200, lr.raw);
    const d = await desired(app(), host);
    assert.equal(d.log_requests.length, 1);
    const req = d.log_requests[0];
    assert.equal(req.instance_id, id);
    assert.equal(req.tail, 50);
    assert.equal(req.filter, 'hello');
    const path = new URL(lr.body.result_url).pathname;
    const fetching = app().request('GET', path, { key: null });
    const ans = await app().request('PUT', `/api/v0/agent/logs/${req.request_id}/`, { key: host.machineKey, body: { text: 'hello world\n' } });
    assert.equal(ans.status, 200, ans.raw);
    const text = await fetching;
    assert.equal(text.status, 200);
    assert.equal(text.raw, 'hello world\n');
    // Answered: gone from the desired state, and a new version.
    const d2 = await desired(app(), host);
    assert.deepEqual(d2.log_requests, []);
    assert.notEqual(d2.version, d.version);
    const unknown = await app().request('PUT', '/api/v0/agent/logs/log_doesnotexist/', { key: host.machineKey, body: { text: '' } });
    assert.equal(unknown.status, 404);
  });
  test('account environment variables reach the agent with the instance (its own env wins); extra_env does not show them', async () => {
    const host = await hostWithMachine(app());
    const renter = await app().createUser();
    for (const [key, value] of [['HF_TOKEN', 'hf_account_secret'], ['FOO', 'from-account']]) {
      assert.equal((await app().request('POST', '/api/v0/secrets/', { key: renter.api_key, body: { key, value } })).status, 200);
    }
    const { id, instanceKey } = await rentOk(app(), host.machineId * 100 + 1, { image: 'busybox', runtype: 'ssh', env: { FOO: 'bar' } }, renter.api_key);
    // Changed after the creation: the instance keeps what it was created with.
    await app().request('PUT', '/api/v0/secrets/', { key: renter.api_key, body: { key: 'HF_TOKEN', value: 'changed-later' } });
    const inst = (await desired(app(), host)).instances.find((x: any) => x.instance_id === id);
    assert.deepEqual(inst.env, { HF_TOKEN: 'hf_account_secret', FOO: 'bar', CONTAINER_API_KEY: instanceKey });
    const shown = await statusOf(app(), id, renter.api_key);
    assert.deepEqual(shown.extra_env, [['FOO', 'bar']]);
    const row = await app().store.db.selectFrom('instances').select('account_env_sealed').where('id', '=', id).executeTakeFirstOrThrow();
    assert.ok(row.account_env_sealed && !row.account_env_sealed.includes('hf_account_secret'), 'sealed at rest');
  });
  test('the instance key reaches its own machine\'s agent as CONTAINER_API_KEY (api-spec), over an env variable of that name; sealed at rest; told to no other machine', async () => {
    const host = await hostWithMachine(app());
    const renter = await app().createUser();
    const { id, instanceKey } = await rentOk(app(), host.machineId * 100 + 1, { image: 'busybox', runtype: 'args', env: { CONTAINER_API_KEY: 'mine' } }, renter.api_key);
    const inst = (await desired(app(), host)).instances.find((x: any) => x.instance_id === id);
    assert.equal(inst.env.CONTAINER_API_KEY, instanceKey);
    const row = await app().store.db.selectFrom('instances').select('api_key_sealed').where('id', '=', id).executeTakeFirstOrThrow();
    assert.ok(row.api_key_sealed && !row.api_key_sealed.includes(instanceKey), 'sealed at rest');
    // Another machine's agent is not told it.
    const other = await hostWithMachine(app());
    assert.equal((await desired(app(), other)).instances.length, 0);
  });
});
