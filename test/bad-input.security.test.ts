// Threat: malformed or hostile input (wrong types, missing fields, huge values, unknown or absurd ids, broken query
// JSON) reaching a route and producing a 500 or a non-JSON reply. Every registered route, as the owner (full access),
// must answer such input with the spec's error object and a 4xx — never a 5xx.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect } from './helpers/harness.js';

const BODIES: unknown[] = [
  {},
  { id: 'x', state: 123, name: [], seconds: -1, price: 'abc', disk: 1e308, label: 'x'.repeat(100_000), permissions: 'all' },
  '[1,2]',
  '"a string"',
  { select_filters: 5, env: 'not an object', volume_info: 7 },
  { tfa_method: 'bogus', code: 12, secret: {}, backup_code: null, phone_number: 42 },
  // Ids far beyond any row (and beyond PostgreSQL's integer range), everywhere a body names one.
  Object.fromEntries(
    ['id', 'template_id', 'tfa_method_id', 'target_id', 'volume_id', 'instance_id', 'machine_id', 'user_id', 'team_id', 'endpoint_id', 'key_id']
      .map((k) => [k, 99_999_999_999_999]),
  ),
  { ids: [99_999_999_999_999], state: 'stopped', amount: 1e308, seconds: 1e308, size: 1e308, fault: 'exited', instance_id: 99_999_999_999_999 },
];
const IDS = ['999999999', 'abc', '-1', '99999999999999999999'];
const QUERY = '?select_filters=%7Bbad&limit=-5&id=zz&email=x&role=y&until=nowhere&timeout=-3';

forEachDialect('bad input on every route', (app) => {
  test('wrong types, huge values and unknown ids give a 4xx error object, never a 5xx', async () => {
    const failures: string[] = [];
    // Each distinct request once: a route without an id in its path, or a GET (sent without a body), would repeat one.
    const sent = new Set<string>();
    for (const r of app().routes) {
      for (const id of IDS) {
        const url = r.url.replace(/:(\w+)/g, id) + QUERY;
        for (const body of BODIES) {
          const request = `${r.method} ${url} ${r.method === 'GET' ? '' : JSON.stringify(body)}`;
          if (sent.has(request)) continue;
          sent.add(request);
          const res = await app().request(r.method, url, { body: r.method === 'GET' ? undefined : body });
          const where = `${r.method} ${url} ${JSON.stringify(body).slice(0, 50)} -> ${res.status}`;
          // A 503 `service_unavailable` to a well-formed request is an answer, not a fault: the route's work needs what
          // this server lacks (shared storage, cross-host networking), and its msg says so (network-routes.ts).
          const deliberate = res.status === 503 && res.body?.error === 'service_unavailable';
          if (res.status >= 500 && !deliberate) failures.push(`${where} ${res.raw.slice(0, 120)}`);
          else if (res.status >= 400 && !r.url.startsWith('/docs')) {
            const b = res.body;
            if (typeof b !== 'object' || b === null || b.success !== false || typeof b.error !== 'string' || typeof b.msg !== 'string') {
              failures.push(`${where} not the error object: ${res.raw.slice(0, 120)}`);
            }
          }
        }
      }
    }
    assert.deepEqual(failures, []);
  });
});
