// The OpenAPI document (spec: Versioning): OpenAPI 3.1.0, version 1.0.0, one server, built from the route schemas
// so that it lists every route with its permission; and the API reference page for people at /docs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect } from './helpers/harness.js';
import { DOCS_PATH, OPENAPI_PATH } from '../src/platform/openapi.js';
import { addMachine, offerFor, rentOk } from './instances-fixtures.js';
import { REQUIRES } from '../src/teams/teams-routes.js';

/** Properties of an object schema, through `allOf` (TypeBox intersections). */
function propertiesOf(schema: any): Record<string, unknown> {
  if (!schema) return {};
  return { ...schema.properties, ...Object.assign({}, ...(schema.allOf ?? []).map(propertiesOf)) };
}

forEachDialect('openapi', (app) => {
  const doc = async () => {
    const res = await app().request('GET', OPENAPI_PATH, { key: null });
    assert.equal(res.status, 200);
    assert.equal(res.headers['content-type'], 'application/json');
    return res.body;
  };

  test('an OpenAPI 3.1.0 document, version 1.0.0, one server at the public URL, served without a key', async () => {
    const d = await doc();
    assert.equal(d.openapi, '3.1.0');
    assert.equal(d.info.version, '1.0.0');
    assert.equal(typeof d.info.title, 'string');
    assert.deepEqual(d.servers, [{ url: app().config.publicUrl }]);
    assert.deepEqual(d.components.securitySchemes.bearerAuth, { type: 'http', scheme: 'bearer' });
  });

  test('every registered route is documented, with its permission category and security', async () => {
    const d = await doc();
    const hidden = (url: string) => url === OPENAPI_PATH || url.startsWith(DOCS_PATH);
    const routes = app().routes.filter((r) => !hidden(r.url));
    assert.ok(routes.length > 0);
    for (const r of routes) {
      const path = r.url.replace(/:(\w+)/g, '{$1}');
      const op = d.paths[path]?.[r.method.toLowerCase()];
      const where = `${r.method} ${path}`;
      assert.ok(op, `${where} is in the document`);
      assert.equal(op['x-permission-category'], r.category, where);
      assert.ok(Object.keys(op.responses ?? {}).some((s) => /^2\d\d$/.test(s)), `${where} documents its success reply`);
      if (r.category === 'public') assert.equal(op.security, undefined, `${where} needs no key`);
      // Offer search also answers without a key (issue 29 item 1): a bearer key, or nothing at all.
      else if (r.keyOptional) assert.deepEqual(op.security, [{ bearerAuth: [] }, {}], `${where} takes a key or none`);
      else assert.deepEqual(op.security, [{ bearerAuth: [] }], `${where} needs a key`);
      for (const name of [...r.url.matchAll(/:(\w+)/g)].map((m) => m[1])) {
        assert.ok(
          (op.parameters ?? []).some((p: any) => p.in === 'path' && p.name === name),
          `${where} documents its path parameter ${name}`,
        );
      }
    }
  });

  test('built from the route schemas: users/current documents every field the route really returns', async () => {
    const d = await doc();
    const schema = d.paths['/api/v0/users/current/'].get.responses['200'].content['application/json'].schema;
    const documented = propertiesOf(schema);
    const real = (await app().request('GET', '/api/v0/users/current')).body;
    assert.deepEqual(Object.keys(real).sort(), Object.keys(documented).sort());

    const body = d.paths['/_emu/users'].post.requestBody.content['application/json'].schema;
    assert.ok(body.required.includes('email'));
    assert.equal(body.properties.credit.default, 100);
  });

  test('the SDK\'s item types are the schemas: offers, volumes, endpoints, workergroups, decisions, bulk list every field they return', async () => {
    const d = await doc();
    /** The documented properties of `<path>`'s 200 reply, at `field` (an array's items), against a real item. */
    const same = (method: string, path: string, field: string, real: Record<string, unknown>) => {
      const reply = d.paths[path][method].responses['200'].content['application/json'].schema;
      const schema = propertiesOf(reply)[field] as any;
      const documented = propertiesOf(schema.type === 'array' ? schema.items : schema);
      assert.deepEqual(Object.keys(real).sort(), Object.keys(documented).sort(), `${method} ${path} ${field}`);
    };
    const { api_key: k } = await app().createUser({ credit: 1000 });
    const m = await addMachine(app(), { num_gpus: 2, geolocation: 'Schemas, ZZ' });
    const offers = await app().request('POST', '/api/v0/bundles/', { key: k, body: { machine_id: { eq: m.machine_id } } });
    same('post', '/api/v0/bundles/', 'offers', offers.body.offers[0]);
    const volumeOffers = await app().request('POST', '/api/v0/volumes/search/', { key: k, body: { machine_id: { eq: m.machine_id } } });
    same('post', '/api/v0/volumes/search/', 'offers', volumeOffers.body.offers[0]);
    assert.equal((await app().request('PUT', '/api/v0/volumes/', { key: k, body: { id: volumeOffers.body.offers[0].id, size: 5 } })).status, 200);
    same('get', '/api/v0/volumes/', 'volumes', (await app().request('GET', '/api/v0/volumes/', { key: k })).body.volumes[0]);

    const { id } = await rentOk(app(), offerFor(m, 1), {}, k);
    const bulk = await app().request('PUT', '/api/v0/instances/', { key: k, body: { state: 'stopped', ids: [id, 987654] } });
    assert.equal(bulk.body.success, false, bulk.raw);
    same('put', '/api/v0/instances/', 'failed', bulk.body.failed[0]);
    assert.deepEqual(Object.keys(bulk.body).sort(), Object.keys(propertiesOf(d.paths['/api/v0/instances/'].put.responses['200'].content['application/json'].schema)).sort());

    const template = await app().request('POST', '/api/v0/template/', { key: k, body: { name: 'worker', image: 'vllm/vllm-openai' } });
    const ep = (await app().request('POST', '/api/v0/endptjobs/', { key: k, body: { endpoint_name: 'schemas', max_workers: 1, cold_workers: 0, min_load: 0 } })).body.result;
    same('get', '/api/v0/endptjobs/', 'results', (await app().request('GET', '/api/v0/endptjobs/', { key: k })).body.results[0]);
    const wg = await app().request('POST', '/api/v0/autojobs/', {
      key: k, body: { endpoint_id: ep, template_hash: template.body.template.hash_id, search_params: 'geolocation=Schemas,_ZZ num_gpus=1' },
    });
    assert.equal(wg.status, 200, wg.raw);
    const groups = (await app().request('GET', '/api/v0/autojobs/', { key: k })).body.results;
    same('get', '/api/v0/autojobs/', 'results', groups[0]);
    await app().advance(1);
    const decisions = await app().request('GET', `/api/v0/autojobs/${wg.body.id}/decisions/`, { key: k });
    same('get', '/api/v0/autojobs/{id}/decisions/', 'decisions', decisions.body.decisions[0]);
  });

  test('team routes that need more than their category say what (x-permission-requires and the description)', async () => {
    const d = await doc();
    const stricter: [string, string, string][] = [
      ['post', '/api/v0/team/', REQUIRES.personalKey],
      ['delete', '/api/v0/team/', REQUIRES.owner],
      ['post', '/api/v0/team/invite/', REQUIRES.coverInvitedRole],
      ['post', '/api/v0/team/invitations/accept/', REQUIRES.invitedPersonalKey],
      ['put', '/api/v0/team/members/{id}/', REQUIRES.coverMemberRoles],
      ['delete', '/api/v0/team/members/{id}/', REQUIRES.coverRemovedMember],
      ['post', '/api/v0/team/roles/', REQUIRES.coverNewRole],
      ['put', '/api/v0/team/roles/{id}/', REQUIRES.coverChangedRole],
      ['delete', '/api/v0/team/roles/{name}/', REQUIRES.coverRemovedRole],
    ];
    for (const [method, path, requires] of stricter) {
      const op = d.paths[path][method];
      assert.equal(op['x-permission-requires'], requires, `${method} ${path}`);
      assert.ok(String(op.description).includes(`Needs more than the ${op['x-permission-category']} permission: ${requires}.`), `${method} ${path}`);
    }
    // The reading routes need only their category.
    assert.equal(d.paths['/api/v0/team/members/'].get['x-permission-requires'], undefined);

    // What the document says holds: a manager's team key holds team_write, yet deleting the team is the owner's.
    const owner = await app().createUser();
    const team = await app().request('POST', '/api/v0/team/', { key: owner.api_key, body: { team_name: 'documented' } });
    assert.equal(team.status, 200, team.raw);
    const manager = await app().createUser();
    await app().request('POST', `/api/v0/team/invite/?email=${encodeURIComponent(manager.user.email)}&role=manager`, { key: owner.api_key });
    const code = (await app().request('GET', `/_emu/outbox?to=${encodeURIComponent(manager.user.email)}`)).body.messages.at(-1).code;
    assert.equal((await app().request('POST', '/api/v0/team/invitations/accept/', { key: manager.api_key, body: { code } })).status, 200);
    const teamKey = (await app().request('POST', '/api/v0/auth/apikeys/', { key: manager.api_key, body: { team_id: team.body.id } })).body.key;
    const refused = await app().request('DELETE', '/api/v0/team/', { key: teamKey });
    assert.equal(refused.status, 403, refused.raw);
    assert.equal(refused.body.error, 'permission_denied');
    // And a team key, whatever it holds, cannot create a team.
    const fromTeam = await app().request('POST', '/api/v0/team/', { key: teamKey, body: { team_name: 'nested' } });
    assert.equal(fromTeam.status, 403, fromTeam.raw);
  });

  test('every route schema compiles (they compile lazily in the server, so this is where a broken one shows)', async () => {
    await app().compileSchemas();
  });

  test('every $ref in the document resolves', async () => {
    const d = await doc();
    const refs = [...JSON.stringify(d).matchAll(/"\$ref":"([^"]+)"/g)].map((m) => m[1]);
    for (const ref of refs) {
      assert.ok(ref.startsWith('#/'), ref);
      const target = ref
        .slice(2)
        .split('/')
        .reduce((node: any, part) => node?.[part.replace(/~1/g, '/').replace(/~0/g, '~')], d);
      assert.ok(target, `${ref} resolves`);
    }
  });

  test('a readable API reference page at /docs, for people, loading this document', async () => {
    const page = await app().request('GET', DOCS_PATH, { key: null });
    assert.equal(page.status, 200);
    assert.match(String(page.headers['content-type']), /^text\/html/);
    assert.match(page.raw, /<html/i);
    const init = await app().request('GET', `${DOCS_PATH}/static/swagger-initializer.js`, { key: null });
    assert.equal(init.status, 200);
    const spec = await app().request('GET', `${DOCS_PATH}/json`, { key: null });
    assert.equal(spec.status, 200);
    assert.equal(spec.body.openapi, '3.1.0');
  });
});
