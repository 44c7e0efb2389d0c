// Jupyter runtypes on the server (issue 32 item 1), on SQLite and PostgreSQL: a token made at rent time for
// jupyter_direct and jupyter_proxy only, sealed at rest (its plaintext nowhere in the instance's row or the
// idempotency record), shown to whoever may act on the instance (`jupyter_token`, and `jupyter_url` while it runs:
// the host's published 8080 for direct, the port URL for proxy), sent to the machine's agent in the desired state with
// the lab/notebook choice and the directory; an agent's `jupyter_missing` becomes the instance's status_msg; bad
// `jupyter_dir` input is a 400.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect, type TestApp } from './helpers/harness.js';
import { desired, hostWithMachine, observed, report, type Host } from './agent-server-fixtures.js';
import { addMachine, offerFor, rent, rentOk, statusOf, untilRunning } from './instances-fixtures.js';
import { JUPYTER_MISSING_MSG } from '../src/agent-server/agent-server-observed.js';

const TOKEN = /^[A-Za-z0-9_-]{43}$/;
const PORTS_8080 = { '8080/tcp': [{ HostIp: '127.0.0.1', HostPort: '41009' }], '22/tcp': [{ HostIp: '127.0.0.1', HostPort: '41008' }] };

/** Every column of the instance's row, as text: where a plaintext secret must not be. */
async function rowText(app: TestApp, id: number): Promise<string> {
  const row = await app.store.db.selectFrom('instances').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  return JSON.stringify(row);
}

async function rentOn(app: TestApp, host: Host, key: string, body: Record<string, unknown>) {
  return rentOk(app, host.machineId * 100 + 1, { image: 'jupyter/base-notebook', ...body }, key);
}

/** Reports the instance running (with `over`) and returns its view. */
async function running(app: TestApp, host: Host, id: number, key: string, over: Record<string, unknown> = {}) {
  const d = await desired(app, host);
  const mine = d.instances.find((i: { instance_id: number }) => i.instance_id === id);
  await report(app, host, [observed(id, mine.boot, { ports: PORTS_8080, ...over })], d.version);
  return statusOf(app, id, key);
}

