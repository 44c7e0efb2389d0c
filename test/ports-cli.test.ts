// Issue 32 item 2: `gpuplane show instance` prints each port's URL through the server and Jupyter's link after the
// record, and how a port URL is opened; nothing for an instance without them (stopped: port_urls is {}).
// `gpuplane create port-token ID PORT` makes the port's token against a real server (the command the hint names).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { webLines } from '../src/cli/commands/instances.js';
import { instanceSteps, useServer } from './cli-helpers.js';

const server = useServer();
const steps = instanceSteps(server);

test('show instance: one line per port URL and the Jupyter link, then how to open a port URL', () => {
  const text = webLines({
    id: 12,
    port_urls: { '8000/tcp': 'https://12-8000.ports.example.com/', '8080/tcp': 'https://12-8080.ports.example.com/' },
    jupyter_url: 'https://12-8080.ports.example.com/?token=abc',
  });
  const lines = text.split('\n');
  assert.deepEqual(lines.slice(0, 5), [
    '',
    '',
    'port 8000/tcp  https://12-8000.ports.example.com/',
    'port 8080/tcp  https://12-8080.ports.example.com/',
    'jupyter_url    https://12-8080.ports.example.com/?token=abc',
  ]);
  assert.match(lines[5], /`gpuplane create port-token 12 8000` makes one; send it as the x-gpuplane-port-token header/);
});

test('show instance: nothing more for an instance without port URLs or Jupyter', () => {
  assert.equal(webLines({ id: 3, port_urls: {}, jupyter_url: null }), '');
  assert.equal(webLines({ id: 3 }), '');
  assert.equal(webLines({ id: 4, port_urls: {}, jupyter_url: 'http://1.2.3.4:41000/?token=t' }), '\n\njupyter_url  http://1.2.3.4:41000/?token=t');
});

test('create port-token: a new token each time, shown once with its URL; a bad port is a clear error', async () => {
  const id = await steps.instance({ env: { '-p 8000:8000': '1' } });
  const first = await server.cli(['create', 'port-token', String(id), '8000', '--raw']);
  assert.equal(first.code, 0, first.stderr);
  const a = JSON.parse(first.stdout) as { success: boolean; token: string; url: string };
  assert.equal(a.success, true);
  assert.match(a.token, /^gpp_[A-Za-z0-9_-]{20,}$/);
  assert.equal(a.url, `http://${id}-8000.localhost:${new URL(server.url()).port}/?gpuplane_token=${a.token}`);
  const second = await server.cli(['create', 'port-token', String(id), '8000']);
  assert.equal(second.code, 0, second.stderr);
  const [, token] = /^token (\S+) \(shown once\)$/m.exec(second.stdout) ?? [];
  assert.ok(token && token !== a.token, `a new token: ${second.stdout}`);
  assert.match(second.stdout, new RegExp(`^url   http://${id}-8000\\.localhost:\\d+/\\?gpuplane_token=${token}$`, 'm'));
  const bad = await server.cli(['create', 'port-token', String(id), '70000']);
  assert.notEqual(bad.code, 0);
  assert.match(bad.stderr, /65535/);
});
