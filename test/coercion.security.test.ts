// Threat: loose type coercion. A value of the wrong type read as another row's id (`{"template_id": true}` deleted
// template 1, `/apikeys/0x10/` acted on key 16), or stored as text it never was (`{"endpoint_name": 123}` became
// "123") (issue 11). An id is a decimal integer, a JSON number or the decimal digits the client sends as text;
// anything else is a 400 naming the field, in a path, a query string or a body (platform/validation.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect, type Reply, type TestApp } from './helpers/harness.js';

const login = { docker_login_repo: '', docker_login_user: '', docker_login_pass: '' };

/** Text that is not a decimal integer, though a loose reading (Number(), parseInt, trimming) would make one. */
const NOT_IDS = ['0x10', '0o7', '0b1', '1e1', '1E1', '+1', '1.0', '1.', '.1', '01', '%201', '1%20', '%091', '1_0', 'true', 'NaN', 'Infinity', '%EF%BC%91', '-', '1-1'];

function assertBad(res: Reply, field: string, what: string): void {
  assert.equal(res.status, 400, `${what}: ${res.raw}`);
  assert.equal(res.body.error, 'bad_request', what);
  assert.ok(String(res.body.msg).startsWith(field), `${what}: the message names ${field}: ${res.body.msg}`);
}

async function template(app: TestApp, key: string, name: string) {
  const res = await app.request('POST', '/api/v0/template/', { key, body: { name, image: 'ubuntu', ...login } });
  assert.equal(res.status, 200, res.raw);
  return res.body.template as { id: number; hash_id: string };
}

async function templateExists(app: TestApp, key: string, hash: string): Promise<boolean> {
  const res = await app.request('GET', '/api/v0/template/', { key, query: { select_filters: JSON.stringify({ hash_id: { eq: hash } }) } });
  assert.equal(res.status, 200, res.raw);
  return res.body.templates.length === 1;
}

