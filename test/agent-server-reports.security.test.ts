// Threats from a host's own agent (issue 29 items 20 and 22): status reports that skip registration's checks (host
// ports `99999`, `0` or outside the machine's range, markup in `HostIp`, an inverted port range or a GPU list that
// does not match `num_gpus`) stored and shown to renters; a rented machine's hardware changed under its renters; a
// deleted machine's registration id registering again for a working key; one account registering machines without
// end (the operator's caps: machines at once, new ones an hour).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect } from './helpers/harness.js';
import { desired, hardware, hostWithMachine, observed, registrationId, report } from './agent-server-fixtures.js';
import { rentOk, statusOf } from './instances-fixtures.js';

forEachDialect('agent reports and registrations: what a host may not make renters see', (app) => {
  test('a report with a host port outside the machine\'s range, 0, 99999 or markup in HostIp is 400 naming it, and nothing of it is shown', async () => {
    const host = await hostWithMachine(app());
    const renter = await app().createUser();
    const { id } = await rentOk(app(), host.machineId * 100 + 1, { image: 'busybox', runtype: 'ssh_direc ssh_proxy' }, renter.api_key);
    const d = await desired(app(), host);
    const boot = d.instances[0].boot;
    const bad: [Record<string, { HostIp: string; HostPort: string }[]>, RegExp][] = [
      [{ '22/tcp': [{ HostIp: '0.0.0.0', HostPort: '99999' }] }, /HostPort: 99999 is outside the machine's port range 41000-41099/],
      [{ '22/tcp': [{ HostIp: '0.0.0.0', HostPort: '0' }] }, /HostPort: 0 is outside/],
      [{ '22/tcp': [{ HostIp: '0.0.0.0', HostPort: '22' }] }, /HostPort: 22 is outside/],
      [{ '22/tcp': [{ HostIp: '0.0.0.0', HostPort: '41100' }] }, /HostPort: 41100 is outside/],
      [{ '22/tcp': [{ HostIp: '<img src=x onerror=alert(1)>', HostPort: '41007' }] }, /HostIp: .* is not an IP address/],
      [{ '22/tcp': [{ HostIp: '10.66.66.66.1', HostPort: '41007' }] }, /HostIp/],
    ];
    for (const [ports, msg] of bad) {
      const r = await app().request('PUT', '/api/v0/agent/status/', {
        key: host.machineKey, body: { agent_version: '1', desired_version: d.version, observed: [observed(id, boot, { ports })] },
      });
      assert.equal(r.status, 400, `${JSON.stringify(ports)}: ${r.raw}`);
      assert.equal(r.body.error, 'bad_request');
      assert.match(r.body.msg, /^observed\[0\]\.ports\["22\/tcp"\]/);
      assert.match(r.body.msg, msg);
      const shown = await statusOf(app(), id, renter.api_key);
      assert.equal(shown.actual_status, null, 'the refused report moved nothing');
      assert.ok(!JSON.stringify(shown).includes('99999') && !JSON.stringify(shown).includes('<img'), JSON.stringify(shown.ports));
    }
    // Docker's own forms pass: an IPv4 or IPv6 address, or none, with a port of the range.
    const ok = { '22/tcp': [{ HostIp: '0.0.0.0', HostPort: '41000' }, { HostIp: '::', HostPort: '41000' }], '8080/tcp': [{ HostIp: '', HostPort: '41099' }] };
    await report(app(), host, [observed(id, boot, { ports: ok })], d.version);
    const running = await statusOf(app(), id, renter.api_key);
    assert.equal(running.actual_status, 'running');
    assert.deepEqual(running.ports, ok);
  });

  test('a report\'s hardware gets registration\'s checks: an inverted port range, a GPU list not matching num_gpus, markup in a name are 400', async () => {
    const host = await hostWithMachine(app());
    const cases: [Partial<ReturnType<typeof hardware>>, RegExp][] = [
      [{ direct_port_start: 50000, direct_port_end: 40000 }, /direct_port_end must not be below/],
      [{ gpu_name: 'H100 SXM', num_gpus: 8 }, /gpus lists 2 GPUs but num_gpus is 8/],
      [{ gpu_name: '<b>H100 SXM</b>' }, /hardware\.gpu_name: must not contain/],
      [{ public_ipaddr: '999.1.1.1' }, /public_ipaddr/],
    ];
    for (const [over, msg] of cases) {
      for (const path of ['status', 'register'] as const) {
        const r = path === 'status'
          ? await app().request('PUT', '/api/v0/agent/status/', { key: host.machineKey, body: { agent_version: '1', desired_version: null, observed: [], hardware: hardware(over) } })
          : await app().request('POST', '/api/v0/machines/register/', { key: host.apiKey, body: { registration_id: registrationId(), agent_version: '1', hardware: hardware(over) } });
        assert.equal(r.status, 400, `${path} ${JSON.stringify(over)}: ${r.raw}`);
        assert.equal(r.body.error, 'bad_request');
        assert.match(r.body.msg, msg);
      }
    }
    const m = await app().request('GET', `/api/v0/machines/${host.machineId}`, { key: host.apiKey });
    assert.equal(m.status, 200, m.raw);
    assert.equal(m.body[0].gpu_name, 'RTX 4090');
  });

  test('a rented machine\'s description does not change under its renters: held (hardware_pending) until it is free; its address changes at once', async () => {
    const host = await hostWithMachine(app());
    const renter = await app().createUser();
    const { id } = await rentOk(app(), host.machineId * 100 + 1, { image: 'busybox' }, renter.api_key);
    const shown = async () => (await app().request('GET', `/api/v0/machines/${host.machineId}`, { key: host.apiKey })).body[0];
    const renamed = hardware({ gpu_name: 'H100 SXM', gpu_ram: 81_559, disk_space: 4000, public_ipaddr: '127.0.0.2' });
    const held = await report(app(), host, [], null, { hardware: renamed });
    assert.equal(held.hardware_pending, true);
    let m = await shown();
    assert.equal(m.gpu_name, 'RTX 4090', 'the renter keeps what they rented');
    assert.equal(m.disk_space, 900);
    assert.equal(m.public_ipaddr, '127.0.0.2', 'where the machine is reached is the truth at once');
    assert.equal((await statusOf(app(), id, renter.api_key)).gpu_name, 'RTX 4090');
    // Heartbeats while rented keep it held and say so.
    assert.equal((await report(app(), host, [], null)).hardware_pending, true);
    assert.equal((await shown()).gpu_name, 'RTX 4090');
    // Free again: the next heartbeat (an idle one, which would be one statement) applies it.
    assert.equal((await app().request('DELETE', `/api/v0/instances/${id}/`, { key: renter.api_key })).status, 200);
    const applied = await report(app(), host, [], null);
    assert.equal(applied.hardware_pending, undefined);
    m = await shown();
    assert.equal(m.gpu_name, 'H100 SXM');
    assert.equal(m.disk_space, 4000);
    // A free machine's report applies at once.
    const back = await report(app(), host, [], null, { hardware: hardware({ public_ipaddr: '127.0.0.2' }) });
    assert.equal(back.hardware_pending, undefined);
    assert.equal((await shown()).gpu_name, 'RTX 4090');
  });

  test('a deleted machine\'s registration_id does not register again: 409, and no key of it works', async () => {
    const host = await hostWithMachine(app(), { list: false });
    const del = await app().request('POST', `/api/v0/machines/${host.machineId}/force_delete/`, { key: host.apiKey, body: {} });
    assert.equal(del.status, 200, del.raw);
    const again = await app().request('POST', '/api/v0/machines/register/', {
      key: host.apiKey, body: { registration_id: host.registrationId, agent_version: '1', hardware: hardware() },
    });
    assert.equal(again.status, 409, again.raw);
    assert.deepEqual(Object.keys(again.body).sort(), ['error', 'msg', 'success']);
    assert.equal(again.body.error, 'conflict');
    assert.match(again.body.msg, new RegExp(`machine ${host.machineId} of this registration_id was deleted`));
    const row = await app().store.db.selectFrom('agent_machines').select('key_hash').where('machine_id', '=', host.machineId).executeTakeFirstOrThrow();
    assert.equal(row.key_hash, null);
    assert.equal((await app().request('GET', '/api/v0/agent/desired/', { key: host.machineKey })).status, 401);
    // A new registration id is a new machine.
    const fresh = await app().request('POST', '/api/v0/machines/register/', {
      key: host.apiKey, body: { registration_id: registrationId(), agent_version: '1', hardware: hardware() },
    });
    assert.equal(fresh.status, 200, fresh.raw);
    assert.notEqual(fresh.body.machine_id, host.machineId);
  });
});

const MACHINES_MAX = 3;
forEachDialect('agent registrations: machines one host account has at once', (app) => {
  test(`past GPUPLANE_HOST_MACHINES_MAX (${MACHINES_MAX}) a new machine is 429 rate_limited, even when registered all at once; a deleted one frees a place`, async () => {
    const { api_key } = await app().createUser();
    const register = (registration_id = registrationId()) =>
      app().request('POST', '/api/v0/machines/register/', { key: api_key, body: { registration_id, agent_version: '1', hardware: hardware() } });
    const replies = await Promise.all(Array.from({ length: 8 }, () => register()));
    const ok = replies.filter((r) => r.status === 200);
    assert.equal(ok.length, MACHINES_MAX, replies.map((r) => r.raw).join('\n'));
    for (const r of replies.filter((x) => x.status !== 200)) {
      assert.equal(r.status, 429, r.raw);
      assert.deepEqual(Object.keys(r.body).sort(), ['error', 'msg', 'success']);
      assert.equal(r.body.error, 'rate_limited');
      assert.match(r.body.msg, /has 3 machines registered, the most this server allows \(3\)/);
    }
    // A retried registration of a machine it has is not a new machine.
    const id0 = (await app().store.db.selectFrom('agent_machines').select('registration_id').where('machine_id', '=', ok[0].body.machine_id).executeTakeFirstOrThrow()).registration_id;
    assert.equal((await register(id0)).status, 200);
    const del = await app().request('POST', `/api/v0/machines/${ok[0].body.machine_id}/force_delete/`, { key: api_key, body: {} });
    assert.equal(del.status, 200, del.raw);
    assert.equal((await register()).status, 200);
    assert.equal((await register()).status, 429);
  });
}, { config: { GPUPLANE_HOST_MACHINES_MAX: String(MACHINES_MAX) } });

const PER_HOUR = 2;
forEachDialect('agent registrations: new machines an hour', (app) => {
  test(`past GPUPLANE_HOST_REGISTRATIONS_PER_HOUR (${PER_HOUR}) a new machine is 429 with Retry-After until the hour has passed; deleting does not reset it`, async () => {
    const { api_key } = await app().createUser();
    const register = () => app().request('POST', '/api/v0/machines/register/', { key: api_key, body: { registration_id: registrationId(), agent_version: '1', hardware: hardware() } });
    const first = await register();
    assert.equal(first.status, 200, first.raw);
    await app().advance(600);
    assert.equal((await register()).status, 200);
    assert.equal((await app().request('POST', `/api/v0/machines/${first.body.machine_id}/force_delete/`, { key: api_key, body: {} })).status, 200);
    const over = await register();
    assert.equal(over.status, 429, over.raw);
    assert.equal(over.body.error, 'rate_limited');
    assert.match(over.body.msg, /registered 2 machines in the last hour, the most this server allows \(2\); try again in 3000 s/);
    assert.equal(over.headers['retry-after'], '3000');
    await app().advance(3000);
    assert.equal((await register()).status, 200);
  });
}, { config: { GPUPLANE_HOST_REGISTRATIONS_PER_HOUR: String(PER_HOUR) } });
