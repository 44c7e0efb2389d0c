// End to end through an instance port's URL (issue 32 "Done when"), with real processes: `gpuplane serve`, `gpuplane
// agent` with Docker and its tunnel, a container of the sshd image running an HTTP server and a WebSocket echo server
// written with python's standard library (test/ports-fixture.ts). Requests go to the server's own address with the
// port's Host header (`<id>-<port>.localhost:<server port>`, the default GPUPLANE_PORT_URLS), as a browser or curl
// would once DNS points the name there:
// - refused without a credential (401 for an API client, 302 to the console page for a browser);
// - with the port token: GET, a streamed 24 MiB download and a 24 MiB upload, both checksummed, a WebSocket echo;
//   the app sees none of our credentials;
// - the token rotated: the old one is refused, the new one works;
// - the console grant: its URL sets the cookie and goes on into the app; the cookie of one port does not open another.
// Docker must be there: where it is not, this test fails.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { WebSocket } from 'ws';
import { hostRequest, patternSha, rentApp, startPortsWorld, untilAppAnswers, type PortsWorld } from './ports-fixture.js';

const PORTS = { start: 47400, end: 47499 };
const MB = 24;

let w: PortsWorld | undefined;
let id = 0;
const hostOf = (port: number) => `${id}-${port}.localhost:${w!.serverPort}`;
const tokenOf = async (port: number) => {
  const r = await w!.api('POST', `/api/v0/instances/${id}/ports/${port}/token/`, w!.renterKey);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body.token as string;
};

before(async () => {
  w = await startPortsWorld('ports-e2e', PORTS);
  const r = await rentApp(w);
  id = r.id;
  assert.deepEqual(r.view.port_urls, {
    '8000/tcp': `http://${id}-8000.localhost:${w.serverPort}/`,
    '8001/tcp': `http://${id}-8001.localhost:${w.serverPort}/`,
  });
});

after(async () => {
  await w?.close();
});

test('refused without a credential: 401 as the error object, a browser sent to the console page', { timeout: 60_000 }, async () => {
  const r = await hostRequest(w!.serverPort, hostOf(8000), '/');
  assert.equal(r.status, 401);
  const body = JSON.parse(r.body.toString());
  assert.equal(body.success, false);
  assert.equal(body.error, 'auth_error');
  const b = await hostRequest(w!.serverPort, hostOf(8000), '/notebook', { headers: { accept: 'text/html' } });
  assert.equal(b.status, 302);
  assert.equal(b.headers.location, `${w!.server.url}/ports/open?instance=${id}&port=8000&path=%2Fnotebook`);
});

test('with the port token: GET, a 24 MiB download and a 24 MiB upload stream through, checksummed; the app sees no credential of ours', { timeout: 180_000 }, async () => {
  const token = await tokenOf(8000);
  const auth = { 'x-gpuplane-port-token': token };
  const first = await w!.within('the app answers', untilAppAnswers(w!, hostOf(8000), auth), 90_000);
  assert.equal(first.status, 200, first.body.toString());
  const hello = await hostRequest(w!.serverPort, hostOf(8000), '/page?x=1', { headers: { ...auth, cookie: 'gpuplane_port=junk; mine=1' } });
  assert.equal(hello.body.toString(), 'hello from the container /page?x=1 cookie=mine=1 xff=127.0.0.1');

  const down = await hostRequest(w!.serverPort, hostOf(8000), `/big?mb=${MB}`, { headers: auth, hash: true });
  assert.equal(down.status, 200);
  assert.equal(down.bytes, MB << 20);
  assert.equal(down.sha256, patternSha(MB));

  const blob = randomBytes(MB << 20);
  const up = await hostRequest(w!.serverPort, hostOf(8000), '/upload', { method: 'POST', headers: { ...auth, 'content-type': 'application/octet-stream' }, body: blob });
  assert.equal(up.status, 200, up.body.toString());
  assert.deepEqual(JSON.parse(up.body.toString()), { bytes: blob.length, sha256: createHash('sha256').update(blob).digest('hex') });
});

test('a WebSocket echo through the tunnel (text and a 200 KB binary message)', { timeout: 60_000 }, async () => {
  const token = await tokenOf(8001);
  const ws = new WebSocket(`ws://127.0.0.1:${w!.serverPort}/chat?room=1`, { headers: { host: hostOf(8001), 'x-gpuplane-port-token': token } });
  const big = randomBytes(200_000);
  const got: (string | Buffer)[] = [];
  await w!.within('the echo', new Promise<void>((resolve, reject) => {
    ws.on('message', (m, binary) => {
      got.push(binary ? (m as Buffer) : m.toString());
      if (got.length === 1) ws.send('ping');
      else if (got.length === 2) ws.send(big);
      else {
        ws.close();
        resolve();
      }
    });
    ws.on('error', reject);
  }));
  assert.equal(got[0], 'hello /chat?room=1');
  assert.equal(got[1], 'echo ping');
  assert.ok(Buffer.isBuffer(got[2]) && got[2].equals(big));
  // Without a credential the upgrade is refused.
  const refused = new WebSocket(`ws://127.0.0.1:${w!.serverPort}/chat`, { headers: { host: hostOf(8001) } });
  const status = await new Promise<number>((resolve) => {
    refused.on('unexpected-response', (_req, res) => resolve(res.statusCode!));
    refused.on('error', () => resolve(-1));
  });
  assert.equal(status, 401);
});

test('token rotation: the old token is refused, the new one works', { timeout: 60_000 }, async () => {
  const old = await tokenOf(8000);
  assert.equal((await hostRequest(w!.serverPort, hostOf(8000), '/', { headers: { 'x-gpuplane-port-token': old } })).status, 200);
  const fresh = await tokenOf(8000);
  assert.equal((await hostRequest(w!.serverPort, hostOf(8000), '/', { headers: { 'x-gpuplane-port-token': old } })).status, 401);
  assert.equal((await hostRequest(w!.serverPort, hostOf(8000), '/', { headers: { 'x-gpuplane-port-token': fresh } })).status, 200);
});

test('the console grant: its URL sets the cookie and goes into the app; that cookie does not open another port', { timeout: 60_000 }, async () => {
  const g = await w!.api('POST', `/api/v0/instances/${id}/ports/8000/grant/`, w!.renterKey, { path: '/after-grant' });
  assert.equal(g.status, 200, JSON.stringify(g.body));
  const u = new URL(g.body.url);
  assert.equal(u.host, hostOf(8000));
  const redeemed = await hostRequest(w!.serverPort, hostOf(8000), `${u.pathname}${u.search}`);
  assert.equal(redeemed.status, 302);
  assert.equal(redeemed.headers.location, '/after-grant');
  const cookie = [redeemed.headers['set-cookie']].flat()[0]!.split(';')[0];
  assert.match(cookie, /^gpuplane_port=v1\./);
  const app = await hostRequest(w!.serverPort, hostOf(8000), '/after-grant', { headers: { cookie } });
  assert.equal(app.status, 200);
  assert.equal(app.body.toString(), 'hello from the container /after-grant cookie=None xff=127.0.0.1');
  assert.equal((await hostRequest(w!.serverPort, hostOf(8001), '/', { headers: { cookie } })).status, 401);
  // Used once.
  assert.equal((await hostRequest(w!.serverPort, hostOf(8000), `${u.pathname}${u.search}`)).status, 403);
});