forEachDialect('jupyter runtypes', (app) => {
  test('jupyter_direct: a token at rent time, sealed at rest, shown to the owner; jupyter_url is the host\'s 8080 while running', async () => {
    const host = await hostWithMachine(app());
    const renter = await app().createUser();
    const { id } = await rentOn(app(), host, renter.api_key, { runtype: 'jupyter_direc ssh_direc ssh_proxy', jupyter_dir: '/workspace' });
    const before = await statusOf(app(), id, renter.api_key);
    assert.equal(before.image_runtype, 'jupyter_direct');
    assert.match(before.jupyter_token, TOKEN);
    assert.equal(before.jupyter_url, null, 'not running yet: nowhere to open');
    const token: string = before.jupyter_token;
    // At rest: sealed, never the plaintext.
    const text = await rowText(app(), id);
    assert.ok(!text.includes(token), 'the plaintext token is not in the instance row');
    const sealed = await app().store.db.selectFrom('instances').select('jupyter_token_sealed').where('id', '=', id).executeTakeFirstOrThrow();
    assert.ok(sealed.jupyter_token_sealed && sealed.jupyter_token_sealed.length > token.length);
    // The agent is told the token, the kind and the directory (its container's JUPYTER_TOKEN).
    const d = await desired(app(), host);
    const inst = d.instances.find((i: { instance_id: number }) => i.instance_id === id);
    assert.equal(inst.runtype, 'jupyter');
    assert.equal(inst.jupyter_token, token);
    assert.equal(inst.jupyter_dir, '/workspace');
    assert.equal(inst.use_jupyter_lab, undefined, 'notebook unless use_jupyter_lab');
    assert.deepEqual([...inst.ports].sort(), ['22/tcp', '8080/tcp']);
    const view = await running(app(), host, id, renter.api_key);
    assert.equal(view.actual_status, 'running');
    assert.equal(view.jupyter_token, token);
    assert.equal(view.jupyter_url, `http://127.0.0.1:41009/?token=${token}`);
    assert.equal(view.status_msg, null);
    // The list shows the same.
    const list = await app().request('GET', '/api/v0/instances/', { key: renter.api_key });
    const listed = list.body.instances.find((i: { id: number }) => i.id === id);
    assert.equal(listed.jupyter_url, view.jupyter_url);
    // Stopped: no URL, the token stays.
    await app().request('PUT', `/api/v0/instances/${id}/`, { key: renter.api_key, body: { state: 'stopped' } });
    const stopped = await statusOf(app(), id, renter.api_key);
    assert.equal(stopped.jupyter_url, null);
    assert.equal(stopped.jupyter_token, token);
  });

  test('jupyter_proxy: jupyter_url is port_urls[8080/tcp] with the token; use_jupyter_lab reaches the agent; each instance has its own token', async () => {
    const host = await hostWithMachine(app());
    const renter = await app().createUser();
    const a = await rentOn(app(), host, renter.api_key, { runtype: 'jupyter', use_jupyter_lab: true });
    const b = await rentOn(app(), host, renter.api_key, { runtype: 'jupyter_proxy' });
    const d = await desired(app(), host);
    const da = d.instances.find((i: { instance_id: number }) => i.instance_id === a.id);
    assert.equal(da.use_jupyter_lab, true);
    assert.equal(da.jupyter_dir, undefined, 'no directory given: the agent uses its default');
    assert.deepEqual(da.ports, [], 'proxy: nothing published');
    await report(app(), host, d.instances.map((i: { instance_id: number; boot: number }) => observed(i.instance_id, i.boot, { ports: {} })), d.version);
    const va = await statusOf(app(), a.id, renter.api_key);
    const vb = await statusOf(app(), b.id, renter.api_key);
    assert.equal(va.actual_status, 'running');
    assert.match(va.jupyter_token, TOKEN);
    assert.notEqual(va.jupyter_token, vb.jupyter_token);
    assert.ok(va.port_urls['8080/tcp'], JSON.stringify(va.port_urls));
    assert.equal(va.jupyter_url, `${va.port_urls['8080/tcp']}?token=${va.jupyter_token}`);
    assert.equal(vb.jupyter_url, `${vb.port_urls['8080/tcp']}?token=${vb.jupyter_token}`);
    assert.equal(va.use_jupyter_lab, true);
  });

  test('SSH and args runtypes have no Jupyter token, no jupyter_url, and their desired state no Jupyter fields', async () => {
    const host = await hostWithMachine(app());
    const renter = await app().createUser();
    const ssh = await rentOn(app(), host, renter.api_key, { runtype: 'ssh_direc ssh_proxy', jupyter_dir: '/x', use_jupyter_lab: true });
    const args = await rentOn(app(), host, renter.api_key, { runtype: 'args', args: ['sleep', 'infinity'] });
    const d = await desired(app(), host);
    for (const i of d.instances) {
      assert.equal(i.jupyter_token, undefined);
      assert.equal(i.jupyter_dir, undefined);
      assert.equal(i.use_jupyter_lab, undefined);
    }
    await report(app(), host, d.instances.map((i: { instance_id: number; boot: number }) => observed(i.instance_id, i.boot, { ports: PORTS_8080 })), d.version);
    for (const { id } of [ssh, args]) {
      const v = await statusOf(app(), id, renter.api_key);
      assert.equal(v.actual_status, 'running');
      assert.equal(v.jupyter_token, null);
      assert.equal(v.jupyter_url, null);
      const row = await app().store.db.selectFrom('instances').select('jupyter_token_sealed').where('id', '=', id).executeTakeFirstOrThrow();
      assert.equal(row.jupyter_token_sealed, null);
    }
  });

  test('the token is shown only to a key that may act on the instance (instance_write), never to a read-only key', async () => {
    const host = await hostWithMachine(app());
    const renter = await app().createUser();
    const { id } = await rentOn(app(), host, renter.api_key, { runtype: 'jupyter_direct' });
    await running(app(), host, id, renter.api_key);
    const ro = await app().request('POST', '/api/v0/auth/apikeys/', { key: renter.api_key, body: { name: 'ro', permissions: { api: { instance_read: {} } } } });
    assert.equal(ro.status, 200, ro.raw);
    const seen = await statusOf(app(), id, ro.body.key);
    assert.equal(seen.actual_status, 'running');
    assert.equal(seen.jupyter_token, null);
    assert.equal(seen.jupyter_url, null);
    const list = await app().request('GET', '/api/v0/instances/', { key: ro.body.key });
    assert.equal(list.body.instances.find((i: { id: number }) => i.id === id).jupyter_token, null);
    const rw = await app().request('POST', '/api/v0/auth/apikeys/', { key: renter.api_key, body: { name: 'rw', permissions: { api: { instance_read: {}, instance_write: {} } } } });
    assert.equal(rw.status, 200, rw.raw);
    assert.match((await statusOf(app(), id, rw.body.key)).jupyter_token, TOKEN);
    // Someone else sees no instance at all.
    const other = await app().createUser();
    const theirs = await app().request('GET', `/api/v0/instances/${id}/`, { key: other.api_key });
    assert.equal(theirs.body.instances, null);
  });

  test('an Idempotency-Key replay keeps the instance\'s one token; the idempotency record holds no plaintext token', async () => {
    const host = await hostWithMachine(app());
    const renter = await app().createUser();
    const body = { image: 'jupyter/base-notebook', runtype: 'jupyter_proxy' };
    const headers = { 'idempotency-key': `jupyter-${app().dialect}-1` };
    const first = await rent(app(), host.machineId * 100 + 1, body, renter.api_key, headers);
    assert.equal(first.status, 200, first.raw);
    const again = await rent(app(), host.machineId * 100 + 1, body, renter.api_key, headers);
    assert.equal(again.body.new_contract, first.body.new_contract);
    const token = (await statusOf(app(), first.body.new_contract, renter.api_key)).jupyter_token;
    assert.match(token, TOKEN);
    const records = await app().store.db.selectFrom('instance_idempotency').select('reply').execute();
    for (const r of records) assert.ok(!r.reply.includes(token));
  });

  test('an agent reporting jupyter_missing puts it in status_msg while running; a later report without it clears it', async () => {
    const host = await hostWithMachine(app());
    const renter = await app().createUser();
    const { id } = await rentOn(app(), host, renter.api_key, { runtype: 'jupyter_direct', image: 'busybox' });
    const missing = await running(app(), host, id, renter.api_key, { jupyter_missing: true });
    assert.equal(missing.actual_status, 'running');
    assert.equal(missing.status_msg, JUPYTER_MISSING_MSG);
    assert.match(missing.status_msg, /Jupyter is not installed in this image/);
    assert.match(missing.jupyter_url, /^http:\/\/127\.0\.0\.1:41009\/\?token=/, 'the URL is still given (onstart may start a Jupyter of its own)');
    // The events stream and history carry it as a state change.
    const history = await app().request('GET', `/api/v0/instances/${id}/history/`, { key: renter.api_key });
    assert.equal(history.status, 200, history.raw);
    assert.ok(history.body.events.some((e: { status_msg: string | null }) => e.status_msg === JUPYTER_MISSING_MSG), history.raw);
    const fixed = await running(app(), host, id, renter.api_key);
    assert.equal(fixed.status_msg, null);
    // A note of someone else's while it runs (a copy's progress, src/copy/) stays through reports that say nothing.
    await app().services.instances.noteStatus(id, 'copy from instance 1:/data to /data: 40%');
    const noted = await running(app(), host, id, renter.api_key);
    assert.equal(noted.status_msg, 'copy from instance 1:/data to /data: 40%');
  });

  test('jupyter_dir: control characters and over-long values are a 400, never stored; spaces, quotes and $(...) are text', async () => {
    const host = await hostWithMachine(app());
    const renter = await app().createUser();
    for (const [dir, pattern] of [['/a\nb', /control characters/], ['/a\u0000b', /control characters/], [`/${'d'.repeat(1100)}`, /jupyter_dir/]] as const) {
      const res = await rent(app(), host.machineId * 100 + 1, { runtype: 'jupyter_direct', jupyter_dir: dir }, renter.api_key);
      assert.equal(res.status, 400, res.raw);
      assert.deepEqual(Object.keys(res.body).sort(), ['error', 'msg', 'success']);
      assert.equal(res.body.error, 'bad_request');
      assert.match(res.body.msg, pattern);
    }
    const odd = `/work space/it's "q" $(touch /tmp/pwned) \`id\``;
    const { id } = await rentOn(app(), host, renter.api_key, { runtype: 'jupyter_proxy', jupyter_dir: odd });
    const d = await desired(app(), host);
    assert.equal(d.instances.find((i: { instance_id: number }) => i.instance_id === id).jupyter_dir, odd);
    assert.equal((await statusOf(app(), id, renter.api_key)).jupyter_dir, odd);
  });

  test('an update to a Jupyter template gives an SSH instance a token once (the next update keeps it); its jupyter_dir is checked', async () => {
    const host = await hostWithMachine(app());
    const renter = await app().createUser();
    const { id } = await rentOn(app(), host, renter.api_key, { runtype: 'ssh_proxy' });
    assert.equal((await statusOf(app(), id, renter.api_key)).jupyter_token, null);
    const template = (body: Record<string, unknown>) => app().request('POST', '/api/v0/template/', {
      key: renter.api_key, body: { name: `jup-${Math.random()}`, image: 'jupyter/base-notebook', tag: 'latest', runtype: 'jupyter', use_jupyter_lab: true, docker_login_repo: '', docker_login_user: '', docker_login_pass: '', ...body },
    });
    const t = await template({ jupyter_dir: '/notebooks' });
    assert.equal(t.status, 200, t.raw);
    const up = await app().request('PUT', `/api/v0/instances/update_template/${id}/`, { key: renter.api_key, body: { id, template_hash_id: t.body.template.hash_id } });
    assert.equal(up.status, 200, up.raw);
    assert.equal(up.body.updated_instance.image_runtype, 'jupyter_proxy');
    const token = up.body.updated_instance.jupyter_token;
    assert.match(token, TOKEN);
    const d = await desired(app(), host);
    const inst = d.instances.find((i: { instance_id: number }) => i.instance_id === id);
    assert.deepEqual([inst.runtype, inst.jupyter_token, inst.use_jupyter_lab, inst.jupyter_dir], ['jupyter', token, true, '/notebooks']);
    const again = await app().request('PUT', `/api/v0/instances/update_template/${id}/`, { key: renter.api_key, body: { id, template_hash_id: t.body.template.hash_id } });
    assert.equal(again.status, 200, again.raw);
    assert.equal(again.body.updated_instance.jupyter_token, token);
    const bad = await template({ jupyter_dir: '/a\nb' });
    if (bad.status === 200) {
      const refused = await app().request('PUT', `/api/v0/instances/update_template/${id}/`, { key: renter.api_key, body: { id, template_hash_id: bad.body.template.hash_id } });
      assert.equal(refused.status, 400, refused.raw);
      assert.match(refused.body.msg, /control characters/);
    } else assert.equal(bad.status, 400, bad.raw);
  });

  test('a simulated machine\'s Jupyter instance has the fields too', async () => {
    const m = await addMachine(app());
    const renter = await app().createUser();
    const { id } = await rentOk(app(), offerFor(m, 1), { runtype: 'jupyter_direct' }, renter.api_key);
    await untilRunning(app(), id, renter.api_key);
    const v = await statusOf(app(), id, renter.api_key);
    assert.match(v.jupyter_token, TOKEN);
    const hostPort = v.ports['8080/tcp']?.[0]?.HostPort;
    assert.ok(hostPort, JSON.stringify(v.ports));
    assert.equal(v.jupyter_url, `http://${v.public_ipaddr}:${hostPort}/?token=${v.jupyter_token}`);
    const p = await rentOk(app(), offerFor(m, 1), { runtype: 'jupyter_proxy' }, renter.api_key);
    await untilRunning(app(), p.id, renter.api_key);
    const vp = await statusOf(app(), p.id, renter.api_key);
    assert.equal(vp.jupyter_url, `${vp.port_urls['8080/tcp']}?token=${vp.jupyter_token}`);
  });
});
