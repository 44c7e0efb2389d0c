// Issue 32 items 2 and 5: who gets through an instance port's URL, and what they show, on both databases. The app is
// built as main.ts builds it and listens on a real port; requests carry the port's Host header. The host's tunnel is a
// stand-in that connects to HTTP and WebSocket servers of this test (test/ports-e2e.test.ts goes through a real agent
// and Docker): the credential checks, the refusals and what the app receives are the server's own code.
// Threats covered: a request without a credential, with another port's or instance's token, with a rotated token, with
// a cookie of another port, a used or expired grant, another user, a team member without instance_write; our
// credentials leaking to the renter's app; a port request's slow upload cut by the API's request timeout.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { createServer, request as httpRequest, type IncomingMessage, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { WebSocket, WebSocketServer } from 'ws';
import { forEachDialect, type TestApp } from './helpers/harness.js';
import { desired, hostWithMachine, observed, report } from './agent-server-fixtures.js';
import { rentOk } from './instances-fixtures.js';
import { TunnelError, type TunnelsApi } from '../src/tunnels/tunnels-contract.js';

const DOMAIN = 'ports.test';
const doc = (...cats: string[]) => ({ api: Object.fromEntries(cats.map((c) => [c, {}])) });

/** What the renter's app saw of the last request. */
let seen: { url: string; headers: IncomingMessage['headers'] } | undefined;
let web: Server;
let webPort = 0;
let wss: WebSocketServer;

before(async () => {
  web = createServer((req, res) => {
    seen = { url: req.url ?? '', headers: req.headers };
    if (req.url?.startsWith('/upload')) {
      const h = createHash('sha256');
      let n = 0;
      req.on('data', (c: Buffer) => {
        h.update(c);
        n += c.length;
      });
      req.on('end', () => res.end(JSON.stringify({ bytes: n, sha256: h.digest('hex') })));
      return;
    }
    if (req.url?.startsWith('/cookie')) res.setHeader('set-cookie', ['app_a=1; Path=/', 'app_b=2; Path=/']);
    res.setHeader('content-type', 'text/plain');
    res.end(`app says ${req.method} ${req.url}`);
  });
  wss = new WebSocketServer({ server: web });
  wss.on('connection', (ws, req) => {
    ws.send(`hello ${req.url}`);
    ws.on('message', (m) => ws.send(`echo ${m.toString()}`));
  });
  await new Promise<void>((r) => web.listen(0, '127.0.0.1', r));
  webPort = (web.address() as AddressInfo).port;
});

after(async () => {
  wss.close();
  web.closeAllConnections();
  await new Promise<void>((r) => web.close(() => r()));
});

/** The tunnels: ports 8000 and 8001 lead to this test's server, 9999 is closed, and machine -1 is "not connected". */
let offline = false;
const fakeTunnels: TunnelsApi = {
  async open(_machineId, target) {
    if (offline) throw new TunnelError('not_connected', 'no tunnel');
    if (target.kind !== 'tcp') throw new TunnelError('refused', 'not tcp');
    if (target.port === 9999) throw new TunnelError('unreachable', `port ${target.port} of instance ${target.instanceId} is not open`);
    const stream = connect(webPort, '127.0.0.1');
    return { stream, end: new Promise((r) => stream.once('close', () => r({}))) };
  },
  connected: async () => !offline,
};

interface Res {
  status: number;
  headers: IncomingMessage['headers'];
  body: string;
}

