// Issue 32 item 2: `gpuplane show instance` prints each port's URL through the server and Jupyter's link after the
// record, and how a port URL is opened; nothing for an instance without them (stopped: port_urls is {}).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { webLines } from '../src/cli/commands/instances.js';

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
  assert.match(lines[5], /\/api\/v0\/instances\/12\/ports\/8000\/token\/.*x-gpuplane-port-token/);
});

test('show instance: nothing more for an instance without port URLs or Jupyter', () => {
  assert.equal(webLines({ id: 3, port_urls: {}, jupyter_url: null }), '');
  assert.equal(webLines({ id: 3 }), '');
  assert.equal(webLines({ id: 4, port_urls: {}, jupyter_url: 'http://1.2.3.4:41000/?token=t' }), '\n\njupyter_url  http://1.2.3.4:41000/?token=t');
});
