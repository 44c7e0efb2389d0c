// The console's terminal on the server (issue 32 items 3 and 5; src/terminal/), on both databases: a listening app,
// the real agent tunnel client with a fake `terminal` endpoint (terminal-fixtures.ts; the real shell is tested in
// terminal-agent and terminal-e2e), and the `ws` client. Who may open it (an API key, or the console's session cookie
// only from the server's own Origin: the CSRF rule carried over to the upgrade; instance_write; the owner or a team
// member whose role allows it), the refusals as the API's error object with their status before the upgrade, the
// messages both ways, the close codes after it opened (exit, bad message, instance stopped or destroyed, signed out),
// and the audit log: every session, never what was typed.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { forEachDialect, type TestApp } from './helpers/harness.js';
import { desired, hostWithMachine, observed, report, type Host } from './agent-server-fixtures.js';
import { rentOk } from './instances-fixtures.js';
import { agentTunnel, until } from './tunnel-fixtures.js';
import { fakeTerminals, openTerminal, type Attempt, type Opened } from './terminal-fixtures.js';
import { TERMINAL_CLOSE } from '../src/terminal/terminal-contract.js';

const PASSWORD = 'correct horse battery';
const CSRF = { 'x-gpuplane-csrf': '1' };
let n = 0;

/** Sends an upgrade request as written and returns the raw answer. */
function rawUpgrade(base: string, path: string, headers: Record<string, string>): Promise<string> {
  return new Promise((resolve, reject) => {
    const u = new URL(base);
    const sock = connect(Number(u.port), u.hostname);
    let got = '';
    sock.on('data', (d) => (got += d.toString()));
    sock.once('error', reject);
    sock.once('close', () => resolve(got));
    sock.write(`GET ${path} HTTP/1.1\r\nHost: ${u.host}\r\n${Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n`);
  });
}

function opened(a: Attempt): Opened {
  if (!a.ok) assert.fail(`refused: ${a.status} ${JSON.stringify(a.body)}`);
  return a.t;
}

function refused(a: Attempt, status: number, error: string, msg?: RegExp): void {
  if (a.ok) {
    a.t.ws.terminate();
    assert.fail(`opened; expected ${status} ${error}`);
  }
  assert.equal(a.status, status, JSON.stringify(a.body));
  assert.equal(a.body.success, false);
  assert.equal(a.body.error, error, JSON.stringify(a.body));
  assert.equal(typeof a.body.msg, 'string');
  if (msg) assert.match(a.body.msg, msg);
}

