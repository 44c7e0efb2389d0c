// Serving the web console (issue 15): hashed assets cached for a year as immutable, index.html revalidated, console
// routes answered with index.html for a browser, and every API path (known or not) exactly as before: JSON.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { forEachDialect } from './helpers/harness.js';

const dir = mkdtempSync(join(tmpdir(), 'gpuplane-console-static-'));
const INDEX = '<!doctype html><html><head><script type="module" src="/assets/index-AbC123.js"></script></head><body><div id="root"></div></body></html>';
const SCRIPT = `console.log(${JSON.stringify('x'.repeat(5000))});`;
mkdirSync(join(dir, 'assets'));
writeFileSync(join(dir, 'index.html'), INDEX);
writeFileSync(join(dir, 'assets', 'index-AbC123.js'), SCRIPT);
writeFileSync(join(dir, 'assets', 'index-Zz9.css'), 'body{margin:0}');
writeFileSync(join(dir, 'favicon.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>');
after(() => rmSync(dir, { recursive: true, force: true }));

const HTML = { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' };

forEachDialect('web console files', (app) => {
  test('GET / is index.html, no-cache, with the page\'s security headers', async () => {
    const r = await app().request('GET', '/', { key: null, headers: HTML });
    assert.equal(r.status, 200);
    assert.equal(r.raw, INDEX);
    assert.match(String(r.headers['content-type']), /^text\/html/);
    assert.equal(r.headers['cache-control'], 'no-cache');
    assert.match(String(r.headers['content-security-policy']), /script-src 'self'/);
    assert.match(String(r.headers['content-security-policy']), /frame-ancestors 'none'/);
    assert.equal(r.headers['x-content-type-options'], 'nosniff');
  });

  test('hashed assets: a year, immutable, the right type; gzip when asked; a missing one is a JSON 404', async () => {
    const js = await app().request('GET', '/assets/index-AbC123.js', { key: null });
    assert.equal(js.status, 200);
    assert.equal(js.raw, SCRIPT);
    assert.equal(js.headers['cache-control'], 'public, max-age=31536000, immutable');
    assert.match(String(js.headers['content-type']), /^text\/javascript/);
    const css = await app().request('GET', '/assets/index-Zz9.css', { key: null });
    assert.equal(css.headers['cache-control'], 'public, max-age=31536000, immutable');
    assert.match(String(css.headers['content-type']), /^text\/css/);
    const gz = await app().request('GET', '/assets/index-AbC123.js', { key: null, headers: { 'accept-encoding': 'gzip, br' } });
    assert.equal(gz.headers['content-encoding'], 'gzip');
    assert.equal(gz.headers.vary, 'accept-encoding');
    // A weight of 0 refuses gzip (RFC 9110 §12.4.2), even when the name is there.
    for (const refused of ['gzip;q=0', 'br, gzip; q=0', 'identity']) {
      const plain = await app().request('GET', '/assets/index-AbC123.js', { key: null, headers: { 'accept-encoding': refused } });
      assert.equal(plain.headers['content-encoding'], undefined, refused);
      assert.equal(plain.raw, SCRIPT, refused);
    }
    const missing = await app().request('GET', '/assets/index-gone.js', { key: null, headers: HTML });
    assert.equal(missing.status, 404);
    assert.equal(missing.body.error, 'not_found');
    // Only the build's own files: a path climbing out of the folder finds nothing (files are looked up, not opened).
    for (const path of ['/assets/../index.html', '/assets/..%2f..%2fpackage.json', '/assets/%2e%2e/%2e%2e/package.json']) {
      const r = await app().request('GET', path, { key: null });
      assert.notEqual(r.status, 200, path);
      assert.doesNotMatch(r.raw, /"name": ?"gpuplane"/, path);
    }
    // Files at the top of the build are served but not immutable (their names carry no hash).
    const icon = await app().request('GET', '/favicon.svg', { key: null });
    assert.equal(icon.status, 200);
    assert.equal(icon.headers['cache-control'], 'no-cache');
  });

  test('a browser at a console route gets index.html; API clients and unknown API paths keep the JSON 404', async () => {
    for (const path of ['/offers', '/instances/12', '/account?tab=sessions']) {
      const r = await app().request('GET', path, { key: null, headers: HTML });
      assert.equal(r.status, 200, path);
      assert.equal(r.raw, INDEX, path);
      assert.equal(r.headers['cache-control'], 'no-cache', path);
    }
    // The same path asked for as JSON (or by curl, */*, or refusing HTML with a weight of 0): the JSON 404 as before.
    for (const headers of [{ accept: 'application/json' }, { accept: '*/*' }, { accept: 'text/html;q=0, application/json' }, {}] as Record<string, string>[]) {
      const r = await app().request('GET', '/offers', { key: null, headers });
      assert.equal(r.status, 404);
      assert.deepEqual(r.body, { success: false, error: 'not_found', msg: 'no route GET /offers' });
    }
    // Unknown API and emulator paths stay JSON even for a browser; so does any other method.
    for (const [method, path] of [['GET', '/api/v0/nope/'], ['GET', '/api/v1/'], ['GET', '/_emu/nope'], ['POST', '/offers'], ['DELETE', '/instances']] as const) {
      const r = await app().request(method, path, { key: null, headers: HTML });
      assert.equal(r.status, 404, `${method} ${path}`);
      assert.match(String(r.headers['content-type']), /^application\/json/, `${method} ${path}`);
      assert.equal(r.body.error, 'not_found');
    }
    // Known API routes are untouched: a browser's Accept does not turn them into the page.
    const me = await app().request('GET', '/api/v0/users/current/', { headers: HTML });
    assert.equal(me.status, 200);
    assert.equal(typeof me.body.email, 'string');
    const noKey = await app().request('GET', '/api/v0/users/current/', { key: null, headers: HTML });
    assert.equal(noKey.status, 401);
    assert.equal(noKey.body.error, 'auth_error');
  });
}, { config: { GPUPLANE_CONSOLE_DIR: dir } });

forEachDialect('without a built console', (app) => {
  test('/ is the JSON 404 it always was', async () => {
    const r = await app().request('GET', '/', { key: null, headers: HTML });
    assert.equal(r.status, 404);
    assert.equal(r.body.error, 'not_found');
  });
}, { config: { GPUPLANE_CONSOLE_DIR: join(dir, 'missing') } });

