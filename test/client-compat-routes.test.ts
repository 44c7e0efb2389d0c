// Issue 14 "Measure": every route the client-compat documents list (docs/spec/client-compat.md and
// client-compat-more.md) is served: called as the clients call it (owner key, a JSON body on every write, an id that
// does not exist), none answers the router's `no route` 404, and every error is the spec's object. A 5xx is allowed only
// as the clear 503 of the routes the document's last section says need what a self-hosted server lacks (cloud
// storage, host-to-host networking, shared storage, a registry, a blob store), and its msg says what is missing.
// What each route does is asserted by its feature's tests; this walk proves nothing the clients send falls through.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { forEachDialect } from './helpers/harness.js';

const SPEC = join(import.meta.dirname, '..', 'docs', 'spec');
const docs = ['client-compat.md', 'client-compat-more.md'].map((f) => readFileSync(join(SPEC, f), 'utf8')).join('\n');

/** Routes the documents name in prose rather than as `METHOD /path`. */
const IN_PROSE = [
  'POST /api/v0/users/', // create subaccount (client-compat-more §b)
  'POST /get_autogroup_logs/', // get wrkgrp-logs (client-compat-more §e)
  'POST /get_endpoint_workers/', // get endpt-workers
  'POST /update_workers/', // update workers
  // In commented-out lines of vast.py only ("Routes in the list that no current client calls"), but answered all the
  // same (issue 29 item 3): the template listing and the older reset path.
  'GET /api/v0/users/0/templates/',
  'PUT /api/v0/users/current/reset-apikey/',
];
/** Routes the documents say no current client sends ("Routes in the list that no current client calls"). */
const NOT_NEEDED = new Set(['/api/v0/instance']);

/** Routes whose honest answer here may be 503 `service_unavailable` naming what is missing (client-compat-more, last section). */
const NEEDS_OUTSIDE = [
  '/api/v0/commands/copy_direct/', '/api/v0/commands/rsync/', '/api/v0/commands/rclone/', '/api/v0/overlay/',
  '/api/v0/network_disk/', '/api/v0/network_volumes/', '/api/v0/volumes/copy/', '/api/v0/instances/take_snapshot/',
  '/api/v0/deployments/', '/api/v0/deployment/',
];

/** Shorthand of the documents: `/commands/…` and `/bundles/` are the API's; `/route/` and the log routes are the autoscaler's (gpuplane is it). */
function served(path: string): string {
  if (/^\/(commands|bundles|gpu_names|instances)\//.test(path)) return `/api/v0${path}`;
  return path;
}

function routes(): { method: string; path: string }[] {
  const seen = new Map<string, { method: string; path: string }>();
  const found = [...docs.matchAll(/\b(GET|POST|PUT|DELETE|PATCH) (\/[A-Za-z0-9_{}/.<>-]*)/g)].map((m) => `${m[1]} ${m[2]}`);
  for (const r of [...found, ...IN_PROSE]) {
    const [method, raw] = r.split(' ') as [string, string];
    if (NOT_NEEDED.has(raw)) continue;
    const path = served(raw.replace(/\{[a-z_]+\}/g, '987654').replace(/<[^>]+>/g, 'x'));
    seen.set(`${method} ${path}`, { method, path });
  }
  return [...seen.values()].sort((a, b) => a.path.localeCompare(b.path) || a.method.localeCompare(b.method));
}

forEachDialect('every route of the client-compat documents is served', (app) => {
  test('none answers no route; a 5xx only as the clear 503 of what needs outside help; every error is the spec object', async (t) => {
    const list = routes();
    assert.ok(list.length >= 95, `routes read from the documents: ${list.length}`);
    const unserved: string[] = [];
    const outside: string[] = [];
    for (const { method, path } of list) {
      const res = await app().request(method, path, method === 'GET' ? {} : { body: {} });
      const where = `${method} ${path} -> ${res.status} ${res.raw.slice(0, 200)}`;
      if (res.status === 404 && /^no route /.test(res.body?.msg ?? '')) {
        unserved.push(`${method} ${path}`);
        continue;
      }
      if (res.status >= 500) {
        assert.ok(NEEDS_OUTSIDE.some((p) => path.startsWith(p)), where);
        assert.equal(res.status, 503, where);
        assert.equal(res.body.error, 'service_unavailable', where);
        assert.match(res.body.msg, /needs|not available|requires|configure/i, where);
        outside.push(`${method} ${path}`);
      }
      if (res.status >= 400) {
        assert.equal(res.body.success, false, where);
        assert.equal(typeof res.body.error, 'string', where);
        assert.equal(typeof res.body.msg, 'string', where);
      }
    }
    assert.deepEqual(unserved, []);
    // The clear refusals are few: everything else is served.
    t.diagnostic(`503 (needs what a self-hosted server lacks): ${outside.join(', ')}`);
    assert.ok(outside.length < 20, outside.join(', '));
  });
});