forEachDialect('terminal: the WebSocket on the server', (app) => {
  let url: string;
  let host: Host;
  const fake = fakeTerminals();
  let agent: ReturnType<typeof agentTunnel>;

  /** A running instance of `key`'s on the agent's machine (the fake agent reports it running). */
  async function running(key: string): Promise<number> {
    const { id } = await rentOk(app(), host.machineId * 100 + 1, { image: 'busybox', runtype: 'ssh_proxy' }, key);
    await reportAll();
    return id;
  }
  /** The agent reports each instance of its desired state as `state` (default running). */
  async function reportAll(states: Record<number, 'running' | 'stopped'> = {}): Promise<void> {
    const d = await desired(app(), host);
    await report(app(), host, d.instances.map((i: { instance_id: number; boot: number }) => observed(i.instance_id, i.boot, { ports: {}, state: states[i.instance_id] ?? 'running' })), d.version);
  }
  async function audit(key: string, id: number): Promise<Record<string, any>[]> {
    const logs = (await app().request('GET', '/api/v0/audit_logs/', { key })).body as Record<string, any>[];
    return logs.filter((e) => e.action === 'instance.terminal_session' && e.args.params.instance_id === id);
  }
  async function uiLogin(t: TestApp): Promise<{ key: string; cookie: string }> {
    const email = `terminal${process.pid}_${n++}@example.com`;
    const u = await t.createUser({ email, password: PASSWORD });
    const login = await t.request('POST', '/api/v0/auth/login/', { key: null, body: { username: email, password: PASSWORD, client: 'ui' } });
    assert.equal(login.status, 200, login.raw);
    return { key: u.api_key, cookie: `gpuplane_session=${/gpuplane_session=([^;]+)/.exec(String(login.headers['set-cookie']))![1]}` };
  }
  const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

  before(async () => {
    await app().app.listen({ host: '127.0.0.1', port: 0 });
    url = `http://127.0.0.1:${(app().app.server.address() as { port: number }).port}`;
    // Room for every instance these tests keep at once.
    const gpus = Array.from({ length: 16 }, (_, index) => ({ index, name: 'NVIDIA GeForce RTX 4090', uuid: `GPU-${index}`, gpu_ram: 24564, pci_gen: 4, pcie_width: 16, gpu_max_power: 450, compute_cap: 890 }));
    host = await hostWithMachine(app(), { hw: { num_gpus: 16, gpus } });
    agent = agentTunnel(url, host.machineKey, fake.handler);
    await until(() => app().services.tunnels.api.connected(host.machineId), "the agent's tunnel", 30_000);
  });
  after(async () => {
    await agent?.stop();
  });

  test('with an API key: output as binary messages, resize and input in order, exit closes 1000 with the status; audited without what was typed', async () => {
    const renter = await app().createUser();
    const id = await running(renter.api_key);
    const t = opened(await openTerminal(url, id, bearer(renter.api_key)));
    await t.until(new RegExp(`welcome to ${id}`));
    t.resize(30, 100);
    t.input('secret-typed-text');
    t.resize(44, 132);
    await t.until(/size 30 100\r\necho:secret-typed-text\r\nsize 44 132/);
    assert.equal(t.sawText(), false);
    const paste = 'p'.repeat(200_000);
    t.input(paste);
    // Echoed frame by frame (the paste crossed the tunnel in 64 KiB frames), every byte of it.
    await t.until((out) => (out.match(/p/g)?.length ?? 0) >= paste.length);
    t.input('exit 3');
    assert.deepEqual(await t.closed, { code: 1000, reason: 'exit status 3' });
    await until(async () => (await audit(renter.api_key, id)).length === 1, 'the audit record');
    const [e] = await audit(renter.api_key, id);
    assert.equal(e.api_route, 'GET /api/v0/instances/:id/terminal/');
    assert.equal(e.ip_address, '127.0.0.1');
    const p = e.args.params;
    assert.equal(p.outcome, 'connected');
    assert.equal(p.exit, '3');
    assert.equal(p.closed, 1000);
    assert.match(p.source, /^127\.0\.0\.1:\d+$/);
    assert.equal(p.bytes_in, 'secret-typed-text'.length + paste.length + 'exit 3'.length);
    assert.ok(p.bytes_out > paste.length, JSON.stringify(p));
    assert.equal(typeof p.duration_s, 'number');
    assert.doesNotMatch(JSON.stringify(e), /secret-typed-text/);
    assert.match(fake.typed, /secret-typed-text/); // it did reach the shell
  });

  test("the console's session cookie: only from the server's own Origin (the CSRF rule on the upgrade)", async () => {
    const ui = await uiLogin(app());
    const id = await running(ui.key);
    const own = opened(await openTerminal(url, id, { cookie: ui.cookie, origin: url }));
    await own.until(/welcome/);
    own.ws.close();
    // The public URL's origin counts as the server's own too (GPUPLANE_PUBLIC_URL, as behind a proxy).
    const pub = opened(await openTerminal(url, id, { cookie: ui.cookie, origin: new URL(app().config.publicUrl).origin }));
    pub.ws.close();
    refused(await openTerminal(url, id, { cookie: ui.cookie, origin: 'http://evil.example' }), 403, 'csrf_failed', /Origin/);
    refused(await openTerminal(url, id, { cookie: ui.cookie, origin: url.replace('127.0.0.1', 'localhost') }), 403, 'csrf_failed');
    refused(await openTerminal(url, id, { cookie: ui.cookie }), 403, 'csrf_failed');
    // A key needs no Origin (a browser cannot send the header on a WebSocket), whatever Origin comes with it.
    const viaKey = opened(await openTerminal(url, id, { ...bearer(ui.key), origin: 'http://evil.example' }));
    viaKey.ws.close();
    // An API key in the cookie is no session.
    refused(await openTerminal(url, id, { cookie: `gpuplane_session=${ui.key}`, origin: url }), 401, 'auth_error');
    // Signed out: the session is refused.
    const out = await app().request('POST', '/api/v0/auth/logout/', { key: null, headers: { cookie: ui.cookie, ...CSRF } });
    assert.equal(out.status, 200, out.raw);
    refused(await openTerminal(url, id, { cookie: ui.cookie, origin: url }), 401, 'auth_error');
  });

  test('refusals before the upgrade, as the error object: 401, 403, 404, 409, 502; a known user\'s refusal is audited', async () => {
    const renter = await app().createUser();
    const other = await app().createUser();
    const id = await running(renter.api_key);
    refused(await openTerminal(url, id, {}), 401, 'auth_error');
    refused(await openTerminal(url, id, bearer('gpk_not_a_key_at_all_0123456789')), 401, 'auth_error');
    refused(await openTerminal(url, id, { authorization: 'Basic abc' }), 401, 'auth_error');
    // Another renter's instance reads as none.
    refused(await openTerminal(url, id, bearer(other.api_key)), 404, 'not_found');
    refused(await openTerminal(url, 999_999_999, bearer(renter.api_key)), 404, 'not_found');
    // A key without instance_write, and the instance's own restricted key.
    const ro = await app().request('POST', '/api/v0/auth/apikeys/', { key: renter.api_key, body: { name: 'ro', permissions: { api: { instance_read: {} } } } });
    assert.equal(ro.status, 200, ro.raw);
    refused(await openTerminal(url, id, bearer(ro.body.key)), 403, 'permission_denied', /instance_write/);
    const rented = await rentOk(app(), host.machineId * 100 + 1, { image: 'busybox', runtype: 'ssh_proxy' }, renter.api_key);
    refused(await openTerminal(url, rented.id, bearer(rented.instanceKey)), 403, 'permission_denied');
    // Not running yet (the agent has not reported it), and stopped.
    refused(await openTerminal(url, rented.id, bearer(renter.api_key)), 409, 'conflict', /not running/);
    // On a simulated machine: no container.
    const sim = await rentOk(app(), 101, { image: 'busybox', runtype: 'ssh_proxy' }, renter.api_key);
    refused(await openTerminal(url, sim.id, bearer(renter.api_key)), 409, 'conflict', /simulated/);
    // Not a WebSocket upgrade at all: the request never reaches this handler's upgrade (a plain GET is a route 404).
    const plain = await fetch(`${url}/api/v0/instances/${id}/terminal/`, { headers: bearer(renter.api_key) });
    assert.equal(plain.status, 404);
    // An upgrade that is no WebSocket handshake: 400, before any shell is started for it.
    const opensBefore = fake.opens;
    const raw = await rawUpgrade(url, `/api/v0/instances/${id}/terminal/`, { authorization: `Bearer ${renter.api_key}`, upgrade: 'websocket', connection: 'Upgrade', 'sec-websocket-version': '13', 'sec-websocket-key': 'short' });
    assert.match(raw, /^HTTP\/1\.1 400 /);
    assert.match(raw, /"error":"bad_request"/);
    assert.equal(fake.opens, opensBefore);
    await until(async () => (await audit(renter.api_key, rented.id)).some((e) => e.args.params.outcome === 'refused' && e.args.params.status === 409), 'the refusal audited');
  });

  test('a team member whose role allows instance_write opens a team instance; one whose role does not is refused', async () => {
    const owner = await app().createUser();
    const team = await app().request('POST', '/api/v0/team/', { key: owner.api_key, body: { team_name: `term${n++}` } });
    assert.equal(team.status, 200, team.raw);
    const teamId: number = team.body.id;
    for (const [name, cats] of [['ops', { instance_read: {}, instance_write: {} }], ['viewer', { instance_read: {} }]] as const) {
      const r = await app().request('POST', '/api/v0/team/roles/', { key: owner.api_key, body: { name, permissions: { api: cats } } });
      assert.equal(r.status, 200, r.raw);
    }
    const member = async (role: string) => {
      const email = `termteam${process.pid}_${n++}@example.com`;
      const m = await app().createUser({ email });
      const inv = await app().request('POST', `/api/v0/team/invite/?email=${encodeURIComponent(email)}&role=${role}`, { key: owner.api_key });
      assert.equal(inv.status, 200, inv.raw);
      const code = (await app().request('GET', `/_emu/outbox?to=${encodeURIComponent(email)}`)).body.messages.at(-1).code;
      assert.equal((await app().request('POST', '/api/v0/team/invitations/accept/', { key: m.api_key, body: { code } })).status, 200);
      const k = await app().request('POST', '/api/v0/auth/apikeys/', { key: m.api_key, body: { team_id: teamId, name: 'team' } });
      assert.equal(k.status, 200, k.raw);
      return { personal: m.api_key as string, team: k.body.key as string };
    };
    const ops = await member('ops');
    const viewer = await member('viewer');
    const ownerTeamKey = (await app().request('POST', '/api/v0/auth/apikeys/', { key: owner.api_key, body: { team_id: teamId, name: 'team' } })).body.key as string;
    const id = await running(ownerTeamKey);
    for (const key of [ownerTeamKey, ops.team, ops.personal]) {
      const t = opened(await openTerminal(url, id, bearer(key)));
      await t.until(/welcome/);
      t.ws.close();
    }
    refused(await openTerminal(url, id, bearer(viewer.team)), 403, 'permission_denied');
    refused(await openTerminal(url, id, bearer(viewer.personal)), 404, 'not_found');
    // The owner's personal context does not hold the team's instance without a role that allows it: the owner is a
    // member with the owner's role (full access).
    const own = opened(await openTerminal(url, id, bearer(owner.api_key)));
    own.ws.close();
  });

  test('after it opened: a bad message closes 1008; the instance stopping closes 4409, destroyed 4404; the shell is hung up', async () => {
    const renter = await app().createUser();
    const id = await running(renter.api_key);
    const bad = opened(await openTerminal(url, id, bearer(renter.api_key)));
    await bad.until(/welcome/);
    bad.ws.send('not json');
    assert.equal((await bad.closed).code, TERMINAL_CLOSE.badMessage);
    const bin = opened(await openTerminal(url, id, bearer(renter.api_key)));
    bin.ws.send(Buffer.from([1, 2, 3]));
    assert.equal((await bin.closed).code, TERMINAL_CLOSE.badMessage);
    const size = opened(await openTerminal(url, id, bearer(renter.api_key)));
    size.ws.send(JSON.stringify({ type: 'resize', rows: 0, cols: 80 }));
    assert.deepEqual(await size.closed, { code: 1008, reason: 'a resize message has "rows" and "cols", whole numbers from 1 to 1000' });

    const hungBefore = fake.hungUp;
    const t = opened(await openTerminal(url, id, bearer(renter.api_key)));
    await t.until(/welcome/);
    // The host reports the container stopped: the terminal closes at once (this process's change wakes the watch).
    const stop = await app().request('PUT', `/api/v0/instances/${id}/`, { key: renter.api_key, body: { state: 'stopped' } });
    assert.equal(stop.status, 200, stop.raw);
    await reportAll({ [id]: 'stopped' });
    const c = await t.closed;
    assert.equal(c.code, TERMINAL_CLOSE.stopped);
    assert.match(c.reason, new RegExp(`instance ${id} stopped`));
    await until(() => fake.hungUp > hungBefore, 'the agent side hung up');

    const id2 = await running(renter.api_key);
    const t2 = opened(await openTerminal(url, id2, bearer(renter.api_key)));
    await t2.until(/welcome/);
    assert.equal((await app().request('DELETE', `/api/v0/instances/${id2}/`, { key: renter.api_key })).status, 200);
    assert.deepEqual(await t2.closed, { code: TERMINAL_CLOSE.destroyed, reason: `instance ${id2} was destroyed` });
    await until(async () => (await audit(renter.api_key, id2)).length === 1, 'the audit record');
    assert.equal((await audit(renter.api_key, id2))[0].args.params.closed, TERMINAL_CLOSE.destroyed);
  });

  test('a revoked credential ends an open terminal (4401) at the next recheck', async () => {
    const ui = await uiLogin(app());
    const id = await running(ui.key);
    const t = opened(await openTerminal(url, id, { cookie: ui.cookie, origin: url }));
    await t.until(/welcome/);
    const out = await app().request('POST', '/api/v0/auth/logout/', { key: null, headers: { cookie: ui.cookie, ...CSRF } });
    assert.equal(out.status, 200, out.raw);
    await app().advance(20);
    assert.equal((await t.closed).code, TERMINAL_CLOSE.signedOut);
  });

  test('the host not connected: 502', async () => {
    const renter = await app().createUser();
    const id = await running(renter.api_key);
    await agent.stop();
    await until(async () => !(await app().services.tunnels.api.connected(host.machineId)), 'the tunnel gone', 30_000);
    refused(await openTerminal(url, id, bearer(renter.api_key)), 502, 'bad_gateway', /not connected/);
  });
});
