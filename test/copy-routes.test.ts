// `vastai copy`'s routes (client-compat-connect "copy SRC DST"; client-compat-more §c): with one side local, the
// reply says where the client's rsync reaches the instance (dst_addr/dst_port or src_addr/src_port: the gateway's
// host and the instance's copy port), as vast.py reads it, for every form of id the client sends ("7", "C.7", 7,
// "local", null) and on either route; the checks of who and what may be copied, with their exact codes: someone
// else's instance is 404, a key without instance_write 403, an instance on a simulated machine or not running 409,
// cloud connections 503, malformed sides 400 (a volume, V.<id>, is copied through an instance that mounts it: test/volumes-host-e2e.test.ts). Copies between instances are test/copy-direct.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect, type TestApp } from './helpers/harness.js';
import { desired, hostWithMachine, observed, report } from './agent-server-fixtures.js';
import { addMachine, offerFor, rentOk, untilRunning } from './instances-fixtures.js';
import type { TunnelsApi } from '../src/tunnels/tunnels-contract.js';

/** The copy port by issue 31's design: slot k = id mod floor(55536 / 3) of 10000-65535, ports 10000 + 3k …, copy = +2. */
const copyPort = (id: number) => 10000 + 3 * (id % Math.floor(55536 / 3)) + 2;
const doc = (...cats: string[]) => ({ api: Object.fromEntries(cats.map((c) => [c, {}])) });

async function teamMember(t: TestApp, ownerKey: string, teamId: number, permissions?: unknown): Promise<string> {
  const m = await t.createUser();
  const inv = await t.request('POST', `/api/v0/team/invite/?email=${encodeURIComponent(m.user.email)}&role=member`, { key: ownerKey });
  assert.equal(inv.status, 200, inv.raw);
  const code = (await t.request('GET', `/_emu/outbox?to=${encodeURIComponent(m.user.email)}`)).body.messages.at(-1).code;
  assert.equal((await t.request('POST', '/api/v0/team/invitations/accept/', { key: m.api_key, body: { code } })).status, 200);
  const k = await t.request('POST', '/api/v0/auth/apikeys/', { key: m.api_key, body: { team_id: teamId, ...(permissions ? { permissions } : {}) } });
  assert.equal(k.status, 200, k.raw);
  return k.body.key as string;
}