forEachDialect('instance ports through the server', (app) => {
  let base = { host: '127.0.0.1', port: 0 };
  let owner: { api_key: string; user: any };
  let id = 0;
  let host: Awaited<ReturnType<typeof hostWithMachine>>;

  const hostOf = (instanceId: number, port: number) => `${instanceId}-${port}.${DOMAIN}`;

  /** A request to an instance port's host, through the listening server. */
  function get(instanceId: number, port: number, path: string, headers: Record<string, string> = {}, method = 'GET', body?: Buffer): Promise<Res> {
    return new Promise((resolve, reject) => {
      const req = httpRequest({ ...base, method, path, headers: { host: hostOf(instanceId, port), ...headers } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks).toString() }));
      });
      req.on('error', reject);
      req.end(body);
    });
  }

  const cookieOf = (r: Res) => {
    const c = [r.headers['set-cookie'] ?? []].flat().find((s) => s.startsWith('gpuplane_port='));
    assert.ok(c, `a port cookie is set: ${JSON.stringify(r.headers)}`);
    return c.split(';')[0];
  };
  const api = (method: string, path: string, key: string | null, body?: unknown) => app().request(method, path, { key, body });
  const tokenFor = async (instanceId: number, port: number, key = owner.api_key) => {
    const r = await api('POST', `/api/v0/instances/${instanceId}/ports/${port}/token/`, key);
    assert.equal(r.status, 200, r.raw);
    return r.body as { success: true; token: string; url: string };
  };
  const grantFor = (instanceId: number, port: number, key = owner.api_key, body: unknown = {}) =>
    api('POST', `/api/v0/instances/${instanceId}/ports/${port}/grant/`, key, body);

  /**
   * A running instance on a new host run by `gpuplane agent` (as its agent reports), publishing 8000, 8001 and 9999.
   * A host of its own each: the tests advance the virtual clock, past which an unheard host's instances turn offline.
   */
  async function running(key: string) {
    host = await hostWithMachine(app());
    const { id: iid } = await rentOk(app(), host.machineId * 100 + 1, { image: 'busybox', env: { '-p 8000:8000': '1', '-p 8001:8001': '1', '-p 9999:9999': '1' } }, key);
    const d = await desired(app(), host);
    // The machine's direct ports are 41000-41099: three for each of its instances.
    const portsOf = (n: number) => Object.fromEntries(['8000/tcp', '8001/tcp', '9999/tcp'].map((p, k) => [p, [{ HostIp: '127.0.0.1', HostPort: String(41000 + 3 * n + k) }]]));
    const mine = d.instances.find((i: any) => i.instance_id === iid);
    await report(app(), host, d.instances.map((i: any, n: number) => observed(i.instance_id, i.boot, { ports: portsOf(n) })), d.version);
    assert.ok(mine);
    return iid;
  }

  before(async () => {
    await app().app.listen({ port: 0, host: '127.0.0.1' });
    base = { host: '127.0.0.1', port: (app().app.server.address() as AddressInfo).port };
    app().services.ports.useTunnels(fakeTunnels);
    owner = await app().createUser({ credit: 100 });
    id = await running(owner.api_key);
    const view = await api('GET', `/api/v0/instances/${id}/`, owner.api_key);
    assert.equal(view.body.instances.port_urls['8000/tcp'], `http://${hostOf(id, 8000)}/`, JSON.stringify(view.body.instances.port_urls));
  });

  test('no credential: an API client gets 401 as the error object, a browser is sent to the console page; the API host is untouched', async () => {
    seen = undefined;
    const r = await get(id, 8000, '/x?y=1');
    assert.equal(r.status, 401);
    const body = JSON.parse(r.body);
    assert.equal(body.success, false);
    assert.equal(body.error, 'auth_error');
    assert.match(body.msg, new RegExp(`port 8000 of instance ${id} needs a credential`));
    const b = await get(id, 8000, '/app/page?q=2', { accept: 'text/html,application/xhtml+xml' });
    assert.equal(b.status, 302);
    const loc = new URL(b.headers.location!);
    assert.equal(`${loc.origin}${loc.pathname}`, `${app().config.publicUrl.replace(/\/$/, '')}/ports/open`);
    assert.deepEqual(Object.fromEntries(loc.searchParams), { instance: String(id), port: '8000', path: '/app/page?q=2' });
    // The API's own host still reaches the router.
    const own = await new Promise<number>((resolve) => httpRequest({ ...base, path: '/api/v0/instances/' }, (res) => resolve(res.statusCode!)).end());
    assert.equal(own, 401);
    assert.equal(seen, undefined, 'nothing reached the app');
  });

  test("the port token: as a header it reaches the app, which never sees our credentials but gets X-Forwarded-*; its Set-Cookies pass", async () => {
    const { token, url } = await tokenFor(id, 8000);
    assert.match(token, /^gpp_[A-Za-z0-9_-]{43}$/);
    assert.equal(url, `http://${hostOf(id, 8000)}/?gpuplane_token=${token}`);
    const r = await get(id, 8000, '/cookie?keep=1', { 'x-gpuplane-port-token': token, cookie: 'gpuplane_port=junk; theirs=yes', 'x-forwarded-for': '6.6.6.6' });
    assert.equal(r.status, 200, r.body);
    assert.equal(r.body, 'app says GET /cookie?keep=1');
    assert.deepEqual(r.headers['set-cookie'], ['app_a=1; Path=/', 'app_b=2; Path=/']);
    assert.equal(seen!.headers['x-gpuplane-port-token'], undefined);
    assert.equal(seen!.headers.cookie, 'theirs=yes');
    assert.equal(seen!.headers.host, hostOf(id, 8000));
    assert.equal(seen!.headers['x-forwarded-for'], '127.0.0.1', 'a client cannot claim an address without a trusted proxy');
    assert.equal(seen!.headers['x-forwarded-proto'], 'http');
    assert.equal(seen!.headers['x-forwarded-host'], hostOf(id, 8000));
    // The token is stored as its SHA-256 only.
    const rows = await app().store.db.selectFrom('port_tokens').selectAll().where('instance_id', '=', id).execute();
    assert.equal(rows.length, 1);
    assert.equal(rows[0].token_hash, createHash('sha256').update(token).digest('hex'));
  });

  test('the token in the URL sets the cookie and redirects to the URL without it; the cookie then opens the port, never another', async () => {
    const { token } = await tokenFor(id, 8000);
    const r = await get(id, 8000, `/deep/path?a=1&gpuplane_token=${token}&b=2`);
    assert.equal(r.status, 302);
    assert.equal(r.headers.location, '/deep/path?a=1&b=2');
    const set = [r.headers['set-cookie']].flat()[0]!;
    assert.match(set, /^gpuplane_port=v1\.[^;]+; Path=\/; Max-Age=43200; HttpOnly; SameSite=Lax$/);
    const cookie = cookieOf(r);
    seen = undefined;
    const ok = await get(id, 8000, '/deep/path?a=1&b=2', { cookie });
    assert.equal(ok.status, 200);
    assert.equal(seen!.headers.cookie, undefined);
    // The same cookie sent to another port's or another instance's host (copied by hand: a browser would not send it).
    for (const [iid, port] of [[id, 8001], [id + 1000, 8000]] as const) {
      const other = await get(iid, port, '/', { cookie });
      assert.equal(other.status, iid === id ? 401 : 404, other.body);
    }
    // A POST with the token in its URL is passed on (no redirect), the parameter taken out.
    const post = await get(id, 8000, `/form?gpuplane_token=${token}`, { 'content-type': 'text/plain' }, 'POST', Buffer.from('x'));
    assert.equal(post.status, 200);
    assert.equal(seen!.url, '/form');
  });

  test('rotation: the old token and the cookies it set stop working, the new one works; a token of another port or instance is refused', async () => {
    const first = await tokenFor(id, 8000);
    const cookie = cookieOf(await get(id, 8000, `/?gpuplane_token=${first.token}`));
    assert.equal((await get(id, 8000, '/', { cookie })).status, 200);
    const second = await tokenFor(id, 8000);
    assert.notEqual(second.token, first.token);
    const old = await get(id, 8000, '/', { 'x-gpuplane-port-token': first.token });
    assert.equal(old.status, 401);
    assert.match(JSON.parse(old.body).msg, /rotated/);
    assert.equal((await get(id, 8000, '/', { cookie })).status, 401, 'the cookie of the old token');
    assert.equal((await get(id, 8000, '/', { cookie, accept: 'text/html' })).status, 302, 'a browser with a stale cookie goes to the console');
    assert.equal((await get(id, 8000, '/', { 'x-gpuplane-port-token': second.token })).status, 200);
    // 8001's token on 8000, and another instance's token.
    const other = await tokenFor(id, 8001);
    assert.equal((await get(id, 8000, '/', { 'x-gpuplane-port-token': other.token })).status, 401);
    const id2 = await running(owner.api_key);
    const t2 = await tokenFor(id2, 8000);
    assert.equal((await get(id, 8000, '/', { 'x-gpuplane-port-token': t2.token })).status, 401);
    assert.equal((await get(id2, 8000, '/', { 'x-gpuplane-port-token': t2.token })).status, 200);
    assert.equal((await get(id, 8000, '/', { 'x-gpuplane-port-token': 'gpp_nonsense' })).status, 401);
  });

  test('the console grant: one use, 60 s, for its port only, to the path asked; someone else gets none', async () => {
    const g = await grantFor(id, 8000, owner.api_key, { path: '/lab?x=1' });
    assert.equal(g.status, 200, g.raw);
    const u = new URL(g.body.url);
    assert.equal(u.host, hostOf(id, 8000));
    assert.equal(u.pathname, '/_gpuplane/grant');
    const r = await get(id, 8000, `${u.pathname}${u.search}`);
    assert.equal(r.status, 302);
    assert.equal(r.headers.location, '/lab?x=1');
    const cookie = cookieOf(r);
    assert.equal((await get(id, 8000, '/lab?x=1', { cookie })).status, 200);
    // Used once: the second time is refused.
    const again = await get(id, 8000, `${u.pathname}${u.search}`);
    assert.equal(again.status, 403);
    assert.match(JSON.parse(again.body).msg, /used already, has expired/);
    // A grant shown on another port's host is refused (and spent).
    const g2 = new URL((await grantFor(id, 8000)).body.url);
    assert.equal((await get(id, 8001, `${g2.pathname}${g2.search}`)).status, 403);
    assert.equal((await get(id, 8000, `${g2.pathname}${g2.search}`)).status, 403);
    // Expired after 60 s.
    const g3 = new URL((await grantFor(id, 8000)).body.url);
    await app().advance(61);
    assert.equal((await get(id, 8000, `${g3.pathname}${g3.search}`)).status, 403);
    // A path to another site is not followed.
    const g4 = new URL((await grantFor(id, 8000, owner.api_key, { path: '//evil.example/' })).body.url);
    assert.equal((await get(id, 8000, `${g4.pathname}${g4.search}`)).headers.location, '/');
    // Someone else: no grant, no token (404 as the API answers for instances not theirs).
    const stranger = await app().createUser({ credit: 10 });
    assert.equal((await grantFor(id, 8000, stranger.api_key)).status, 404);
    assert.equal((await api('POST', `/api/v0/instances/${id}/ports/8000/token/`, stranger.api_key)).status, 404);
  });

  test("a team's instance: a member whose role allows instance_write gets in; a member without it and an outsider do not", async () => {
    const teamOwner = await app().createUser({ credit: 100 });
    const team = await api('POST', '/api/v0/team/', teamOwner.api_key, { team_name: `ports-${app().dialect}` });
    assert.equal(team.status, 200, team.raw);
    const teamKey = (await api('POST', '/api/v0/auth/apikeys/', teamOwner.api_key, { team_id: team.body.id })).body.key as string;
    const role = await api('POST', '/api/v0/team/roles/', teamOwner.api_key, { name: 'viewer', permissions: doc('instance_read', 'team_read') });
    assert.equal(role.status, 200, role.raw);
    const join = async (roleName: string) => {
      const m = await app().createUser();
      const inv = await api('POST', `/api/v0/team/invite/?email=${encodeURIComponent(m.user.email)}&role=${roleName}`, teamOwner.api_key);
      assert.equal(inv.status, 200, inv.raw);
      const code = (await app().request('GET', `/_emu/outbox?to=${encodeURIComponent(m.user.email)}`)).body.messages.at(-1).code;
      assert.equal((await api('POST', '/api/v0/team/invitations/accept/', m.api_key, { code })).status, 200);
      return m;
    };
    const member = await join('member');
    const viewer = await join('viewer');
    const tid = await running(teamKey);
    const mg = await grantFor(tid, 8000, member.api_key);
    assert.equal(mg.status, 200, mg.raw);
    const cookie = cookieOf(await get(tid, 8000, new URL(mg.body.url).pathname + new URL(mg.body.url).search));
    assert.equal((await get(tid, 8000, '/', { cookie })).status, 200);
    assert.equal((await grantFor(tid, 8000, viewer.api_key)).status, 404);
    const viewerTeamKey = (await api('POST', '/api/v0/auth/apikeys/', viewer.api_key, { team_id: team.body.id })).body.key as string;
    assert.equal((await grantFor(tid, 8000, viewerTeamKey)).status, 403, 'in the team context the role lacks instance_write');
    assert.equal((await grantFor(tid, 8000, owner.api_key)).status, 404);
    // The member's role loses instance_write: the cookie stops working (once the access cache is past).
    const demote = await api('PUT', `/api/v0/team/members/${member.user.id}/`, teamOwner.api_key, { role: 'viewer' });
    assert.equal(demote.status, 200, demote.raw);
    await app().advance(6);
    const out = await get(tid, 8000, '/', { cookie });
    assert.equal(out.status, 403, out.body);
    assert.equal(JSON.parse(out.body).error, 'permission_denied');
  });

  test('a key without instance_write gets no token or grant; bad input is 400 naming the field; no key is 401', async () => {
    const readOnly = (await api('POST', '/api/v0/auth/apikeys/', owner.api_key, { permissions: doc('instance_read') })).body.key as string;
    assert.equal((await api('POST', `/api/v0/instances/${id}/ports/8000/token/`, readOnly)).status, 403);
    assert.equal((await grantFor(id, 8000, readOnly)).status, 403);
    assert.equal((await api('POST', `/api/v0/instances/${id}/ports/8000/grant/`, null, {})).status, 401);
    for (const [path, field] of [[`${id}/ports/0`, 'port'], [`${id}/ports/65536`, 'port'], [`${id}/ports/http`, 'port'], ['abc/ports/80', 'id'], ['99999999999/ports/80', 'id']]) {
      const r = await api('POST', `/api/v0/instances/${path}/token/`, owner.api_key);
      assert.equal(r.status, 400, `${path}: ${r.raw}`);
      assert.equal(r.body.success, false);
      assert.match(r.body.msg, new RegExp(field));
    }
    const long = await grantFor(id, 8000, owner.api_key, { path: `/${'a'.repeat(3000)}` });
    assert.equal(long.status, 400, long.raw);
    const extra = await grantFor(id, 8000, owner.api_key, { path: '/', evil: 1 });
    assert.equal(extra.status, 400, extra.raw);
    const noBody = await app().request('POST', `/api/v0/instances/${id}/ports/8000/grant/`, { key: owner.api_key });
    assert.equal(noBody.status, 200, noBody.raw);
    // Junk on the port host: a malformed grant, a malformed cookie, a bad host label (left to the API).
    assert.equal((await get(id, 8000, '/_gpuplane/grant?g=')).status, 403);
    assert.equal((await get(id, 8000, '/_gpuplane/grant?g=%ZZ')).status, 403);
    assert.equal((await get(id, 8000, '/', { cookie: 'gpuplane_port=v1.1.2.u3.4.abc' })).status, 401);
  });

  test('refusals say why: a port without a URL 404, a closed port 502, a host not connected 503, a stopped instance 503, a destroyed one 404, a simulated machine 404', async () => {
    const id = await running(owner.api_key);
    const { token } = await tokenFor(id, 8002);
    const unpublished = await get(id, 8002, '/', { 'x-gpuplane-port-token': token });
    assert.equal(unpublished.status, 404);
    assert.match(JSON.parse(unpublished.body).msg, /port 8002 of instance \d+ has no URL: only its published ports/);
    const closed = await get(id, 9999, '/', { 'x-gpuplane-port-token': (await tokenFor(id, 9999)).token });
    assert.equal(closed.status, 502);
    assert.deepEqual(Object.keys(JSON.parse(closed.body)), ['success', 'error', 'msg']);
    assert.match(JSON.parse(closed.body).msg, /port 9999 of instance \d+ cannot be reached: .*is not open/);
    const t8000 = (await tokenFor(id, 8000)).token;
    offline = true;
    try {
      const off = await get(id, 8000, '/', { 'x-gpuplane-port-token': t8000 });
      assert.equal(off.status, 503);
      assert.match(JSON.parse(off.body).msg, /is not connected/);
    } finally {
      offline = false;
    }
    // Stopped: the renter stops it and the host reports the container exited.
    const sid = await running(owner.api_key);
    const st = (await tokenFor(sid, 8000)).token;
    assert.equal((await api('PUT', `/api/v0/instances/${sid}/`, owner.api_key, { state: 'stopped' })).status, 200);
    const d = await desired(app(), host);
    await report(app(), host, d.instances.map((i: any) => observed(i.instance_id, i.boot, i.instance_id === sid ? { state: 'exited', exit_code: 0, ports: {} } : {})), d.version);
    await app().advance(2);
    const stopped = await get(sid, 8000, '/', { 'x-gpuplane-port-token': st });
    assert.equal(stopped.status, 503, stopped.body);
    assert.match(JSON.parse(stopped.body).msg, new RegExp(`instance ${sid} is not running`));
    // Destroyed: 404, and its tokens are gone.
    assert.equal((await api('DELETE', `/api/v0/instances/${sid}/`, owner.api_key)).status, 200);
    await app().advance(2);
    const gone = await get(sid, 8000, '/', { 'x-gpuplane-port-token': st });
    assert.equal(gone.status, 404);
    assert.match(JSON.parse(gone.body).msg, /does not exist/);
    assert.equal((await app().store.db.selectFrom('port_tokens').selectAll().where('instance_id', '=', sid).execute()).length, 0);
    // On a simulated machine of the emulator.
    const sim = await rentOk(app(), 101, { image: 'busybox' }, owner.api_key);
    const simTok = (await tokenFor(sim.id, 8000)).token;
    const s = await get(sim.id, 8000, '/', { 'x-gpuplane-port-token': simTok });
    assert.equal(s.status, 404);
    assert.match(JSON.parse(s.body).msg, /emulator's simulated machines, which have no containers/);
  });

  test('a WebSocket passes through with the token; without a credential the upgrade is refused with 401', async () => {
    const id = await running(owner.api_key);
    const { token } = await tokenFor(id, 8000);
    const ws = new WebSocket(`ws://127.0.0.1:${base.port}/socket?x=1`, { headers: { host: hostOf(id, 8000), 'x-gpuplane-port-token': token } });
    const got: string[] = [];
    await new Promise<void>((resolve, reject) => {
      ws.on('message', (m) => {
        got.push(m.toString());
        if (got.length === 1) ws.send('ping through the tunnel');
        else {
          ws.close();
          resolve();
        }
      });
      ws.on('error', reject);
    });
    assert.deepEqual(got, ['hello /socket?x=1', 'echo ping through the tunnel']);
    // The token in the URL works for an upgrade too, and the app never sees it.
    const viaUrl = new WebSocket(`ws://127.0.0.1:${base.port}/socket?a=1&gpuplane_token=${token}`, { headers: { host: hostOf(id, 8000) } });
    const first = await new Promise<string>((resolve, reject) => {
      viaUrl.on('message', (m) => resolve(m.toString()));
      viaUrl.on('error', reject);
    });
    viaUrl.close();
    assert.equal(first, 'hello /socket?a=1');
    const refused = new WebSocket(`ws://127.0.0.1:${base.port}/socket`, { headers: { host: hostOf(id, 8000) } });
    const status = await new Promise<number>((resolve) => {
      refused.on('unexpected-response', (_req, res) => resolve(res.statusCode!));
      refused.on('error', () => resolve(-1));
    });
    assert.equal(status, 401);
  });

  test("Jupyter's token opens port 8080 of a Jupyter runtype (passed on untouched), sets the cookie, and opens no other port", async () => {
    host = await hostWithMachine(app());
    const { id: jid } = await rentOk(app(), host.machineId * 100 + 1, { image: 'busybox', runtype: 'jupyter_proxy', env: { '-p 8000:8000': '1' } }, owner.api_key);
    const d = await desired(app(), host);
    const ports = { '8000/tcp': [{ HostIp: '127.0.0.1', HostPort: '41000' }], '8080/tcp': [{ HostIp: '127.0.0.1', HostPort: '41001' }] };
    await report(app(), host, d.instances.map((i: any) => observed(i.instance_id, i.boot, { ports })), d.version);
    const view = (await api('GET', `/api/v0/instances/${jid}/`, owner.api_key)).body.instances;
    const jt = view.jupyter_token as string;
    assert.match(jt, /^[A-Za-z0-9_-]{43}$/);
    assert.equal(view.jupyter_url, `http://${hostOf(jid, 8080)}/?token=${jt}`);
    const r = await get(jid, 8080, `/tree?token=${jt}`);
    assert.equal(r.status, 200, r.body);
    assert.equal(seen!.url, `/tree?token=${jt}`, "Jupyter's parameter reaches Jupyter");
    const cookie = cookieOf(r);
    assert.equal((await get(jid, 8080, '/api/kernels', { cookie })).status, 200);
    assert.equal((await get(jid, 8080, '/api/kernels', { authorization: `token ${jt}` })).status, 200);
    assert.equal(seen!.headers.authorization, `token ${jt}`);
    assert.equal((await get(jid, 8080, '/tree?token=wrong')).status, 401);
    assert.equal((await get(jid, 8000, `/?token=${jt}`)).status, 401, "Jupyter's token is for its port only");
    assert.equal((await get(jid, 8000, '/', { cookie })).status, 401);
    // Another instance's Jupyter port does not take it either.
    assert.equal((await get(id, 8080, `/?token=${jt}`)).status, 401, "another instance's port 8080: not its Jupyter token");
  });

  test('a 5 MB upload streams through with its checksum', async () => {
    const id = await running(owner.api_key);
    const { token } = await tokenFor(id, 8000);
    const blob = randomBytes(5 * 1024 * 1024);
    const up = await get(id, 8000, '/upload', { 'x-gpuplane-port-token': token, 'content-type': 'application/octet-stream' }, 'POST', blob);
    assert.equal(up.status, 200, up.body);
    assert.deepEqual(JSON.parse(up.body), { bytes: blob.length, sha256: createHash('sha256').update(blob).digest('hex') });
  });
}, { config: { GPUPLANE_PORT_URLS: `http://*.${DOMAIN}` } });