forEachDialect('strict coercion', (app) => {
  test('DELETE /template/ {"template_id": true} is a 400 naming template_id; no template is deleted', async () => {
    const { api_key } = await app().createUser();
    // The first template of a fresh database is id 1: what `true` used to name.
    const first = await template(app(), api_key, 'first');
    assert.equal(first.id, 1);
    for (const bad of [true, false, '0x1', '1e0', ' 1', '', 1.5, [1], { id: 1 }]) {
      const res = await app().request('DELETE', '/api/v0/template/', { key: api_key, body: { template_id: bad } });
      assertBad(res, 'body.template_id', JSON.stringify(bad));
    }
    assert.ok(await templateExists(app(), api_key, first.hash_id), 'template 1 is still there');
    // The decimal text of the id is the id (the client sends numbers as text in places).
    const second = await template(app(), api_key, 'second');
    const byText = await app().request('DELETE', '/api/v0/template/', { key: api_key, body: { template_id: String(second.id) } });
    assert.equal(byText.status, 200, byText.raw);
    assert.equal(await templateExists(app(), api_key, second.hash_id), false);
    // null is "not given", as the vastai client sends it.
    const none = await app().request('DELETE', '/api/v0/template/', { key: api_key, body: { template_id: null, hash_id: first.hash_id } });
    assert.equal(none.status, 200, none.raw);
  });

  test('GET and DELETE /auth/apikeys/0x<id>/ are 400s naming params.id; the decimal id works', async () => {
    const { api_key } = await app().createUser();
    const created = await app().request('POST', '/api/v0/auth/apikeys/', { key: api_key, body: { name: 'target' } });
    assert.equal(created.status, 200, created.raw);
    const id: number = created.body.id;
    for (const method of ['GET', 'DELETE']) {
      for (const text of [`0x${id.toString(16)}`, `${id}e0`, `${id}.0`, `0${id}`, `+${id}`, `%20${id}`]) {
        assertBad(await app().request(method, `/api/v0/auth/apikeys/${text}/`, { key: api_key }), 'params.id', `${method} ${text}`);
      }
    }
    const shown = await app().request('GET', `/api/v0/auth/apikeys/${id}/`, { key: api_key });
    assert.equal(shown.status, 200, shown.raw);
    assert.equal(shown.body.name, 'target', 'the key was not deleted by any of the above');
  });

  test('a string field takes only strings: {"endpoint_name": 123} is a 400 and nothing is stored', async () => {
    const { api_key } = await app().createUser();
    for (const bad of [123, true, 1.5, ['x'], { a: 1 }]) {
      assertBad(await app().request('POST', '/api/v0/endptjobs/', { key: api_key, body: { endpoint_name: bad } }), 'body.endpoint_name', JSON.stringify(bad));
    }
    assert.deepEqual((await app().request('GET', '/api/v0/endptjobs/', { key: api_key })).body.results, []);
    const ok = await app().request('POST', '/api/v0/endptjobs/', { key: api_key, body: { endpoint_name: '123' } });
    assert.equal(ok.status, 200, ok.raw);
    const id = ok.body.result;
    assertBad(await app().request('PUT', `/api/v0/endptjobs/${id}/`, { key: api_key, body: { endpoint_name: 456 } }), 'body.endpoint_name', 'update');
    const [e] = (await app().request('GET', '/api/v0/endptjobs/', { key: api_key })).body.results;
    assert.equal(e.endpoint_name, '123');
  });

  test('numbers: JSON numbers or decimal text; booleans, hex and blanks are 400s naming the field', async () => {
    const { api_key } = await app().createUser();
    const created = await app().request('POST', '/api/v0/endptjobs/', { key: api_key, body: { endpoint_name: 'n' } });
    const url = `/api/v0/endptjobs/${created.body.result}/`;
    for (const [field, bad] of [['max_workers', true], ['max_workers', '0x10'], ['max_workers', '1e1'], ['max_workers', ''], ['max_workers', ' 3'], ['max_workers', '3.0'], ['target_util', false], ['target_util', '0x1'], ['target_util', 'NaN'], ['min_load', '1,5']] as const) {
      assertBad(await app().request('PUT', url, { key: api_key, body: { [field]: bad } }), `body.${field}`, `${field}=${JSON.stringify(bad)}`);
    }
    const ok = await app().request('PUT', url, { key: api_key, body: { max_workers: '12', target_util: '0.75', min_load: '2.5e1' } });
    assert.equal(ok.status, 200, ok.raw);
    const [e] = (await app().request('GET', '/api/v0/endptjobs/', { key: api_key })).body.results;
    assert.deepEqual([e.max_workers, e.target_util, e.min_load], [12, 0.75, 25]);
  });

  test('query strings: integers as decimal text, booleans as true/false, anything else a 400 naming the parameter', async () => {
    const day = JSON.stringify({ day: { gte: 0, lte: 1 } });
    const charges = (query: Record<string, string>) => app().request('GET', '/api/v0/charges/', { query: { select_filters: day, ...query } });
    for (const limit of ['0x10', '1e1', '10.0', ' 10', '+10', '010', 'true', '']) assertBad(await charges({ limit }), 'querystring.limit', `limit=${limit}`);
    for (const latest of ['1', '0', 'yes', 'True', '']) assertBad(await charges({ latest_first: latest }), 'querystring.latest_first', `latest_first=${latest}`);
    assert.equal((await charges({ limit: '10', latest_first: 'false' })).status, 200);
    for (const id of ['0x10', '1e1', 'abc']) assertBad(await app().request('DELETE', `/api/v0/volumes/?id=${id}`, { body: {} }), 'querystring.id', `id=${id}`);
  });

  test('every integer path parameter of every route: only decimal digits are an id', async () => {
    const failures: string[] = [];
    const checked = new Set<string>();
    for (const r of app().routes) {
      const names = [...r.url.matchAll(/:(\w+)/g)].map((m) => m[1]).filter((n) => n === 'id' || n.endsWith('_id'));
      for (const name of names) {
        checked.add(`${r.method} ${r.url}`);
        for (const text of NOT_IDS) {
          const url = r.url.replace(/:(\w+)/g, (_m, n: string) => (n === name ? text : '1'));
          const res = await app().request(r.method, url, { body: r.method === 'GET' ? undefined : {} });
          const msg = String(res.body?.msg);
          if (res.status !== 400 || res.body?.error !== 'bad_request' || !msg.startsWith(`params.${name}`)) {
            failures.push(`${r.method} ${url} -> ${res.status} ${res.raw.slice(0, 100)}`);
          }
        }
      }
    }
    assert.ok(checked.size >= 15, `the sweep reached the id routes (${checked.size})`);
    assert.deepEqual(failures, []);
  });
});