forEachDialect('copy routes', (app) => {
  const put = (path: string, body: unknown, key?: string | null) => app().request('PUT', `/api/v0/commands/${path}/`, { key, body });

  /** An instance reported running by its host's agent (a machine run by `gpuplane agent`), rented with `key`. */
  async function onRealHost(key?: string, body: Record<string, unknown> = {}) {
    const renter = key ? { api_key: key } : await app().createUser({ credit: 100 });
    const host = await hostWithMachine(app());
    const { id, instanceKey } = await rentOk(app(), host.machineId * 100 + 1, { image: 'busybox', ...body }, renter.api_key);
    const d = await desired(app(), host);
    await report(app(), host, [observed(id, d.instances[0].boot)], d.version);
    return { key: renter.api_key, id, host, instanceKey, d };
  }

  test('one side local: the reply gives the gateway host and the instance\'s copy port, under the names vast.py reads, for every id form', async () => {
    const { key, id } = await onRealHost();
    const host = new URL(app().config.publicUrl).hostname;
    const upload = { success: true, dst_addr: host, dst_port: copyPort(id) };
    const download = { success: true, src_addr: host, src_port: copyPort(id) };
    const cases: [string, Record<string, unknown>, Record<string, unknown>][] = [
      // vastai copy data C.<id>:/workspace (a bare local path: null), and the legacy <id>:/workspace
      ['rsync', { src_id: null, dst_id: `C.${id}`, src_path: 'data', dst_path: '/workspace' }, upload],
      ['rsync', { src_id: null, dst_id: String(id), src_path: 'data', dst_path: '/workspace' }, upload],
      // vastai copy <id> data: a bare number is an integer with path /
      ['rsync', { src_id: id, dst_id: null, src_path: '/', dst_path: 'data' }, download],
      ['rsync', { src_id: `C.${id}`, dst_id: null, src_path: '/workspace/', dst_path: 'data' }, download],
      // an explicit local: side goes to copy_direct, and the client then runs rsync just the same
      ['copy_direct', { src_id: 'local', dst_id: `C.${id}`, src_path: 'data', dst_path: '/workspace' }, upload],
      ['copy_direct', { src_id: `C.${id}`, dst_id: 'local', src_path: '/workspace', dst_path: 'data' }, download],
    ];
    for (const [route, body, want] of cases) {
      const res = await put(route, { client_id: 'me', ...body }, key);
      assert.equal(res.status, 200, `${route} ${JSON.stringify(body)}: ${res.raw}`);
      const { msg, ...rest } = res.body;
      assert.deepEqual(rest, want, `${route} ${JSON.stringify(body)}`);
      assert.match(msg, new RegExp(`vastai_kaalia@${host}::${id}`));
    }
  });

  test('malformed sides are 400 naming the field; cloud connections are 503 saying so (volumes: volumes-host-e2e); no key is 401', async () => {
    const { key, id } = await onRealHost();
    const bad: [string, Record<string, unknown>, number, RegExp][] = [
      ['rsync', { src_id: null, dst_id: null, src_path: 'a', dst_path: 'b' }, 400, /both local/],
      ['copy_direct', { src_id: 'local', dst_id: 'local', src_path: 'a', dst_path: 'b' }, 400, /both local/],
      ['rsync', { src_id: null, dst_id: { id }, src_path: 'a', dst_path: 'b' }, 400, /body\.dst_id/],
      ['rsync', { src_id: -3, dst_id: null, src_path: 'a', dst_path: 'b' }, 400, /body\.src_id -3 is not an instance id/],
      ['rsync', { src_id: 'C.x', dst_id: null, src_path: 'a', dst_path: 'b' }, 400, /body\.src_id "C\.x"/],
      ['rsync', { src_id: null, dst_id: String(id), src_path: 5, dst_path: 'b' }, 400, /src_path/],
      ['copy_direct', { src_id: String(id), dst_id: String(id), src_path: '/a\nb', dst_path: '/b' }, 400, /body\.src_path must not hold control characters/],
      ['rsync', { src_id: null, dst_id: '9'.repeat(40), src_path: 'a', dst_path: 'b' }, 400, /body\.dst_id/],
      ['rsync', { src_id: null, dst_id: String(id), src_path: 'a'.repeat(5000), dst_path: 'b' }, 400, /src_path/],
      ['copy_direct', { src_id: 's3.101', dst_id: String(id), src_path: '/a', dst_path: '/b' }, 503, /cloud connection: cloud copy needs rclone/],
    ];
    for (const [route, body, status, msg] of bad) {
      const res = await put(route, { client_id: 'me', ...body }, key);
      assert.equal(res.status, status, `${route} ${JSON.stringify(body)}: ${res.raw}`);
      assert.deepEqual(Object.keys(res.body).sort(), ['error', 'msg', 'success']);
      assert.equal(res.body.success, false);
      assert.equal(res.body.error, status === 400 ? 'bad_request' : 'service_unavailable');
      assert.match(res.body.msg, msg);
    }
    for (const [method, path] of [['PUT', 'rsync'], ['PUT', 'copy_direct'], ['DELETE', 'copy_direct']]) {
      const res = await app().request(method, `/api/v0/commands/${path}/`, { key: null, body: { client_id: 'me', src_id: null, dst_id: String(id) } });
      assert.equal(res.status, 401, `${method} ${path}: ${res.raw}`);
    }
  });

  test('who may: the renter and team members with instance_write; someone else 404; a key without instance_write and an instance key 403', async () => {
    const owner = await app().createUser({ credit: 1000 });
    const t = await app().request('POST', '/api/v0/team/', { key: owner.api_key, body: { team_name: 'copiers' } });
    assert.equal(t.status, 200, t.raw);
    const ownerTeamKey = (await app().request('POST', '/api/v0/auth/apikeys/', { key: owner.api_key, body: { team_id: t.body.id } })).body.key as string;
    const { id, instanceKey } = await onRealHost(ownerTeamKey);
    const writer = await teamMember(app(), owner.api_key, t.body.id);
    const reader = await teamMember(app(), owner.api_key, t.body.id, doc('instance_read'));
    const outsider = await app().createUser({ credit: 100 });
    const body = { client_id: 'me', src_id: null, dst_id: String(id), src_path: 'data', dst_path: '/workspace' };

    assert.equal((await put('rsync', body, ownerTeamKey)).status, 200);
    const member = await put('rsync', body, writer);
    assert.equal(member.status, 200, member.raw);
    assert.equal(member.body.dst_port, copyPort(id));
    for (const key of [outsider.api_key, owner.api_key]) {
      // Not in the caller's context (the personal context of the team's owner included): not there.
      const res = await put('rsync', body, key);
      assert.equal(res.status, 404, res.raw);
      assert.equal(res.body.error, 'not_found');
      assert.equal(res.body.msg, `instance ${id} not found`);
      const cancel = await app().request('DELETE', '/api/v0/commands/copy_direct/', { key, body: { client_id: 'me', dst_id: String(id) } });
      assert.equal(cancel.status, 404, cancel.raw);
    }
    // Copying between an instance of one's own and someone else's: the other one is not there.
    const mine = await onRealHost(outsider.api_key);
    const across = await put('copy_direct', { client_id: 'me', src_id: String(id), dst_id: `C.${mine.id}`, src_path: '/a/', dst_path: '/b/' }, outsider.api_key);
    assert.equal(across.status, 404, across.raw);
    assert.equal(across.body.msg, `instance ${id} not found`);
    const into = await put('copy_direct', { client_id: 'me', src_id: String(mine.id), dst_id: String(id), src_path: '/a/', dst_path: '/b/' }, outsider.api_key);
    assert.equal(into.status, 404, into.raw);
    assert.equal(into.body.msg, `instance ${id} not found`);
    for (const key of [reader, instanceKey]) {
      const res = await put('rsync', body, key);
      assert.equal(res.status, 403, res.raw);
      assert.equal(res.body.error, 'permission_denied');
    }
  });

  test('only running instances on real hosts: a simulated machine\'s instance, a stopped one and runtype args are 409 saying why', async () => {
    const { user, api_key } = await app().createUser({ credit: 100 });
    const m = await addMachine(app(), { num_gpus: 1 });
    const { id: sim } = await rentOk(app(), offerFor(m, 1), {}, api_key);
    await untilRunning(app(), sim, api_key);
    void user;
    const simRes = await put('rsync', { client_id: 'me', src_id: null, dst_id: `C.${sim}`, src_path: 'a', dst_path: '/b' }, api_key);
    assert.equal(simRes.status, 409, simRes.raw);
    assert.equal(simRes.body.error, 'conflict');
    assert.equal(simRes.body.msg, `instance ${sim} is on a simulated machine (emulator): there is no container to copy to or from; copy works for instances on machines run by gpuplane agent`);

    const real = await onRealHost(api_key);
    const both = await put('copy_direct', { client_id: 'me', src_id: String(real.id), dst_id: String(sim), src_path: '/a', dst_path: '/b' }, api_key);
    assert.equal(both.status, 409, both.raw);
    assert.match(both.body.msg, new RegExp(`instance ${sim} is on a simulated machine`));

    assert.equal((await app().request('PUT', `/api/v0/instances/${real.id}/`, { key: api_key, body: { state: 'stopped' } })).status, 200);
    const stopped = await put('rsync', { client_id: 'me', src_id: String(real.id), dst_id: null, src_path: '/a', dst_path: 'b' }, api_key);
    assert.equal(stopped.status, 409, stopped.raw);
    assert.match(stopped.body.msg, new RegExp(`^instance ${real.id} is .*: copy needs it running`));

    const args = await onRealHost(api_key, { runtype: 'args', args: ['sleep', 'infinity'] });
    const argsRes = await put('rsync', { client_id: 'me', src_id: null, dst_id: String(args.id), src_path: 'a', dst_path: '/b' }, api_key);
    assert.equal(argsRes.status, 409, argsRes.raw);
    assert.match(argsRes.body.msg, /runtype args, which has no SSH endpoint/);
  });

  test('copy between instances: 409 while a host\'s tunnel is down; cancel with nothing running succeeds', async () => {
    const { key, id: a } = await onRealHost();
    const { id: b } = await onRealHost(key);
    const body = { client_id: 'me', src_id: String(a), dst_id: `C.${b}`, src_path: '/workspace/', dst_path: '/workspace/' };
    const down: TunnelsApi = {
      connected: async () => false,
      open: async () => assert.fail('no stream is opened to a host whose tunnel is down'),
    };
    app().services.copy.useTunnels(down);
    const res = await put('copy_direct', body, key);
    assert.equal(res.status, 409, res.raw);
    assert.match(res.body.msg, new RegExp(`the host of instance ${a} is not connected to the server now`));

    const cancel = await app().request('DELETE', '/api/v0/commands/copy_direct/', { key, body: { client_id: 'me', dst_id: String(b) } });
    assert.equal(cancel.status, 200, cancel.raw);
    assert.equal(cancel.body.success, true);
    const bad = await app().request('DELETE', '/api/v0/commands/copy_direct/', { key, body: { client_id: 'me', dst_id: 'local' } });
    assert.equal(bad.status, 400, bad.raw);
  });
});