forEachDialect('a port request outlasting GPUPLANE_REQUEST_TIMEOUT', (app) => {
  test("an upload to a port host that takes longer than the request timeout passes; the API's own requests are still cut (408)", { timeout: 60_000 }, async () => {
    await app().app.listen({ port: 0, host: '127.0.0.1' });
    const port = (app().app.server.address() as AddressInfo).port;
    app().services.ports.useTunnels(fakeTunnels);
    const owner = await app().createUser({ credit: 100 });
    const host = await hostWithMachine(app());
    const { id } = await rentOk(app(), host.machineId * 100 + 1, { image: 'busybox', env: { '-p 8000:8000': '1' } }, owner.api_key);
    const d = await desired(app(), host);
    await report(app(), host, [observed(id, d.instances[0].boot, { ports: { '8000/tcp': [{ HostIp: '127.0.0.1', HostPort: '41000' }] } })], d.version);
    const token = (await app().request('POST', `/api/v0/instances/${id}/ports/8000/token/`, { key: owner.api_key })).body.token as string;

    /** Sends 8 chunks 400 ms apart (3.2 s, past the 1 s timeout) and answers the status and body. */
    const slow = (hostHeader: string, path: string, headers: Record<string, string>) => new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = httpRequest({ host: '127.0.0.1', port, method: 'POST', path, headers: { host: hostHeader, 'content-type': 'application/octet-stream', 'content-length': String(8 * 1024), ...headers } }, (res) => {
        let body = '';
        res.on('data', (c) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode!, body }));
      });
      req.on('error', reject);
      let sent = 0;
      const tick = () => {
        if (req.destroyed) return;
        req.write(Buffer.alloc(1024, 7));
        if (++sent < 8) setTimeout(tick, 400);
        else req.end();
      };
      tick();
    });
    const through = await slow(`${id}-8000.${DOMAIN}`, '/upload', { 'x-gpuplane-port-token': token });
    assert.equal(through.status, 200, through.body);
    assert.equal(JSON.parse(through.body).bytes, 8 * 1024);
    const apiSide = await slow(`127.0.0.1:${port}`, '/api/v0/ssh/', { authorization: `Bearer ${owner.api_key}`, 'content-type': 'application/json' }).catch((e: Error) => ({ status: -1, body: e.message }));
    assert.equal(apiSide.status, 408, apiSide.body);
  });
}, { config: { GPUPLANE_PORT_URLS: `http://*.${DOMAIN}`, GPUPLANE_HEADERS_TIMEOUT: '1', GPUPLANE_REQUEST_TIMEOUT: '1' } });
